//! The call pipeline, the same for every caller and transport:
//! resolve → authorize → call ceiling → validate → hooks before → preview or run (injection, timeout,
//! cancellation, panic capture) → encode → hooks after → audit.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use serde_json::json;

use crate::ask::{Answers, ClientSupport};
use crate::audit::{AuditAction, AuditEvent};
use crate::ceiling::{Ceilings, Count, Refused};
use crate::confirm::{self, Claimed, Confirmations, Decision, Grant, GrantKind};
use crate::entry::{PreviewFuture, ToolFuture};
use crate::hooks::CallInfo;
use crate::outcome::{APPROVAL_KEY, InputRequired, Pending};
use crate::parts::StateMap;
use crate::registry::{Handler, Slot};
use crate::{
    CallParts, Caller, ErrorKind, Invocation, Log, LogEntry, Outcome, Progress, ProgressUpdate,
    Registry, ToolError, ToolResult, schema,
};

/// A call with its metadata, for [`Registry::run`]. [`Registry::call`] is the short form.
///
/// ```
/// use toolgate::Call;
///
/// let call = Call::new("search_orders", serde_json::json!({ "query": "Lovelace" }))
///     .session("conversation-42")
///     .tool_call_id("call_7")
///     .on_progress(|update| eprintln!("{:.0}%", 100.0 * update.progress / update.total.unwrap_or(1.0)));
/// # let _ = call;
/// ```
#[derive(Debug)]
pub struct Call {
    name: String,
    arguments: Value,
    meta: Meta,
}

/// What a call carries besides its tool and arguments.
#[derive(Debug, Default)]
struct Meta {
    tool_call_id: Option<Arc<str>>,
    session_id: Option<Arc<str>>,
    traceparent: Option<Arc<str>>,
    tracestate: Option<Arc<str>>,
    progress: Progress,
    log: Log,
    extensions: StateMap,
    cancellation: Option<CancellationToken>,
    /// What a call brings back to a write or a question; boxed, as most calls bring nothing.
    reply: Option<Box<Reply>>,
    support: Option<ClientSupport>,
}

#[derive(Debug, Default)]
struct Reply {
    /// A confirmation of a previewed write, sent back to run it.
    confirmation: Option<String>,
    /// Answers to a tool's questions, with the sealed state of the round that asked them.
    resume: Option<Resume>,
}

#[derive(Debug)]
struct Resume {
    state: Option<String>,
    answers: Map<String, Value>,
}

impl Meta {
    /// Whether the call carries anything for the confirmation path.
    fn gated(&self) -> bool {
        self.reply.is_some()
    }

    fn reply(&mut self) -> &mut Reply {
        self.reply.get_or_insert_with(Box::default)
    }
}

impl Call {
    /// A call of tool `name` with JSON `arguments` (an object, or `null` for none).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Call {
            name: name.into(),
            arguments,
            meta: Meta::default(),
        }
    }

    /// The model's id for this tool call.
    #[must_use]
    pub fn tool_call_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.meta.tool_call_id = Some(id.into());
        self
    }

    /// The conversation or session; `max_runs` counts per session (per caller when absent).
    #[must_use]
    pub fn session(mut self, id: impl Into<Arc<str>>) -> Self {
        self.meta.session_id = Some(id.into());
        self
    }

    /// W3C trace context of the caller's span.
    #[must_use]
    pub fn trace(mut self, traceparent: impl Into<Arc<str>>, tracestate: Option<Arc<str>>) -> Self {
        self.meta.traceparent = Some(traceparent.into());
        self.meta.tracestate = tracestate;
        self
    }

    /// Receives the tool's progress updates.
    #[must_use]
    pub fn on_progress(mut self, sink: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        self.meta.progress = Progress::new(sink);
        self
    }

    /// Receives the tool's log messages.
    #[must_use]
    pub fn on_log(mut self, sink: impl Fn(LogEntry) + Send + Sync + 'static) -> Self {
        self.meta.log = Log::new(sink);
        self
    }

    /// Attaches a value the tool can take as [`Extension<T>`](crate::Extension): a handle of the host or
    /// transport (the MCP server attaches the client's `Peer` and the HTTP request's parts).
    #[must_use]
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.meta.extensions.insert(value);
        self
    }

    /// Cancelling this token cancels the call.
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.meta.cancellation = Some(token);
        self
    }

    /// Sends back the confirmation of a previewed write ([`Pending::confirmation`]): the write runs once,
    /// if this call has the same tool, arguments and caller as the preview and it has not expired.
    #[must_use]
    pub fn confirmation(mut self, token: impl Into<String>) -> Self {
        self.meta.reply().confirmation = Some(token.into());
        self
    }

    /// Resumes a call that asked for input: `state` as given by [`InputRequired::state`] (or
    /// [`Pending::confirmation`] for a write), and the answers by question key. A write's answer is under
    /// [`APPROVAL_KEY`](crate::APPROVAL_KEY): `{"action": "accept", "content": {"approve": true}}`
    /// runs it, anything else that is an answer declines it.
    ///
    /// [`InputRequired::state`]: crate::InputRequired::state
    #[must_use]
    pub fn resume(mut self, state: Option<impl Into<String>>, answers: Map<String, Value>) -> Self {
        self.meta.reply().resume = Some(Resume {
            state: state.map(Into::into),
            answers,
        });
        self
    }

    /// What the client can answer when the tool asks for input (default: [`ClientSupport::ALL`]).
    #[must_use]
    pub fn client_support(mut self, support: ClientSupport) -> Self {
        self.meta.support = Some(support);
        self
    }
}

