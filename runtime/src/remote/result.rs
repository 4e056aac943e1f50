//! A remote server's `CallToolResult` as a [`ToolResult`].

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::error::ToolError;
use crate::output::{Content, ToolResult};
use crate::text::shown;

/// A result an MCP server returned, as toolgate's own: text for the model, images and audio as binary
/// results, embedded resources kept, a resource link as a line of text, the structured content kept,
/// and `isError` a failure. For anyone who calls MCP servers with rmcp themselves.
///
/// ```
/// use rmcp::model::{CallToolResult, ContentBlock};
/// use toolgate::remote::tool_result;
///
/// let remote = CallToolResult::error(vec![ContentBlock::text("no such repository")]);
/// let result = tool_result(remote);
/// assert!(result.is_error);
/// assert_eq!(result.text_for_model(), "no such repository");
///
/// let image = CallToolResult::success(vec![ContentBlock::image("iVBORw==", "image/png")]);
/// let image = tool_result(image);
/// let (bytes, mime) = image.binary_results().next().unwrap();
/// assert_eq!((bytes, mime), (vec![0x89, b'P', b'N', b'G'], "image/png"));
/// ```
pub fn tool_result(remote: CallToolResult) -> ToolResult {
    let mut result = ToolResult::success(remote.content.iter().map(content).collect());
    result.structured = remote.structured_content.map(Into::into);
    result.is_error = remote.is_error.unwrap_or(false);
    result
}

/// One block: the shapes toolgate shares with MCP are read as they are; a link is named in text.
fn content(block: &ContentBlock) -> Content {
    if let ContentBlock::ResourceLink(link) = block {
        return Content::text(format!("Resource: {} <{}>", link.name, link.uri));
    }
    let value = serde_json::to_value(block).unwrap_or(Value::Null);
    serde_json::from_value(value.clone()).unwrap_or_else(|_| Content::text(value.to_string()))
}

/// Whether every image and audio block of `result` carries base64, as MCP requires: a client would
/// otherwise be handed a picture that is not one.
pub(super) fn sound_media(
    label: &str,
    tool: &str,
    result: &rmcp::model::CallToolResult,
) -> Result<(), ToolError> {
    use base64::Engine as _;
    let bad = result.content.iter().any(|block| {
        let data = match block {
            rmcp::model::ContentBlock::Image(image) => &image.data,
            rmcp::model::ContentBlock::Audio(audio) => &audio.data,
            _ => return false,
        };
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .is_err()
    });
    if bad {
        return Err(ToolError::new(format!(
            "The remote server `{label}` answered `{tool}` with an image or audio whose data is not base64; \
             the answer is not passed on."
        )));
    }
    Ok(())
}

/// The questions a server asks a person, each labelled with the server it comes from and with every
/// character that hides itself shown, so that none can pass for toolgate's own approval prompt.
pub(super) fn labelled(label: &str, requests: &mut serde_json::Map<String, Value>) {
    for request in requests.values_mut() {
        if let Some(message) = request.pointer_mut("/params/message")
            && let Some(text) = message.as_str()
        {
            *message = Value::String(format!("The remote server `{label}` asks: {}", shown(text)));
        }
    }
}
