//! Authentication: mapping an HTTP request to a [`Caller`].

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::request::Parts;
use http::{HeaderMap, HeaderName};

use super::headers::{MCP_METHOD, MCP_NAME};
use crate::caller::Caller;
use crate::registry::{DELEGATION_PREFIX, Handover, Registry, Snapshot, ToolId};

use super::challenge::Refusal;

/// The future an [`Authenticator`] returns: the caller, or why there is none.
///
/// ```
/// use toolgate::http::{AuthFuture, Refusal};
///
/// fn nobody<'a>() -> AuthFuture<'a> {
///     Box::pin(async { Err(Refusal::Missing) })
/// }
/// ```
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Caller, Refusal>> + Send + 'a>>;

/// Maps an HTTP request (its headers, typically a bearer token) to the caller it acts for.
///
/// A [`Refusal`] says why a request is not let through, and the answer's challenge says it to the
/// client (RFC 6750): `401` without credentials or with ones that are not valid, `403` with valid ones
/// that lack a scope. Nothing runs. A caller whose id, role or profile is not an
/// [`Ident`](crate::text::Ident), as when an id is taken from a header or a token's claim that the client
/// chose, is refused as not valid. Over stdio there is no request; the server serves its configured
/// default caller.
///
/// An API key in a header of its own, looked up per request (in a database, typically):
///
/// ```
/// use http::request::Parts;
/// use tower_service::Service;
/// use toolgate::http::{AuthFuture, Authenticator, HttpServer, Refusal};
/// use toolgate::mcp::McpServer;
/// use toolgate::{Caller, Registry};
/// use toolgate::param::CancellationToken;
///
/// struct ApiKeys;
///
/// impl Authenticator for ApiKeys {
///     fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
///         Box::pin(async move {
///             let key = request.headers.get("x-api-key").ok_or(Refusal::Missing)?;
///             match key.to_str() {
///                 Ok("k-123") => Ok(Caller::new("svc-reports").with_abilities(["reports.read"])),
///                 _ => Err(Refusal::Invalid("unknown API key".into())),
///             }
///         })
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let server = HttpServer::new(McpServer::new(Registry::builder().build()?)).authenticator(ApiKeys);
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

    /// What to answer a `tools/call` whose caller may not run the tool because it lacks `abilities`:
    /// a refusal that sends its client to sign in again with more (`SignIn` or `Missing` for an
    /// anonymous caller, `InsufficientScope` naming the scopes that grant them), since hosts start a sign-in only on a
    /// `401` or `403`; or `None` (the default), and the call is refused as MCP refuses a tool one may
    /// not run: as an unknown one. Asked only when [`steps_up`](Self::steps_up).
    fn step_up(&self, _caller: &Caller, _abilities: &[String]) -> Option<Refusal> {
        None
    }

    /// Whether [`step_up`](Self::step_up) may answer: read once, when the server is built, so that a
    /// server whose authenticator never does looks no call's tool up before it runs.
    fn steps_up(&self) -> bool {
        false
    }

    /// Called when a server is built with this authenticator, with the registry it serves: one that
    /// reads the operator's records there keeps it (a `TokenVerifier` reads
    /// what scopes and roles grant). Does nothing by default.
    fn serves(&self, _registry: &Registry) {}
}

