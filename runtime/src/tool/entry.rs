//! Not public API: the link-time registration record the `#[tool]` macro submits to `inventory`.
//!
//! It is const-constructible (only `&'static` data and `fn` pointers); the registry turns each entry into a
//! [`Tool`](crate::Tool) once, when it is built.

use std::future::Future;
use std::pin::Pin;

use schemars::{Schema, SchemaGenerator};

use crate::error::ToolError;
use crate::output::{Preview, ToolResult};
use crate::param::{CallParts, ParamSpec};

/// The future of one tool call.
#[doc(hidden)]
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolResult, ToolError>> + Send + 'static>>;

/// The future of one preview.
#[doc(hidden)]
pub type PreviewFuture = Pin<Box<dyn Future<Output = Result<Preview, ToolError>> + Send + 'static>>;

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
    pub call: fn(CallParts<'_>) -> ToolFuture,
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

/// Not public API: converts a preview hook's return value.
#[doc(hidden)]
pub fn into_preview(value: impl crate::output::IntoPreview) -> Result<Preview, ToolError> {
    value.into_preview()
}
