//! Opaque access tokens, checked by asking their authorization server (RFC 7662): at its introspection
//! endpoint, as a client of its own, a bounded number at a time.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::Semaphore;

use super::claims::Claims;
use super::discovery::Discovery;
use super::fetch::Client;
use crate::http::Refusal;

/// The most introspections in flight at once: each token this server has not seen costs the
/// authorization server a request, so a flood of made-up tokens is refused here, not passed on.
const MAX_IN_FLIGHT: usize = 32;

/// How long an answer is trusted by default: the longest a revoked token keeps working.
pub(super) const TRUSTED_FOR: Duration = Duration::from_secs(60);

/// Introspection at one authorization server.
pub(super) struct Introspection {
    server: Arc<Discovery>,
    client: Client,
    pub(super) trusted_for: Duration,
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
            trusted_for: TRUSTED_FOR,
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
        }
    }

    /// What the authorization server says of `token` at `now` (seconds), and until when to trust it.
    ///
    /// # Errors
    /// `Invalid` for a token it does not call active, or one from another issuer or already expired;
    /// `Unavailable` when it cannot be asked now (out of reach, or too many asked at once).
    pub(super) async fn claims(&self, token: &str, now: u64) -> Result<(Claims, u64), Refusal> {
        let unavailable = |reason: String| Refusal::Unavailable(reason);
        let _permit = self.in_flight.try_acquire().map_err(|_| {
            unavailable("too many tokens are being checked with the issuer at once".into())
        })?;
        let endpoints = self.server.endpoints().await.map_err(|problem| {
            tracing::warn!(issuer = %self.server.issuer(), "toolgate: cannot read the issuer's metadata: {problem}");
            unavailable("the issuer is out of reach".into())
        })?;
        let Some(endpoint) = &endpoints.introspection_endpoint else {
            tracing::warn!(issuer = %self.server.issuer(), "toolgate: the issuer publishes no introspection endpoint");
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
                tracing::warn!(issuer = %self.server.issuer(), "toolgate: cannot introspect a token: {problem}");
                unavailable("the issuer is out of reach".into())
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
        let trusted = now.saturating_add(self.trusted_for.as_secs());
        let until = answer.claims.exp.map_or(trusted, |exp| exp.min(trusted));
        Ok((answer.claims, until))
    }
}
