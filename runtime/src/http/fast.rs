//! The direct path over HTTP: on a stateless server that answers with JSON, in the sessions of a
//! stateful one, and on 2026-07-28 on either. A request is taken only when rmcp would take it the same
//! way: a POST of JSON to an allowed host from a non-browser client (no `Origin` for rmcp to weigh),
//! accepting both answers, with a known length within the limit, on a known protocol version; on
//! 2026-07-28, with the `Mcp-Method` and `Mcp-Name` headers rmcp requires, agreeing with the body.
//! Anything else, and any body this path does not serve, is given back for rmcp.
//!
//! A 2026-07-28 request is served without a session on every server, as rmcp serves it, and answered as
//! rmcp's own dispatch answers it for the version (`FastRequest::answer`); its answer is JSON, or SSE on a
//! server that answers so, with the HTTP status rmcp gives an error.
//!
//! Without sessions, each request runs with a peer of its own, taken from a pool, whose outgoing
//! messages are kept: when a call sent log messages or a `tools/list_changed`, the answer is an SSE
//! stream of them and the result, as rmcp's would be; otherwise it is one JSON body.
//!
//! In a session, the request runs with the session's own handler and client, so what the call sends
//! takes the session's streams, as rmcp sends it; the answer is an SSE stream of the result, as a
//! session's answers from rmcp are (without the event ids that would let a client resume a stream
//! that, written whole, needs no resuming). Only a session whose client declared it
//! answers no requests (no sampling, elicitation or roots) is served here: a request a tool sent its
//! client could not ride this answer back, as rmcp lets it ride its own stream.

use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use axum::body::Body;
use axum::response::Response;
use bytes::{Buf, BufMut, Bytes};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use rmcp::model::{
    ClientCapabilities, ErrorCode, Implementation, InitializeRequestParams, ProtocolVersion,
    ServerJsonRpcMessage,
};
use rmcp::service::{RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{Peer, RoleServer, ServerHandler};

use crate::registry::{Handover, Registry, Snapshot};
use crate::sync::Locked;

use crate::mcp::{
    Answer, BoundSession, FastRequest, FromHttp, McpHandler, declares_param_headers, encode,
    negotiated_once,
};

use super::answers::json_response;
use super::auth::Credentials;
use super::headers::{MCP_METHOD, MCP_NAME};
use super::sessions::BoundSessions;

/// How many idle peers each protocol version keeps for the next requests.
const POOLED_PEERS: usize = 64;

/// The header a client names its protocol version in, named once rather than parsed on every request.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");

/// Asks a proxy such as nginx to pass each event on as it comes, as rmcp's streams do.
const ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");

/// The direct path of one stateless JSON server.
pub(super) struct Direct<H: ServerHandler + Clone> {
    handler: McpHandler<H>,
    max_body_bytes: usize,
    /// The `Host` values rmcp accepts, normalized.
    hosts: Vec<Authority>,
    /// Whether any host is accepted: rmcp's rule for an empty list (not for a list of unreadable ones).
    any_host: bool,
    /// The first `Host` value admitted, admitted again as it is without being read: a server's clients
    /// mostly name it alike.
    admitted_host: OnceLock<HeaderValue>,
    /// Idle peers, one pool per protocol version served without per-request negotiation.
    pools: Vec<(ProtocolVersion, Mutex<Vec<PooledPeer<H>>>)>,
    /// The sessions of a stateful server.
    sessions: Option<Arc<BoundSessions<McpHandler<H>>>>,
    /// Whether rmcp answers a request without a session with one JSON body when it can.
    json: bool,
}

/// A host and port, as rmcp compares them.
#[derive(Debug, PartialEq, Eq)]
struct Authority {
    host: String,
    port: Option<u16>,
}

impl Authority {
    fn new(host: &str, port: Option<u16>) -> Self {
        let host = bare_host(host).to_ascii_lowercase();
        Authority { host, port }
    }

    /// An allowed host as rmcp reads it: an authority with or without a port.
    fn allowed(allowed: &str) -> Option<Self> {
        let allowed = allowed.trim();
        if allowed.is_empty() {
            return None;
        }
        Some(match http::uri::Authority::try_from(allowed) {
            Ok(authority) => Authority::new(authority.host(), authority.port_u16()),
            Err(_) => Authority::new(allowed, None),
        })
    }

    /// Whether a request's `host` (without brackets) and `port` are this allowed host's: the host in
    /// any case, as this one is kept in lower case.
    fn admits(&self, host: &str, port: Option<u16>) -> bool {
        self.host.eq_ignore_ascii_case(host)
            && self.port.is_none_or(|allowed| port == Some(allowed))
    }
}

/// A host without the brackets of an IPv6 address.
fn bare_host(host: &str) -> &str {
    host.trim_matches(['[', ']'])
}

/// The host and port of a `Host` header of the common form, a name of letters, digits, dots and dashes
/// with a port of digits or none, read in place as `http` would read the authority; `None` for any
/// other form.
fn plain_host(host: &str) -> Option<(&str, Option<u16>)> {
    let (name, port) = match host.split_once(':') {
        None => (host, None),
        Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (name, Some(port.parse().ok()?))
        }
        Some(_) => return None,
    };
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || b == b'.' || b == b'-';
    (!name.is_empty() && name.bytes().all(name_byte)).then_some((name, port))
}