/// The call's sinks, moved into the tool's parts.
struct Sinks {
    progress: Progress,
    log: Log,
    extensions: StateMap,
    cancellation: Option<CancellationToken>,
    answers: Option<Arc<Answers>>,
}

impl Sinks {
    fn of(meta: Meta) -> (Sinks, Option<String>, Option<Resume>, Option<ClientSupport>) {
        let sinks = Sinks {
            progress: meta.progress,
            log: meta.log,
            extensions: meta.extensions,
            cancellation: meta.cancellation,
            answers: None,
        };
        let reply = meta.reply.map_or_else(Reply::default, |reply| *reply);
        (sinks, reply.confirmation, reply.resume, meta.support)
    }
}

/// A call between the pipeline's synchronous steps: what [`Registry::finish`] needs after the tool ran.
struct Flight<'a> {
    caller: &'a Caller,
    invocation: Invocation,
    /// The admitted tool; `None` when the call was refused before admission.
    slot: Option<usize>,
    /// The arguments as hooks see them; `None` when there are no hooks.
    seen: Option<Value>,
    audited: Option<Value>,
    started: Option<Instant>,
    action: AuditAction,
}

/// The asynchronous part of a call: nothing, a preview, or the tool's future.
enum Step {
    Done(Refusal),
    Preview {
        future: PreviewFuture,
        arguments: Map<String, Value>,
    },
    Run {
        future: ToolFuture,
        timeout: Option<Duration>,
        token: Option<CancellationToken>,
        external: bool,
    },
}

impl Registry {
    /// Calls tool `name` for `caller` with JSON `arguments`.
    pub async fn call(&self, caller: &Caller, name: &str, arguments: Value) -> Outcome {
        self.call_with(caller, name, arguments, Meta::default())
            .await
    }

    /// Runs a [`Call`] for `caller` through the pipeline.
    pub async fn run(&self, caller: &Caller, call: Call) -> Outcome {
        self.call_with(caller, &call.name, call.arguments, call.meta)
            .await
    }

    /// Approves a previewed write: it runs now, once, with exactly the arguments that were previewed.
    ///
    /// Refused, with nothing run, when the confirmation is forged, altered, expired, already used or
    /// declined, or another caller's, and when the caller has since lost the right to run the tool.
    /// Approving twice returns the first run's result.
    pub async fn confirm(&self, caller: &Caller, confirmation: &str) -> Outcome {
        match self.bound_call(caller, confirmation) {
            Ok(call) => self.run(caller, call.confirmation(confirmation)).await,
            Err(error) => Outcome::Failed(error),
        }
    }

