//! Streamable HTTP: rmcp's service behind authentication, with sessions bound to their callers,
//! DNS-rebinding checks, a body limit, connection limits and timeouts, and a graceful shutdown that lets
//! in-flight calls finish. On a stateless server that answers with JSON, the hot requests are answered
//! behind the same gate without rmcp's per-request service (`direct::http`).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use http::{Method, StatusCode};
use http_body::{Body as _, Frame, SizeHint};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::Notify;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use super::admin::{self, Admins};
use super::auth::{Credentials, Hosts, unauthorized};
use super::call::FromHttp;
use super::connections::{self, Limits, ResponseFuture, Routes};
use super::delegations;
use super::direct::http::{Declined, Direct};
use super::sessions::{BoundSession, BoundSessions, Opening, Unbound};
use super::{McpHandler, McpServer};

/// The header that names a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// HTTP settings of an [`McpServer`]. The defaults are safe for a server on loopback.
///
/// Behind a proxy that forwards its public name, allow that name; requests naming another host are refused
/// (DNS rebinding), and so are bodies over the limit:
///
/// ```
/// use tower_service::Service;
/// use toolgate::mcp::{HttpOptions, McpServer};
/// use toolgate::Registry;
/// use toolgate::param::CancellationToken;
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
    sessions_per_caller: usize,
    session_idle: Duration,
    limits: Limits,
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
            sessions_per_caller: 64,
            session_idle: Duration::from_secs(300),
            limits: Limits {
                header_read: Duration::from_secs(30),
                idle: Duration::from_secs(60),
                max: 1024,
                linger: super::repoll::LINGER,
            },
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

    /// How many sessions one caller may have open at once on a stateful server (default 64). An
    /// `initialize` past it gets 429 and opens nothing; sessions close on `DELETE` or after
    /// [`session_idle_timeout`](Self::session_idle_timeout).
    #[must_use]
    pub fn sessions_per_caller(mut self, sessions: usize) -> Self {
        self.sessions_per_caller = sessions.max(1);
        self
    }

    /// How long a session of a stateful server may go without a request before it is closed (default
    /// five minutes). A call still running keeps its session open only while it is the client's
    /// request: a session whose client went away idles out.
    #[must_use]
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.session_idle = idle.max(Duration::from_millis(1));
        self
    }

    /// How long a client may take to send a request's headers (default 30 s), counted from when the
    /// server waits for them: on a new connection, and on a kept-alive one between requests, so that an
    /// idle connection is closed after it too.
    #[must_use]
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read = timeout;
        self
    }

    /// How long a request body may pause between its bytes, and a response wait for the client to read
    /// it (default 60 s). After it, the request fails or the connection closes. A call that takes
    /// longer to run is not idle: only waiting on the client is.
    #[must_use]
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle = timeout;
        self
    }

    /// How many connections may be open at once (default 1024). Past it the server accepts no new
    /// connection until one closes; they wait in the kernel's backlog and take no descriptor.
    #[must_use]
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.limits.max = connections.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self
    }

    /// How long a connection keeps its worker polling for the client's next request, after a request or
    /// a read of its answer (default 300 µs), while it is the server's one open connection and its
    /// client has lately come back within that time. With one request at a time, the next then finds
    /// the worker awake rather than asleep, which on a virtual machine costs more than the call; the
    /// price is polling until the client comes back, up to that long. A client that takes longer (across
    /// a network, or between a person's turns) costs no polling. `Duration::ZERO` never polls: the worker
    /// sleeps as soon as the connection waits.
    #[must_use]
    pub fn linger(mut self, linger: Duration) -> Self {
        self.limits.linger = linger;
        self
    }

    /// The browser origins every endpoint accepts: those allowed, or loopback ones on any port.
    fn origins(&self) -> Vec<String> {
        self.allowed_origins.clone().unwrap_or_else(|| {
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .map(String::from)
                .to_vec()
        })
    }

    fn rmcp_config(&self, cancellation: CancellationToken) -> StreamableHttpServerConfig {
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_origins(self.origins())
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

pin_project_lite::pin_project! {
    /// A request body that fails when its client pauses for longer than the idle timeout, and says so,
    /// so that the answer is a 408 rather than rmcp's 500 for a body it could not read. Its timer runs
    /// only while the body waits on its client: one whose bytes came with its headers, as most do, never
    /// sets a timer.
    struct Paced {
        #[pin]
        body: Body,
        #[pin]
        pause: Option<Sleep>,
        idle: Duration,
        stalled: Arc<AtomicBool>,
    }
}

impl Paced {
    /// `body`, paced, and the flag it raises when it stalls.
    fn wrap(body: Body, idle: Duration) -> (Body, Arc<AtomicBool>) {
        let stalled = Arc::new(AtomicBool::new(false));
        let paced = Paced {
            body,
            pause: None,
            idle,
            stalled: Arc::clone(&stalled),
        };
        (Body::new(paced), stalled)
    }
}

impl http_body::Body for Paced {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(poll_paced(this.body, this.pause, *this.idle, cx));
        Poll::Ready(frame.map(|frame| {
            frame.map_err(|unread| match unread {
                Unread::Paused => {
                    this.stalled.store(true, Ordering::Relaxed);
                    io::Error::new(io::ErrorKind::TimedOut, "the request body paused").into()
                }
                Unread::Failed(error) => error.into(),
            })
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Why a request body could not be read.
#[derive(Debug)]
enum Unread {
    /// Its client paused for longer than the idle timeout.
    Paused,
    /// Reading it failed.
    Failed(axum::Error),
}

/// `body`'s next frame, or [`Unread::Paused`] once it has waited on its client for `idle`: `pause`
/// times the wait, and is set only when the body waits.
fn poll_paced(
    body: Pin<&mut Body>,
    mut pause: Pin<&mut Option<Sleep>>,
    idle: Duration,
    cx: &mut Context<'_>,
) -> Poll<Option<Result<Frame<Bytes>, Unread>>> {
    if let Poll::Ready(frame) = body.poll_frame(cx) {
        pause.set(None);
        return Poll::Ready(frame.map(|frame| frame.map_err(Unread::Failed)));
    }
    if pause.is_none() {
        pause.set(Some(tokio::time::sleep(idle)));
    }
    match pause.as_pin_mut().map(|pause| pause.poll(cx)) {
        Some(Poll::Ready(())) => Poll::Ready(Some(Err(Unread::Paused))),
        _ => Poll::Pending,
    }
}

/// All of `body`'s bytes, paced as [`Paced`] paces them: its one piece as it came, or its pieces joined.
async fn whole(mut body: Body, idle: Duration) -> Result<Bytes, Unread> {
    let mut pause = std::pin::pin!(None);
    let mut one = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) =
        std::future::poll_fn(|cx| poll_paced(Pin::new(&mut body), pause.as_mut(), idle, cx)).await
    {
        let Ok(piece) = frame?.into_data() else {
            continue;
        };
        match &mut joined {
            Some(joined) => joined.extend_from_slice(&piece),
            None if one.is_empty() => one = piece,
            None => {
                let mut both = BytesMut::from(&one[..]);
                both.extend_from_slice(&piece);
                joined = Some(both);
            }
        }
    }
    Ok(joined.map_or(one, BytesMut::freeze))
}

/// Who the HTTP layer lets through, as whom, to which sessions, and which responses are still being
/// written.
struct Gate<H> {
    credentials: Credentials,
    responses: Arc<Responses>,
    /// The sessions of a stateful server; a stateless one has none, and ignores the session header.
    sessions: Option<Arc<BoundSessions<McpHandler<H>>>>,
    /// How long a request body may pause.
    idle: Duration,
}

/// The answer to a request for a session that does not exist, or is not the caller's: the same as
/// rmcp's for an unknown session, so that the two cannot be told apart.
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// rmcp's service behind the gate: authenticates each request (401 without valid credentials, before
/// anything runs), lets a request into a session only from the caller who opened it, binds a new session
/// to its caller, then tracks a POST's response until it is sent. A plain tower service, so a request
/// costs one boxed future here; rmcp's service (its configuration with it) is cloned only for a request
/// that reaches it, not for one the direct path answers.
struct Gated<S, H: ServerHandler + Clone> {
    inner: Arc<S>,
    gate: Arc<Gate<H>>,
    /// The hot requests, answered without rmcp's per-request service.
    direct: Option<Arc<Direct<H>>>,
}

impl<S, H: ServerHandler + Clone> Clone for Gated<S, H> {
    fn clone(&self) -> Self {
        Gated {
            inner: Arc::clone(&self.inner),
            gate: Arc::clone(&self.gate),
            direct: self.direct.clone(),
        }
    }
}

impl<S, H> tower_service::Service<Request> for Gated<S, H>
where
    S: tower_service::Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = ResponseFuture;

    /// Ready: the clone of rmcp's service that a request reaches is made ready before it is called.
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        self.answer(request)
    }
}

impl<S, H> Gated<S, H>
where
    S: tower_service::Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send,
    H: ServerHandler + Clone + Send + Sync + 'static,
{
    /// The answer to `request`, as the tower service and a connection's [`Routes`] give it.
    fn answer(&self, request: Request) -> ResponseFuture {
        let inner = Arc::clone(&self.inner);
        let gate = Arc::clone(&self.gate);
        let direct = self.direct.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let caller = match gate.credentials.caller(&parts).await {
                Ok(caller) => caller,
                Err(reason) => return Ok(unauthorized(reason)),
            };
            // The caller of a request that may open a session, to bind the session to, and where the
            // session's handler leaves itself when it answers the `initialize`.
            let mut opener = None;
            if let Some(sessions) = &gate.sessions {
                match parts.headers.get(SESSION_HEADER).map(|id| id.to_str()) {
                    Some(Ok(id)) if sessions.owned_by(id, &caller) => {
                        let bound = BoundSession(Arc::from(id));
                        parts.extensions.insert(bound);
                    }
                    Some(_) => return Ok(unknown_session()),
                    None => {
                        let opening = Opening::<McpHandler<H>>::new();
                        parts.extensions.insert(opening.clone());
                        opener = Some((caller.clone(), opening));
                    }
                }
            }
            let open = (parts.method == Method::POST).then(|| Open::new(&gate.responses));
            let stalled_answer = || {
                let message = format!(
                    "the request body paused for longer than {} ms; send it without pauses",
                    gate.idle.as_millis()
                );
                (StatusCode::REQUEST_TIMEOUT, message).into_response()
            };
            // The direct path paces the body as it reads it, with no wrapper or flag; one that goes on
            // to rmcp is wrapped, and the wrapper raises `stalled`, since rmcp's answer cannot say why.
            let (body, stalled) = match &direct {
                Some(direct) if let Some(pool) = direct.takes(&parts) => {
                    let bytes = match whole(body, gate.idle).await {
                        Ok(bytes) => bytes,
                        Err(Unread::Paused) => return Ok(stalled_answer()),
                        Err(Unread::Failed(error)) => {
                            let message = format!("Failed to read request body: {error}");
                            return Ok((StatusCode::INTERNAL_SERVER_ERROR, message).into_response());
                        }
                    };
                    let from = FromHttp {
                        parts: &parts,
                        caller: &caller,
                    };
                    match direct.answer(pool, from, bytes).await {
                        Ok(response) => return Ok(tracked(response, open)),
                        Err(Declined(bytes, handover)) => {
                            // The call's lookup goes with it, so that rmcp's dispatch runs it there.
                            if let Some(handover) = handover {
                                parts.extensions.insert(handover);
                            }
                            (Body::from(bytes), None)
                        }
                    }
                }
                _ => {
                    let (body, stalled) = Paced::wrap(body, gate.idle);
                    (body, Some(stalled))
                }
            };
            // rmcp finds the caller among the parts' extensions.
            parts.extensions.insert(caller);
            let mut inner = S::clone(&inner);
            std::future::poll_fn(|cx| inner.poll_ready(cx)).await?;
            let response = inner
                .call(Request::from_parts(parts, body))
                .await?
                .into_response();
            if stalled.is_some_and(|stalled| stalled.load(Ordering::Relaxed)) {
                return Ok(stalled_answer());
            }
            if let (Some((caller, opening)), Some(sessions)) = (opener, &gate.sessions)
                && let Some(id) = response.headers().get(SESSION_HEADER)
                && let Ok(id) = id.to_str()
                && sessions.bind(id, &caller, Some(&opening)) == Err(Unbound::TooMany)
            {
                let _ = sessions.close_session(&Arc::from(id)).await;
                let message = "this caller has too many sessions open: end one with DELETE, or wait \
                               until one idles out";
                return Ok((StatusCode::TOO_MANY_REQUESTS, message).into_response());
            }
            Ok(tracked(response, open))
        })
    }
}

