//! Questions during a call over MCP: write approvals and [`Ask`](crate::Ask) requests.
//!
//! 2026-07-28 clients get an `InputRequiredResult` and retry with the answers and the sealed
//! `requestState`. Older clients on a session (stdio, stateful HTTP) get each question as a request during
//! the call. A client with neither gets a write's preview and confirmation to send back in `_meta`.

use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
    ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext, ServiceError};
use rmcp::{ErrorData, Peer, RoleServer};
use serde_json::{Map, Value};

use crate::output::{APPROVAL_KEY, InputRequired, Pending};
use crate::param::ClientSupport;

use super::session::BoundSession;

/// The `_meta` key of a write's sealed confirmation, on the preview result and on the retry that sends
/// it back.
///
/// A client that can show no approval prompt gets the preview and the confirmation; a person approves, and
/// the client sends the confirmation back:
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::http::{HttpOptions, HttpServer};
/// use toolgate::mcp::{McpServer, META_CONFIRMATION, META_PREVIEW};
/// use toolgate::prelude::*;
///
/// /// Refund an order. Changes data.
/// #[tool(public, preview = preview_refund)]
/// async fn refund(order: String) -> String {
///     format!("Refunded {order}.")
/// }
///
/// async fn preview_refund(order: String) -> Preview {
///     Preview::new(format!("Refund {order} (49.00 EUR)"))
/// }
///
/// # async fn post(router: &mut axum::Router, body: serde_json::Value) -> serde_json::Value {
/// #     use tower_service::Service;
/// #     let request = http::Request::post("/mcp")
/// #         .header("host", "127.0.0.1")
/// #         .header("content-type", "application/json")
/// #         .header("accept", "application/json, text/event-stream")
/// #         .header("mcp-protocol-version", "2025-11-25")
/// #         .body(axum::body::Body::from(body.to_string()))
/// #         .unwrap();
/// #     let response = router.call(request).await.unwrap();
/// #     serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap()
/// # }
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let options = HttpOptions::default().stateless(true).json_response(true);
/// let server = HttpServer::new(McpServer::new(Registry::builder().build().unwrap())).options(options);
/// let mut router = server.router(toolgate::param::CancellationToken::new());
/// let call = |meta: serde_json::Value| json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
///     "params": { "name": "refund", "arguments": { "order": "RO-7" }, "_meta": meta } });
///
/// let preview = post(&mut router, call(json!({}))).await;
/// let meta = &preview["result"]["_meta"];
/// assert_eq!(meta[META_PREVIEW]["text"], "Refund RO-7 (49.00 EUR)");
/// let confirmation = meta[META_CONFIRMATION].as_str().unwrap();
///
/// let done = post(&mut router, call(json!({ META_CONFIRMATION: confirmation }))).await;
/// assert_eq!(done["result"]["content"][0]["text"], "Refunded RO-7.");
/// # });
/// ```
pub const META_CONFIRMATION: &str = "io.toolgate/confirmation";
/// The `_meta` key of a write's preview (text and data) on the preview result.
///
/// ```
/// assert_eq!(toolgate::mcp::META_PREVIEW, "io.toolgate/preview"); // see META_CONFIRMATION for its use
/// ```
pub const META_PREVIEW: &str = "io.toolgate/preview";

/// The most rounds of questions one call may take with a client that answers during the call.
pub(crate) const MAX_ROUNDS: usize = 10;

/// How the client of a request can answer questions.
#[derive(Clone)]
pub(crate) enum Questions {
    /// In an `InputRequiredResult`; the client retries the request with the answers (2026-07-28).
    InResult,
    /// As requests during the call (an older client on a session).
    AsRequests(Peer<RoleServer>),
    /// Not at all.
    Unanswerable,
}

impl Questions {
    /// The channel of a request that came with HTTP `parts` (`None`: not over HTTP), and what the client
    /// declared it can answer.
    pub(crate) fn of(
        context: &RequestContext<RoleServer>,
        parts: Option<&http::request::Parts>,
    ) -> (Questions, ClientSupport) {
        let declared = context
            .client_capabilities()
            .map_or(ClientSupport::NONE, |c| support(&c));
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        // Over HTTP, only a session of a stateful server that the caller opened can carry a question;
        // elsewhere (stdio, in memory) the connection is the session.
        let session = parts.is_none_or(|p| p.extensions.get::<BoundSession>().is_some());
        if modern {
            (Questions::InResult, declared)
        } else if session {
            (Questions::AsRequests(context.peer.clone()), declared)
        } else {
            (Questions::Unanswerable, ClientSupport::NONE)
        }
    }
}

fn support(capabilities: &ClientCapabilities) -> ClientSupport {
    ClientSupport {
        elicitation: capabilities.elicitation.is_some(),
        sampling: capabilities.sampling.is_some(),
        roots: capabilities.roots.is_some(),
        url_elicitation: (capabilities.elicitation.as_ref()).is_some_and(|asks| asks.url.is_some()),
    }
}

/// The questions of a call as an `InputRequiredResult`.
pub(crate) fn input_required(input: &InputRequired) -> Result<InputRequiredResult, ErrorData> {
    Ok(InputRequiredResult::new(
        Some(requests(input.requests())?),
        Some(input.state().to_owned()),
    ))
}

/// A write's approval question as an `InputRequiredResult`, its confirmation as the request state.
pub(crate) fn approval(pending: &Pending) -> Result<InputRequiredResult, ErrorData> {
    Ok(InputRequiredResult::new(
        Some(requests(&approval_question(pending))?),
        Some(pending.confirmation().to_owned()),
    ))
}

/// A write's one question, under [`APPROVAL_KEY`].
pub(crate) fn approval_question(pending: &Pending) -> Map<String, Value> {
    let mut questions = Map::new();
    questions.insert(APPROVAL_KEY.to_owned(), pending.approval_request());
    questions
}

pub(super) fn requests(questions: &Map<String, Value>) -> Result<InputRequests, ErrorData> {
    questions
        .iter()
        .map(|(key, request)| {
            let request: InputRequest = serde_json::from_value(request.clone()).map_err(|e| {
                ErrorData::internal_error(
                    format!("question `{key}` is not an MCP request: {e}"),
                    None,
                )
            })?;
            Ok((key.clone(), request))
        })
        .collect()
}

/// Sends each question to the client as a request and collects the answers by key. A question not
/// answered within `timeout` ends the call with an error, and nothing runs.
pub(crate) async fn ask_during(
    peer: &Peer<RoleServer>,
    questions: &Map<String, Value>,
    timeout: Duration,
) -> Result<Map<String, Value>, ErrorData> {
    let mut answers = Map::new();
    for (key, request) in requests(questions)? {
        let request = match request {
            InputRequest::Elicitation(r) => ServerRequest::from(r),
            InputRequest::CreateMessage(r) => ServerRequest::from(r),
            #[allow(deprecated)]
            // roots/list: still served to the clients of the versions that have it
            InputRequest::ListRoots(r) => ServerRequest::from(r),
            _ => continue,
        };
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let unanswered = |e: ServiceError| {
            let reason = match e {
                ServiceError::Timeout { .. } => format!("within {} s", timeout.as_secs()),
                other => format!("({other})"),
            };
            let message =
                format!("The client did not answer `{key}` {reason}; nothing was changed.");
            ErrorData::internal_error(message, None)
        };
        let pending = peer.send_cancellable_request(request, options);
        let answer = pending
            .await
            .map_err(unanswered)?
            .await_response()
            .await
            .map_err(unanswered)?;
        let answer = serde_json::to_value(answer)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        answers.insert(key, answer);
    }
    Ok(answers)
}
