//! `GET /oauth/callback`: where a browser comes back from signing in to a remote server: an operator's,
//! for the gateway, or a person's, for their own calls. It answers in plain text (nothing it echoes can run), is never cached, and sends no
//! referrer on: its address carries the code. And `GET /oauth/client-metadata.json`: the gateway's
//! client ID metadata document, which an authorization server reads to know the gateway as a client.

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::json_response;
use crate::registry::Registry;

/// The callback's route over `registry`.
pub(super) fn router(registry: Registry) -> Router {
    Router::new()
        .route("/oauth/callback", get(callback))
        .route(DOCUMENT, get(document))
        .with_state(registry)
}

/// Where the gateway's client ID metadata document is served.
const DOCUMENT: &str = "/oauth/client-metadata.json";

async fn document(State(registry): State<Registry>) -> Response {
    match registry.client_metadata(DOCUMENT) {
        Some(document) => {
            let mut response = json_response(StatusCode::OK, document.to_string());
            (response.headers_mut()).insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("max-age=300"),
            );
            response
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn callback(State(registry): State<Registry>, RawQuery(query): RawQuery) -> Response {
    let (status, text) = match registry.finish_sign_in(&query.unwrap_or_default()).await {
        Ok(label) => (
            StatusCode::OK,
            format!("Signed in to `{label}`. You can close this page and go back.\n"),
        ),
        Err(error) => (
            StatusCode::BAD_REQUEST,
            format!("The sign-in did not finish: {}\n", error.message()),
        ),
    };
    let mut response = (status, text).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
