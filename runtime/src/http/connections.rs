//! The HTTP server's connections: how many may be open at once, and how long one may wait on its client.
//!
//! hyper serves each connection (HTTP/1.1) with a header-read timeout; writes to a client that stopped
//! reading fail after the idle timeout; past the connection cap the server stops accepting until a
//! connection closes, leaving new ones in the kernel's backlog rather than taking descriptors.
//!
//! A connection gives a POST to the MCP endpoint's path straight to the endpoint's gate, where the
//! router would send it, without the router's matching and the service it clones per request; every
//! other request goes through the router.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use futures_util::future::Either;
use http::Method;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_io_timeout::TimeoutStream;
use tower_service::Service;

use super::repoll::{OpenConnections, Repoll};

/// The limits of the connections of one server, and how long a lone one lingers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    /// How long a client may take to send a request's headers, counted from when the server waits for
    /// them: on a new connection, and on a kept-alive one between requests.
    pub(crate) header_read: Duration,
    /// How long a write may wait for the client to read, and a request body for its next bytes.
    pub(crate) idle: Duration,
    /// How many connections may be open at once.
    pub(crate) max: usize,
    /// How long the server's one open connection keeps its worker polling after its client's wake.
    pub(crate) linger: Duration,
}

/// The answer the MCP endpoint's gate gives a request.
pub(crate) type ResponseFuture = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// What a server's connections serve: the MCP endpoint at `path`, and `router`, which routes to the
/// endpoint too and holds every other route.
#[derive(Clone)]
pub(crate) struct Routes {
    pub(crate) path: Arc<str>,
    pub(crate) endpoint: Arc<dyn Fn(Request) -> ResponseFuture + Send + Sync>,
    pub(crate) router: Router,
}

impl hyper::service::Service<http::Request<Incoming>> for Routes {
    type Response = Response;
    type Error = Infallible;
    type Future = Either<ResponseFuture, RouteFuture<Infallible>>;

    fn call(&self, request: http::Request<Incoming>) -> Self::Future {
        let request = request.map(Body::new);
        if request.method() == Method::POST && request.uri().path() == &*self.path {
            Either::Left((self.endpoint)(request))
        } else {
            Either::Right(self.router.clone().call(request))
        }
    }
}

/// Serves `routes` on `listener` until `shutdown` completes, then lets open connections finish their
/// responses for up to `grace`.
pub(crate) async fn serve(
    listener: TcpListener,
    routes: Routes,
    limits: ConnectionLimits,
    grace: Duration,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max));
    let graceful = GracefulShutdown::new();
    let open = OpenConnections::new(limits.linger);
    let mut shutdown = pin!(shutdown);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = Arc::clone(&slots).acquire_owned() => slot.map_err(io::Error::other)?,
        };
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::debug!(target: "toolgate::mcp", %error, "could not accept a connection");
                    if !is_connection_error(&error) {
                        // Out of descriptors, say: wait before trying again rather than spin.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            },
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(target: "toolgate::mcp", %error, "could not set TCP_NODELAY");
        }
        let mut stream = TimeoutStream::new(stream);
        stream.set_write_timeout(Some(limits.idle));
        let io = TokioIo::new(Box::pin(stream));
        let connection = builder.serve_connection(io, routes.clone());
        let connection = Repoll::new(graceful.watch(connection), open.clone());
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(target: "toolgate::mcp", %error, "connection closed with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(target: "toolgate::mcp", "connections still open after the shutdown grace were dropped");
    }
    Ok(())
}

/// Errors of one connection, after which accepting the next one may go on at once.
fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
