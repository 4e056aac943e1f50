//! The hot requests, served by toolgate's own transport loops: `tools/call` of a tool that only reads,
//! `tools/list` and `ping`, over stdio, on a stateless HTTP server that answers with JSON, in the
//! sessions of a stateful one whose client answers no requests of the server's, and over HTTP on
//! 2026-07-28, which every server serves without sessions.
//!
//! rmcp's loops spawn a task for every request (over HTTP a whole service too) and hand the answer back
//! over channels; on a small machine those hops between threads cost more than the call. Here the request
//! is read in one pass into rmcp's own types and answered by the handler's own methods, the ones rmcp's
//! dispatch calls (`call_tool`, `ping`), with the result shaped as that dispatch shapes it for the
//! session's protocol version (a finished call's result written straight from toolgate's own, byte for
//! byte as rmcp writes it: `result`); on a version that negotiates per request (`FastRequest::negotiate`) a call
//! is answered as rmcp's dispatch answers it for that version and anything else goes through that
//! dispatch itself: one dispatcher, on the task that read the request. A request is taken only when rmcp
//! would take it the same way; anything else (another method, a `_meta` that does not declare what its
//! version requires, a progress token over HTTP, a malformed line) goes to rmcp unchanged, byte for
//! byte, and so does every error rmcp would answer itself.

mod answer;
mod read;
mod result;
pub(super) mod stdio;

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, ClientRequest, ErrorCode, ListToolsRequest, PaginatedRequestParams,
    ProtocolVersion, Request, RequestId, RequestMetaObject, RequestNoParam, ServerJsonRpcMessage,
    ServerResult,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, Service};

use crate::registry::{Handover, Registry, Resolved, Snapshot, ToolId};
use crate::tool::TaskSupport;

pub(crate) use self::answer::Answer;
use self::read::ClientMeta;
use self::result::Shape;
use super::call::FromHttp;
use super::convert::CallAnswer;
use super::handler::McpHandler;

/// A request a direct loop serves; a call with the snapshot it was judged on and the tool its name
/// resolved to there, which the call then runs on: one lookup a call.
pub(crate) struct FastRequest<'r> {
    id: RequestId,
    meta: RequestMetaObject,
    /// What its `_meta` says of its client.
    declared: ClientMeta,
    method: Method,
    /// Whether the request may send the client anything before its answer: a call of a tool that may
    /// log, report progress or reach the client's peer.
    sends: bool,
    /// A call's snapshot and the tool its name resolved to in it.
    resolved: Option<Resolved<'r>>,
}

/// What a hot request asks for.
enum Method {
    Call(CallToolRequestParams),
    List(Option<PaginatedRequestParams>),
    Ping,
}

