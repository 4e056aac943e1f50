//! The conformance suite's fixture tools, as plain `#[tool]` functions.
#![allow(deprecated)] // sampling/createMessage: deprecated by SEP-2577, still part of the versions tested

use std::time::Duration;

use serde_json::{Value, json};
use toolgate::mcp::Notifier;
use toolgate::mcp::rmcp::model::{CreateMessageRequestParams, ElicitRequestParams};
use toolgate::mcp::rmcp::{Peer, RoleServer};
use toolgate::prelude::*;
use toolgate::{Content, DynamicTool, Extension};

/// A 1x1 red PNG.
pub(crate) const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
    0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
    0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// A WAV file with a header and no samples.
const WAV: &[u8] = b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x44\xac\x00\x00\x88\x58\x01\x00\x02\x00\x10\x00data\x00\x00\x00\x00";

/// Returns a simple text response.
#[tool(public, read_only)]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns an image.
#[tool(public, read_only)]
async fn test_image_content() -> Content {
    Content::image(PNG, "image/png")
}

/// Returns audio.
#[tool(public, read_only)]
async fn test_audio_content() -> Content {
    Content::audio(WAV, "audio/wav")
}

/// Returns an embedded resource.
#[tool(public, read_only)]
async fn test_embedded_resource() -> Content {
    Content::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )
}

/// Returns text, an image and a resource.
#[tool(public, read_only)]
async fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image(PNG, "image/png"),
        Content::resource_text(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        ),
    ]
}

/// Logs three messages while it runs.
#[tool(public, read_only)]
async fn test_tool_with_logging(log: Log) -> &'static str {
    for message in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        log.info(message);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Tool with logging executed successfully"
}

/// Reports progress three times.
#[tool(public, read_only)]
async fn test_tool_with_progress(progress: Progress) -> &'static str {
    for done in [0.0, 50.0, 100.0] {
        progress.report(done, Some(100.0), Some("working"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Tool with progress executed successfully"
}

/// Always fails.
#[tool(public, read_only)]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

// ANCHOR: sampling
/// Asks the client's model to answer `prompt` (sampling).
#[tool(public, read_only)]
async fn test_sampling(
    /// The prompt to send to the model.
    prompt: String,
    peer: Extension<Peer<RoleServer>>,
) -> Result<String, ToolError> {
    let params: CreateMessageRequestParams = serde_json::from_value(json!({
        "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
        "maxTokens": 100
    }))?;
    let answer = peer
        .create_message(params)
        .await
        .map_err(|e| ToolError::new(format!("sampling failed: {e}")))?;
    let text = serde_json::to_value(&answer.message)?;
    Ok(format!(
        "LLM response: {}",
        text["content"]["text"].as_str().unwrap_or_default()
    ))
}

// ANCHOR_END: sampling

/// Asks the user for a name and an email address (elicitation).
#[tool(public, read_only)]
async fn test_elicitation(
    /// The message to show the user.
    message: String,
    peer: Extension<Peer<RoleServer>>,
) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" }
        },
        "required": ["username", "email"]
    });
    elicit(&peer, &message, schema)
        .await
        .map(|answer| format!("User response: {answer}"))
}

/// Asks the user with defaults for every primitive type (SEP-1034).
#[tool(public, read_only)]
async fn test_elicitation_sep1034_defaults(
    peer: Extension<Peer<RoleServer>>,
) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        }
    });
    elicit(
        &peer,
        "Please review and update the form fields with defaults",
        schema,
    )
    .await
}

/// Asks the user to pick from the five kinds of enum (SEP-1330).
#[tool(public, read_only)]
async fn test_elicitation_sep1330_enums(
    peer: Extension<Peer<RoleServer>>,
) -> Result<String, ToolError> {
    let titled =
        |prefix: &str, word: &str| {
            json!([1, 2, 3].map(
                |i| json!({ "const": format!("{prefix}{i}"), "title": format!("{word} {i}") })
            ))
        };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "oneOf": titled("value", "Option") },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "items": { "anyOf": titled("value", "Choice") } }
        }
    });
    elicit(&peer, "Please select options", schema).await
}

async fn elicit(
    peer: &Peer<RoleServer>,
    message: &str,
    schema: Value,
) -> Result<String, ToolError> {
    let params: ElicitRequestParams = serde_json::from_value(
        json!({ "mode": "form", "message": message, "requestedSchema": schema }),
    )?;
    let answer = peer
        .create_elicitation(params)
        .await
        .map_err(|e| ToolError::new(format!("elicitation failed: {e}")))?;
    let answer = serde_json::to_value(&answer)?;
    Ok(format!(
        "Elicitation completed: action={}, content={}",
        answer["action"], answer["content"]
    ))
}

/// Logs one message, at whatever level the request opted into (none: nothing is sent on 2026-07-28).
#[tool(public, read_only)]
async fn test_logging_tool(log: Log) -> &'static str {
    log.info("a log message from test_logging_tool");
    "logged"
}

// ANCHOR: notifier
/// Announces a change of the tool list, as an operator's switch would.
#[tool(public)]
async fn test_trigger_tool_change(notifier: Extension<Notifier>) -> &'static str {
    notifier.tools_changed().await;
    "the tool list changed"
}
// ANCHOR_END: notifier

/// A tool whose `region` argument is mirrored into the `Mcp-Param-Region` HTTP header (SEP-2243).
pub(crate) fn header_tool() -> DynamicTool {
    let schema = json!({
        "type": "object",
        "properties": { "region": { "type": "string", "x-mcp-header": "Region" } },
        "required": ["region"]
    });
    DynamicTool::new(
        "test_header_param",
        "Echo the region, which also travels as a header.",
        schema,
        |args, _| async move { format!("region {}", args["region"]) },
    )
    .public()
    .read_only()
}

/// The tool whose input schema uses JSON Schema 2020-12 keywords, defined at run time from a raw schema.
pub(crate) fn json_schema_2020_12_tool() -> DynamicTool {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "address",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" } },
        "allOf": [{ "anyOf": [{ "required": ["name"] }, { "required": ["address"] }] }],
        "if": false,
        "then": false,
        "else": false,
        "additionalProperties": false
    });
    DynamicTool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        schema,
        |args, _| async move { format!("received {args}") },
    )
    .public()
    .read_only()
}
