//! [`ToolResult`]: the full result of a call, as the model and the host see it.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ToolError, error_json, error_text};

use super::{Content, StructuredValue, Telemetry};

/// Everything a call produced: content blocks for the model, an optional structured value, success or
/// failure, a session log line for people, and telemetry.
///
/// Tools usually return plain values and let toolgate build this; return it yourself for full control.
///
/// ```
/// use toolgate::ToolResult;
///
/// let result = ToolResult::text("No fact stored for Rust.")
///     .failed()
///     .with_session_log("lookup_fact: missing topic Rust")
///     .with_telemetry("topic", "Rust".into());
/// assert!(result.is_error);
/// assert_eq!(result.text_for_model(), "No fact stored for Rust.");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct ToolResult {
    /// Blocks for the model: text, images, audio, resources. Empty for a structured result, whose text form
    /// [`text_for_model`](Self::text_for_model) and the transports render from `structured` when needed.
    pub content: Vec<Content>,
    /// The structured value, when the tool returned data (matches the tool's output schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<StructuredValue>,
    /// Whether the call failed; the content then explains why.
    pub is_error: bool,
    /// A line for the people watching the session, not for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_log: Option<String>,
    /// Measurements and tags for telemetry.
    #[serde(skip_serializing_if = "Telemetry::is_empty")]
    pub telemetry: Telemetry,
}

impl ToolResult {
    /// A successful result made of content blocks.
    pub fn success(content: Vec<Content>) -> Self {
        ToolResult {
            content,
            ..ToolResult::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(vec![Content::text(text)])
    }

    /// A successful structured result; the model reads its JSON text.
    pub fn structured(value: impl Into<StructuredValue>) -> Self {
        ToolResult {
            structured: Some(value.into()),
            ..Self::default()
        }
    }

    /// The result for an error: `[ERROR] <message>` for the model and the error's structured form.
    pub fn error(error: &ToolError) -> Self {
        Self::failure(error.kind().as_str(), error.message(), error.data())
    }

    /// The result for an unsuccessful call of `kind`, in the form of an error.
    pub(crate) fn failure(kind: &str, message: &str, data: Option<&Value>) -> Self {
        ToolResult {
            content: vec![Content::text(error_text(message))],
            structured: Some(error_json(kind, message, data).into()),
            is_error: true,
            ..Self::default()
        }
    }

    /// Marks this result as a failure.
    #[must_use]
    pub fn failed(mut self) -> Self {
        self.is_error = true;
        self
    }

    /// Adds a session log line.
    #[must_use]
    pub fn with_session_log(mut self, line: impl Into<String>) -> Self {
        self.session_log = Some(line.into());
        self
    }

    /// Adds a telemetry entry.
    #[must_use]
    pub fn with_telemetry(mut self, key: impl Into<String>, value: Value) -> Self {
        self.telemetry.insert(key.into(), value);
        self
    }

    /// The text blocks joined by newlines, or the structured value's JSON text when there are none: what a
    /// text-only model sees.
    pub fn text_for_model(&self) -> String {
        if let Some(text) = self.structured_text() {
            return text.into_owned();
        }
        let texts: Vec<&str> = self.content.iter().filter_map(Content::as_text).collect();
        texts.join("\n")
    }

    /// The structured value's JSON text, when there is a structured value and no text block.
    pub(crate) fn structured_text(&self) -> Option<Cow<'_, str>> {
        structured_text(self.structured.as_ref(), &self.content)
    }

    /// The image and audio blocks, decoded, with their media types.
    pub fn binary_results(&self) -> impl Iterator<Item = (Vec<u8>, &str)> {
        self.content.iter().filter_map(Content::binary)
    }
}

/// The JSON text of a result's `structured` value, when its `content` has no text block.
pub(crate) fn structured_text<'a>(
    structured: Option<&'a StructuredValue>,
    content: &[Content],
) -> Option<Cow<'a, str>> {
    let value = structured?;
    if content.iter().any(|c| c.as_text().is_some()) {
        return None;
    }
    Some(value.to_json())
}
