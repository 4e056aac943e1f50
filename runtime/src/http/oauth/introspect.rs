//! Opaque access tokens, checked by asking their authorization server (RFC 7662): at its introspection
//! endpoint, as a client of its own, a bounded number at a time.

use std::sync::Arc;

use serde::Deserialize;
use tokio::sync::Semaphore;

use super::claims::Claims;
use crate::http::Refusal;
use crate::oauth::Client;
use crate::oauth::Discovery;

/// The most introspections in flight at once: each token this server has not seen costs the
/// authorization server a request, so a flood of made-up tokens is refused here, not passed on.
const MAX_IN_FLIGHT: usize = 32;

/// Introspection at one authorization server.
pub(super) struct Introspection {
    server: Arc<Discovery>,
    client: Client,
    in_flight: Semaphore,
}

/// An introspection answer.
#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    iss: Option<String>,
    #[serde(flatten)]
    claims: Claims,
}

impl Introspection {
    pub(super) fn new(server: Arc<Discovery>, client: Client) -> Self {
        Introspection {
            server,
            client,
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
        }
    }

    /// What the authorization server says of `token` at `now` (seconds).
    ///
    /// # Errors
    /// `Invalid` for a token it does not call active, or one from another issuer or already expired;
    /// `Unavailable` when it cannot be asked now (out of reach, or too many asked at once).
    pub(super) async fn claims(&self, token: &str, now: u64) -> Result<Claims, Refusal> {
        let _permit = self.in_flight.try_acquire().map_err(|_| {
            Refusal::Unavailable("too many tokens are being checked with the issuer at once".into())
        })?;
        let endpoints = (self.server.endpoints().await).map_err(|problem| {
            self.out_of_reach(&format!("cannot read its metadata: {problem}"))
        })?;
        let Some(endpoint) = &endpoints.introspection_endpoint else {
            self.warn("it publishes no introspection endpoint");
            return Err(Refusal::Invalid(
                "the token is not a JWT, and its issuer checks no other".into(),
            ));
        };
        let answer: Answer = self
            .server
            .fetcher()
            .introspect(endpoint, &self.client, token)
            .await
            .map_err(|problem| {
                self.out_of_reach(&format!("cannot introspect a token: {problem}"))
            })?;
        if !answer.active {
            return Err(Refusal::Invalid(
                "the token is not active (revoked, expired, or unknown to its issuer)".into(),
            ));
        }
        if answer
            .iss
            .as_deref()
            .is_some_and(|iss| iss != self.server.issuer())
        {
            return Err(Refusal::Invalid("the token is from another issuer".into()));
        }
        if answer.claims.exp.is_some_and(|exp| exp <= now) {
            return Err(Refusal::Invalid("the token has expired".into()));
        }
        Ok(answer.claims)
    }

    /// Logs why the authorization server cannot be asked, and the refusal that says so to the client.
    fn out_of_reach(&self, problem: &str) -> Refusal {
        self.warn(problem);
        Refusal::Unavailable("the issuer is out of reach".into())
    }

    /// Tells the operator what went wrong with introspection at the authorization server.
    fn warn(&self, problem: &str) {
        tracing::warn!(issuer = %self.server.issuer(), "toolgate: introspection: {problem}");
    }
}