impl<'r> FastRequest<'r> {
    /// The request in `body`, if it is one of the hot ones (`tools/call`, `tools/list` or `ping`), without
    /// a progress token unless `progress` may be relayed. On a version that negotiates per request
    /// (`negotiating`, the version its HTTP header names) its `_meta` names that version and carries all
    /// it requires; otherwise it says nothing of its client: no version, capabilities or name. A call's
    /// tool is not looked up yet: that is [`resolve`](Self::resolve), the lane's last check.
    pub(crate) fn parse(
        body: &[u8],
        progress: bool,
        negotiating: Option<&ProtocolVersion>,
    ) -> Option<FastRequest<'r>> {
        let hot = FastRequest::read(body)?;
        if !hot.declared.admits(negotiating)
            || (!progress && hot.meta.get_progress_token().is_some())
        {
            return None;
        }
        Some(hot)
    }

    /// Looks a call's tool up in `registry`, once for the call, after the resolution hooks: the request
    /// when the lane serves it (a tool that only reads, or none at all, which is refused, and that `takes`
    /// judges the lane may run, given the snapshot and whether the call may send the client anything);
    /// else the request's id and the lookup, which goes with the request to rmcp's dispatch so that the
    /// call runs on it.
    pub(crate) fn resolve(
        mut self,
        registry: &'r Registry,
        takes: impl FnOnce(&Snapshot, bool) -> bool,
    ) -> Result<FastRequest<'r>, (RequestId, Handover)> {
        let Method::Call(call) = &self.method else {
            return Ok(self);
        };
        let resolved = registry.resolved(&call.name);
        match Kind::of(&resolved.snapshot, resolved.tool) {
            Kind::Reads { sends } if takes(&resolved.snapshot, sends) => {
                self.sends = sends;
                self.resolved = Some(resolved);
                Ok(self)
            }
            _ => Err((self.id, resolved.handed_over(&call.name))),
        }
    }

    /// The method's name, as the body and the `Mcp-Method` header spell it.
    pub(crate) fn method(&self) -> &'static str {
        match self.method {
            Method::Call(_) => "tools/call",
            Method::List(_) => "tools/list",
            Method::Ping => "ping",
        }
    }

    /// The name of the tool a call names.
    pub(crate) fn tool(&self) -> Option<&str> {
        match &self.method {
            Method::Call(call) => Some(&call.name),
            _ => None,
        }
    }

    /// The request's id.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// Whether it may send the client anything before its answer.
    pub(crate) fn sends(&self) -> bool {
        self.sends
    }

    /// The request's context with `peer` for what the call sends the client: its id and `_meta`, and a
    /// cancellation token of its own, which a transport completes (with its HTTP request, say).
    pub(crate) fn context(&mut self, peer: Peer<RoleServer>) -> RequestContext<RoleServer> {
        let mut context = RequestContext::new(self.id.clone(), peer);
        context.meta = std::mem::take(&mut self.meta);
        context
    }

    /// Runs the request through `handler`'s own methods with its `context` and, over HTTP, the request it
    /// came `from`, as rmcp's dispatch does for a session that negotiated a version before 2026-07-28
    /// (later ones go through [`negotiate`](Self::negotiate)): `call_tool` (as
    /// [`McpHandler::answer_call`]) or `ping`, and the result in that version's shape; the answer as JSON
    /// text. A listing is the tools' JSON made once per snapshot, after the same paging and visibility as
    /// the handler's `list_tools`, rather than every schema serialized again: a listing of every tool
    /// shares that text whole, any other copies each tool's part of it.
    pub(crate) async fn dispatch<H: ServerHandler + Clone>(
        self,
        handler: &McpHandler<H>,
        context: RequestContext<RoleServer>,
        from: Option<FromHttp<'_>>,
    ) -> Answer {
        let FastRequest {
            id,
            method,
            resolved,
            ..
        } = self;
        let mut out = envelope(&id);
        let mut shared = None;
        let answered = match method {
            Method::List(page) => {
                let caller = from.map_or_else(
                    || Cow::Owned(handler.caller(&context)),
                    |from| Cow::Borrowed(from.caller),
                );
                handler
                    .page(page, &caller)
                    .map(|page| match page.shared_json() {
                        Some(listing) => shared = Some(listing),
                        None => page.result_json(&mut out),
                    })
            }
            Method::Call(params) => handler
                .answer_call(params, context, from, resolved)
                .await
                .map(|answer| match answer {
                    CallAnswer::Done {
                        result,
                        structured_output,
                    } => result::write(&mut out, result, structured_output, Shape::Untyped),
                    CallAnswer::Response(response) => {
                        let mut result = ServerResult::from(response);
                        result.strip_result_type_for_legacy_peer();
                        result.strip_non_object_output_for_legacy_peer();
                        write(&mut out, &result);
                    }
                }),
            Method::Ping => handler
                .ping(context)
                .await
                .map(|()| write(&mut out, &ServerResult::empty(()))),
        };
        match (answered, shared) {
            (Ok(()), Some(listing)) => Answer::around(out, listing),
            (Ok(()), None) => {
                out.push(b'}');
                out.into()
            }
            (Err(error), _) => error_answer(error, id).into(),
        }
    }
}