    /// Declines a previewed write: it will never run.
    ///
    /// # Errors
    /// When the confirmation is forged, altered, expired or another caller's, or was already approved.
    pub async fn decline(&self, caller: &Caller, confirmation: &str) -> Result<(), ToolError> {
        let decline = json!({ "action": "decline" });
        let call = self.bound_call(caller, confirmation)?.resume(
            Some(confirmation),
            [(APPROVAL_KEY.to_owned(), decline)].into_iter().collect(),
        );
        match self.run(caller, call).await {
            Outcome::Failed(error) if error.kind() == ErrorKind::Declined => Ok(()),
            outcome => Err(outcome
                .error()
                .cloned()
                .unwrap_or_else(|| ToolError::new(outcome.into_result().text_for_model()))),
        }
    }

    fn confirmations(&self) -> &Confirmations {
        &self.inner.confirmations
    }

    /// The call a confirmation was issued for. One that does not open is refused here, and audited under
    /// the tool name `-`, since its tool is not known.
    fn bound_call(&self, caller: &Caller, confirmation: &str) -> Result<Call, ToolError> {
        match self
            .confirmations()
            .open_any(confirmation, GrantKind::Confirm)
        {
            Ok(grant) => {
                let arguments = Value::Object(grant.arguments.unwrap_or_default());
                Ok(Call::new(grant.tool, arguments))
            }
            Err(error) => {
                let flight = Flight {
                    caller,
                    invocation: Invocation {
                        tool_name: Arc::from("-"),
                        ..Invocation::default()
                    },
                    slot: None,
                    seen: None,
                    audited: self.inner.audit.as_ref().map(|_| Value::Null),
                    started: self.inner.audit.as_ref().map(|_| Instant::now()),
                    action: AuditAction::Approve,
                };
                let mut outcome = Outcome::Failed(error);
                self.finish(&flight, &mut outcome);
                Err(outcome
                    .error()
                    .cloned()
                    .unwrap_or_else(|| unreachable!("finishing keeps a refusal a failure")))
            }
        }
    }

    /// The pipeline: synchronous steps, the tool's future, synchronous steps. Only the middle is async, so
    /// the state machine stays small.
    async fn call_with(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Value,
        mut meta: Meta,
    ) -> Outcome {
        let resolved = self.resolve(name);
        let mut flight = Flight {
            caller,
            invocation: Invocation {
                tool_name: resolved.map_or_else(
                    || Arc::from(name),
                    |i| Arc::clone(&self.inner.slots[i].tool.name),
                ),
                tool_call_id: meta.tool_call_id.take(),
                session_id: meta.session_id.take(),
                traceparent: meta.traceparent.take(),
                tracestate: meta.tracestate.take(),
            },
            slot: None,
            seen: None,
            audited: self.inner.audit.as_ref().map(|_| arguments.clone()),
            started: self.inner.audit.as_ref().map(|_| Instant::now()),
            action: AuditAction::Call,
        };
        let replying = meta.gated();
        let step = match self.admit(
            caller,
            name,
            resolved,
            arguments,
            &flight.invocation,
            replying,
        ) {
            Ok((index, arguments)) if self.inner.slots[index].gated || meta.gated() => {
                // Boxed whole, so that the common path's state machine holds one pointer for it.
                return Box::pin(self.gated_call(flight, index, arguments, meta)).await;
            }
            Ok((index, arguments)) => {
                let (sinks, ..) = Sinks::of(meta);
                self.launch(&mut flight, index, arguments, sinks, true)
            }
            Err(outcome) => Step::Done(outcome),
        };
        let mut outcome = self.drive(&flight, step).await;
        self.finish(&flight, &mut outcome);
        if flight.slot.is_none()
            && matches!(outcome, Outcome::Denied(_))
            && !self.inner.explain_denials
        {
            // Refused by the gate: the audit has the denial, and the caller learns nothing of the tool.
            return *unknown_tool(name);
        }
        outcome
    }

    /// [`gated`](Self::gated), then the synchronous steps after the call, then the record of an approved
    /// write's final outcome.
    async fn gated_call(
        &self,
        mut flight: Flight<'_>,
        index: usize,
        arguments: Map<String, Value>,
        meta: Meta,
    ) -> Outcome {
        let (mut outcome, claimed) = self.gated(&mut flight, index, arguments, meta).await;
        self.finish(&flight, &mut outcome);
        if let Some(id) = claimed {
            self.record(&id, &outcome).await;
        }
        outcome
    }

