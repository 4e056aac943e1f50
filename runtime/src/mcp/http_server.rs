//! Streamable HTTP: rmcp's service behind authentication, with DNS-rebinding checks, a body limit, a bound
//! on concurrent calls, `TCP_NODELAY`, and a graceful shutdown that lets in-flight calls finish.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body::{Frame, SizeHint};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Authenticator, McpHandler, McpServer};
use crate::Caller;

/// HTTP settings of an [`McpServer`]. The defaults are safe for a server on loopback.
///
/// Behind a proxy that forwards its public name, allow that name; requests naming another host are refused
/// (DNS rebinding), and so are bodies over the limit:
///
/// ```
/// use tower_service::Service;
/// use toolgate::mcp::{HttpOptions, McpServer};
/// use toolgate::{CancellationToken, Registry};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let options = HttpOptions::default()
///     .allowed_hosts(["tools.example.com"])
///     .max_body_bytes(64 * 1024)
///     .stateless(true);
/// let server = McpServer::new(Registry::builder().build()?).http_options(options);
/// let mut router = server.router(CancellationToken::new());
/// let post = |host: &str, body: String| {
///     http::Request::post("/mcp")
///         .header("host", host)
///         .header("content-type", "application/json")
///         .header("accept", "application/json, text/event-stream")
///         .body(axum::body::Body::from(body))
///         .unwrap()
/// };
/// let ping = || r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_owned();
/// assert_eq!(router.call(post("attacker.example", ping())).await.unwrap().status(), 403);
/// let huge = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#, "x".repeat(100_000));
/// assert_eq!(router.call(post("tools.example.com", huge)).await.unwrap().status(), 413);
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct HttpOptions {
    path: String,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    max_body_bytes: usize,
    stateless: bool,
    json_response: bool,
    shutdown_grace: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".to_owned(),
            allowed_hosts: None,
            allowed_origins: None,
            max_body_bytes: 4 << 20,
            stateless: false,
            json_response: false,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl HttpOptions {
    /// The path MCP is served at (default `/mcp`).
    #[must_use]
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The `Host` values accepted (default: `localhost`, `127.0.0.1`, `::1`). A server reachable under
    /// another name must list it, or its requests get 403: this is the DNS-rebinding protection.
    #[must_use]
    pub fn allowed_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The `Origin` values accepted from browsers, with scheme, e.g. `https://app.example` (default:
    /// loopback origins on any port). Requests without an `Origin` header (non-browser clients) pass.
    #[must_use]
    pub fn allowed_origins<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        origins: I,
    ) -> Self {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// The largest request body accepted (default 4 MiB); larger ones get 413.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Serve legacy clients without sessions too (2026-07-28 clients are always served statelessly).
    /// Needed behind a load balancer without sticky sessions.
    #[must_use]
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// On the stateless path, answer with `application/json` rather than an SSE stream when possible.
    #[must_use]
    pub fn json_response(mut self, json: bool) -> Self {
        self.json_response = json;
        self
    }

    /// How long a shutdown waits for in-flight calls (default 30 s).
    #[must_use]
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    fn rmcp_config(&self, cancellation: CancellationToken) -> StreamableHttpServerConfig {
        let origins = self.allowed_origins.clone().unwrap_or_else(|| {
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .map(String::from)
                .to_vec()
        });
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_origins(origins)
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_legacy_session_mode(!self.stateless)
            .with_json_response(self.json_response)
            .with_cancellation_token(cancellation);
        if let Some(hosts) = &self.allowed_hosts {
            config = config.with_allowed_hosts(hosts.clone());
        }
        config
    }
}

/// POST requests whose responses are still being written: a shutdown waits for them before it closes the
/// sessions, so that no result of a call in flight is lost.
#[derive(Default)]
struct Responses {
    open: AtomicUsize,
    idle: Notify,
}

/// Held by one response until its body has been sent (or its connection dropped).
struct Open(Arc<Responses>);

impl Open {
    fn new(responses: &Arc<Responses>) -> Self {
        responses.open.fetch_add(1, Ordering::SeqCst);
        Open(Arc::clone(responses))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if self.0.open.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Responses {
    async fn until_idle(&self) {
        loop {
            let idle = self.idle.notified();
            if self.open.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

/// A response body that holds its request's [`Open`] until it has been sent, and keeps the inner body's
/// exact size so that hyper still writes a `Content-Length` (one write, no chunked encoding).
struct Tracked {
    body: Body,
    _open: Open,
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Who the HTTP layer lets through, as whom, and which responses are still being written.
#[derive(Clone)]
struct Gate {
    authenticator: Option<Arc<dyn Authenticator>>,
    default_caller: Caller,
    responses: Arc<Responses>,
}

/// rmcp's service behind the gate: authenticates each request (401 without valid credentials, before
/// anything runs), then tracks a POST's response until it is sent. A plain tower service, so a request
/// costs one boxed future here and no per-request clone of a boxed inner service.
#[derive(Clone)]
struct Gated<S> {
    inner: S,
    gate: Arc<Gate>,
}

impl<S> tower_service::Service<Request> for Gated<S>
where
    S: tower_service::Service<Request, Error = Infallible> + Clone + Send + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let mut inner = self.inner.clone();
        let gate = Arc::clone(&self.gate);
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let caller = match &gate.authenticator {
                None => Some(gate.default_caller.clone()),
                Some(authenticator) => authenticator.authenticate(&parts).await,
            };
            let Some(caller) = caller else {
                let refusal = [(http::header::WWW_AUTHENTICATE, "Bearer")];
                return Ok((
                    StatusCode::UNAUTHORIZED,
                    refusal,
                    "missing or invalid credentials",
                )
                    .into_response());
            };
            parts.extensions.insert(caller);
            let open = (parts.method == Method::POST).then(|| Open::new(&gate.responses));
            let response = inner
                .call(Request::from_parts(parts, body))
                .await?
                .into_response();
            Ok(match open {
                Some(open) => response.map(|body| Body::new(Tracked { body, _open: open })),
                None => response,
            })
        })
    }
}

impl<H: ServerHandler + Clone + Send + Sync + 'static> McpServer<H> {
    /// The MCP endpoint as an axum router, to mount in an existing application (`Router::merge`).
    /// Its sessions end when `cancellation` is cancelled.
    pub fn router(&self, cancellation: CancellationToken) -> Router {
        self.router_for(self.handler(), cancellation, &Arc::default())
    }

    fn router_for(
        &self,
        handler: McpHandler<H>,
        cancellation: CancellationToken,
        responses: &Arc<Responses>,
    ) -> Router {
        let config = self.http.rmcp_config(cancellation);
        let factory = move || Ok(handler.for_session());
        let path = self.http.path.as_str();
        let gate = Arc::new(Gate {
            authenticator: self.authenticator.clone(),
            default_caller: self.default_caller.clone(),
            responses: Arc::clone(responses),
        });
        if self.http.stateless {
            let service = StreamableHttpService::new(
                factory,
                Arc::new(NeverSessionManager::default()),
                config,
            );
            Router::new().route_service(
                path,
                Gated {
                    inner: service,
                    gate,
                },
            )
        } else {
            let service = StreamableHttpService::new(
                factory,
                Arc::new(LocalSessionManager::default()),
                config,
            );
            Router::new().route_service(
                path,
                Gated {
                    inner: service,
                    gate,
                },
            )
        }
    }

    /// Serves MCP over HTTP at `address` until Ctrl-C, then shuts down gracefully.
    ///
    /// # Errors
    /// When the address cannot be bound.
    pub async fn serve_http(self, address: impl ToSocketAddrs) -> std::io::Result<()> {
        let listener = TcpListener::bind(address).await?;
        self.serve_listener(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    }

    /// Serves MCP over HTTP on `listener` until `shutdown` completes. Then it refuses new calls, waits
    /// until the responses in flight are sent (up to the shutdown grace), and closes the sessions.
    ///
    /// # Errors
    /// When serving fails.
    pub async fn serve_listener(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let handler = self.handler();
        let shared = Arc::clone(&handler.shared);
        let cancellation = CancellationToken::new();
        let responses = Arc::new(Responses::default());
        let router = self.router_for(handler, cancellation.clone(), &responses);
        let grace = self.http.shutdown_grace;
        let listener = listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(target: "toolgate::mcp", %error, "could not set TCP_NODELAY");
            }
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                shared.draining.store(true, Ordering::Relaxed);
                let _ = tokio::time::timeout(grace, responses.until_idle()).await;
                cancellation.cancel();
            })
            .await
    }
}
