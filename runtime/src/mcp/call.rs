//! `tools/call` as MCP asks it: started as a task or run in rounds through the pipeline, in a slot, with
//! questions asked during the call, and the outcome shaped for the client's protocol era.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use http::HeaderName;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ErrorCode};
use rmcp::model::{NumberOrString, RequestId};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};

use crate::call::Call;
use crate::call::TaskError;
use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};
use crate::output::Outcome;
use crate::param::ClientSupport;
use crate::policy::slots::{Busy, Slot};
use crate::registry::{Handover, Resolved, Snapshot, ToolId, Uses, tools_found};
use crate::sync::Locked;
use crate::tool::{TaskSupport, Tool};

use super::convert::{self, CallAnswer};
use super::handler::McpHandler;
use super::input::{self, META_CONFIRMATION, Questions};
use super::relay::Relay;
use super::session::BoundSession;
use super::tasks;

/// The W3C trace context headers, named once rather than parsed on every call.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// MCP's `MissingRequiredClientCapabilityError`.
const MISSING_CLIENT_CAPABILITY: i32 = -32021;

impl<H: ServerHandler + Clone> McpHandler<H> {
    /// A call of `tool`, which may run as a task, started as one when the client declared the tasks
    /// extension on this request or its session. A write's preview and approval come first, as for any
    /// call, and so do the questions of a tool that asks them first (`after_questions`); `None` then, and
    /// when the call runs while the request waits. A tool that runs only as a task refuses a client that
    /// cannot poll. It takes the request's HTTP `parts` when it starts one.
    pub(super) async fn as_task(
        &self,
        tool: &Tool,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        caller: &Caller,
        parts: Option<&http::request::Parts>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        let support = tool.task_support();
        if !declared {
            return (support != TaskSupport::Optional).then(|| Err(tasks::required()));
        }
        let replies = request.request_state.is_some()
            || request.input_responses.is_some()
            || context.meta.get(META_CONFIRMATION).is_some();
        if (tool.has_preview() || support == TaskSupport::AfterQuestions) && !replies {
            return None;
        }
        let arguments = request
            .arguments
            .clone()
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let call = self.call_for(
            &request.name,
            arguments,
            context,
            parts,
            Uses::EVERYTHING,
            caller,
        );
        let call = replied(
            call,
            context,
            request.request_state.clone(),
            request.input_responses.clone(),
        );
        Some(
            match self.shared.registry.start_task_record(caller, call).await {
                Ok(task) => Ok(tasks::created(&task).into()),
                Err(TaskError::NotStarted(refused)) => {
                    convert::call_result(Outcome::Failed(refused), false).map(Into::into)
                }
                Err(error) => Err(tasks::error(error)),
            },
        )
    }

    /// The pipeline's call of `name` for this request, with what the tool `uses` of it attached: the
    /// client's peer, the notifier and the HTTP request's `parts` (with its `caller`) as extensions.
    fn call_for(
        &self,
        name: &str,
        arguments: serde_json::Value,
        context: &RequestContext<RoleServer>,
        parts: Option<&http::request::Parts>,
        uses: Uses,
        caller: &Caller,
    ) -> Call {
        let mut call = Call::new(name, arguments)
            .tool_call_id(id_text(&context.id))
            .cancellation(context.ct.clone());
        let bound = parts.and_then(|p| p.extensions.get::<BoundSession>());
        if let Some(BoundSession(session)) = bound {
            call = call.session(Arc::clone(session));
        }
        if uses.extensions {
            call = call
                .extension(context.peer.clone())
                .extension(self.notifier());
        }
        // The trace context of the request's `_meta`, or else of its HTTP headers.
        let header = |name: &HeaderName| parts?.headers.get(name)?.to_str().ok();
        let trace = match context.meta.get_traceparent() {
            Some(traceparent) => Some((traceparent, context.meta.get_tracestate())),
            None => header(&TRACEPARENT).map(|parent| (parent, header(&TRACESTATE))),
        };
        if let Some((traceparent, tracestate)) = trace {
            call = call.trace(traceparent, tracestate.map(Into::into));
        }
        if let Some(parts) = parts.filter(|_| uses.extensions) {
            // With its caller among its extensions, as rmcp's path hands them over, however it came.
            call = call.extension(FromHttp { parts, caller }.to_parts());
        }
        call
    }

