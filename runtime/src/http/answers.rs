//! The JSON answers of the HTTP endpoints beside MCP (the admin API, `/delegations`): a value, or an
//! error as `{"error": {"kind", "message"}}`.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answer: `{"error": {"kind", "message"}}`.
pub(crate) fn problem(status: StatusCode, kind: &str, message: &str) -> Response {
    problem_with(status, kind, message, &[])
}

/// An error answer with each problem of settings that do not match their schema, as
/// `"problems": [{"path", "problem"}]` beside the message, when there are any.
pub(crate) fn problem_with(
    status: StatusCode,
    kind: &str,
    message: &str,
    problems: &[(String, String)],
) -> Response {
    let mut body = json!({ "error": { "kind": kind, "message": message } });
    if !problems.is_empty() {
        let problems: Vec<_> = problems
            .iter()
            .map(|(path, problem)| json!({ "path": path, "problem": problem }))
            .collect();
        body["error"]["problems"] = problems.into();
    }
    json_response(status, body.to_string())
}

/// A JSON answer.
pub(crate) fn json_response(status: StatusCode, body: impl Into<Body>) -> Response {
    let mut response = (status, body.into()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
