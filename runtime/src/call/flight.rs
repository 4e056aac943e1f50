//! A call between the pipeline's steps: what it carries from admission to the end ([`InFlight`]), what a
//! step starts ([`Launched`]), and a refusal before anything ran.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::catalog::{Catalog, Snapshot, ToolId};
use crate::error::{ErrorKind, ToolError};
use crate::output::Outcome;
use crate::param::Invocation;
use crate::policy::AuditAction;
use crate::tool::{Finished, PreviewFuture, ToolFuture};

/// A call between the pipeline's synchronous steps: what `Pipeline::finish` needs after the tool ran.
pub(super) struct InFlight<'a> {
    /// Who may run what, and the state tools take.
    pub(super) catalog: &'a Catalog,
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

/// What `Pipeline::launch` starts of an admitted call.
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

/// The answer for a name no tool has, and, unless denials are explained, for a tool the caller may not run.
pub(super) fn unknown_tool(name: &str) -> Refusal {
    refuse(Outcome::Failed(unknown_tool_error(name)))
}

/// The error of [`unknown_tool`].
pub(super) fn unknown_tool_error(name: &str) -> ToolError {
    ToolError::with_kind(
        ErrorKind::UnknownTool,
        format!(
            "Unknown tool `{}`. List the tools to see which ones you can use.",
            crate::text::capped(&crate::text::shown(name))
        ),
    )
}

/// A call refused before anything ran; boxed, so the common path moves small values.
pub(super) type Refusal = Box<Outcome>;

pub(super) fn refuse(outcome: Outcome) -> Refusal {
    Box::new(outcome)
}