    /// Runs one round of a call of the tool its name `resolved` to, with its progress and log messages
    /// relayed to the client before the result when it `reports` any.
    async fn round(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        call: Call,
        resolved: Option<ToolId>,
        context: &RequestContext<RoleServer>,
    ) -> Outcome {
        let reports = resolved.is_none_or(|i| snapshot.tool(i).uses.reports);
        let (call, relay) = if reports {
            Relay::attach(
                call,
                context,
                self.session.log_level.load(Ordering::Relaxed),
            )
        } else {
            (call, Relay::none())
        };
        let outcome = self
            .shared
            .registry
            .run_resolved(snapshot, caller, call, resolved)
            .await;
        relay.flush().await;
        outcome
    }

    /// Adds the tools a `tool_search` found to this session's listing and tells the client that the list
    /// changed, on a session that can hear it (one that began with `initialize`).
    async fn load_found(&self, outcome: &Outcome, context: &RequestContext<RoleServer>) {
        let Outcome::Done(result) = outcome else {
            return;
        };
        if context.peer.peer_info().is_none() {
            return;
        }
        let added = {
            let mut found = self.session.found.locked();
            let before = found.len();
            for name in tools_found(result) {
                if !found.iter().any(|f| **f == *name) {
                    found.push(name.into());
                }
            }
            found.len() > before
        };
        if added && let Err(error) = context.peer.notify_tool_list_changed().await {
            tracing::debug!(target: "toolgate::mcp", %error, "could not send tools/list_changed");
        }
    }

