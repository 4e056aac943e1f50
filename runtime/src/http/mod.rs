//! Serving over HTTP: an [`HttpServer`] composes the routes it serves at the top, as axum's
//! `Router::merge` does: MCP's Streamable HTTP endpoint, the delegations endpoint, what is [mounted]
//! behind the same gate (the admin API), and plain axum routes of your own.
//!
//! Every route beside MCP shares the gate: the [`Authenticator`], the `Host` and `Origin` checks against
//! DNS rebinding, and the body and connection limits of [`HttpOptions`]. MCP's endpoint adds sessions
//! bound to their callers and a graceful shutdown that lets in-flight calls finish; on a stateless server
//! that answers with JSON, and in every session, the hot requests are answered behind the same gate
//! without rmcp's per-request service (the fast lane).
//!
//! ```
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! use toolgate::Caller;
//! use toolgate::http::{BearerTokens, HttpServer};
//! use toolgate::mcp::McpServer;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let mcp = McpServer::new(toolgate::Registry::builder().build().unwrap())
//!     .name("shop")
//!     .version("1.0.0");
//! let server = HttpServer::new(mcp)
//!     .authenticator(BearerTokens::new().token("s3cret", Caller::new("ops").with_abilities(["orders.view"])));
//! // `serve("127.0.0.1:8080")` serves until Ctrl-C; here, a free port and a stop signal of our own.
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let address = listener.local_addr()?;
//! let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
//! let serving = tokio::spawn(server.serve_listener(listener, async { let _ = stopped.await; }));
//!
//! let mut stream = tokio::net::TcpStream::connect(address).await?;
//! let request = format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}");
//! stream.write_all(request.as_bytes()).await?;
//! let mut response = String::new();
//! stream.read_to_string(&mut response).await?;
//! assert!(response.starts_with("HTTP/1.1 401"), "a request without the token: {response}");
//!
//! stop.send(()).unwrap();
//! serving.await.unwrap()?;
//! # Ok::<(), std::io::Error>(())
//! # }).unwrap();
//! ```
//!
//! [mounted]: HttpServer::mount

mod answers;
mod auth;
mod body;
mod challenge;
mod connections;
mod cors;
mod delegations;
mod fast;
mod gate;
mod headers;
#[cfg(feature = "oauth")]
mod oauth;
mod options;
mod repoll;
mod resource;
mod sessions;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;

use crate::mcp::{McpHandler, McpServer, ToolsOnly};
use crate::registry::Registry;

#[cfg(admin)]
pub(crate) use answers::{json_response, problem, problem_with};
#[cfg(admin)]
pub(crate) use auth::foreign_host;
pub use auth::{AuthFuture, Authenticator, BearerTokens, Guard};
pub use challenge::{META_WWW_AUTHENTICATE, Refusal};
#[cfg(feature = "oauth")]
pub use oauth::TokenVerifier;
pub use options::HttpOptions;
pub use resource::ProtectedResource;

use auth::{Credentials, Hosts};
use connections::Routes;
use fast::Direct;
use gate::{Gate, Responses, route};
use sessions::BoundSessions;

