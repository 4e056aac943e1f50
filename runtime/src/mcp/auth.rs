//! Authentication: mapping an HTTP request to a [`Caller`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use http::request::Parts;

use crate::Caller;

/// The future an [`Authenticator`] returns.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Option<Caller>> + Send + 'a>>;

/// Maps an HTTP request (its headers, typically a bearer token) to the caller it acts for.
///
/// `None` means the request is not authenticated: it gets `401 Unauthorized` and runs nothing. Over stdio
/// there is no request; the server serves its configured default caller.
pub trait Authenticator: Send + Sync + 'static {
    /// The caller for this request, if its credentials are valid.
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a>;
}

/// Static bearer tokens, each acting for one caller: `Authorization: Bearer <token>`.
///
/// ```
/// use toolgate::Caller;
/// use toolgate::mcp::BearerTokens;
///
/// let tokens = BearerTokens::new()
///     .token("viewer-secret", Caller::new("vera").with_role("Viewer").with_abilities(["orders.view"]));
/// # let _ = tokens;
/// ```
#[derive(Default, Clone)]
pub struct BearerTokens(HashMap<String, Caller>);

impl BearerTokens {
    /// No tokens yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accepts `token` as `caller`.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>, caller: Caller) -> Self {
        self.0.insert(token.into(), caller);
        self
    }

    fn caller(&self, request: &Parts) -> Option<Caller> {
        let header = request
            .headers
            .get(http::header::AUTHORIZATION)?
            .to_str()
            .ok()?;
        let (scheme, token) = header.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        self.0.get(token.trim()).cloned()
    }
}

impl Authenticator for BearerTokens {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
        Box::pin(std::future::ready(self.caller(request)))
    }
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let callers: Vec<&str> = self.0.values().map(Caller::id).collect();
        f.debug_struct("BearerTokens")
            .field("callers", &callers)
            .finish_non_exhaustive()
    }
}
