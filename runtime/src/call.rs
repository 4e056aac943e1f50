//! The call pipeline, the same for every caller and transport:
//! resolve → authorize → call ceiling → validate → hooks before → preview or run (injection, timeout,
//! cancellation, panic capture) → encode → hooks after → audit.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditEvent;
use crate::entry::ToolFuture;
use crate::hooks::CallInfo;
use crate::outcome::Pending;
use crate::registry::{Handler, Slot};
use crate::{CallParts, Caller, ErrorKind, Invocation, Outcome, Progress, ProgressUpdate, Registry, ToolError, ToolResult, schema};

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
    arguments: Value,
    invocation: Invocation,
    progress: Progress,
    cancellation: Option<CancellationToken>,
}

impl Call {
    /// A call of tool `name` with JSON `arguments` (an object, or `null` for none).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Call {
            arguments,
            invocation: Invocation { tool_name: name.into(), ..Invocation::default() },
            progress: Progress::default(),
            cancellation: None,
        }
    }

    /// The model's id for this tool call.
    #[must_use]
    pub fn tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.invocation.tool_call_id = Some(id.into());
        self
    }

    /// The conversation or session; `max_runs` counts per session (per caller when absent).
    #[must_use]
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.invocation.session_id = Some(id.into());
        self
    }

    /// W3C trace context of the caller's span.
    #[must_use]
    pub fn trace(mut self, traceparent: impl Into<String>, tracestate: Option<String>) -> Self {
        self.invocation.traceparent = Some(traceparent.into());
        self.invocation.tracestate = tracestate;
        self
    }

    /// Receives the tool's progress updates.
    #[must_use]
    pub fn on_progress(mut self, sink: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        self.progress = Progress::new(sink);
        self
    }

    /// Cancelling this token cancels the call.
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }
}

/// What the pipeline carries from admission to execution.
struct Admitted<'a> {
    index: usize,
    slot: &'a Slot,
    arguments: Map<String, Value>,
    invocation: Arc<Invocation>,
    progress: Progress,
    cancellation: Option<CancellationToken>,
}

impl Registry {
    /// Calls tool `name` for `caller` with JSON `arguments`.
    pub async fn call(&self, caller: &Caller, name: &str, arguments: Value) -> Outcome {
        self.run(caller, Call::new(name, arguments)).await
    }

    /// Runs a [`Call`] for `caller` through the pipeline.
    pub async fn run(&self, caller: &Caller, call: Call) -> Outcome {
        let started = Instant::now();
        let audited = self.inner.audit.as_ref().map(|_| call.arguments.clone());
        let invocation = Arc::new(call.invocation);
        let outcome = match self.admit(caller, call.arguments, &invocation) {
            Ok((index, arguments)) => {
                let admitted = Admitted {
                    index,
                    slot: &self.inner.slots[index],
                    arguments,
                    invocation: Arc::clone(&invocation),
                    progress: call.progress,
                    cancellation: call.cancellation,
                };
                self.perform(caller, admitted, false).await
            }
            Err(outcome) => outcome,
        };
        self.audit(caller, &invocation, audited.as_ref(), &outcome, started);
        outcome
    }

    /// Approves a previewed write: it runs now, once, with exactly the arguments that were previewed.
    ///
    /// Refused, with nothing run, when the token is unknown, already used, expired, or another caller's,
    /// and when the caller has since lost the right to run the tool.
    pub async fn confirm(&self, caller: &Caller, confirmation: &str) -> Outcome {
        let started = Instant::now();
        let write = match self.inner.confirmations.take(confirmation, caller.id()) {
            Ok(write) => write,
            Err(error) if error.kind() == ErrorKind::Denied => return Outcome::Denied(error),
            Err(error) => return Outcome::Failed(error),
        };
        let slot = &self.inner.slots[write.slot];
        let invocation = Arc::new(write.invocation);
        let audited = self.inner.audit.as_ref().map(|_| Value::Object(write.arguments.clone()));
        let outcome = match self.gate(slot, caller).and_then(|()| self.take_run(write.slot, caller, &invocation)) {
            Ok(()) => {
                let admitted = Admitted {
                    index: write.slot,
                    slot,
                    arguments: write.arguments,
                    invocation: Arc::clone(&invocation),
                    progress: Progress::default(),
                    cancellation: None,
                };
                self.perform(caller, admitted, true).await
            }
            Err(outcome) => outcome,
        };
        self.audit(caller, &invocation, audited.as_ref(), &outcome, started);
        outcome
    }