/// Routes served beside MCP behind the same [`Guard`]: the admin API (`toolgate::operator::AdminApi`,
/// with the `operator` feature) is one, and so may be an application's own.
///
/// ```
/// use axum::Router;
/// use axum::extract::Request;
/// use axum::response::IntoResponse;
/// use tower_service::Service;
/// use toolgate::http::{BearerTokens, Guard, HttpServer, Mount};
/// use toolgate::mcp::McpServer;
/// use toolgate::param::CancellationToken;
/// use toolgate::{Caller, Registry};
///
/// /// `GET /whoami`: the caller the gate let through.
/// struct WhoAmI;
///
/// impl Mount for WhoAmI {
///     fn router(self: Box<Self>, _: &Registry, guard: Guard, _: CancellationToken) -> Router {
///         Router::new().route("/whoami", axum::routing::get(move |request: Request| async move {
///             match guard.admit(&request.into_parts().0).await {
///                 Ok(caller) => caller.id().to_owned().into_response(),
///                 Err(refusal) => refusal,
///             }
///         }))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tokens = BearerTokens::new().token("ada-secret", Caller::new("ada"));
/// let server = HttpServer::new(McpServer::new(Registry::builder().build()?))
///     .authenticator(tokens)
///     .mount(WhoAmI);
/// let mut router = server.router(CancellationToken::new());
/// let get = |token: &str| {
///     http::Request::get("/whoami")
///         .header("host", "localhost")
///         .header("authorization", format!("Bearer {token}"))
///         .body(axum::body::Body::empty())
///         .unwrap()
/// };
/// assert_eq!(router.call(get("ada-secret")).await.unwrap().status(), 200);
/// assert_eq!(router.call(get("wrong")).await.unwrap().status(), 401);
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
pub trait Mount: Send + 'static {
    /// The routes, each request to them admitted by `guard` first; what they wait on ends with
    /// `cancellation`, when the server shuts down.
    fn router(
        self: Box<Self>,
        registry: &Registry,
        guard: Guard,
        cancellation: CancellationToken,
    ) -> Router;
}

/// An HTTP server: MCP over Streamable HTTP, and the routes composed beside it.
///
/// ```rust,standalone_crate
/// use tower_service::Service;
/// use toolgate::http::{HttpOptions, HttpServer};
/// use toolgate::mcp::McpServer;
/// use toolgate::prelude::*;
/// use toolgate::param::CancellationToken;
///
/// /// Add two integers.
/// #[tool(public, read_only)]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mcp = McpServer::new(Registry::builder().build().unwrap()).name("calculator");
/// let server = HttpServer::new(mcp).options(HttpOptions::default().stateless(true).json_response(true));
/// // `serve(address)` listens; `router` gives the same routes to mount in an axum app, or to drive here.
/// let mut router = server.router(CancellationToken::new());
/// let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40}}}"#;
/// let request = http::Request::post("/mcp")
///     .header("host", "127.0.0.1")
///     .header("content-type", "application/json")
///     .header("accept", "application/json, text/event-stream")
///     .header("mcp-protocol-version", "2025-11-25")
///     .body(axum::body::Body::from(body))
///     .unwrap();
/// let response = router.call(request).await.unwrap();
/// let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
/// let reply: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
/// assert_eq!(reply["result"]["content"][0]["text"], "42", "{reply}");
/// # });
/// ```
pub struct HttpServer<H = ToolsOnly> {
    mcp: McpServer<H>,
    options: HttpOptions,
    authenticator: Option<Arc<dyn Authenticator>>,
    /// Accept delegation tokens, and hand them out at `/delegations`.
    delegations: bool,
    /// This server as an OAuth resource server: its metadata, named in every challenge.
    resource: Option<ProtectedResource>,
    mounts: Vec<Box<dyn Mount>>,
    routes: Router,
}

impl<H> std::fmt::Debug for HttpServer<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("options", &self.options)
            .field("authenticates", &self.authenticator.is_some())
            .field("delegations", &self.delegations)
            .field(
                "resource",
                &self.resource.as_ref().map(ProtectedResource::resource),
            )
            .field("mounts", &self.mounts.len())
            .finish_non_exhaustive()
    }
}

