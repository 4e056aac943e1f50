//! [`Outcome`]: what came of a call, with done, needs-confirmation, denied and failed told apart.

use crate::{Preview, ToolError, ToolResult};

/// The outcome of an in-process call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome {
    /// The tool ran. Its result may still be a failure the tool reported itself (`result.is_error`).
    Done(ToolResult),
    /// A write with a preview: nothing ran yet; show the preview and approve or decline it.
    NeedsConfirmation(Pending),
    /// The caller may not run this tool; nothing ran.
    Denied(ToolError),
    /// The call failed: unknown tool, invalid arguments, a ceiling, a timeout, or an error from the tool.
    Failed(ToolError),
}

/// A write waiting for a person's approval.
#[derive(Debug, Clone)]
pub struct Pending {
    pub(crate) tool: String,
    pub(crate) preview: Preview,
    pub(crate) confirmation: String,
}

impl Pending {
    /// The tool that would run.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// What it would do.
    pub fn preview(&self) -> &Preview {
        &self.preview
    }

    /// The token to pass to [`Registry::confirm`](crate::Registry::confirm) or
    /// [`Registry::decline`](crate::Registry::decline).
    pub fn confirmation(&self) -> &str {
        &self.confirmation
    }
}

impl Outcome {
    /// The result to hand to the model: the tool's own, the preview text, or an `[ERROR] ...` text.
    pub fn into_result(self) -> ToolResult {
        match self {
            Outcome::Done(result) => result,
            Outcome::NeedsConfirmation(pending) => ToolResult::text(format!(
                "Waiting for approval: {}. Nothing has changed yet; tell the user what will happen.",
                pending.preview.text()
            )),
            Outcome::Denied(error) | Outcome::Failed(error) => ToolResult::error(&error),
        }
    }

    /// Whether the tool ran and did not report a failure.
    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done(result) if !result.is_error)
    }

    /// The error of a denied or failed call.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Outcome::Denied(error) | Outcome::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// A short label: `done`, `tool_error`, `needs_confirmation`, `denied` or the failure's kind.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Done(result) if result.is_error => "tool_error",
            Outcome::Done(_) => "done",
            Outcome::NeedsConfirmation(_) => "needs_confirmation",
            Outcome::Denied(_) => "denied",
            Outcome::Failed(error) => error.kind().as_str(),
        }
    }
}
