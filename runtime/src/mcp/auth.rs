//! Authentication: mapping an HTTP request to a [`Caller`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use http::request::Parts;

use crate::caller::Caller;

/// The future an [`Authenticator`] returns.
///
/// ```
/// use toolgate::Caller;
/// use toolgate::mcp::AuthFuture;
///
/// fn nobody<'a>() -> AuthFuture<'a> {
///     Box::pin(async { None::<Caller> })
/// }
/// ```
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Option<Caller>> + Send + 'a>>;

/// Maps an HTTP request (its headers, typically a bearer token) to the caller it acts for.
///
/// `None` means the request is not authenticated: it gets `401 Unauthorized` and runs nothing. Over stdio
/// there is no request; the server serves its configured default caller.
///
/// An API key in a header of its own, looked up per request (in a database, typically):
///
/// ```
/// use http::request::Parts;
/// use tower_service::Service;
/// use toolgate::mcp::{AuthFuture, Authenticator, McpServer};
/// use toolgate::{Caller, Registry};
/// use toolgate::param::CancellationToken;
///
/// struct ApiKeys;
///
/// impl Authenticator for ApiKeys {
///     fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
///         Box::pin(async move {
///             let key = request.headers.get("x-api-key")?.to_str().ok()?;
///             (key == "k-123").then(|| Caller::new("svc-reports").with_abilities(["reports.read"]))
///         })
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let server = McpServer::new(Registry::builder().build()?).authenticator(ApiKeys);
/// let mut router = server.router(CancellationToken::new());
/// let ping = |key: &str| {
///     http::Request::post("/mcp")
///         .header("host", "127.0.0.1")
///         .header("content-type", "application/json")
///         .header("accept", "application/json, text/event-stream")
///         .header("x-api-key", key)
///         .body(axum::body::Body::from(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#))
///         .unwrap()
/// };
/// assert_eq!(router.call(ping("wrong")).await.unwrap().status(), 401);
/// assert_ne!(router.call(ping("k-123")).await.unwrap().status(), 401);
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
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
