//! `POST /delegations`: an authenticated caller asks for a token that carries less than it holds, for a
//! sub-agent in another process to present as its bearer token.

use std::time::{Duration, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use crate::caller::Delegation;
use crate::confirm::millis;
use crate::registry::MAX_DELEGATION_TTL;
use crate::text::Ident;

use super::answers::{json_response, problem};
use super::auth::Guard;

/// The largest request body the endpoint reads.
const MAX_BODY: usize = 64 * 1024;

/// What a caller asks to hand on: every name in it is an [`Ident`], checked as the body is read.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DelegationRequest {
    /// The sub-agent's id.
    to: Ident,
    role: Option<Ident>,
    #[serde(default)]
    abilities: Vec<Ident>,
    profile: Option<Ident>,
    max_calls: Option<u32>,
    /// How long the token lives, at most a day.
    expires_in_secs: u64,
}

/// The route; `guard` must accept delegations (it carries the registry that seals them).
pub(super) fn router(guard: Guard) -> Router {
    Router::new()
        .route("/delegations", axum::routing::post(delegate))
        .with_state(guard)
}

/// 201 with the token, what it holds and when it ends; 400 for a body that is not what the endpoint takes.
async fn delegate(State(guard): State<Guard>, request: Request<Body>) -> Response {
    let (parts, body) = request.into_parts();
    let caller = match guard.admit(&parts).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    let bad = |message: &str| problem(StatusCode::BAD_REQUEST, "invalid_request", message);
    let Ok(bytes) = to_bytes(body, MAX_BODY).await else {
        return bad("the body is larger than 64 KiB");
    };
    let asked: DelegationRequest = match serde_json::from_slice(&bytes) {
        Ok(asked) => asked,
        Err(error) => return bad(&format!("the body is not a delegation request: {error}")),
    };
    let longest = MAX_DELEGATION_TTL.as_secs();
    if asked.expires_in_secs == 0 || asked.expires_in_secs > longest {
        return bad(&format!("`expires_in_secs` must be from 1 to {longest}"));
    }
    let mut delegation = Delegation::to(asked.to)
        .abilities(asked.abilities)
        .expires_in(Duration::from_secs(asked.expires_in_secs));
    if let Some(role) = asked.role {
        delegation = delegation.role(role);
    }
    if let Some(profile) = asked.profile {
        delegation = delegation.profile(profile);
    }
    if let Some(calls) = asked.max_calls {
        delegation = delegation.max_calls(calls);
    }
    let delegated = caller.delegate(delegation);
    let Some(registry) = guard.delegations() else {
        return problem(
            StatusCode::NOT_FOUND,
            "not_found",
            "this server takes no delegations",
        );
    };
    let token = match registry.seal_delegation(&delegated) {
        Ok(token) => token,
        Err(error) => return bad(error.message()),
    };
    let expires_at_ms = delegated
        .expires_at()
        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
        .map(millis);
    let body = json!({
        "token": token,
        "caller": delegated.id(),
        "abilities": delegated.abilities().collect::<Vec<_>>(),
        "on_behalf_of": delegated.chain().skip(1).map(|c| c.id()).collect::<Vec<_>>(),
        "max_calls": delegated.max_calls(),
        "expires_at_ms": expires_at_ms,
    });
    json_response(StatusCode::CREATED, body.to_string())
}