    /// A slot among the calls that may run at once (the registry's, shared with tasks and every
    /// transport), waiting for one and for the caller's share of them for at most `limit`: an error
    /// answer while the server shuts down, [`Busy`] when none came free in time.
    async fn call_slot(
        &self,
        caller: &Caller,
        limit: Option<Duration>,
    ) -> Result<Result<Slot<'_>, Busy>, ErrorData> {
        self.open()?;
        Ok(self.shared.registry.pipeline().slot(caller, limit).await)
    }

    /// The error answer of a server that is shutting down, which starts nothing more.
    fn open(&self) -> Result<(), ErrorData> {
        if self.shared.draining.load(Ordering::Relaxed) {
            return Err(ErrorData::internal_error(
                "the server is shutting down",
                None,
            ));
        }
        Ok(())
    }

    /// `tools/call`, as rmcp's dispatch calls it through [`ServerHandler::call_tool`] and the direct loops
    /// call it themselves, leaving a finished result unencoded for them to write. The caller and the HTTP
    /// request are those it came `from`, or else those among the extensions of its `context`.
    pub(super) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        from: Option<FromHttp<'_>>,
        resolved: Option<Resolved<'_>>,
    ) -> Result<CallAnswer, ErrorData> {
        self.open()?;
        let (caller, parts) = match from {
            Some(from) => (from.caller.clone(), Some(from.parts)),
            None => (
                self.caller(&context),
                context.extensions.get::<http::request::Parts>(),
            ),
        };
        // One snapshot and one lookup, after hooks: the direct lane's, when it made them, whether it runs
        // the call or handed it to rmcp's dispatch with the request. It decides the rounds, runs each one,
        // and says how the result is encoded.
        let registry = &self.shared.registry;
        let Resolved {
            snapshot,
            tool: resolved,
        } = resolved
            .or_else(|| {
                let handed = context.extensions.get::<Handover>();
                let handed = handed.or_else(|| parts?.extensions.get::<Handover>());
                handed?.resolved(&request.name)
            })
            .unwrap_or_else(|| registry.resolved(&request.name));
        // A tool the caller may not run is answered as an unknown one, whatever its task mode. Starting a
        // task takes no slot: the task takes one when it runs.
        if let Some(index) = resolved
            && snapshot.tool(index).tool.task_support() != TaskSupport::Forbidden
            && registry.may_run(&snapshot, index, &caller)
            && let Some(started) = Box::pin(self.as_task(
                &snapshot.tool(index).tool,
                &request,
                &context,
                &caller,
                parts,
            ))
            .await
        {
            return started.map(CallAnswer::Response);
        }
        // The wait for a slot counts toward the tool's timeout.
        let timeout = resolved
            .and_then(|i| snapshot.tool(i).tool.timeout)
            .or(registry.pipeline().default_timeout());
        let asked_at = timeout.map(|_| std::time::Instant::now());
        let mut slot = match self.call_slot(&caller, timeout).await? {
            Ok(slot) => slot,
            Err(busy) => {
                let busy = Outcome::Failed(busy.error(&crate::text::capped(&request.name)));
                return convert::call_result(busy, false).map(Into::into);
            }
        };
        let waited = asked_at.map_or(Duration::ZERO, |at| at.elapsed());
        // Only a tool that may ask needs to know how the client answers.
        let (questions, support) = if snapshot.may_ask(resolved) {
            Questions::of(&context, parts)
        } else {
            (Questions::Unanswerable, ClientSupport::NONE)
        };
        let arguments = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        // Moved, not cloned, unless the client answers questions during the call and rounds may follow.
        let spare =
            matches!(questions, Questions::AsRequests(_)).then(|| (arguments.clone(), parts));
        let uses = resolved.map_or(Uses::EVERYTHING, |i| snapshot.tool(i).uses);
        let call = self
            .call_for(&request.name, arguments, &context, parts, uses, &caller)
            .client_support(support)
            .waited(waited);
        let resumed = request.request_state.is_some();
        let call = replied(
            call,
            &context,
            request.request_state,
            request.input_responses,
        );
        let mut outcome = self
            .round(&snapshot, &caller, call, resolved, &context)
            .await;
        if let (Questions::AsRequests(peer), Some((arguments, parts))) = (&questions, spare) {
            // Boxed: only a client that answers questions during the call waits here.
            let asked = AnsweringClient {
                peer,
                name: &request.name,
                arguments,
                parts,
                uses,
                support,
                snapshot: &snapshot,
                caller: &caller,
                resolved,
            };
            let (answered, kept) =
                Box::pin(self.ask_rounds(asked, outcome, slot, &context)).await?;
            outcome = answered;
            slot = kept;
        }
        drop(slot);
        if resolved.is_some() && resolved == snapshot.tool_search {
            self.load_found(&outcome, &context).await;
        }
        let in_result = matches!(questions, Questions::InResult);
        match outcome {
            Outcome::InputRequired(input) if in_result => {
                Ok(CallAnswer::Response(input::input_required(&input)?.into()))
            }
            Outcome::NeedsConfirmation(pending) if in_result && support.elicitation => {
                Ok(CallAnswer::Response(input::approval(&pending)?.into()))
            }
            Outcome::NeedsConfirmation(_) if self.shared.refuse_unconfirmable_writes => {
                let error = ToolError::with_kind(
                    ErrorKind::Denied,
                    "This client cannot show an approval prompt, and this server runs no write without \
                     one. Nothing was changed; use a client that supports elicitation.",
                );
                convert::call_result(Outcome::Denied(error), false).map(Into::into)
            }
            Outcome::Unsupported(missing) => Err(ErrorData::new(
                ErrorCode(MISSING_CLIENT_CAPABILITY),
                missing.message(),
                Some(missing.data()),
            )),
            Outcome::Failed(error) if resumed && error.kind() == ErrorKind::Confirmation => {
                Err(ErrorData::invalid_params(error.message().to_owned(), None))
            }
            outcome => {
                // Encoded against the tool that ran, which a hook may have chosen over the one named.
                let structured_output =
                    resolved.is_some_and(|i| snapshot.tool(i).tool.output_schema.is_some());
                match outcome {
                    Outcome::Done(result) => Ok(CallAnswer::Done {
                        result,
                        structured_output,
                    }),
                    outcome => convert::call_result(outcome, structured_output).map(Into::into),
                }
            }
        }
    }

    /// Asks the client the questions of each round during the call, and runs the next round with its
    /// answers, until the call needs none (at most [`input::MAX_ROUNDS`]); the last round's outcome,
    /// and the slot it ran in.
    async fn ask_rounds<'s>(
        &'s self,
        asked: AnsweringClient<'_>,
        mut outcome: Outcome,
        mut slot: Slot<'s>,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Outcome, Slot<'s>), ErrorData> {
        for _ in 0..input::MAX_ROUNDS {
            let (state, questions) = match &outcome {
                Outcome::InputRequired(input) => {
                    (input.state().to_owned(), input.requests().clone())
                }
                Outcome::NeedsConfirmation(pending) if asked.support.elicitation => (
                    pending.confirmation().to_owned(),
                    input::approval_question(pending),
                ),
                _ => break,
            };
            // Waiting for the client takes no slot from other calls.
            drop(slot);
            let answers =
                input::ask_during(asked.peer, &questions, self.shared.question_timeout).await?;
            slot = self
                .call_slot(asked.caller, None)
                .await?
                .expect("a wait without a limit ends with a slot");
            let call = self
                .call_for(
                    asked.name,
                    asked.arguments.clone(),
                    context,
                    asked.parts,
                    asked.uses,
                    asked.caller,
                )
                .client_support(asked.support)
                .resume(Some(state), answers);
            outcome = self
                .round(asked.snapshot, asked.caller, call, asked.resolved, context)
                .await;
        }
        Ok((outcome, slot))
    }
}

