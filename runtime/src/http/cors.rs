//! What a browser's request from an allowed origin needs to read MCP's answers (CORS): its preflight
//! answered before authentication, and every answer, a `401` challenge included, readable to it.

use axum::response::{IntoResponse, Response};
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, VARY,
};
use http::{HeaderValue, StatusCode};

/// The headers of MCP's answers a browser client reads: the challenge, the session and the version.
const EXPOSED: HeaderValue =
    HeaderValue::from_static("www-authenticate, mcp-session-id, mcp-protocol-version");

/// The answer to a preflight from `origin`: the methods MCP's endpoint takes, and the headers the
/// browser `asked` to send (MCP's own, `Authorization`, a 2026-07-28 request's `Mcp-Param-*`).
pub(super) fn preflight(origin: HeaderValue, asked: Option<HeaderValue>) -> Response {
    let headers = asked.unwrap_or(HeaderValue::from_static(
        "authorization, content-type, accept, mcp-protocol-version, mcp-session-id",
    ));
    let answer = [
        (ACCESS_CONTROL_ALLOW_ORIGIN, origin),
        (VARY, HeaderValue::from_static("Origin")),
        (
            ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, POST, DELETE, OPTIONS"),
        ),
        (ACCESS_CONTROL_ALLOW_HEADERS, headers),
        (ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600")),
    ];
    (StatusCode::NO_CONTENT, answer).into_response()
}

/// `response`, readable to a browser at `origin`.
pub(super) fn readable(mut response: Response, origin: HeaderValue) -> Response {
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.append(VARY, HeaderValue::from_static("Origin"));
    headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, EXPOSED);
    response
}