/// A peer whose outgoing messages land in its outbox, with the idle service that drives it.
struct PooledPeer<H: ServerHandler + Clone> {
    peer: Peer<RoleServer>,
    outbox: Arc<Mutex<Vec<ServerJsonRpcMessage>>>,
    _service: RunningService<RoleServer, McpHandler<H>>,
}

/// The transport of a pooled peer: what it sends is kept for the request that holds it; it receives
/// nothing.
struct Outbox(Arc<Mutex<Vec<ServerJsonRpcMessage>>>);

impl Transport<RoleServer> for Outbox {
    type Error = Infallible;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Infallible>> + Send + 'static {
        self.0.locked().push(item);
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        std::future::pending()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Infallible>> + Send {
        std::future::ready(Ok(()))
    }
}

/// A request this path does not take: its body, given back for rmcp (the gate still holds its parts), with
/// the lookup of the call it holds when this path made one, for the call to run on.
pub(super) struct Declined(pub(super) Bytes, pub(super) Option<Handover>);

/// The request `parsed` from `body` once the lane `takes` its call (see [`FastRequest::resolve`]), or the
/// body given back.
fn taken<'r>(
    parsed: Option<FastRequest<'r>>,
    body: Bytes,
    registry: &'r Registry,
    takes: impl FnOnce(&Snapshot, bool) -> bool,
) -> Result<FastRequest<'r>, Declined> {
    let Some(mut hot) = parsed else {
        return Err(Declined(body, None));
    };
    match hot.resolve(registry, takes) {
        Ok(()) => Ok(hot),
        Err(handover) => Err(Declined(body, Some(handover))),
    }
}

/// The answer that sends `from`'s caller to sign in again before the call `hot` runs, when its
/// authenticator would: one branch on the common path, where it never does.
#[inline]
fn stepped_up(
    credentials: &Credentials,
    from: FromHttp<'_>,
    hot: &FastRequest<'_>,
) -> Option<Response> {
    if !credentials.steps_up() {
        return None;
    }
    refused_before(credentials, from, hot)
}

/// [`stepped_up`]'s work, out of the common path.
#[inline(never)]
fn refused_before(
    credentials: &Credentials,
    from: FromHttp<'_>,
    hot: &FastRequest<'_>,
) -> Option<Response> {
    let refusal = credentials.stepped_up(from.caller, hot.resolution()?)?;
    Some(credentials.refused_call(&refusal, hot.id()))
}

impl<H: ServerHandler + Clone> Direct<H> {
    /// The direct path for `handler`, with rmcp's body limit and allowed hosts (`None`: its defaults),
    /// the sessions of a stateful server, and whether answers are JSON rather than SSE when they can be.
    pub(super) fn new(
        handler: McpHandler<H>,
        max_body_bytes: usize,
        hosts: Option<&[String]>,
        sessions: Option<Arc<BoundSessions<McpHandler<H>>>>,
        json: bool,
    ) -> Self {
        let any_host = hosts.is_some_and(<[String]>::is_empty);
        let hosts = match hosts {
            Some(hosts) => hosts.iter().filter_map(|h| Authority::allowed(h)).collect(),
            None => ["localhost", "127.0.0.1", "::1"]
                .iter()
                .filter_map(|h| Authority::allowed(h))
                .collect(),
        };
        let pools = ProtocolVersion::KNOWN_VERSIONS
            .iter()
            .map(|v| (v.clone(), Mutex::new(Vec::new())))
            .collect();
        Direct {
            handler,
            max_body_bytes,
            hosts,
            any_host,
            admitted_host: OnceLock::new(),
            pools,
            sessions,
            json,
        }
    }