    /// The path of writes with a preview, of tools that ask for input, and of calls that carry a
    /// confirmation or answers. Returns, with the outcome, the id of a confirmation whose write ran, for
    /// [`record`](Self::record) once the outcome is final.
    async fn gated(
        &self,
        flight: &mut Flight<'_>,
        index: usize,
        arguments: Map<String, Value>,
        meta: Meta,
    ) -> (Outcome, Option<String>) {
        let slot = &self.inner.slots[index];
        let (tool, caller) = (&*slot.tool.name, flight.caller);
        let confirmations = self.confirmations();
        let (mut sinks, confirmation, resume, support) = Sinks::of(meta);
        let has_preview = slot.tool.has_preview;
        let mut answers = Map::new();
        let mut decided = confirmation.map(|token| (token, Decision::Approve));
        if let Some(Resume {
            state,
            answers: given,
        }) = resume
        {
            match state {
                // A write's request state is its confirmation, and its one answer the approval.
                Some(state) if has_preview => match approval(&given) {
                    Some(decision) => decided = Some((state, decision)),
                    None => {
                        if let Err(error) =
                            confirmations.open(&state, GrantKind::Confirm, tool, caller, &arguments)
                        {
                            return (refusal(error), None);
                        }
                    }
                },
                Some(state) => {
                    match confirmations.open(&state, GrantKind::Ask, tool, caller, &arguments) {
                        Ok(grant) => answers = grant.answers,
                        Err(error) => return (refusal(error), None),
                    }
                    answers.extend(given);
                }
                None => answers = given,
            }
        }
        if let Some((token, decision)) = decided {
            if !has_preview {
                let error = confirm::refused(format!(
                    "`{tool}` has no preview and takes no confirmation; call it without one."
                ));
                return (refusal(error), None);
            }
            let grant =
                match confirmations.open(&token, GrantKind::Confirm, tool, caller, &arguments) {
                    Ok(grant) => grant,
                    Err(error) => return (refusal(error), None),
                };
            return match decision {
                Decision::Decline => {
                    flight.action = AuditAction::Decline;
                    (self.declined(&grant).await, None)
                }
                Decision::Approve => {
                    flight.action = AuditAction::Approve;
                    self.approved(flight, index, arguments, grant, sinks).await
                }
            };
        }
        let skip = has_preview
            && confirmations
                .skip
                .as_ref()
                .is_some_and(|policy| policy(caller, &slot.tool));
        if has_preview && !skip {
            flight.action = AuditAction::Preview;
            let step = self.launch(flight, index, arguments, sinks, false);
            return (self.drive(flight, step).await, None);
        }
        let kept = arguments.clone();
        let answers = Arc::new(Answers {
            given: answers,
            support: support.unwrap_or(ClientSupport::ALL),
        });
        sinks.answers = Some(Arc::clone(&answers));
        let step = self.launch(flight, index, arguments, sinks, true);
        let outcome = self.drive(flight, step).await;
        let requests = match &outcome {
            Outcome::Failed(error) if error.kind() == ErrorKind::InputRequired => error
                .data()
                .and_then(|d| d.get("inputRequests"))
                .and_then(Value::as_object),
            _ => None,
        };
        if requests.is_some() {
            // A round that only asked is no run.
            if slot.tool.max_runs.is_some() {
                let session = flight.invocation.session_id.as_ref();
                self.inner.ceilings.give_back(caller, session, index);
            }
        }
        let outcome = match requests {
            Some(requests) => Outcome::InputRequired(InputRequired {
                tool: tool.to_owned(),
                requests: requests.clone(),
                state: confirmations.seal(
                    GrantKind::Ask,
                    tool,
                    caller,
                    &kept,
                    answers.given.clone(),
                ),
            }),
            None => outcome,
        };
        (outcome, None)
    }

    /// Runs an approved write once; a retry gets the first run's result.
    async fn approved(
        &self,
        flight: &mut Flight<'_>,
        index: usize,
        arguments: Map<String, Value>,
        grant: Grant,
        sinks: Sinks,
    ) -> (Outcome, Option<String>) {
        let claimed = self
            .confirmations()
            .store
            .claim(&grant.id, Decision::Approve, grant.expires_at())
            .await;
        let outcome = match claimed {
            Ok(Claimed::Fresh) => {
                let step = self.launch(flight, index, arguments, sinks, true);
                return (self.drive(flight, step).await, Some(grant.id));
            }
            Ok(Claimed::Approved {
                outcome: Some(record),
            }) => match serde_json::from_str(&record) {
                Ok(result) => Outcome::Done(result),
                Err(_) => refusal(already_used()),
            },
            Ok(Claimed::Approved { outcome: None }) => refusal(already_used()),
            Ok(Claimed::Declined) => refusal(confirm::refused(
                "This write was declined and will never run; nothing was changed. Call the tool again for a new preview.",
            )),
            Err(error) => Outcome::Failed(error),
        };
        (outcome, None)
    }

