//! The call pipeline, the same for every caller and transport:
//! resolve → authorize → call ceiling → validate → hooks before → preview or run (injection, timeout,
//! cancellation, panic capture) → encode → hooks after → audit.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::audit::AuditEvent;
use crate::entry::{PreviewFuture, ToolFuture};
use crate::hooks::CallInfo;
use crate::outcome::Pending;
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
    /// Refused, with nothing run, when the token is unknown, already used, expired, or another caller's,
    /// and when the caller has since lost the right to run the tool.
    pub async fn confirm(&self, caller: &Caller, confirmation: &str) -> Outcome {
        let write = match self.inner.confirmations.take(confirmation, caller.id()) {
            Ok(write) => write,
            Err(error) if error.kind() == ErrorKind::Denied => return Outcome::Denied(error),
            Err(error) => return Outcome::Failed(error),
        };
        let mut flight = Flight {
            caller,
            invocation: write.invocation,
            slot: None,
            seen: None,
            audited: self
                .inner
                .audit
                .as_ref()
                .map(|_| Value::Object(write.arguments.clone())),
            started: self.inner.audit.as_ref().map(|_| Instant::now()),
        };
        let slot = &self.inner.slots[write.slot];
        let step = match self
            .gate(slot, caller)
            .and_then(|()| self.take_run(write.slot, caller, &flight.invocation))
        {
            Ok(()) => self.launch(
                &mut flight,
                write.slot,
                write.arguments,
                Default::default(),
                None,
                true,
            ),
            Err(outcome) => Step::Done(outcome),
        };
        let mut outcome = self.drive(&flight, step).await;
        self.finish(&flight, &mut outcome);
        outcome
    }

    /// Declines a previewed write: it will never run.
    ///
    /// # Errors
    /// When the token is unknown, used, expired or another caller's.
    pub fn decline(&self, caller: &Caller, confirmation: &str) -> Result<(), ToolError> {
        self.inner
            .confirmations
            .take(confirmation, caller.id())
            .map(drop)
    }

    /// The pipeline: synchronous steps, the tool's future, synchronous steps. Only the middle is async, so
    /// the state machine stays small.
    async fn call_with(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Value,
        meta: Meta,
    ) -> Outcome {
        let resolved = self.resolve(name);
        let mut flight = Flight {
            caller,
            invocation: Invocation {
                tool_name: resolved.map_or_else(
                    || Arc::from(name),
                    |i| Arc::clone(&self.inner.slots[i].tool.name),
                ),
                tool_call_id: meta.tool_call_id,
                session_id: meta.session_id,
                traceparent: meta.traceparent,
                tracestate: meta.tracestate,
            },
            slot: None,
            seen: None,
            audited: self.inner.audit.as_ref().map(|_| arguments.clone()),
            started: self.inner.audit.as_ref().map(|_| Instant::now()),
        };
        let step = match self.admit(caller, resolved, arguments, &flight.invocation) {
            Ok((index, arguments)) => self.launch(
                &mut flight,
                index,
                arguments,
                (meta.progress, meta.log, meta.extensions),
                meta.cancellation,
                false,
            ),
            Err(outcome) => Step::Done(outcome),
        };
        let mut outcome = self.drive(&flight, step).await;
        self.finish(&flight, &mut outcome);
        outcome
    }

    /// Authorize, check the ceiling, validate: the steps that refuse a call before anything runs.
    fn admit(
        &self,
        caller: &Caller,
        resolved: Option<usize>,
        arguments: Value,
        invocation: &Invocation,
    ) -> Result<(usize, Map<String, Value>), Refusal> {
        let name = &*invocation.tool_name;
        let index = resolved.ok_or_else(|| {
            refuse(Outcome::Failed(ToolError::with_kind(
                ErrorKind::UnknownTool,
                format!("Unknown tool `{name}`. List the tools to see which ones you can use."),
            )))
        })?;
        let slot = &self.inner.slots[index];
        self.gate(slot, caller)?;
        self.check_runs(index, slot, caller, invocation)?;
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
        self.take_run(index, caller, invocation)?;
        match arguments {
            Value::Object(map) => Ok((index, map)),
            _ => unreachable!("built as an object above"),
        }
    }

    /// Availability (switched on, mode) and authorization.
    fn gate(&self, slot: &Slot, caller: &Caller) -> Result<(), Refusal> {
        self.availability(slot).map_err(|reason| {
            refuse(Outcome::Failed(ToolError::with_kind(
                ErrorKind::Unavailable,
                reason,
            )))
        })?;
        if self.authorized(slot, caller, None) {
            Ok(())
        } else {
            Err(refuse(Outcome::Denied(ToolError::with_kind(
                ErrorKind::Denied,
                caller.denial(),
            ))))
        }
    }

    fn run_key(caller: &Caller, invocation: &Invocation) -> String {
        match &invocation.session_id {
            Some(session) => session.to_string(),
            None => format!("caller:{}", caller.id()),
        }
    }

    /// Refuses early when the ceiling is already reached; counting waits until the arguments are valid.
    fn check_runs(
        &self,
        index: usize,
        slot: &Slot,
        caller: &Caller,
        invocation: &Invocation,
    ) -> Result<(), Refusal> {
        let Some(max) = slot.tool.max_runs else {
            return Ok(());
        };
        let runs = self.inner.runs.lock().unwrap_or_else(|e| e.into_inner());
        let done = runs
            .get(&(Self::run_key(caller, invocation), index))
            .copied()
            .unwrap_or(0);
        if done >= max {
            Err(limit_reached(&slot.tool.name, max))
        } else {
            Ok(())
        }
    }

    /// Counts one run against the ceiling, refusing when it is reached.
    fn take_run(
        &self,
        index: usize,
        caller: &Caller,
        invocation: &Invocation,
    ) -> Result<(), Refusal> {
        let slot = &self.inner.slots[index];
        let Some(max) = slot.tool.max_runs else {
            return Ok(());
        };
        let mut runs = self.inner.runs.lock().unwrap_or_else(|e| e.into_inner());
        let done = runs
            .entry((Self::run_key(caller, invocation), index))
            .or_insert(0);
        if *done >= max {
            return Err(limit_reached(&slot.tool.name, max));
        }
        *done += 1;
        Ok(())
    }

    /// Hooks before the call, then the preview's or the tool's future, with its parameters' parts.
    fn launch(
        &self,
        flight: &mut Flight<'_>,
        index: usize,
        arguments: Map<String, Value>,
        (progress, log, extensions): (Progress, Log, StateMap),
        cancellation: Option<CancellationToken>,
        confirmed: bool,
    ) -> Step {
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
                    Ok(preview) => preview,
                    Err(error) => return Outcome::Failed(error),
                };
                let slot = flight.slot.unwrap_or_default();
                let parked = self.inner.confirmations.park(
                    slot,
                    flight.caller.id(),
                    arguments,
                    flight.invocation.clone(),
                );
                return match parked {
                    Ok(confirmation) => Outcome::NeedsConfirmation(Pending {
                        tool: flight.invocation.tool_name.to_string(),
                        preview,
                        confirmation,
                    }),
                    Err(error) => Outcome::Failed(error),
                };
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

fn limit_reached(tool: &str, max: u32) -> Refusal {
    refuse(Outcome::Failed(ToolError::with_kind(
        ErrorKind::LimitReached,
        format!(
            "`{tool}` may run at most {max} times per conversation and has reached that limit. Answer with what you have."
        ),
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