/// Static bearer tokens, each acting for one caller: `Authorization: Bearer <token>`.
///
/// ```
/// use toolgate::Caller;
/// use toolgate::http::BearerTokens;
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

    fn caller(&self, request: &Parts) -> Result<Caller, Refusal> {
        let token = bearer(request).ok_or(Refusal::Missing)?;
        self.0
            .get(token)
            .cloned()
            .ok_or_else(|| Refusal::Invalid("the token is not one this server accepts".into()))
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub(super) fn bearer(request: &Parts) -> Option<&str> {
    let header = request
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = header.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// How the HTTP endpoints tell who calls: a delegation token when the server accepts them, otherwise the
/// authenticator, or the default caller when there is none.
#[derive(Clone)]
pub(super) struct Credentials {
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    pub(super) default_caller: Caller,
    /// Accepts delegation tokens sealed under this registry's keys.
    pub(super) delegations: Option<Registry>,
    /// Where this resource's metadata is, for every challenge, when the server is an OAuth resource
    /// server.
    pub(super) resource: Option<Arc<str>>,
    /// Where a call's tool is looked up before it runs, when the authenticator steps up.
    pub(super) steps_up: Option<Registry>,
}

impl Credentials {
    /// The caller of a request, or why it has none (for its challenge).
    pub(super) async fn caller(&self, request: &Parts) -> Result<Caller, Refusal> {
        let token = bearer(request).filter(|token| token.starts_with(DELEGATION_PREFIX));
        if let (Some(registry), Some(token)) = (&self.delegations, token) {
            return registry
                .open_delegation(token)
                .map_err(|error| Refusal::Invalid(error.message().to_owned()));
        }
        let Some(authenticator) = &self.authenticator else {
            return Ok(self.default_caller.clone());
        };
        let caller = authenticator.authenticate(request).await?;
        // The names may come from the request (a header, a token's claim): checked like any other.
        caller.check_names().map_err(|problem| {
            Refusal::Invalid(format!(
                "the credentials name a caller this server does not accept: {problem}"
            ))
        })?;
        Ok(caller)
    }

    /// The answer that refuses a request for `refusal`, with its challenge.
    pub(super) fn refused(&self, refusal: &Refusal) -> axum::response::Response {
        refusal.answer(self.resource.as_deref())
    }

    /// The answer that refuses the `tools/call` of request `id` for `refusal`: the challenge in its
    /// header, and again in a result the call's client reads.
    pub(super) fn refused_call(
        &self,
        refusal: &Refusal,
        id: &rmcp::model::RequestId,
    ) -> axum::response::Response {
        refusal.answer_call(self.resource.as_deref(), id)
    }

    /// Whether the authenticator steps up.
    pub(super) fn steps_up(&self) -> bool {
        self.steps_up.is_some()
    }

    /// The refusal for a call of tool `tool` of `snapshot` (as a call was resolved) that `caller` may
    /// not run, when the authenticator sends its client to sign in again for it.
    pub(super) fn stepped_up(
        &self,
        caller: &Caller,
        (snapshot, tool): (&Snapshot, Option<ToolId>),
    ) -> Option<Refusal> {
        let registry = self.steps_up.as_ref()?;
        let missing = registry.missing_abilities_in(snapshot, tool?, caller)?;
        self.authenticator.as_ref()?.step_up(caller, &missing)
    }

    /// For a request the direct path did not look up, a 2026-07-28 `tools/call` whose `Mcp-Name`
    /// header names its tool, when the authenticator steps up: the tool looked up, once (the lookup goes
    /// on with the request), or the refusal that sends the client to sign in again, decided before the
    /// body is read.
    pub(super) fn resolved_by_name(
        &self,
        caller: &Caller,
        headers: &HeaderMap,
    ) -> Option<Result<Handover, Refusal>> {
        let registry = self.steps_up.as_ref()?;
        let named = |name: &HeaderName| headers.get(name).and_then(|value| value.to_str().ok());
        if named(&MCP_METHOD) != Some("tools/call") {
            return None;
        }
        let name = named(&MCP_NAME)?;
        let resolved = registry.resolved(name);
        if let Some(refusal) = self.stepped_up(caller, (&resolved.snapshot, resolved.tool)) {
            return Some(Err(refusal));
        }
        Some(Ok(resolved.handed_over(name)))
    }
}

/// What every HTTP endpoint beside MCP (`/admin`, `/delegations`) checks before anything else, as the MCP
/// endpoint does: the `Host` (against DNS rebinding: the server's allowed hosts, or loopback names
/// only), the browser's `Origin` (the server's allowed origins, or loopback origins), and that a write
/// carries JSON (`Content-Type: application/json`, which a cross-site form cannot send).
#[derive(Clone)]
pub(super) struct Hosts {
    pub(super) hosts: Option<Vec<String>>,
    pub(super) origins: Vec<String>,
}

/// The gate of the routes an [`HttpServer`](super::HttpServer) mounts beside MCP: who a request is,
/// once its host, origin and body type have passed the same checks as MCP's. A [`Mount`](super::Mount)
/// is handed one; its example admits each request with it.
///
/// ```
/// fn gated(guard: &toolgate::http::Guard) -> bool {
///     guard.authenticates()
/// }
/// # let _ = gated;
/// ```
#[derive(Clone)]
pub struct Guard {
    credentials: Credentials,
    hosts: Hosts,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("authenticates", &self.authenticates())
            .finish_non_exhaustive()
    }
}

impl Guard {
    pub(super) fn new(credentials: Credentials, hosts: Hosts) -> Self {
        Guard { credentials, hosts }
    }

    /// Whether requests are told apart by an authenticator; without one every request is the default
    /// caller.
    pub fn authenticates(&self) -> bool {
        self.credentials.authenticator.is_some()
    }

    /// The registry whose delegation tokens are accepted, when the server accepts them.
    pub(super) fn delegations(&self) -> Option<&Registry> {
        self.credentials.delegations.as_ref()
    }

    /// The caller of a request that passes the checks: 403 for another host or origin, 415 for a write
    /// that is not JSON, 401 without a caller.
    ///
    /// # Errors
    /// The response that refuses the request.
    pub async fn admit(&self, request: &Parts) -> Result<Caller, axum::response::Response> {
        if !self.answers_for(request) {
            return Err(foreign_host());
        }
        if !self.hosts.allows_origin(request) {
            return Err(super::answers::problem(
                http::StatusCode::FORBIDDEN,
                "forbidden",
                "this server does not answer requests from that origin",
            ));
        }
        let writes = !matches!(request.method, http::Method::GET | http::Method::HEAD);
        if writes && request.method != http::Method::DELETE && !is_json(request) {
            return Err(super::answers::problem(
                http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "invalid",
                "a write must carry its body as `Content-Type: application/json`; nothing was changed",
            ));
        }
        let caller = self.credentials.caller(request).await;
        caller.map_err(|refusal| self.credentials.refused(&refusal))
    }

    /// Whether the request is to a host this server answers for.
    pub fn answers_for(&self, request: &Parts) -> bool {
        let host = request
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(host_name);
        match (&self.hosts.hosts, host) {
            (_, None) => false,
            (Some(hosts), Some(host)) => hosts.iter().any(|h| host_name(h) == host),
            (None, Some(host)) => matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1"),
        }
    }
}

impl Hosts {
    /// Whether the request comes from no browser (no `Origin`), or from an origin the server allows.
    fn allows_origin(&self, request: &Parts) -> bool {
        request
            .headers
            .get(http::header::ORIGIN)
            .is_none_or(|origin| self.allows(origin))
    }

    /// The `Origin` of a browser's request, when the server allows it: a browser may then read the
    /// answer (CORS).
    pub(super) fn browser_origin(&self, headers: &http::HeaderMap) -> Option<http::HeaderValue> {
        let origin = headers.get(http::header::ORIGIN)?;
        self.allows(origin).then(|| origin.clone())
    }

    /// Whether `origin` is one the server allows: written in full, or matching a pattern that ends in
    /// `:*` (any port).
    fn allows(&self, origin: &http::HeaderValue) -> bool {
        let Ok(origin) = origin.to_str() else {
            return false;
        };
        self.origins
            .iter()
            .any(|allowed| match allowed.strip_suffix('*') {
                Some(prefix) if prefix.ends_with(':') => {
                    origin.strip_prefix(prefix).is_some_and(|port| {
                        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                    })
                }
                _ => origin == allowed,
            })
    }
}

/// Whether the request says its body is JSON.
fn is_json(request: &Parts) -> bool {
    request
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// The answer to a request for a host this server does not answer for.
pub(crate) fn foreign_host() -> axum::response::Response {
    super::answers::problem(
        http::StatusCode::FORBIDDEN,
        "forbidden",
        "this server does not answer for that host",
    )
}

/// A `Host` header without its port.
fn host_name(host: &str) -> &str {
    match host.rsplit_once(':') {
        Some((name, port))
            if !name.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && !name.ends_with(':') =>
        {
            name
        }
        _ => host,
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
