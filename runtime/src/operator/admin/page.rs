//! The operator's page over the admin API, at `/admin`: HTML, CSS and JavaScript built into the binary,
//! fetching nothing from elsewhere. The page holds no data and no logic of its own: it asks for a token,
//! keeps it in the tab's session storage (never in a cookie, so no other site's form can use it), and
//! sends it with every request to the API, which decides everything.

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::{Guard, foreign_host};

/// What every answer under `/admin` may load: its own scripts, styles and API, nothing inline, no
/// frames, no forms sent anywhere.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                      img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The page's files: path, media type, content.
const FILES: [(&str, &str, &str); 4] = [
    (
        "/admin",
        "text/html; charset=utf-8",
        include_str!("page/index.html"),
    ),
    (
        "/admin/page.js",
        "text/javascript; charset=utf-8",
        include_str!("page/page.js"),
    ),
    (
        "/admin/page.css",
        "text/css; charset=utf-8",
        include_str!("page/page.css"),
    ),
    (
        "/admin/draw.js",
        "text/javascript; charset=utf-8",
        crate::mcp::DRAW,
    ),
];

/// The page's routes, for the hosts the server answers for.
pub(super) fn router(guard: Guard) -> Router {
    FILES
        .iter()
        .fold(Router::new(), |router, &(path, kind, body)| {
            let guard = guard.clone();
            router.route(
                path,
                get(move |request: Request| async move {
                    let (parts, _) = request.into_parts();
                    if guard.answers_for(&parts) {
                        ([(header::CONTENT_TYPE, kind)], body).into_response()
                    } else {
                        foreign_host()
                    }
                }),
            )
        })
}

/// Puts the content-security policy, and headers against sniffing, framing and caching, on every answer
/// under `/admin`, the API's included.
pub(super) async fn secured(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