/// `response`, holding the request's [`Open`] (a POST's) until its body has been sent.
fn tracked(response: Response, open: Option<Open>) -> Response {
    match open {
        Some(open) => response.map(|body| Body::new(Tracked { body, _open: open })),
        None => response,
    }
}

/// rmcp's service with `manager`, behind the gate, at `path`.
fn route<H, M>(
    path: &str,
    gate: Arc<Gate<H>>,
    factory: impl Fn() -> Result<McpHandler<H>, std::io::Error> + Send + Sync + 'static,
    manager: Arc<M>,
    config: StreamableHttpServerConfig,
    direct: Option<Arc<Direct<H>>>,
) -> Routes
where
    H: ServerHandler + Clone + Send + Sync + 'static,
    M: SessionManager,
{
    let inner = StreamableHttpService::new(factory, manager, config);
    let gated = Gated {
        inner: Arc::new(inner),
        gate,
        direct,
    };
    Routes {
        path: Arc::from(path),
        endpoint: Arc::new({
            let gated = gated.clone();
            move |request| gated.answer(request)
        }),
        router: Router::new().route_service(path, gated),
    }
}

impl<H: ServerHandler + Clone + Send + Sync + 'static> McpServer<H> {
    /// The MCP endpoint as an axum router, to mount in an existing application (`Router::merge`).
    /// Its sessions end when `cancellation` is cancelled.
    pub fn router(&self, cancellation: CancellationToken) -> Router {
        self.routes(self.handler(), cancellation, &Arc::default())
            .router
    }

    fn routes(
        &self,
        handler: McpHandler<H>,
        cancellation: CancellationToken,
        responses: &Arc<Responses>,
    ) -> Routes {
        let config = self.http.rmcp_config(cancellation.clone());
        let sessions = (!self.http.stateless).then(|| {
            let registry = self.registry.clone();
            let per_caller = self.http.sessions_per_caller;
            BoundSessions::new(registry, per_caller, self.http.session_idle)
        });
        // The direct path: on a stateless server that answers with JSON, and in every session.
        let direct = (sessions.is_some() || self.http.json_response).then(|| {
            let hosts = self.http.allowed_hosts.as_deref();
            let limit = self.http.max_body_bytes;
            Arc::new(Direct::new(
                handler.for_session(),
                limit,
                hosts,
                sessions.clone(),
                self.http.json_response,
            ))
        });
        let factory = move || Ok(handler.for_session());
        let path = self.http.path.as_str();
        let credentials = Credentials {
            authenticator: self.authenticator.clone(),
            default_caller: self.default_caller.clone(),
            delegations: self.delegations.then(|| self.registry.clone()),
        };
        let gate = Arc::new(Gate {
            credentials: credentials.clone(),
            responses: Arc::clone(responses),
            sessions: sessions.clone(),
            idle: self.http.limits.idle,
        });
        let mcp = match sessions {
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
        let hosts = Hosts {
            hosts: self.http.allowed_hosts.clone(),
            origins: self.http.origins(),
        };
        let mut routes = mcp;
        if self.delegations {
            let delegations = delegations::router(credentials.clone(), hosts.clone());
            routes.router = routes.router.merge(delegations);
        }
        if self.admin {
            let admins = Admins { credentials, hosts };
            let admin = admin::router(self.registry.clone(), admins, cancellation);
            routes.router = routes.router.merge(admin);
        }
        routes
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
        let routes = self.routes(handler, cancellation.clone(), &responses);
        let grace = self.http.shutdown_grace;
        let draining = async move {
            shutdown.await;
            shared.draining.store(true, Ordering::Relaxed);
            let _ = tokio::time::timeout(grace, responses.until_idle()).await;
            cancellation.cancel();
        };
        connections::serve(listener, routes, self.http.limits, grace, draining).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Longer than any of these bodies waits.
    const IDLE: Duration = Duration::from_secs(30);

    #[tokio::test]
    async fn a_body_is_read_whole_from_one_piece_or_many() {
        let one = Bytes::from_static(br#"{"id":1}"#);
        let read = whole(Body::from(one.clone()), IDLE).await.unwrap();
        assert_eq!(read.as_ptr(), one.as_ptr(), "one piece is taken as it came");
        let split: [&[&str]; 4] = [
            &[r#"{"id""#, ":1}"],
            &["", r#"{"i"#, "", "d\":", "1}"],
            &[""],
            &[],
        ];
        for pieces in split {
            let stream = futures_util::stream::iter(
                pieces
                    .iter()
                    .map(|piece| Ok::<_, Infallible>(Bytes::from(*piece))),
            );
            let read = whole(Body::from_stream(stream), IDLE).await.unwrap();
            assert_eq!(read, pieces.concat(), "{pieces:?}");
        }
    }
}