    /// Declines a previewed write: it will never run.
    ///
    /// # Errors
    /// When the token is unknown, used, expired or another caller's.
    pub fn decline(&self, caller: &Caller, confirmation: &str) -> Result<(), ToolError> {
        self.inner.confirmations.take(confirmation, caller.id()).map(drop)
    }

    /// Resolve, authorize, check the ceiling, validate: the steps that refuse a call before anything runs.
    fn admit(&self, caller: &Caller, arguments: Value, invocation: &Invocation) -> Result<(usize, Map<String, Value>), Outcome> {
        let name = invocation.tool_name.as_str();
        let index = self.resolve(name).ok_or_else(|| {
            Outcome::Failed(ToolError::with_kind(
                ErrorKind::UnknownTool,
                format!("Unknown tool `{name}`. List the tools to see which ones you can use."),
            ))
        })?;
        let slot = &self.inner.slots[index];
        self.gate(slot, caller)?;
        self.check_runs(index, slot, caller, invocation)?;
        let mut arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                let message = format!("Invalid arguments for `{name}`: expected a JSON object, got {other}.");
                return Err(Outcome::Failed(ToolError::with_kind(ErrorKind::InvalidArguments, message)));
            }
        };
        for (key, value) in &slot.defaults {
            if !arguments.contains_key(key) {
                arguments.insert(key.clone(), value.clone());
            }
        }
        let arguments = Value::Object(arguments);
        schema::validate(&slot.validator, &slot.tool.name, &arguments).map_err(Outcome::Failed)?;
        self.take_run(index, caller, invocation)?;
        match arguments {
            Value::Object(map) => Ok((index, map)),
            _ => unreachable!("built as an object above"),
        }
    }

    /// Availability (switched on, mode) and authorization.
    fn gate(&self, slot: &Slot, caller: &Caller) -> Result<(), Outcome> {
        self.availability(slot)
            .map_err(|reason| Outcome::Failed(ToolError::with_kind(ErrorKind::Unavailable, reason)))?;
        if self.authorized(slot, caller, None) {
            Ok(())
        } else {
            Err(Outcome::Denied(ToolError::with_kind(ErrorKind::Denied, caller.denial())))
        }
    }

    fn run_key(caller: &Caller, invocation: &Invocation) -> String {
        match &invocation.session_id {
            Some(session) => session.clone(),
            None => format!("caller:{}", caller.id()),
        }
    }

    /// Refuses early when the ceiling is already reached; counting waits until the arguments are valid.
    fn check_runs(&self, index: usize, slot: &Slot, caller: &Caller, invocation: &Invocation) -> Result<(), Outcome> {
        let Some(max) = slot.tool.max_runs else { return Ok(()) };
        let runs = self.inner.runs.lock().unwrap_or_else(|e| e.into_inner());
        let done = runs.get(&(Self::run_key(caller, invocation), index)).copied().unwrap_or(0);
        if done >= max { Err(limit_reached(&slot.tool.name, max)) } else { Ok(()) }
    }

    /// Counts one run against the ceiling, refusing when it is reached.
    fn take_run(&self, index: usize, caller: &Caller, invocation: &Invocation) -> Result<(), Outcome> {
        let slot = &self.inner.slots[index];
        let Some(max) = slot.tool.max_runs else { return Ok(()) };
        let mut runs = self.inner.runs.lock().unwrap_or_else(|e| e.into_inner());
        let done = runs.entry((Self::run_key(caller, invocation), index)).or_insert(0);
        if *done >= max {
            return Err(limit_reached(&slot.tool.name, max));
        }
        *done += 1;
        Ok(())
    }

    /// Hooks before, then the preview or the tool itself, then hooks after.
    async fn perform(&self, caller: &Caller, call: Admitted<'_>, confirmed: bool) -> Outcome {
        let hooks = &self.inner.hooks;
        let (slot, invocation) = (call.slot, Arc::clone(&call.invocation));
        let seen = (!hooks.is_empty()).then(|| Value::Object(call.arguments.clone()));
        let info = seen.as_ref().map(|arguments| CallInfo { tool: &slot.tool, caller, arguments, invocation: &invocation });
        let short_circuit = info.as_ref().and_then(|info| hooks.iter().find_map(|h| h.before_call(info)));
        let mut outcome = match short_circuit {
            Some(result) => Outcome::Done(result),
            None => self.dispatch(caller, call, confirmed).await,
        };
        if let Some(info) = &info {
            for hook in hooks {
                hook.after_call(info, &mut outcome);
            }
        }
        self.mask(outcome)
    }

    async fn dispatch(&self, caller: &Caller, call: Admitted<'_>, confirmed: bool) -> Outcome {
        let preview = match &call.slot.handler {
            Handler::Compiled { preview: Some(preview), .. } if !confirmed => Some(*preview),
            _ => None,
        };
        let Admitted { index, slot, arguments, invocation, progress, cancellation } = call;
        let external = cancellation.is_some();
        let token = cancellation.unwrap_or_default();
        let parts = CallParts {
            arguments,
            caller: caller.clone(),
            invocation: Arc::clone(&invocation),
            state: Arc::clone(&self.inner.state),
            settings: slot.settings.clone(),
            progress,
            cancellation: token.clone(),
        };
        if let Some(preview) = preview {
            let arguments = parts.arguments.clone();
            return match CatchPanic(preview(parts)).await {
                Ok(preview) => match self.inner.confirmations.park(index, caller.id(), arguments, (*invocation).clone()) {
                    Ok(confirmation) => Outcome::NeedsConfirmation(Pending { tool: slot.tool.name.clone(), preview, confirmation }),
                    Err(error) => Outcome::Failed(error),
                },
                Err(error) => Outcome::Failed(error),
            };
        }
        let future = match &slot.handler {
            Handler::Compiled { call, .. } => call(parts),
            Handler::Dynamic(handler) => {
                let mut parts = parts;
                let arguments = Value::Object(parts.take_arguments());
                handler(arguments, parts)
            }
        };
        let result = self.guard(slot, future, &token, external).await;
        match result {
            Ok(result) => Outcome::Done(result),
            Err(error) => Outcome::Failed(error),
        }
    }

    /// Runs a tool future with panic capture, its timeout, and the caller's cancellation.
    async fn guard(&self, slot: &Slot, future: ToolFuture, token: &CancellationToken, external: bool) -> Result<ToolResult, ToolError> {
        let future = CatchPanic(future);
        let timed = async {
            match slot.tool.timeout.or(self.inner.default_timeout) {
                Some(limit) => tokio::time::timeout(limit, future).await.unwrap_or_else(|_| {
                    token.cancel();
                    Err(ToolError::with_kind(
                        ErrorKind::Timeout,
                        format!("`{}` did not finish within {limit:?} and was stopped.", slot.tool.name),
                    ))
                }),
                None => future.await,
            }
        };
        if !external {
            return timed.await;
        }
        tokio::select! {
            biased;
            () = token.cancelled() => Err(ToolError::with_kind(ErrorKind::Cancelled, "The call was cancelled.")),
            result = timed => result,
        }
    }

    /// Logs internal errors and, when masking is on, replaces their text for the model.
    fn mask(&self, outcome: Outcome) -> Outcome {
        match outcome {
            Outcome::Failed(error) if error.kind() == ErrorKind::Internal => {
                tracing::error!(target: "toolgate", error = error.message(), "tool failed with an internal error");
                Outcome::Failed(if self.inner.mask_internal_errors { error.masked() } else { error })
            }
            other => other,
        }
    }

    fn audit(&self, caller: &Caller, invocation: &Invocation, arguments: Option<&Value>, outcome: &Outcome, started: Instant) {
        if let (Some(sink), Some(arguments)) = (&self.inner.audit, arguments) {
            sink.record(&AuditEvent {
                tool: &invocation.tool_name,
                caller,
                invocation,
                arguments,
                outcome,
                elapsed: started.elapsed(),
            });
        }
    }
}

fn limit_reached(tool: &str, max: u32) -> Outcome {
    Outcome::Failed(ToolError::with_kind(
        ErrorKind::LimitReached,
        format!("`{tool}` may run at most {max} times per conversation and has reached that limit. Answer with what you have."),
    ))
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
                Poll::Ready(Err(ToolError::with_kind(ErrorKind::Internal, format!("the tool panicked: {message}"))))
            }
        }
    }
}
