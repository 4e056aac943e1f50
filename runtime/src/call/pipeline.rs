//! The call pipeline as a table of contents: resolve, admit, then the common path or the rounds, then finish.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::caller::Caller;
use crate::output::Outcome;
use crate::param::Invocation;
use crate::policy::AuditAction;
use crate::registry::{Registry, Snapshot, ToolId};
use crate::tool::{Finished, PreviewFuture, ToolFuture};

use super::admit::{Refusal, unknown_tool};
use super::request::{Attachments, Call, Meta};
use super::trace;

/// A call between the pipeline's synchronous steps: what [`Registry::finish`] needs after the tool ran.
pub(super) struct InFlight<'a> {
    /// The tools as they were when the call started; it finishes on them.
    pub(super) snapshot: &'a Snapshot,
    pub(super) caller: &'a Caller,
    /// The tool's own when the call carries no ids.
    pub(super) invocation: Cow<'a, Invocation>,
    /// The admitted tool; `None` when the call was refused before admission.
    pub(super) admitted: Option<ToolId>,
    /// The arguments as hooks see them; `None` when there are no hooks.
    pub(super) hook_arguments: Option<Value>,
    pub(super) audit_arguments: Option<Value>,
    pub(super) started: Option<Instant>,
    pub(super) action: AuditAction,
    /// How long the call waited for a slot, in milliseconds: it counts toward the tool's timeout.
    pub(super) waited_ms: u32,
}

/// What [`Registry::launch`](Registry) starts of an admitted call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The preview, when the tool has one; else the body.
    Preview,
    /// The body, as a future.
    Body,
    /// The body, run in place when it has no `.await` and has no timeout, so that it needs no future of
    /// its own; else as a future.
    InPlace,
}

/// The asynchronous part of a call: nothing, a preview, or the tool's future; or the result of a body
/// run in place.
pub(super) enum Launched {
    Done(Refusal),
    Finished(Finished),
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
    pub fn call(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Outcome> {
        self.call_with(
            None,
            caller,
            Cow::Borrowed(name),
            arguments,
            Meta::default(),
        )
    }

    /// Runs a [`Call`] for `caller` through the pipeline.
    pub fn run(&self, caller: &Caller, call: Call) -> impl Future<Output = Outcome> {
        let Call {
            name,
            arguments,
            meta,
        } = call;
        self.call_with(None, caller, Cow::Owned(name), arguments, meta)
    }

    /// Runs a [`Call`] whose name the transport resolved already in `snapshot` (with
    /// [`resolve`](Self::resolve)), so that it encodes the result against the tool that ran, which a hook
    /// may have chosen.
    #[cfg(feature = "mcp")]
    pub(crate) fn run_resolved(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        call: Call,
        resolved: Option<ToolId>,
    ) -> impl Future<Output = Outcome> {
        let Call {
            name,
            arguments,
            meta,
        } = call;
        self.call_with(
            Some((snapshot, resolved)),
            caller,
            Cow::Owned(name),
            arguments,
            meta,
        )
    }

    /// The pipeline: synchronous steps, the tool's future, synchronous steps. Only the middle is async, so
    /// the state machine stays small; an `async` block, not an `async fn`, so that it holds its arguments
    /// once, not twice, and the public entries above return it as it is, with no future of their own
    /// around it. It resolves `name` in the current snapshot, unless the transport did (`resolved`). It
    /// runs in the call's span, which is disabled, at the cost of one check, unless a subscriber wants
    /// `toolgate::call` spans.
    #[allow(clippy::manual_async_fn)] // see above: an `async fn` holds its arguments twice
    fn call_with(
        &self,
        resolved: Option<(&Snapshot, Option<ToolId>)>,
        caller: &Caller,
        name: Cow<'_, str>,
        arguments: Value,
        mut meta: Meta,
    ) -> impl Future<Output = Outcome> {
        async move {
            let current;
            let (snapshot, resolved) = match resolved {
                Some(resolved) => resolved,
                None => {
                    current = self.snapshot();
                    let resolved = self.resolve(&current, &name);
                    (&*current, resolved)
                }
            };
            let name = &*name;
            let traced = trace::call_span(snapshot, name, resolved, caller, &meta);
            let mut flight = InFlight {
                snapshot,
                caller,
                invocation: match resolved {
                    Some(i) if !meta.has_ids() => Cow::Borrowed(&snapshot.tool(i).invocation),
                    _ => Cow::Owned(Invocation {
                        // A name no tool has is the client's choice: kept to a bounded length.
                        tool_name: resolved.map_or_else(
                            || Arc::from(crate::text::capped(name)),
                            |i| Arc::clone(&snapshot.tool(i).tool.name),
                        ),
                        tool_call_id: meta.tool_call_id.take(),
                        session_id: meta.session_id.take(),
                        traceparent: meta.traceparent.take(),
                        tracestate: meta.tracestate.take(),
                    }),
                },
                admitted: None,
                hook_arguments: None,
                audit_arguments: self.inner.audit.as_ref().map(|_| arguments.clone()),
                started: self.inner.audit.as_ref().map(|_| Instant::now()),
                action: AuditAction::Call,
                waited_ms: meta.waited_ms,
            };
            let replying = meta.is_reply();
            let mut launched = match self.admit(&flight, name, resolved, arguments, replying) {
                Ok((index, arguments))
                    if snapshot.tool(index).via_rounds
                        || replying
                        || caller.is_delegated()
                        || (snapshot.rates.is_some() && self.inner.ceilings.shared.is_some()) =>
                {
                    // Boxed whole, so that the common path's state machine holds one pointer for it.
                    let rounds = self.call_with_rounds(flight, index, arguments, meta);
                    let Some(traced) = traced else {
                        return Box::pin(rounds).await;
                    };
                    let outcome = Box::pin(rounds.instrument(traced.0.clone())).await;
                    trace::record(&traced, &outcome);
                    return outcome;
                }
                Ok((index, arguments)) => {
                    let Meta {
                        progress,
                        log,
                        extensions,
                        cancellation,
                        ..
                    } = meta;
                    let attachments = Attachments {
                        progress,
                        log,
                        extensions,
                        cancellation,
                        answers: None,
                    };
                    // A span wraps the body's future, so a traced call runs none in place.
                    let step = if traced.is_some() {
                        Step::Body
                    } else {
                        Step::InPlace
                    };
                    self.launch(&mut flight, index, arguments, attachments, step)
                }
                Err(outcome) => Launched::Done(outcome),
            };
            if let Some((span, _)) = &traced {
                launched = trace::instrumented(launched, span);
            }
            let mut outcome = match launched {
                // Done in place: no future to drive.
                Launched::Done(outcome) => *outcome,
                Launched::Finished(result) => Outcome::finished(result),
                launched => self.drive(&flight, launched).await,
            };
            self.finish(&flight, &mut outcome);
            if let Some(traced) = &traced {
                trace::record(traced, &outcome);
            }
            if flight.admitted.is_none()
                && matches!(outcome, Outcome::Denied(_))
                && !self.inner.explain_denials
            {
                // Refused by the gate: the audit has the denial, and the caller learns nothing of the tool.
                return *unknown_tool(name);
            }
            outcome
        }
    }
}
