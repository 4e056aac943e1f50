//! The settings of an HTTP server: where MCP is served, which hosts and origins are answered, the limits
//! of bodies, sessions and connections, and how long a shutdown waits.

use std::time::Duration;

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use tokio_util::sync::CancellationToken;

use super::connections::ConnectionLimits;

/// HTTP settings of an [`HttpServer`](super::HttpServer). The defaults are safe for a server on loopback.
///
/// Behind a proxy that forwards its public name, allow that name; requests naming another host are refused
/// (DNS rebinding), and so are bodies over the limit:
///
/// ```
/// use tower_service::Service;
/// use toolgate::http::{HttpOptions, HttpServer};
/// use toolgate::mcp::McpServer;
/// use toolgate::Registry;
/// use toolgate::param::CancellationToken;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let options = HttpOptions::default()
///     .allowed_hosts(["tools.example.com"])
///     .max_body_bytes(64 * 1024)
///     .stateless(true);
/// let server = HttpServer::new(McpServer::new(Registry::builder().build()?)).options(options);
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
    pub(super) path: String,
    pub(super) allowed_hosts: Option<Vec<String>>,
    pub(super) allowed_origins: Option<Vec<String>>,
    pub(super) max_body_bytes: usize,
    pub(super) stateless: bool,
    pub(super) json_response: bool,
    pub(super) shutdown_grace: Duration,
    pub(super) sessions_per_caller: usize,
    pub(super) session_idle: Duration,
    pub(super) limits: ConnectionLimits,
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
            limits: ConnectionLimits {
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
    pub(super) fn origins(&self) -> Vec<String> {
        self.allowed_origins.clone().unwrap_or_else(|| {
            ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .map(String::from)
                .to_vec()
        })
    }

    pub(super) fn rmcp_config(
        &self,
        cancellation: CancellationToken,
    ) -> StreamableHttpServerConfig {
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