    /// Records the final outcome of an approved write (after hooks and masking), returned to retries.
    async fn record(&self, id: &str, outcome: &Outcome) {
        let record = serde_json::to_string(&outcome.clone().into_result()).unwrap_or_default();
        if let Err(error) = self.confirmations().store.finish(id, record).await {
            tracing::error!(target: "toolgate", error = error.message(), "could not record a confirmed write's result");
        }
    }

    /// Records a decline; declining twice is the same decline.
    async fn declined(&self, grant: &Grant) -> Outcome {
        let store = &self.confirmations().store;
        match store
            .claim(&grant.id, Decision::Decline, grant.expires_at())
            .await
        {
            Ok(Claimed::Fresh | Claimed::Declined) => Outcome::Failed(ToolError::with_kind(
                ErrorKind::Declined,
                "The user declined this change; nothing was changed. Do not try it again unless the user asks.",
            )),
            Ok(Claimed::Approved { .. }) => refusal(confirm::refused(
                "This write was already approved; it cannot be declined any more.",
            )),
            Err(error) => Outcome::Failed(error),
        }
    }

    /// Authorize, check the ceiling, validate: the steps that refuse a call before anything runs. A call
    /// that replies to a preview or a question skips the ceiling's early check: its decision or replay
    /// runs no body, and a body it does run is counted then.
    fn admit(
        &self,
        caller: &Caller,
        requested: &str,
        resolved: Option<usize>,
        arguments: Value,
        invocation: &Invocation,
        replying: bool,
    ) -> Result<(usize, Map<String, Value>), Refusal> {
        let name = &*invocation.tool_name;
        let index = resolved.ok_or_else(|| unknown_tool(requested))?;
        let slot = &self.inner.slots[index];
        self.gate(slot, caller)?;
        if !replying {
            self.ceiling(index, caller, invocation, Ceilings::check)?;
        }
        let mut arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                let message =
                    format!("Invalid arguments for `{name}`: expected a JSON object, got {other}.");
                return Err(refuse(Outcome::Failed(ToolError::with_kind(
                    ErrorKind::InvalidArguments,
                    message,
                ))));
            }
        };
        for (key, value) in &slot.defaults {
            if !arguments.contains_key(key) {
                arguments.insert(key.clone(), value.clone());
            }
        }
        let arguments = Value::Object(arguments);
        schema::validate(&slot.validator, name, &arguments)
            .map_err(|e| refuse(Outcome::Failed(e)))?;
        match arguments {
            Value::Object(map) => Ok((index, map)),
            _ => unreachable!("built as an object above"),
        }
    }

    /// Authorization, then availability (switched on, mode), so that only a caller who may run the tool
    /// learns why it cannot run now. A denial reaches the audit as one; unless denials are explained, the
    /// caller gets the unknown tool's answer instead (see [`call_with`](Self::call_with)).
    fn gate(&self, slot: &Slot, caller: &Caller) -> Result<(), Refusal> {
        if !self.authorized(slot, caller, None) {
            return Err(refuse(Outcome::Denied(ToolError::with_kind(
                ErrorKind::Denied,
                caller.denial(),
            ))));
        }
        self.availability(slot).map_err(|reason| {
            refuse(Outcome::Failed(ToolError::with_kind(
                ErrorKind::Unavailable,
                reason,
            )))
        })
    }

    /// Applies `count` to the tool's ceiling for this caller and session, if the tool has one. Admission
    /// only checks it; a run is counted when the tool's body runs.
    fn ceiling(
        &self,
        index: usize,
        caller: &Caller,
        invocation: &Invocation,
        count: Count,
    ) -> Result<(), Refusal> {
        let tool = &self.inner.slots[index].tool;
        let Some(max) = tool.max_runs else {
            return Ok(());
        };
        let session = invocation.session_id.as_ref();
        count(&self.inner.ceilings, caller, session, index, max)
            .map_err(|refused| limit_reached(&tool.name, max, &refused))
    }

    /// Hooks before the call, then the preview's or the tool's future, with its parameters' parts.
    fn launch(
        &self,
        flight: &mut Flight<'_>,
        index: usize,
        arguments: Map<String, Value>,
        sinks: Sinks,
        confirmed: bool,
    ) -> Step {
        let Sinks {
            progress,
            log,
            extensions,
            cancellation,
            answers,
        } = sinks;
        let slot = &self.inner.slots[index];
        flight.slot = Some(index);
        if !self.inner.hooks.is_empty() {
            let seen = Value::Object(arguments.clone());
            let info = CallInfo {
                tool: &slot.tool,
                caller: flight.caller,
                arguments: &seen,
                invocation: &flight.invocation,
            };
            let answer = self
                .inner
                .hooks
                .iter()
                .find_map(|hook| hook.before_call(&info));
            flight.seen = Some(seen);
            if let Some(result) = answer {
                return Step::Done(Box::new(Outcome::Done(result)));
            }
        }
        if confirmed
            && let Err(refusal) =
                self.ceiling(index, flight.caller, &flight.invocation, Ceilings::take)
        {
            return Step::Done(refusal);
        }
        let external = cancellation.is_some();
        let timeout = slot.tool.timeout.or(self.inner.default_timeout);
        let token = cancellation.or_else(|| timeout.map(|_| CancellationToken::new()));
        let mut parts = CallParts {
            arguments,
            caller: Cow::Borrowed(flight.caller),
            invocation: Cow::Borrowed(&flight.invocation),
            state: Cow::Borrowed(&self.inner.state),
            settings: slot.settings.as_ref().map(Cow::Borrowed),
            progress,
            log,
            extensions,
            cancellation: token.clone(),
            answers,
        };
        match &slot.handler {
            Handler::Compiled {
                preview: Some(preview),
                ..
            } if !confirmed => {
                let arguments = parts.arguments.clone();
                Step::Preview {
                    future: preview(parts),
                    arguments,
                }
            }
            Handler::Compiled { call, .. } => Step::Run {
                future: call(parts),
                timeout,
                token,
                external,
            },
            Handler::Dynamic(handler) => {
                let arguments = Value::Object(parts.take_arguments());
                Step::Run {
                    future: handler(arguments, parts.into_owned()),
                    timeout,
                    token,
                    external,
                }
            }
        }
    }

    /// Awaits the step. Timeouts, cancellation and previews are boxed, off the common path's state machine.
    async fn drive(&self, flight: &Flight<'_>, step: Step) -> Outcome {
        let result = match step {
            Step::Done(outcome) => return *outcome,
            Step::Run {
                future,
                timeout: None,
                token: None,
                ..
            } => CatchPanic(future).await,
            Step::Run {
                future,
                timeout,
                token,
                external,
            } => {
                Box::pin(guard(
                    &flight.invocation.tool_name,
                    future,
                    timeout,
                    token,
                    external,
                ))
                .await
            }
            Step::Preview { future, arguments } => {
                let preview = match Box::pin(CatchPanic(future)).await {
                    Ok(preview) => preview.shown_to_people(),
                    Err(error) => return Outcome::Failed(error),
                };
                let confirmation = self.confirmations().seal(
                    GrantKind::Confirm,
                    &flight.invocation.tool_name,
                    flight.caller,
                    &arguments,
                    Map::new(),
                );
                return Outcome::NeedsConfirmation(Pending {
                    tool: flight.invocation.tool_name.to_string(),
                    preview,
                    confirmation,
                });
            }
        };
        match result {
            Ok(result) => Outcome::Done(result),
            Err(error) => Outcome::Failed(error),
        }
    }

    /// Hooks after the call, masking of internal errors, audit.
    fn finish(&self, flight: &Flight<'_>, outcome: &mut Outcome) {
        if let (Some(index), Some(seen)) = (flight.slot, &flight.seen) {
            let tool = &self.inner.slots[index].tool;
            let info = CallInfo {
                tool,
                caller: flight.caller,
                arguments: seen,
                invocation: &flight.invocation,
            };
            for hook in &self.inner.hooks {
                hook.after_call(&info, outcome);
            }
        }
        self.mask(outcome);
        if let (Some(sink), Some(arguments), Some(started)) =
            (&self.inner.audit, &flight.audited, flight.started)
        {
            sink.record(&AuditEvent {
                tool: &flight.invocation.tool_name,
                caller: flight.caller,
                invocation: &flight.invocation,
                arguments,
                outcome,
                action: flight.action,
                at: SystemTime::now(),
                elapsed: started.elapsed(),
            });
        }
    }

    /// Logs internal errors and, when masking is on, replaces their text for the model.
    fn mask(&self, outcome: &mut Outcome) {
        if let Outcome::Failed(error) = outcome
            && error.kind() == ErrorKind::Internal
        {
            tracing::error!(target: "toolgate", error = error.message(), "tool failed with an internal error");
            if self.inner.mask_internal_errors {
                *error = error.masked();
            }
        }
    }
}

