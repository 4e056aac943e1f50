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
//! byte as rmcp writes it: `result`); on a version that negotiates per request (`FastRequest::answer`) a call
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
    /// How its version answers it.
    era: Era,
}

/// How a request's protocol version has it answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// A session's version, negotiated once at `initialize` (before 2026-07-28): results carry no type.
    Session,
    /// A version that negotiates per request (2026-07-28): what a request's `_meta` declares is checked,
    /// and a finished result says it is `complete`.
    PerRequest,
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
        let mut hot = FastRequest::read(body)?;
        if !hot.declared.admits(negotiating)
            || (!progress && hot.meta.get_progress_token().is_some())
        {
            return None;
        }
        if negotiating.is_some() {
            hot.era = Era::PerRequest;
        }
        Some(hot)
    }

    /// Looks a call's tool up in `registry`, once for the call, after the resolution hooks: the request
    /// when the lane serves it (a tool that only reads, or none at all, which is refused, and that `takes`
    /// judges the lane may run, given the snapshot and whether the call may send the client anything);
    /// else the lookup, which goes with the request to rmcp's dispatch so that the call runs on it. In
    /// place: a request is large, and is not moved for it.
    pub(crate) fn resolve(
        &mut self,
        registry: &'r Registry,
        takes: impl FnOnce(&Snapshot, bool) -> bool,
    ) -> Result<(), Handover> {
        let Method::Call(call) = &self.method else {
            return Ok(());
        };
        let resolved = registry.resolved(&call.name);
        match Kind::of(&resolved.snapshot, resolved.tool) {
            Kind::Reads { sends } if takes(&resolved.snapshot, sends) => {
                self.sends = sends;
                self.resolved = Some(resolved);
                Ok(())
            }
            _ => Err(resolved.handed_over(&call.name)),
        }
    }

    /// The snapshot a call's tool was looked up in, and the tool, once [`resolve`](Self::resolve)d.
    pub(crate) fn resolution(&self) -> Option<(&Snapshot, Option<ToolId>)> {
        self.resolved
            .as_ref()
            .map(|resolved| (&*resolved.snapshot, resolved.tool))
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

    /// Runs the request through `handler` with its `context` and, over HTTP, the request it came `from`,
    /// as rmcp's dispatch runs it for the request's era, and answers as that dispatch answers:
    /// - a call (on a per-request version, one the handler supports, whose `_meta` [`parse`](Self::parse)
    ///   checked as that dispatch does) goes to `call_tool` (as [`McpHandler::answer_call`]), its result
    ///   written in the era's shape;
    /// - in a session, a listing is the tools' JSON made once per snapshot, after the same paging and
    ///   visibility as the handler's `list_tools`, rather than every schema serialized again (a listing
    ///   of every tool shares that text whole, any other copies each tool's part of it), and `ping` is
    ///   the handler's own;
    /// - anything else on a per-request version goes through that dispatch itself
    ///   (`Service::handle_request`), with the HTTP request among the context's extensions.
    ///
    /// The answer, and on a per-request version its error's code if it is one (the HTTP status follows
    /// it there; a session's errors are answered with 200, as rmcp answers them).
    pub(crate) async fn answer<H: ServerHandler + Clone>(
        self,
        handler: &McpHandler<H>,
        mut context: RequestContext<RoleServer>,
        from: Option<FromHttp<'_>>,
    ) -> (Answer, Option<ErrorCode>) {
        let FastRequest {
            id,
            method,
            declared,
            resolved,
            era,
            ..
        } = self;
        let supported = || {
            declared.version.is_some_and(|version| {
                ServerHandler::supported_protocol_versions(handler).contains(&version)
            })
        };
        let mut out = envelope(&id);
        let mut shared = None;
        let session = era == Era::Session;
        let answered = match method {
            Method::Call(params) if session || supported() => handler
                .answer_call(params, context, from, resolved)
                .await
                .map(|answer| write_call(&mut out, answer, era)),
            Method::List(page) if session => {
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
            Method::Ping if session => handler
                .ping(context)
                .await
                .map(|()| write(&mut out, &ServerResult::empty(()))),
            // A version that negotiates per request, on what the lane does not answer itself.
            method => {
                let request = match method {
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
                // Boxed: rmcp's dispatch of every method is a large future, which a call's would
                // otherwise carry and move.
                let answered = Box::pin(Service::handle_request(handler, request, context)).await;
                answered.map(|result| write(&mut out, &result))
            }
        };
        match (answered, shared) {
            (Ok(()), Some(listing)) => (Answer::around(out, listing), None),
            (Ok(()), None) => {
                out.push(b'}');
                (out.into(), None)
            }
            (Err(error), _) => {
                let code = (era == Era::PerRequest).then_some(error.code);
                (error_answer(error, id).into(), code)
            }
        }
    }
}

/// A call's answer after the envelope in `out`, in the shape rmcp's dispatch gives it for `era`: a
/// finished result written straight from toolgate's own; anything else (a task, a question) as rmcp's
/// result, which a session's version gets without the fields it does not know.
fn write_call(out: &mut Vec<u8>, answer: CallAnswer, era: Era) {
    match answer {
        CallAnswer::Done {
            result,
            structured_output,
        } => result::write(out, result, structured_output, era),
        CallAnswer::Response(response) => {
            let mut result = ServerResult::from(response);
            if era == Era::Session {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
            write(out, &result);
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
