//! [`Outcome`]: what came of a call, with done, needs-confirmation, denied and failed told apart.

use serde_json::{Map, Value, json};

use crate::{Preview, ToolError, ToolResult};

/// The key of the approval question in the answers of a resumed write (see [`Pending::approval_request`]).
pub const APPROVAL_KEY: &str = "approval";

/// The outcome of an in-process call.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome {
    /// The tool ran. Its result may still be a failure the tool reported itself (`result.is_error`).
    Done(ToolResult),
    /// A write with a preview: nothing ran yet; show the preview and approve or decline it.
    NeedsConfirmation(Pending),
    /// The tool asked for input (see [`Ask`](crate::Ask)): answer its requests and resume the call.
    InputRequired(InputRequired),
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

impl Pending {
    /// The approval question as an `elicitation/create` request: a form whose message is the preview and
    /// whose one field, `approve`, is a yes or no. Answer it under [`APPROVAL_KEY`] when resuming.
    pub fn approval_request(&self) -> Value {
        crate::ask::elicitation(
            self.preview.text(),
            json!({
                "type": "object",
                "properties": {
                    "approve": {
                        "type": "boolean",
                        "title": "Approve",
                        "description": "Run this change now, exactly as described.",
                    },
                },
                "required": ["approve"],
            }),
        )
    }
}

/// A call waiting for input from the client.
#[derive(Debug, Clone)]
pub struct InputRequired {
    pub(crate) tool: String,
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: String,
}

impl InputRequired {
    /// The tool that asked.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The questions by key, each an MCP request object (`{"method": ..., "params": ...}`):
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub fn requests(&self) -> &Map<String, Value> {
        &self.requests
    }

    /// The sealed state to send back with the answers, through [`Call::resume`](crate::Call::resume).
    pub fn state(&self) -> &str {
        &self.state
    }
}

impl Outcome {
    /// The result to hand to the model: the tool's own, the preview text, or an `[ERROR] ...` text.
    pub fn into_result(self) -> ToolResult {
        match self {
            Outcome::Done(result) => result,
            Outcome::NeedsConfirmation(pending) => ToolResult::text(format!(
                "Waiting for approval: {}. Nothing has changed yet; tell the user what will happen.",
                pending.preview.text().trim_end_matches('.')
            )),
            Outcome::InputRequired(input) => ToolResult::text(format!(
                "`{}` needs input this host did not provide: {}.",
                input.tool,
                input
                    .requests
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .failed(),
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
            Outcome::InputRequired(_) => "input_required",
            Outcome::Denied(_) => "denied",
            Outcome::Failed(error) => error.kind().as_str(),
        }
    }
}