/// Runs a tool future with panic capture, its timeout, and the caller's cancellation.
async fn guard(
    tool: &str,
    future: ToolFuture,
    timeout: Option<Duration>,
    token: Option<CancellationToken>,
    external: bool,
) -> Result<ToolResult, ToolError> {
    let future = CatchPanic(future);
    let timed = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, future)
                .await
                .unwrap_or_else(|_| {
                    token.as_ref().inspect(|t| t.cancel());
                    Err(ToolError::with_kind(
                        ErrorKind::Timeout,
                        format!("`{tool}` did not finish within {limit:?} and was stopped."),
                    ))
                }),
            None => future.await,
        }
    };
    match &token {
        Some(token) if external => tokio::select! {
            biased;
            () = token.cancelled() => Err(ToolError::with_kind(ErrorKind::Cancelled, "The call was cancelled.")),
            result = timed => result,
        },
        _ => timed.await,
    }
}

/// The answer to a write's approval question, if there is a well-formed one.
fn approval(answers: &Map<String, Value>) -> Option<Decision> {
    let answer = answers.get(APPROVAL_KEY)?;
    match answer.get("action")?.as_str()? {
        "accept" => match answer.get("content")?.get("approve")?.as_bool()? {
            true => Some(Decision::Approve),
            false => Some(Decision::Decline),
        },
        "decline" | "cancel" => Some(Decision::Decline),
        _ => None,
    }
}

