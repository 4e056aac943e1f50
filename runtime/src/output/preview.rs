//! [`Preview`]: what a write would do, for a person to approve before it runs.

use serde::Serialize;
use serde_json::Value;

use crate::error::ToolError;

/// The human-readable account of a write, returned by a tool's `preview` hook.
///
/// Name the records and amounts involved rather than echoing the arguments: this text is what a person
/// approves.
///
/// ```
/// use toolgate::Preview;
///
/// let p = Preview::new("Confirm order RO-00012 for Ada Lovelace (129.00 EUR)")
///     .with_data(serde_json::json!({ "order": "RO-00012", "total": 129.0 }));
/// assert_eq!(p.text(), "Confirm order RO-00012 for Ada Lovelace (129.00 EUR)");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preview {
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

impl Preview {
    /// A preview with the text a person reads.
    pub fn new(text: impl Into<String>) -> Self {
        Preview {
            text: text.into(),
            data: None,
        }
    }

    /// Adds structured detail for hosts that render their own confirmation view.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The text a person reads.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The structured detail.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The preview as a person is shown it, through [`shown`](crate::text::shown): characters that
    /// change how text looks without showing themselves written out as `\u{..}` escapes, so that
    /// argument text cannot make the prompt say what the write does not do.
    pub(crate) fn shown_to_people(mut self) -> Self {
        if let std::borrow::Cow::Owned(shown) = crate::text::shown(&self.text) {
            self.text = shown;
        }
        self
    }
}

/// What a preview hook may return: a [`Preview`], or a `Result` of one.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
///
/// /// Cancel a booking. Changes data.
/// #[tool(public, preview = preview_cancel)]
/// async fn cancel(booking: u32) -> String {
///     format!("Booking {booking} cancelled.")
/// }
///
/// /// A preview can refuse: there is nothing to cancel.
/// async fn preview_cancel(booking: u32) -> Result<Preview, ToolError> {
///     match booking {
///         1..=99 => Ok(Preview::new(format!("Cancel booking {booking} (refund 40 EUR)"))),
///         _ => Err(ToolError::new(format!("There is no booking {booking}."))),
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let missing = registry.call(&Caller::new("ada"), "cancel", json!({ "booking": 500 })).await;
/// assert_eq!(missing.into_result().text_for_model(), "[ERROR] There is no booking 500.");
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "a preview hook must return `Preview` or `Result<Preview, E>`, not `{Self}`",
    label = "returns `{Self}`",
    note = "write `async fn preview_x(<the tool's parameters>) -> Result<Preview, ToolError>`"
)]
pub trait IntoPreview {
    /// Converts the hook's return value.
    fn into_preview(self) -> Result<Preview, ToolError>;
}

impl IntoPreview for Preview {
    fn into_preview(self) -> Result<Preview, ToolError> {
        Ok(self)
    }
}

impl<E: Into<ToolError>> IntoPreview for Result<Preview, E> {
    fn into_preview(self) -> Result<Preview, ToolError> {
        self.map_err(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::Preview;

    #[test]
    fn characters_that_hide_themselves_are_shown_as_escapes() {
        let shown = |text: &str| Preview::new(text).shown_to_people().text().to_owned();
        assert_eq!(
            shown("Send 9999 EUR to \u{202e}10LN"),
            "Send 9999 EUR to \\u{202e}10LN"
        );
        assert_eq!(
            shown("to NL01\n\nAmount: 1 EUR (verified)"),
            "to NL01\\u{a}\\u{a}Amount: 1 EUR (verified)"
        );
        assert_eq!(shown("\u{1b}[2K\u{1b}[1Aok"), "\\u{1b}[2K\\u{1b}[1Aok");
        assert_eq!(shown("pay\u{200b}pal \u{85}"), "pay\\u{200b}pal \\u{85}");
        assert_eq!(
            shown("Überweise 5 € an Zoë"),
            "Überweise 5 € an Zoë",
            "ordinary text stays"
        );
    }
}
