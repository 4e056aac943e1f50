//! The gate before MCP: every request is authenticated before anything runs, a session is entered only
//! by the caller who opened it and a new one is bound to its caller, the fast lane answers what it can,
//! and a POST's response is tracked until it is sent, for a graceful shutdown.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::ACCESS_CONTROL_REQUEST_HEADERS;
use http::request::Parts;
use http::{Method, StatusCode};
use http_body::{Frame, SizeHint};
use rmcp::ServerHandler;
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;

use crate::caller::Caller;
use crate::mcp::{BoundSession, FromHttp, McpHandler, Opening};

use super::auth::{Credentials, Hosts};
use super::body::{Paced, Unread, whole};
use super::challenge::Refusal;
use super::connections::{ResponseFuture, Routes};
use super::cors;
use super::fast::{Declined, Direct};
use super::sessions::{BoundSessions, Unbound};

/// The header that names a Streamable HTTP session.
const SESSION_HEADER: &str = "mcp-session-id";

/// POST requests whose responses are still being written: a shutdown waits for them before it closes the
/// sessions, so that no result of a call in flight is lost.
#[derive(Default)]
pub(super) struct Responses {
    open: AtomicUsize,
    idle: Notify,
}

/// Held by one response until its body has been sent (or its connection dropped).
pub(super) struct Open(Arc<Responses>);

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
    pub(super) async fn until_idle(&self) {
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

/// Who the HTTP layer lets through, as whom, to which sessions, and which responses are still being
/// written.
pub(super) struct Gate<H> {
    pub(super) credentials: Credentials,
    pub(super) responses: Arc<Responses>,
    /// The sessions of a stateful server; a stateless one has none, and ignores the session header.
    pub(super) sessions: Option<Arc<BoundSessions<McpHandler<H>>>>,
    /// How long a request body may pause.
    pub(super) idle: Duration,
    /// The browser origins whose requests may read the answers.
    pub(super) hosts: Hosts,
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
        // A browser's request from an allowed origin: its preflight is answered before anything else
        // (it carries no credentials), and every answer, a challenge included, is readable to it.
        let origin = gate.hosts.browser_origin(request.headers());
        if let Some(origin) = &origin
            && request.method() == Method::OPTIONS
        {
            let asked = request
                .headers()
                .get(ACCESS_CONTROL_REQUEST_HEADERS)
                .cloned();
            return Box::pin(std::future::ready(Ok(cors::preflight(
                origin.clone(),
                asked,
            ))));
        }
        let answered = async move {
            let (mut parts, body) = request.into_parts();
            let caller = match gate.credentials.caller(&parts).await {
                Ok(caller) => caller,
                Err(refusal) => return Ok(gate.credentials.refused(&refusal)),
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
                    let credentials = &gate.credentials;
                    match direct.answer(pool, from, bytes, credentials).await {
                        Ok(response) => return Ok(tracked(response, open)),
                        Err(Declined(bytes, handover)) => {
                            match handover {
                                // The call's lookup goes with it, so that rmcp's dispatch runs it there.
                                Some(handover) => {
                                    let resolution = handover.resolution();
                                    if let Some(refusal) =
                                        credentials.stepped_up(&caller, resolution)
                                    {
                                        return Ok(refused_call(credentials, &refusal, &bytes));
                                    }
                                    parts.extensions.insert(handover);
                                }
                                None => {
                                    if let Some(refused) = by_name(credentials, &caller, &mut parts)
                                    {
                                        return Ok(refused);
                                    }
                                }
                            }
                            (Body::from(bytes), None)
                        }
                    }
                }
                _ => {
                    if let Some(refused) = by_name(&gate.credentials, &caller, &mut parts) {
                        return Ok(refused);
                    }
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
        };
        match origin {
            None => Box::pin(answered),
            Some(origin) => Box::pin(async move {
                answered
                    .await
                    .map(|response| cors::readable(response, origin))
            }),
        }
    }
}

/// For a request the direct path did not look up, when the authenticator steps up: the answer that
/// sends its client to sign in again for the tool its `Mcp-Name` header names, or `None`, with the
/// tool's lookup put among `parts`' extensions for rmcp's dispatch.
/// The answer that refuses the call in `body` for `refusal`: with the challenge in its result too,
/// when the body's id can be read.
#[cold]
fn refused_call(credentials: &Credentials, refusal: &Refusal, body: &[u8]) -> Response {
    #[derive(serde::Deserialize)]
    struct Id {
        id: rmcp::model::RequestId,
    }
    match serde_json::from_slice::<Id>(body) {
        Ok(Id { id }) => credentials.refused_call(refusal, &id),
        Err(_) => credentials.refused(refusal),
    }
}

fn by_name(credentials: &Credentials, caller: &Caller, parts: &mut Parts) -> Option<Response> {
    match credentials.resolved_by_name(caller, &parts.headers)? {
        Err(refusal) => Some(credentials.refused(&refusal)),
        Ok(handover) => {
            parts.extensions.insert(handover);
            None
        }
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
pub(super) fn route<H, M>(
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
