//! Not public API: the link-time registration record the `#[tool]` macro submits to `inventory`.
//!
//! It is const-constructible (only `&'static` data and `fn` pointers); the registry turns each entry into a
//! [`Tool`](crate::Tool) once, when it is built.

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use schemars::{Schema, SchemaGenerator};

use crate::error::{ErrorKind, ToolError};
use crate::output::{Preview, ToolResult};
use crate::param::{CallParts, ParamSpec};

/// The future of one tool call.
#[doc(hidden)]
pub type ToolFuture = Pin<Box<dyn Future<Output = Finished> + Send + 'static>>;

/// The future of one preview.
#[doc(hidden)]
pub type PreviewFuture = Pin<Box<dyn Future<Output = Result<Preview, ToolError>> + Send + 'static>>;

/// What a tool's body gives: its result, or the error it failed with.
#[doc(hidden)]
pub type Finished = Result<ToolResult, ToolError>;

/// How a compiled-in tool's body runs: as a future, or, when the body never awaits, in place.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Body {
    /// A body that may wait: its boxed future.
    Awaits(fn(CallParts<'_>) -> ToolFuture),
    /// A body with no `.await`: its result, from the one poll that finishes it, on borrowed parts.
    Finishes(fn(&mut CallParts<'_>) -> Finished),
}

impl Body {
    /// The body as a future, to run where the call waits: the future of one that never awaits runs it
    /// in its first poll.
    pub(crate) fn future(self, parts: CallParts<'_>) -> ToolFuture {
        match self {
            Body::Awaits(call) => call(parts),
            Body::Finishes(call) => {
                let mut parts = parts.into_owned();
                Box::pin(async move { call(&mut parts) })
            }
        }
    }
}

/// Who may run a compiled-in tool, as declared in `#[tool(...)]`.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Access {
    /// `public`: anyone.
    Public,
    /// `ability = ...`: callers holding all of these.
    Abilities(&'static [&'static str]),
}

/// Not public API: one `#[tool]`, as registered at link time.
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolEntry {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: &'static str,
    pub access: Access,
    pub downstream: bool,
    pub read_only: bool,
    pub capability: Option<&'static str>,
    pub categories: &'static [&'static str],
    pub system: bool,
    pub overrides_builtin: bool,
    pub defer: super::Defer,
    pub task: super::TaskSupport,
    pub idempotent: bool,
    pub open_world: bool,
    pub max_runs: Option<u32>,
    pub timeout_ms: Option<u64>,
    pub params: &'static [ParamSpec],
    pub output_schema: fn(&mut SchemaGenerator) -> Option<Schema>,
    pub call: Body,
    pub preview: Option<fn(CallParts<'_>) -> PreviewFuture>,
    pub module: &'static str,
    pub file: &'static str,
    pub line: u32,
}

inventory::collect!(ToolEntry);

/// Not public API: the future returned when a parameter cannot be extracted.
#[doc(hidden)]
pub fn fail<T: Send + 'static>(
    error: ToolError,
) -> Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send>> {
    Box::pin(std::future::ready(Err(error)))
}

/// Not public API: the output of a future that finishes in its first poll, as one whose body has no
/// `.await` does; an error, never a hang, if it waits after all. Inlined into the tool's call, so that
/// its result is written where the call returns it.
#[doc(hidden)]
#[inline]
pub fn finish<F: Future<Output = Finished>>(future: F) -> Finished {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(waited()),
    }
}

/// The error of a body that waited though it has no `.await`.
#[cold]
fn waited() -> ToolError {
    ToolError::with_kind(
        ErrorKind::Internal,
        "the tool waited, though its body has no `.await`",
    )
}

/// Not public API: converts a preview hook's return value.
#[doc(hidden)]
pub fn into_preview(value: impl crate::output::IntoPreview) -> Result<Preview, ToolError> {
    value.into_preview()
}

#[cfg(test)]
mod tests {
    use crate::error::ErrorKind;
    use crate::output::ToolResult;

    use super::finish;

    #[test]
    fn a_body_is_finished_in_its_one_poll_or_is_an_error() {
        let done = finish(async { Ok(ToolResult::text("done")) }).unwrap();
        assert_eq!(done.text_for_model(), "done");
        let waited = finish(std::future::pending()).unwrap_err();
        assert_eq!(waited.kind(), ErrorKind::Internal);
        assert_eq!(
            waited.message(),
            "the tool waited, though its body has no `.await`"
        );
    }
}