    /// Whether the request's headers let this path take it: a POST of JSON from a non-browser client to
    /// an allowed host, accepting both answers, with a known length within the limit, on a known
    /// protocol version. The version's pool, if so.
    pub(super) fn takes(&self, parts: &Parts) -> Option<usize> {
        if parts.method != Method::POST {
            return None;
        }
        let found = DecidingHeaders::of(&parts.headers);
        if found.origin
            || !self.host_allowed(found.host?)
            || !is_json(found.content_type?)
            || !accepts_both(&parts.headers, &found)
        {
            return None;
        }
        let length: usize = found.content_length?.to_str().ok()?.parse().ok()?;
        if length > self.max_body_bytes {
            return None;
        }
        let version = match found.version {
            None => ProtocolVersion::V_2025_03_26.as_str(),
            Some(value) => value.to_str().ok()?,
        };
        self.pools.iter().position(|(v, _)| v.as_str() == version)
    }

    fn host_allowed(&self, value: &HeaderValue) -> bool {
        if self.admitted_host.get() == Some(value) {
            return true;
        }
        let admitted = value.to_str().is_ok_and(|host| self.admits(host));
        if admitted {
            let _ = self.admitted_host.set(value.clone());
        }
        admitted
    }

    /// Whether `host` is one this server's clients may name, read as rmcp reads it.
    fn admits(&self, host: &str) -> bool {
        let admits = |name, port| {
            self.any_host || self.hosts.iter().any(|allowed| allowed.admits(name, port))
        };
        if let Some((name, port)) = plain_host(host) {
            return admits(name, port);
        }
        let Ok(host) = http::uri::Authority::try_from(host) else {
            return false;
        };
        admits(bare_host(host.host()), host.port_u16())
    }

    /// Answers the request whose headers [`takes`](Self::takes) admitted with pool `pool`, or gives it
    /// back.
    pub(super) async fn answer(
        &self,
        pool: usize,
        from: FromHttp<'_>,
        body: Bytes,
        credentials: &Credentials,
    ) -> Result<Response, Declined> {
        let version = &self.pools[pool].0;
        if !negotiated_once(version) {
            return self.answer_negotiating(pool, from, body, credentials).await;
        }
        if let Some(sessions) = &self.sessions {
            return (self.answer_in_session(sessions, from, body, credentials)).await;
        }
        let registry = &self.handler.shared.registry;
        let parsed = FastRequest::parse(&body, false, None);
        let hot = taken(parsed, body, registry, |_, _| true)?;
        if let Some(refused) = stepped_up(credentials, from, &hot) {
            return Ok(refused);
        }
        let (sent, answer, status) = self.without_session(pool, from, hot).await;
        Ok(respond(sent, answer, status, true))
    }

    /// Answers a request of a version that negotiates per request (2026-07-28), as rmcp answers it on
    /// every server, without a session: once its `Mcp-Method` and `Mcp-Name` headers agree with its body
    /// as rmcp requires, through rmcp's own dispatch, with the HTTP status rmcp gives its answer. A call
    /// on a registry where some tool may ask for `Mcp-Param-*` headers is left to rmcp, which checks them.
    async fn answer_negotiating(
        &self,
        pool: usize,
        from: FromHttp<'_>,
        body: Bytes,
        credentials: &Credentials,
    ) -> Result<Response, Declined> {
        let headers = &from.parts.headers;
        let registry = &self.handler.shared.registry;
        let version = &self.pools[pool].0;
        let parsed = FastRequest::parse(&body, false, Some(version)).filter(|hot| {
            let named = hot.tool().is_none_or(|tool| {
                single(headers, &MCP_NAME) == Some(tool) && !tool.starts_with("=?base64?")
            });
            named && single(headers, &MCP_METHOD) == Some(hot.method())
        });
        let hot = taken(parsed, body, registry, |snapshot, _| {
            !declares_param_headers(snapshot)
        })?;
        if let Some(refused) = stepped_up(credentials, from, &hot) {
            return Ok(refused);
        }
        let (sent, answer, status) = self.without_session(pool, from, hot).await;
        Ok(respond(sent, answer, status, self.json))
    }