impl FastRequest<'_> {
    /// Runs a request of a version that negotiates per request (2026-07-28) as rmcp's own dispatch of
    /// `handler` runs it (`Service::handle_request`, which checks what its `_meta` declares and shapes
    /// the result for that version), with its `context`. A call on a version the handler supports, whose
    /// `_meta` [`parse`](Self::parse) checked as that dispatch does, goes to `answer_call` as that
    /// dispatch calls it, and its answer is shaped as there ([`typed`]; its errors pass unchanged, as a
    /// call's do there); anything else goes through that dispatch itself, with the HTTP request it came
    /// `from` among the context's extensions. The answer as JSON text, and its error's code if it is one.
    pub(crate) async fn negotiate<H: ServerHandler + Clone>(
        self,
        handler: &McpHandler<H>,
        mut context: RequestContext<RoleServer>,
        from: Option<FromHttp<'_>>,
    ) -> (Vec<u8>, Option<ErrorCode>) {
        let FastRequest {
            id,
            method,
            declared,
            resolved,
            ..
        } = self;
        let supported = declared.version.is_some_and(|version| {
            ServerHandler::supported_protocol_versions(handler).contains(&version)
        });
        let request = match method {
            Method::Call(params) if supported => {
                let answered = handler.answer_call(params, context, from, resolved).await;
                return answered_or_failed(answered.map(|answer| typed(answer, &id)), id);
            }
            Method::Call(params) => ClientRequest::CallToolRequest(Request::new(params)),
            Method::List(params) => ClientRequest::ListToolsRequest(ListToolsRequest {
                params,
                ..ListToolsRequest::default()
            }),
            Method::Ping => ClientRequest::PingRequest(RequestNoParam::default()),
        };
        if let Some(from) = from {
            context.extensions.insert(from.to_parts());
        }
        // Boxed: rmcp's dispatch of every method is a large future, which a call's would otherwise
        // carry and move.
        let answered = Box::pin(Service::handle_request(handler, request, context)).await;
        let encoded =
            answered.map(|result| encode(&ServerJsonRpcMessage::response(result, id.clone())));
        answered_or_failed(encoded, id)
    }
}

/// The answer to call `id` on 2026-07-28, as rmcp's dispatch shapes `answer` for that version: a finished
/// result with its `resultType`, anything else as it is (cache hints are for listings).
fn typed(answer: CallAnswer, id: &RequestId) -> Vec<u8> {
    match answer {
        CallAnswer::Done {
            result,
            structured_output,
        } => {
            let mut out = envelope(id);
            result::write(&mut out, result, structured_output, Shape::Typed);
            out.push(b'}');
            out
        }
        CallAnswer::Response(response) => encode(&ServerJsonRpcMessage::response(
            ServerResult::from(response),
            id.clone(),
        )),
    }
}

/// The answer, or the error answer to request `id` with its code.
fn answered_or_failed(
    answered: Result<Vec<u8>, ErrorData>,
    id: RequestId,
) -> (Vec<u8>, Option<ErrorCode>) {
    match answered {
        Ok(answer) => (answer, None),
        Err(error) => {
            let code = error.code;
            (error_answer(error, id), Some(code))
        }
    }
}

/// The start of the answer to request `id`, up to its result.
#[inline]
fn envelope(id: &RequestId) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, id).expect("an id serializes");
    out.extend_from_slice(br#","result":"#);
    out
}

/// `result` as JSON after the envelope in `out`.
fn write(out: &mut Vec<u8>, result: &ServerResult) {
    serde_json::to_writer(out, result).expect("rmcp's results serialize");
}

/// The JSON-RPC error answer to request `id`.
fn error_answer(error: ErrorData, id: RequestId) -> Vec<u8> {
    encode(&ServerJsonRpcMessage::error(error, Some(id)))
}

/// What a call of the tool its name resolved to is, for a direct lane.
enum Kind {
    /// It may change data, show a preview, ask, or run as a task: rmcp's dispatch runs it.
    Involved,
    /// It only reads (or names no tool, and is refused). Cut short when its client goes away, it leaves
    /// nothing half done. It may send the client something before its answer (`sends`): progress, log
    /// messages, or a use of the client's peer.
    Reads { sends: bool },
}

impl Kind {
    /// The kind of a call of the tool `resolved` in `snapshot`.
    fn of(snapshot: &Snapshot, resolved: Option<ToolId>) -> Kind {
        let Some(index) = resolved else {
            return Kind::Reads { sends: false };
        };
        let registered = &snapshot.tool(index);
        let tool = &registered.tool;
        if tool.read_only
            && !tool.has_preview
            && tool.task == TaskSupport::Forbidden
            && !snapshot.may_ask(resolved)
        {
            let sends = registered.uses.reports || registered.uses.extensions;
            Kind::Reads { sends }
        } else {
            Kind::Involved
        }
    }
}

/// Whether a session on `version` negotiates nothing per request, so that its requests may go direct.
pub(crate) fn negotiated_once(version: &ProtocolVersion) -> bool {
    *version < ProtocolVersion::V_2026_07_28
}

/// `message` as one line of JSON, as rmcp writes it.
pub(crate) fn encode(message: &ServerJsonRpcMessage) -> Vec<u8> {
    serde_json::to_vec(message).expect("rmcp's messages serialize")
}