fn already_used() -> ToolError {
    confirm::refused(
        "This confirmation was already used: the write ran, or is running. Nothing was changed by this call.",
    )
}

/// A refused confirmation or request state, as an outcome: denied when it is another caller's.
fn refusal(error: ToolError) -> Outcome {
    if error.kind() == ErrorKind::Denied {
        Outcome::Denied(error)
    } else {
        Outcome::Failed(error)
    }
}

fn limit_reached(tool: &str, max: u32, refused: &Refused) -> Refusal {
    let message = match refused {
        Refused::Reached => format!(
            "`{tool}` may run at most {max} times per conversation and has reached that limit. Answer with what you have."
        ),
        Refused::Full => format!(
            "`{tool}` cannot run now: the server counts too many conversations for its limit. Try again later."
        ),
    };
    refuse(Outcome::Failed(ToolError::with_kind(
        ErrorKind::LimitReached,
        message,
    )))
}

/// The answer for a name no tool has, and, unless denials are explained, for a tool the caller may not run.
fn unknown_tool(name: &str) -> Refusal {
    refuse(Outcome::Failed(ToolError::with_kind(
        ErrorKind::UnknownTool,
        format!("Unknown tool `{name}`. List the tools to see which ones you can use."),
    )))
}

/// A call refused before anything ran; boxed, so the common path moves small values.
type Refusal = Box<Outcome>;

fn refuse(outcome: Outcome) -> Refusal {
    Box::new(outcome)
}

/// Turns a panic while polling the tool into an internal [`ToolError`].
struct CatchPanic<F>(F);

impl<F, T> Future for CatchPanic<Pin<Box<F>>>
where
    F: Future<Output = Result<T, ToolError>> + ?Sized,
{
    type Output = Result<T, ToolError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = &mut self.0;
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_owned());
                Poll::Ready(Err(ToolError::with_kind(
                    ErrorKind::Internal,
                    format!("the tool panicked: {message}"),
                )))
            }
        }
    }
}
