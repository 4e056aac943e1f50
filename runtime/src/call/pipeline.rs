//! The call pipeline as a table of contents: resolve, admit, then the common path or the rounds, then finish.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::Instrument;

use crate::caller::Caller;
use crate::catalog::{Catalog, Snapshot, ToolId};
use crate::confirm::Confirmations;
use crate::output::Outcome;
use crate::param::Invocation;
use crate::policy::ceiling::Ceilings;
use crate::policy::hooks::{Hook, Lookup};
use crate::policy::slots::{Busy, Slot, Slots};
use crate::policy::{AuditAction, AuditSink};

use super::flight::{InFlight, Launched, Step, unknown_tool};
use super::request::{Attachments, Call, Meta};
use super::task::Tasks;
use super::trace;

/// Every call's way from a name and arguments to an outcome, with what its steps keep: the hooks, the
/// audit, the ceilings, the slots calls run in, pending confirmations and tasks. It reads the tools from a
/// [`Catalog`], which each entry takes.
pub(crate) struct Pipeline {
    pub(super) hooks: Vec<Box<dyn Hook>>,
    pub(super) audit: Option<Box<dyn AuditSink>>,
    pub(super) mask_internal_errors: bool,
    pub(super) default_timeout: Option<Duration>,
    pub(super) ceilings: Ceilings,
    /// The slots calls and tasks run in.
    pub(super) slots: Slots,
    /// Tell a caller who may not run a tool that their role may not, instead of the unknown tool's answer.
    pub(super) explain_denials: bool,
    pub(super) confirmations: Confirmations,
    /// Where tasks are kept, and the cancellations of those this process runs.
    pub(super) tasks: Arc<Tasks>,
    /// How long the audit trail in the records' database keeps a call.
    audit_retention: Option<Duration>,
}

/// What a [`Pipeline`] is made of, as the builder assembles it.
pub(crate) struct PipelineParts {
    pub(crate) hooks: Vec<Box<dyn Hook>>,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    pub(crate) mask_internal_errors: bool,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) ceilings: Ceilings,
    pub(crate) slots: Slots,
    pub(crate) explain_denials: bool,
    pub(crate) confirmations: Confirmations,
    pub(crate) tasks: Tasks,
    pub(crate) audit_retention: Option<Duration>,
}

impl Pipeline {
    pub(crate) fn new(parts: PipelineParts) -> Self {
        let PipelineParts {
            hooks,
            audit,
            mask_internal_errors,
            default_timeout,
            ceilings,
            slots,
            explain_denials,
            confirmations,
            tasks,
            audit_retention,
        } = parts;
        Pipeline {
            hooks,
            audit,
            mask_internal_errors,
            default_timeout,
            ceilings,
            slots,
            explain_denials,
            confirmations,
            tasks: Arc::new(tasks),
            audit_retention,
        }
    }

    /// Pending confirmations and the keys that seal them.
    pub(crate) fn confirmations(&self) -> &Confirmations {
        &self.confirmations
    }

    /// The tasks this registry keeps.
    pub(crate) fn tasks(&self) -> &Arc<Tasks> {
        &self.tasks
    }

    /// How long the audit trail in the records' database keeps a call.
    pub(crate) fn audit_retention(&self) -> Option<Duration> {
        self.audit_retention
    }

    /// The timeout of a tool that declares none.
    #[cfg(feature = "mcp")]
    pub(crate) fn default_timeout(&self) -> Option<Duration> {
        self.default_timeout
    }

    /// A slot among the calls that may run at once, waiting for one (and for the caller's share) for at
    /// most `limit`.
    pub(crate) async fn slot(
        &self,
        caller: &Caller,
        limit: Option<Duration>,
    ) -> Result<Slot<'_>, Busy> {
        self.slots.take(caller, limit).await
    }

    /// Forgets the call counts of a session, for `max_runs`.
    pub(crate) fn end_session(&self, session_id: &str) {
        self.ceilings.end_session(session_id);
    }

    /// The tool `name` names in `snapshot`, after resolution hooks.
    pub(crate) fn resolve(&self, snapshot: &Snapshot, name: &str) -> Option<ToolId> {
        let index = *snapshot.by_name.get(name)?;
        Some(self.redirect(snapshot, Lookup::Name(name), index))
    }

    /// `index`, or the tool a resolution hook names instead. Without hooks (inlined) one check.
    #[inline]
    pub(crate) fn redirect(
        &self,
        snapshot: &Snapshot,
        lookup: Lookup<'_>,
        index: ToolId,
    ) -> ToolId {
        if self.hooks.is_empty() {
            return index;
        }
        self.redirect_by_hooks(snapshot, lookup, index)
    }

    fn redirect_by_hooks(
        &self,
        snapshot: &Snapshot,
        lookup: Lookup<'_>,
        mut index: ToolId,
    ) -> ToolId {
        for hook in &self.hooks {
            if let Some(other) = hook.on_resolve(lookup, &snapshot.tool(index).tool) {
                match snapshot.by_name.get(other.as_str()) {
                    Some(&i) => index = i,
                    None => tracing::warn!(
                        tool = other,
                        "a resolution hook named a tool that does not exist"
                    ),
                }
            }
        }
        index
    }

    /// Calls tool `name` for `caller` with JSON `arguments`.
    pub(crate) fn call(
        &self,
        catalog: &Catalog,
        caller: &Caller,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Outcome> {
        self.call_with(
            catalog,
            None,
            caller,
            Cow::Borrowed(name),
            arguments,
            Meta::default(),
        )
    }

    /// Runs a [`Call`] for `caller` through the pipeline.
    pub(crate) fn run(
        &self,
        catalog: &Catalog,
        caller: &Caller,
        call: Call,
    ) -> impl Future<Output = Outcome> {
        let Call {
            name,
            arguments,
            meta,
        } = call;
        self.call_with(catalog, None, caller, Cow::Owned(name), arguments, meta)
    }

    /// Runs a [`Call`] whose name the transport resolved already in `snapshot` (with
    /// [`resolve`](Self::resolve)), so that it encodes the result against the tool that ran, which a hook
    /// may have chosen.
    #[cfg(feature = "mcp")]
    pub(crate) fn run_resolved(
        &self,
        catalog: &Catalog,
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
            catalog,
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
        catalog: &Catalog,
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
                    current = catalog.snapshot();
                    let resolved = self.resolve(&current, &name);
                    (&*current, resolved)
                }
            };
            let name = &*name;
            let traced = trace::call_span(snapshot, name, resolved, caller, &meta);
            let mut flight = InFlight {
                catalog,
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
                audit_arguments: self.audit.as_ref().map(|_| arguments.clone()),
                started: self.audit.as_ref().map(|_| Instant::now()),
                action: AuditAction::Call,
                waited_ms: meta.waited_ms,
            };
            let replying = meta.is_reply();
            let mut launched = match self.admit(&flight, name, resolved, arguments, replying) {
                Ok((index, arguments))
                    if snapshot.tool(index).via_rounds
                        || replying
                        || caller.is_delegated()
                        || (snapshot.rates.is_some() && self.ceilings.shared.is_some()) =>
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
                && !self.explain_denials
            {
                // Refused by the gate: the audit has the denial, and the caller learns nothing of the tool.
                return *unknown_tool(name);
            }
            outcome
        }
    }
}
