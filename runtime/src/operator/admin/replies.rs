//! What every route of the admin API shares: reading a request's JSON body and query and who sent it,
//! and answering with JSON or with problem details (RFC 9457) whose status says what went wrong.

use axum::extract::Request;
use axum::extract::rejection::QueryRejection;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::caller::Caller;
use crate::http::{json_response, problem, problem_with};
use crate::registry::Registry;
use crate::store::{RecordError, RecordErrorKind};

use crate::operator::commands::{Operator, Seen};

/// The answer to query parameters that do not parse.
pub(super) fn rejected(error: &QueryRejection) -> Response {
    problem(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid",
        &error.body_text(),
    )
}

/// The JSON body of `request`, or the answer that refuses it; `shape` shows what it should look like.
pub(super) async fn read_json<T: serde::de::DeserializeOwned>(
    request: Request,
    shape: &str,
) -> Result<T, Response> {
    let Ok(body) = axum::body::to_bytes(request.into_body(), 64 * 1024).await else {
        return Err(problem(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid",
            "the body is larger than 64 KiB",
        ));
    };
    serde_json::from_slice(&body).map_err(|error| {
        let message = format!("the body must be {shape}: {error}");
        problem(StatusCode::UNPROCESSABLE_ENTITY, "invalid", &message)
    })
}

/// Who makes a change: the authenticated caller, with whom it acts for when it is delegated, so that a
/// sub-agent's edit names the person who handed it the right, whatever it is called.
pub(super) fn actor(request: &Request) -> String {
    request
        .extensions()
        .get::<Caller>()
        .map_or_else(|| "unknown".to_owned(), Caller::chain_label)
}

pub(super) fn answer(result: Result<Value, RecordError>) -> Response {
    match result {
        Ok(value) => json_response(StatusCode::OK, value.to_string()),
        Err(error) => {
            let (status, kind) = match error.kind() {
                RecordErrorKind::NotFound => (StatusCode::NOT_FOUND, "not_found"),
                RecordErrorKind::Conflict => (StatusCode::CONFLICT, "conflict"),
                RecordErrorKind::Invalid => (StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
                _ => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            };
            problem_with(status, kind, error.message(), error.problems())
        }
    }
}

/// The body of every edit: the version of the record the operator saw (0 to create it), and the change.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Versioned<C> {
    version: u64,
    change: C,
}

/// The answer to an edit: its body read (shaped as `hint` shows, or refused), and `command` run with
/// the change as the caller who sent it, against the version they saw.
pub(super) async fn edited<C: DeserializeOwned>(
    registry: &Registry,
    request: Request,
    hint: &str,
    command: impl AsyncFnOnce(Operator<'_>, Seen, C) -> Result<Value, RecordError>,
) -> Response {
    let actor = actor(&request);
    let body: Versioned<C> = match read_json(request, hint).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let operator = Operator::new(registry, actor);
    answer(command(operator, Seen::Version(body.version), body.change).await)
}