/// An HTTP request that a direct path answers: its parts and the caller the gate found for it, lent as
/// they are rather than put among the extensions of the request's context, each of which costs a map
/// and a box.
#[derive(Clone, Copy)]
pub(crate) struct FromHttp<'a> {
    pub(crate) parts: &'a http::request::Parts,
    pub(crate) caller: &'a Caller,
}

impl FromHttp<'_> {
    /// The parts as rmcp's service reads them, with the caller among their extensions.
    pub(crate) fn to_parts(self) -> http::request::Parts {
        let mut parts = self.parts.clone();
        parts.extensions.insert(self.caller.clone());
        parts
    }
}

/// A call whose client answers its questions as they are asked: what each further round needs.
struct AnsweringClient<'a> {
    peer: &'a Peer<RoleServer>,
    name: &'a str,
    arguments: serde_json::Value,
    parts: Option<&'a http::request::Parts>,
    uses: Uses,
    support: ClientSupport,
    snapshot: &'a Snapshot,
    caller: &'a Caller,
    resolved: Option<ToolId>,
}

/// A JSON-RPC id as the tool call id: its number or string.
pub(super) fn id_text(id: &RequestId) -> Arc<str> {
    match id {
        NumberOrString::Number(n) => Arc::from(itoa::Buffer::new().format(*n)),
        NumberOrString::String(s) => Arc::clone(s),
    }
}

/// `call` with what its request brings back to an earlier round: a write's confirmation in `_meta`, or
/// answers with the sealed state of the round that asked.
pub(super) fn replied(
    mut call: Call,
    context: &RequestContext<RoleServer>,
    state: Option<String>,
    answers: Option<rmcp::model::InputResponses>,
) -> Call {
    if let Some(token) = context.meta.get(META_CONFIRMATION).and_then(|v| v.as_str()) {
        call = call.confirmation(token);
    }
    if state.is_some() || answers.is_some() {
        let answers = answers.unwrap_or_default();
        call = call.resume(state, answers.into_iter().collect());
    }
    call
}