impl<H: ServerHandler + Clone + Send + Sync + 'static> HttpServer<H> {
    /// A server of `mcp` at [`HttpOptions::path`] (`/mcp`), with the default options.
    pub fn new(mcp: McpServer<H>) -> Self {
        HttpServer {
            mcp,
            options: HttpOptions::default(),
            authenticator: None,
            delegations: false,
            resource: None,
            mounts: Vec::new(),
            routes: Router::new(),
        }
    }

    /// HTTP settings: allowed hosts and origins, body limit, session mode, shutdown grace.
    #[must_use]
    pub fn options(mut self, options: HttpOptions) -> Self {
        self.options = options;
        self
    }

    /// Maps requests to callers; a request it does not accept gets 401 and runs nothing. Without one,
    /// every request is served as the MCP server's
    /// [`default_caller`](crate::mcp::McpServer::default_caller).
    #[must_use]
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Accepts delegation tokens (`Authorization: Bearer tgd....`, sealed by
    /// [`Registry::seal_delegation`]) as the delegated callers they carry, and hands them out: an
    /// authenticated caller posts `{"to", "abilities", "expires_in_secs"}` (with optional `role`,
    /// `profile` and `max_calls`) to `/delegations` and gets `{"token", ...}` for a sub-agent in another
    /// process. A token that was altered, forged, has expired, or claims more than its parent held gets
    /// 401. Off by default.
    ///
    /// ```rust,standalone_crate
    /// use serde_json::json;
    /// use toolgate::http::{BearerTokens, HttpOptions, HttpServer};
    /// use toolgate::mcp::McpServer;
    /// use toolgate::prelude::*;
    ///
    /// # async fn post(router: &mut axum::Router, path: &str, token: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    /// #     use tower_service::Service;
    /// #     let request = http::Request::post(path)
    /// #         .header("host", "127.0.0.1")
    /// #         .header("authorization", format!("Bearer {token}"))
    /// #         .header("content-type", "application/json")
    /// #         .header("accept", "application/json, text/event-stream")
    /// #         .header("mcp-protocol-version", "2025-11-25")
    /// #         .body(axum::body::Body::from(body.to_string()))
    /// #         .unwrap();
    /// #     let response = router.call(request).await.unwrap();
    /// #     let status = response.status().as_u16();
    /// #     let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    /// #     (status, serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null))
    /// # }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let ada = Caller::new("ada").with_abilities(["orders.view", "orders.manage"]);
    /// let server = HttpServer::new(McpServer::new(Registry::builder().build().unwrap()))
    ///     .authenticator(BearerTokens::new().token("ada-secret", ada))
    ///     .options(HttpOptions::default().stateless(true).json_response(true))
    ///     .accept_delegations();
    /// let mut router = server.router(toolgate::param::CancellationToken::new());
    /// let asked = json!({ "to": "researcher", "abilities": ["orders.view"], "expires_in_secs": 600 });
    /// let (status, granted) = post(&mut router, "/delegations", "ada-secret", asked).await;
    /// assert_eq!((status, &granted["abilities"]), (201, &json!(["orders.view"])));
    ///
    /// let token = granted["token"].as_str().unwrap();
    /// let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    /// assert_eq!(post(&mut router, "/mcp", token, ping.clone()).await.0, 200);
    /// assert_eq!(post(&mut router, "/mcp", &format!("{token}x"), ping).await.0, 401);
    /// # });
    /// ```
    #[must_use]
    pub fn accept_delegations(mut self) -> Self {
        self.delegations = true;
        self
    }

    /// Serves as an OAuth 2.1 protected resource: `resource`'s metadata at both well-known paths, and
    /// its address in every `401` and `403` challenge, so that a client that meets one can find where
    /// to sign in. The [`authenticator`](Self::authenticator) validates the tokens those authorization
    /// servers issue.
    ///
    /// ```
    /// use toolgate::http::{HttpServer, ProtectedResource};
    /// use toolgate::mcp::McpServer;
    ///
    /// let resource = ProtectedResource::new("https://tools.example.com/mcp")?
    ///     .authorization_server("https://login.example.com");
    /// let server = HttpServer::new(McpServer::new(toolgate::Registry::builder().build().unwrap()))
    ///     .protected_resource(resource);
    /// # let _ = server;
    /// # Ok::<(), String>(())
    /// ```
    #[must_use]
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.resource = Some(resource);
        self
    }

    /// Serves `routes` beside MCP behind the same gate: each request is admitted by the same
    /// authenticator and `Host` and `Origin` checks before it reaches them.
    #[must_use]
    pub fn mount(mut self, routes: impl Mount) -> Self {
        self.mounts.push(Box::new(routes));
        self
    }

    /// Serves `router` beside MCP as it is: its routes are your own, and check what they need
    /// themselves (the gate does not run for them).
    #[must_use]
    pub fn merge(mut self, router: Router) -> Self {
        self.routes = self.routes.merge(router);
        self
    }

    /// Every route as one axum router, to serve in an application of your own. MCP's sessions, and
    /// what the mounted routes wait on, end when `cancellation` is cancelled.
    pub fn router(self, cancellation: CancellationToken) -> Router {
        let handler = self.mcp.handler();
        self.routes(handler, cancellation, &Arc::default()).router
    }

    fn routes(
        self,
        handler: McpHandler<H>,
        cancellation: CancellationToken,
        responses: &Arc<Responses>,
    ) -> Routes {
        let options = &self.options;
        let registry = self.mcp.registry();
        let config = options.rmcp_config(cancellation.clone());
        let sessions = (!options.stateless).then(|| {
            BoundSessions::new(
                registry.clone(),
                options.sessions_per_caller,
                options.session_idle,
            )
        });
        // The fast lane: on a stateless server that answers with JSON, and in every session.
        let direct = (sessions.is_some() || options.json_response).then(|| {
            Arc::new(Direct::new(
                handler.for_session(),
                options.max_body_bytes,
                options.allowed_hosts.as_deref(),
                sessions.clone(),
                options.json_response,
            ))
        });
        let factory = move || Ok(handler.for_session());
        if let Some(authenticator) = &self.authenticator {
            authenticator.serves(registry);
        }
        let credentials = Credentials {
            authenticator: self.authenticator.clone(),
            default_caller: self.mcp.caller_by_default().clone(),
            delegations: self.delegations.then(|| registry.clone()),
            resource: self.resource.as_ref().map(|r| Arc::from(r.metadata_url())),
            steps_up: (self.authenticator.as_ref())
                .filter(|authenticator| authenticator.steps_up())
                .map(|_| registry.clone()),
        };
        let hosts = Hosts {
            hosts: options.allowed_hosts.clone(),
            origins: options.origins(),
        };
        let gate = Arc::new(Gate {
            credentials: credentials.clone(),
            responses: Arc::clone(responses),
            sessions: sessions.clone(),
            idle: options.limits.idle,
            hosts: hosts.clone(),
        });
        let path = options.path.as_str();
        let mut routes = match sessions {
            None => route(
                path,
                gate,
                factory,
                NeverSessionManager::default().into(),
                config,
                direct,
            ),
            Some(manager) => route(path, gate, factory, manager, config, direct),
        };
        let guard = Guard::new(credentials, hosts);
        if self.delegations {
            routes.router = routes.router.merge(delegations::router(guard.clone()));
        }
        for mount in self.mounts {
            let mounted = mount.router(registry, guard.clone(), cancellation.clone());
            routes.router = routes.router.merge(mounted);
        }
        // The app's routes first: a fallback of its own is kept, and otherwise the mounted routes' (the
        // admin API's 404s carry its security headers).
        if let Some(resource) = &self.resource {
            routes.router = routes.router.merge(resource.router());
        }
        routes.router = self.routes.merge(routes.router);
        routes
    }

    /// Serves at `address` until Ctrl-C, then shuts down gracefully.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn serve(self, address: impl ToSocketAddrs) -> std::io::Result<()> {
        let listener = TcpListener::bind(address).await?;
        self.serve_listener(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    }

    /// Serves on `listener` until `shutdown` completes. Then it refuses new calls, waits until the
    /// responses in flight are sent (up to the shutdown grace), and closes the sessions.
    ///
    /// # Errors
    /// When serving fails.
    pub async fn serve_listener(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let handler = self.mcp.handler();
        let draining = handler.draining();
        let cancellation = CancellationToken::new();
        let responses = Arc::new(Responses::default());
        let grace = self.options.shutdown_grace;
        let limits = self.options.limits;
        let routes = self.routes(handler, cancellation.clone(), &responses);
        let draining = async move {
            shutdown.await;
            draining.start();
            let _ = tokio::time::timeout(grace, responses.until_idle()).await;
            cancellation.cancel();
        };
        connections::serve(listener, routes, limits, grace, draining).await
    }
}