    /// Runs `hot` outside any session, as rmcp's stateless path runs a request: with a handler of its own
    /// (no log level set, no tools found by an earlier search) and a pooled peer that keeps what the
    /// call sends; as rmcp's dispatch answers it for its era. What it sent, the answer, and the HTTP
    /// status rmcp gives the answer.
    async fn without_session(
        &self,
        pool: usize,
        from: FromHttp<'_>,
        mut hot: FastRequest<'_>,
    ) -> (Vec<ServerJsonRpcMessage>, Answer, StatusCode) {
        let pooled = self.peer(pool);
        let context = hot.context(pooled.peer.clone());
        let handler = self.handler.for_session();
        let from = Some(from);
        let (answer, error) = hot.answer(&handler, context, from).await;
        let status = error.map_or(StatusCode::OK, status_of);
        let sent = std::mem::take(&mut *pooled.outbox.locked());
        self.put_back(pool, pooled);
        (sent, answer, status)
    }

    /// Answers a request of the session it was checked to belong to, with the session's handler and
    /// client, or gives it back.
    async fn answer_in_session(
        &self,
        sessions: &BoundSessions<McpHandler<H>>,
        from: FromHttp<'_>,
        body: Bytes,
        credentials: &Credentials,
    ) -> Result<Response, Declined> {
        let served = from
            .parts
            .extensions
            .get::<BoundSession>()
            .and_then(|BoundSession(id)| sessions.served(id))
            .filter(|served| answers_nothing(&served.peer));
        let Some(served) = served else {
            return Err(Declined(body, None));
        };
        let registry = &self.handler.shared.registry;
        let parsed = FastRequest::parse(&body, false, None);
        let mut hot = taken(parsed, body, registry, |_, _| true)?;
        if let Some(refused) = stepped_up(credentials, from, &hot) {
            return Ok(refused);
        }
        let context = hot.context(served.peer.clone());
        let (answer, _) = hot.answer(&served.handler, context, Some(from)).await;
        Ok(events(&[], answer))
    }

    fn peer(&self, pool: usize) -> PooledPeer<H> {
        let (version, idle) = &self.pools[pool];
        if let Some(pooled) = idle.locked().pop() {
            return pooled;
        }
        let outbox = Arc::new(Mutex::new(Vec::new()));
        // The client as rmcp's stateless path describes it: no capabilities, the header's version.
        let info =
            InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
                .with_protocol_version(version.clone());
        let service = rmcp::service::serve_directly(
            self.handler.for_session(),
            Outbox(Arc::clone(&outbox)),
            Some(info),
        );
        PooledPeer {
            peer: service.peer().clone(),
            outbox,
            _service: service,
        }
    }

    fn put_back(&self, pool: usize, pooled: PooledPeer<H>) {
        let mut idle = self.pools[pool].1.locked();
        if idle.len() < POOLED_PEERS {
            idle.push(pooled);
        }
    }
}

/// Whether the session's client negotiated a version that does not negotiate per request, and declared
/// that it answers no requests of the server's.
fn answers_nothing(peer: &Peer<RoleServer>) -> bool {
    peer.peer_info().is_some_and(|info| {
        let asks = &info.capabilities;
        negotiated_once(&info.protocol_version)
            && asks.sampling.is_none()
            && asks.elicitation.is_none()
            && asks.roots.is_none()
    })
}

/// The headers this path decides on, each by its first value (as `HeaderMap::get` reads it), found in
/// one pass over a request's headers rather than looked up one by one.
#[derive(Default)]
struct DecidingHeaders<'a> {
    host: Option<&'a HeaderValue>,
    content_type: Option<&'a HeaderValue>,
    content_length: Option<&'a HeaderValue>,
    version: Option<&'a HeaderValue>,
    accept: Option<&'a HeaderValue>,
    /// How many values `Accept` has.
    accepts: usize,
    origin: bool,
}

impl<'a> DecidingHeaders<'a> {
    fn of(headers: &'a HeaderMap) -> Self {
        let mut found = DecidingHeaders::default();
        for (name, value) in headers {
            let first = if name == header::HOST {
                &mut found.host
            } else if name == header::CONTENT_TYPE {
                &mut found.content_type
            } else if name == header::CONTENT_LENGTH {
                &mut found.content_length
            } else if name == PROTOCOL_VERSION {
                &mut found.version
            } else if name == header::ACCEPT {
                found.accepts += 1;
                &mut found.accept
            } else {
                found.origin |= name == header::ORIGIN;
                continue;
            };
            first.get_or_insert(value);
        }
        found
    }
}

fn is_json(value: &HeaderValue) -> bool {
    value.to_str().is_ok_and(|v| {
        let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
        essence
            .trim_ascii()
            .eq_ignore_ascii_case("application/json")
    })
}

