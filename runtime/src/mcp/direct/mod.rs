//! The hot requests, served by toolgate's own transport loops: `tools/call` of a tool that only reads,
//! `tools/list` and `ping`, over stdio and on a stateless HTTP server that answers with JSON.
//!
//! rmcp's loops spawn a task for every request (over HTTP a whole service too) and hand the answer back
//! over channels; on a small machine those hops between threads cost more than the call. Here the request
//! is parsed into rmcp's own types and dispatched through the same `Service::handle_request` that rmcp's
//! loop calls, so there is one dispatcher, on the task that read the request. A request is taken only
//! when rmcp would take it the same way; anything else (another method, a protocol version that
//! negotiates per request, a progress token over HTTP, a malformed line) goes to rmcp unchanged, byte for
//! byte, and so does every error rmcp would answer itself.

pub(super) mod http;
pub(super) mod stdio;

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequest, ClientRequest, GetExtensions, GetMeta, JsonRpcVersion2_0, ProtocolVersion,
    RequestId, ServerJsonRpcMessage,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer, ServerHandler, Service};

use crate::registry::Registry;
use crate::tool::TaskSupport;

use super::handler::McpHandler;

/// A JSON-RPC request's envelope: its version (which must be 2.0), id and method.
#[derive(serde::Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "jsonrpc")]
    _version: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    method: Cow<'a, str>,
}

/// A request a direct loop serves.
pub(super) struct Hot {
    id: RequestId,
    request: ClientRequest,
}

impl Hot {
    /// The request in `body`, if it is one of the hot ones: `tools/call` of a tool that only reads (or of
    /// no tool at all, which is refused), `tools/list` or `ping`, without a protocol version of its own,
    /// and without a progress token unless `progress` may be relayed. The envelope is read first and
    /// then the one request type its method names, which is what rmcp's untagged `ClientRequest` ends up
    /// choosing, without trying every other type first.
    pub(super) fn parse(body: &[u8], registry: &Registry, progress: bool) -> Option<Hot> {
        let envelope: Envelope<'_> = serde_json::from_slice(body).ok()?;
        let request = match &*envelope.method {
            "tools/call" => {
                let call: CallToolRequest = serde_json::from_slice(body).ok()?;
                if !only_reads(registry, &call.params.name) {
                    return None;
                }
                ClientRequest::CallToolRequest(call)
            }
            "tools/list" => ClientRequest::ListToolsRequest(serde_json::from_slice(body).ok()?),
            "ping" => ClientRequest::PingRequest(serde_json::from_slice(body).ok()?),
            _ => return None,
        };
        let meta = request.get_meta();
        if (!progress && meta.get_progress_token().is_some()) || meta.protocol_version().is_some() {
            return None;
        }
        Some(Hot {
            id: envelope.id,
            request,
        })
    }

    /// The request's id.
    pub(super) fn id(&self) -> &RequestId {
        &self.id
    }

    /// Runs the request through `handler`, as rmcp's loop would, with `peer` for what the call sends the
    /// client and `fill` to complete its context (its cancellation, its HTTP request); the answer as JSON
    /// text. A listing is written from the tools' JSON made once per snapshot, after the same paging and
    /// visibility as the handler's `list_tools`, rather than serializing every schema again.
    pub(super) async fn dispatch<H: ServerHandler + Clone>(
        self,
        handler: &McpHandler<H>,
        peer: Peer<RoleServer>,
        fill: impl FnOnce(&mut RequestContext<RoleServer>),
    ) -> Vec<u8> {
        let Hot { id, mut request } = self;
        let mut context = RequestContext::new(id.clone(), peer);
        std::mem::swap(&mut context.meta, request.get_meta_mut());
        std::mem::swap(&mut context.extensions, request.extensions_mut());
        fill(&mut context);
        if let ClientRequest::ListToolsRequest(list) = request {
            return match handler.page(list.params, &context) {
                Ok(page) => {
                    let mut out = br#"{"jsonrpc":"2.0","id":"#.to_vec();
                    serde_json::to_writer(&mut out, &id).expect("an id serializes");
                    out.extend_from_slice(br#","result":"#);
                    page.result_json(&mut out);
                    out.push(b'}');
                    out
                }
                Err(error) => encode(&ServerJsonRpcMessage::error(error, Some(id))),
            };
        }
        encode(&match handler.handle_request(request, context).await {
            Ok(result) => ServerJsonRpcMessage::response(result, id),
            Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
        })
    }
}

/// Whether a call of `name` only reads: no preview, no questions, no task. Such a call, cut short when
/// its client goes away, leaves nothing half done.
fn only_reads(registry: &Registry, name: &str) -> bool {
    let snapshot = registry.snapshot();
    let resolved = registry.resolve(&snapshot, name);
    resolved.is_none_or(|i| {
        let tool = &snapshot.tools[i].tool;
        tool.read_only
            && !tool.has_preview
            && tool.task == TaskSupport::Forbidden
            && !snapshot.may_ask(resolved)
    })
}

/// Whether a session on `version` negotiates nothing per request, so that its requests may go direct.
pub(super) fn negotiated_once(version: &ProtocolVersion) -> bool {
    *version < ProtocolVersion::V_2026_07_28
}

/// `message` as one line of JSON, as rmcp writes it.
pub(super) fn encode(message: &ServerJsonRpcMessage) -> Vec<u8> {
    serde_json::to_vec(message).expect("rmcp's messages serialize")
}