/// `Accept` as the SDKs' clients write it, compared whole before any other value is read entry by entry.
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// Whether `Accept` lists both answers plainly, without parameters or quoting for rmcp to weigh.
fn accepts_both(headers: &HeaderMap, found: &DecidingHeaders<'_>) -> bool {
    (found.accepts == 1 && found.accept.is_some_and(|v| v == ACCEPT_BOTH))
        || lists_both(headers.get_all(header::ACCEPT))
}

/// Whether the values list both answers plainly. A header value is visible ASCII, spaces and tabs, so
/// it is read byte by byte.
fn lists_both<'a>(values: impl IntoIterator<Item = &'a HeaderValue>) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in values {
        let Ok(value) = value.to_str() else {
            return false;
        };
        let value = value.as_bytes();
        if value.iter().any(|b| matches!(b, b';' | b'"')) {
            return false;
        }
        for entry in value.split(|b| *b == b',').map(<[u8]>::trim_ascii) {
            json |= entry.eq_ignore_ascii_case(b"application/json");
            sse |= entry.eq_ignore_ascii_case(b"text/event-stream");
        }
    }
    json && sse
}

/// The answer, as rmcp gives it without a session: one JSON body with `status` when nothing was sent
/// before it and `json` asks for one or the status is not OK; otherwise an SSE stream of the messages
/// the call sent and the answer.
fn respond(
    sent: Vec<ServerJsonRpcMessage>,
    answer: Answer,
    status: StatusCode,
    json: bool,
) -> Response {
    if sent.is_empty() && (json || status != StatusCode::OK) {
        return json_response(status, answer.into_vec());
    }
    let sent: Vec<Vec<u8>> = sent.iter().map(encode).collect();
    events(&sent, answer)
}

/// The HTTP status rmcp gives an error answer on a version that negotiates per request, whose `_meta`
/// was complete.
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// The header's one value, when it has exactly one and it is text.
fn single<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// An SSE stream of the messages `sent`, then `answer`.
fn events(sent: &[Vec<u8>], answer: Answer) -> Response {
    let answer = answer.pieces();
    let mut stream = Vec::with_capacity(answer.remaining() + 8);
    for message in sent {
        event(&mut stream, message.as_slice());
    }
    event(&mut stream, answer);
    let mut response = Response::new(Body::from(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(ACCEL_BUFFERING, HeaderValue::from_static("no"));
    response
}

/// `message` as an event of an SSE `stream`.
fn event(stream: &mut Vec<u8>, message: impl Buf) {
    stream.extend_from_slice(b"data: ");
    stream.put(message);
    stream.extend_from_slice(b"\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_is_read_alike_whole_and_entry_by_entry() {
        let both = HeaderValue::from_static(ACCEPT_BOTH);
        assert!(
            lists_both([&both]),
            "the value compared whole reads as both"
        );
        let cases: [(&[&str], bool); 10] = [
            (&["application/json, text/event-stream"], true),
            (&["text/event-stream, application/json"], true),
            (&["APPLICATION/JSON,\ttext/event-stream"], true),
            (&["application/json", "text/event-stream"], true),
            (&["application/json, text/event-stream", "*/*"], true),
            (&["application/json"], false),
            (&["application/json, text/event-stream;q=0.5"], false),
            (&["application/json, \"text/event-stream\""], false),
            (&["*/*"], false),
            (&[], false),
        ];
        for (values, expected) in cases {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(header::ACCEPT, HeaderValue::from_str(value).unwrap());
            }
            let found = DecidingHeaders::of(&headers);
            assert_eq!(accepts_both(&headers, &found), expected, "{values:?}");
        }
    }

    #[test]
    fn a_plain_host_is_read_as_http_reads_the_authority_and_any_other_is_left_to_it() {
        let hosts = [
            "localhost",
            "LocalHost:8080",
            "127.0.0.1:3000",
            "a-b.example:08080",
            "localhost:",
            "localhost:99999",
            "localhost:+80",
            "localhost:80:80",
            "[::1]:8080",
            "user@localhost",
            "",
        ];
        let mut plain = Vec::new();
        for host in hosts {
            let by_http = http::uri::Authority::try_from(host)
                .ok()
                .map(|a| (bare_host(a.host()).to_owned(), a.port_u16()));
            if let Some((name, port)) = plain_host(host) {
                assert_eq!(Some((name.to_owned(), port)), by_http, "{host}");
                plain.push(host);
            }
        }
        assert_eq!(
            plain,
            [
                "localhost",
                "LocalHost:8080",
                "127.0.0.1:3000",
                "a-b.example:08080"
            ]
        );
    }
}
