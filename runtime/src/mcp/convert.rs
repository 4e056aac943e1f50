//! Mapping between toolgate's types and MCP's: tool definitions, content blocks and call results.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, JsonObject, MetaObject, ToolAnnotations,
};
use serde_json::{Value, json};

use crate::error::ErrorKind;
use crate::output::{Content, Outcome, StructuredValue, ToolResult};
use crate::registry::ScopeMap;
use crate::tool::{Defer, META_CAPABILITY, Tool};

use super::input::{META_CONFIRMATION, META_PREVIEW};

/// The `_meta` keys under which a tool publishes what it needs, so clients know before a denial.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::http::{HttpOptions, HttpServer};
/// use toolgate::mcp::{McpServer, META_ABILITIES, META_CAPABILITY, META_CATEGORIES, META_ERROR};
/// use toolgate::prelude::*;
///
/// /// Search the web.
/// #[tool(ability = "web.search", read_only, capability = "web_search", category = "research")]
/// async fn search(query: String) -> String {
///     format!("results for {query}")
/// }
///
/// # async fn post(router: &mut axum::Router, body: serde_json::Value) -> serde_json::Value {
/// #     use tower_service::Service;
/// #     let request = http::Request::post("/mcp")
/// #         .header("host", "127.0.0.1")
/// #         .header("content-type", "application/json")
/// #         .header("accept", "application/json, text/event-stream")
/// #         .header("mcp-protocol-version", "2025-11-25")
/// #         .body(axum::body::Body::from(body.to_string()))
/// #         .unwrap();
/// #     let response = router.call(request).await.unwrap();
/// #     serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap()
/// # }
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let options = HttpOptions::default().stateless(true).json_response(true);
/// let mcp = McpServer::new(Registry::builder().build().unwrap())
///     .default_caller(Caller::new("ada").with_abilities(["web.search"]));
/// let server = HttpServer::new(mcp).options(options);
/// let mut router = server.router(toolgate::param::CancellationToken::new());
/// let listed = post(&mut router, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await;
/// let meta = &listed["result"]["tools"][0]["_meta"];
/// assert_eq!(meta[META_ABILITIES], json!(["web.search"]));
/// assert_eq!(meta[META_CAPABILITY], "web_search");
/// assert_eq!(meta[META_CATEGORIES], json!(["research"]));
///
/// let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "search", "arguments": {} } });
/// let refused = post(&mut router, call).await;
/// assert_eq!(refused["result"]["isError"], true);
/// assert_eq!(refused["result"]["_meta"][META_ERROR]["kind"], "invalid_arguments");
/// # });
/// ```
pub const META_ABILITIES: &str = "io.toolgate/abilities";
/// The `_meta` key of a tool's categories (read in the example of [`META_ABILITIES`]).
///
/// ```
/// assert_eq!(toolgate::mcp::META_CATEGORIES, "io.toolgate/categories");
/// ```
pub const META_CATEGORIES: &str = "io.toolgate/categories";
/// The `_meta` key that tells hosts doing their own tool search (Claude Code reads it) to load a tool up
/// front: set on the tools marked `defer = "never"`, and on `tool_search`.
///
/// ```
/// assert_eq!(toolgate::mcp::META_ALWAYS_LOAD, "anthropic/alwaysLoad");
/// ```
pub const META_ALWAYS_LOAD: &str = "anthropic/alwaysLoad";
/// The `_meta` key of an error's structured form on an `isError` result (read in the example of
/// [`META_ABILITIES`]).
///
/// ```
/// assert_eq!(toolgate::mcp::META_ERROR, "io.toolgate/error");
/// ```
pub const META_ERROR: &str = "io.toolgate/error";

/// The `_meta` key where a tool says how a host signs its caller in before calling it, as ChatGPT
/// reads it: `noauth` for a public tool, `oauth2` with the scopes that grant what it needs otherwise.
/// Published when the registry's [`ScopeMap`](crate::registry::ScopeMap) grants something; a tool that
/// needs `orders.manage`, which the scope `orders:write` grants, says:
///
/// ```json
/// "_meta": { "securitySchemes": [{ "type": "oauth2", "scopes": ["orders:write"] }] }
/// ```
pub const META_SECURITY_SCHEMES: &str = "securitySchemes";

/// How a host signs a caller in for `tool`, when `scopes` grant something.
fn security_schemes(tool: &Tool, scopes: &ScopeMap) -> Value {
    if tool.is_public() {
        return json!([{ "type": "noauth" }, { "type": "oauth2" }]);
    }
    match scopes.scopes_granting(tool.abilities()) {
        Some(granting) if !granting.is_empty() => json!([{ "type": "oauth2", "scopes": granting }]),
        _ => json!([{ "type": "oauth2" }]),
    }
}

/// A tool's MCP definition: name, title, description, schemas, annotations and `_meta`; with how a
/// host signs its caller in when `scopes` grant something.
pub(crate) fn tool(tool: &Tool, scopes: Option<&ScopeMap>) -> rmcp::model::Tool {
    let input = object(tool.input_schema()).unwrap_or_default();
    let mut definition = rmcp::model::Tool::new_with_raw(
        tool.name().to_owned(),
        Some(tool.description().to_owned().into()),
        Arc::new(input),
    );
    if let Some(title) = tool.title() {
        definition = definition.with_title(title);
    }
    if let Some(output) = tool
        .output_schema()
        .filter(|s| is_object_schema(s))
        .and_then(object)
    {
        definition = definition.with_raw_output_schema(Arc::new(output));
    }
    let mut annotations = ToolAnnotations::new()
        .read_only(tool.is_read_only())
        .destructive(!tool.is_read_only())
        .idempotent(tool.is_idempotent())
        .open_world(tool.is_open_world());
    annotations.title = tool.title().map(str::to_owned);
    let mut meta = JsonObject::new();
    let abilities = if tool.is_public() {
        json!("public")
    } else {
        json!(tool.abilities())
    };
    meta.insert(META_ABILITIES.into(), abilities);
    if let Some(capability) = tool.capability() {
        meta.insert(META_CAPABILITY.into(), capability.into());
    }
    if !tool.categories().is_empty() {
        meta.insert(META_CATEGORIES.into(), json!(tool.categories()));
    }
    if tool.defer() == Defer::Never {
        meta.insert(META_ALWAYS_LOAD.into(), json!(true));
    }
    if tool.shows_view() {
        meta.insert("ui".into(), super::view::tool_meta());
    }
    if let Some(scopes) = scopes {
        meta.insert(META_SECURITY_SCHEMES.into(), security_schemes(tool, scopes));
    }
    definition
        .with_annotations(annotations)
        .with_meta(MetaObject(meta))
}

/// Whether a schema describes a JSON object, which MCP before 2026-07-28 requires of output schemas.
pub(crate) fn is_object_schema(schema: &Value) -> bool {
    schema.get("type") == Some(&json!("object"))
}

fn object(value: &Value) -> Option<JsonObject> {
    value.as_object().cloned()
}

/// A content block in MCP's form.
pub(crate) fn content(block: Content) -> ContentBlock {
    match block {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
        Content::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
        other => {
            let value = serde_json::to_value(&other).unwrap_or(Value::Null);
            serde_json::from_value(value)
                .unwrap_or_else(|e| ContentBlock::text(format!("[unrenderable content: {e}]")))
        }
    }
}

/// An outcome as a `tools/call` result: tool errors are `isError` results the model reads, and only an
/// unknown tool is a JSON-RPC error (`-32602`), as MCP asks.
pub(crate) fn call_result(
    outcome: Outcome,
    structured_output: bool,
) -> Result<CallToolResult, ErrorData> {
    let result = match outcome {
        Outcome::Failed(error) if error.kind() == ErrorKind::UnknownTool => {
            return Err(ErrorData::invalid_params(error.message().to_owned(), None));
        }
        outcome @ (Outcome::Denied(_)
        | Outcome::Failed(_)
        | Outcome::Declined
        | Outcome::Unsupported(_)) => {
            let result = outcome.into_result();
            let mut meta = JsonObject::new();
            if let Some(error) = result.structured.as_ref().and_then(|s| s.get("error")) {
                meta.insert(META_ERROR.into(), error.clone());
            }
            CallToolResult::error(vec![ContentBlock::text(result.text_for_model())])
                .with_meta(Some(MetaObject(meta)))
        }
        Outcome::NeedsConfirmation(pending) => {
            // For a client that can show no approval prompt. Nothing ran, so there is no output to match
            // the tool's output schema: this is an `isError` result, with the preview and the sealed
            // confirmation in `_meta` for the client application to show and send back.
            let mut meta = JsonObject::new();
            meta.insert(META_CONFIRMATION.into(), pending.confirmation().into());
            meta.insert(META_PREVIEW.into(), json!(pending.preview()));
            let text = Outcome::NeedsConfirmation(pending)
                .into_result()
                .text_for_model();
            CallToolResult::error(vec![ContentBlock::text(text)]).with_meta(Some(MetaObject(meta)))
        }
        Outcome::InputRequired(input) => {
            let text = Outcome::InputRequired(input).into_result().text_for_model();
            CallToolResult::error(vec![ContentBlock::text(text)])
        }
        Outcome::Done(result) => done(result, structured_output),
    };
    Ok(result)
}

/// A finished call's result: the structured value's JSON text as its first text block when it has no
/// text of its own, and the value as `structuredContent` when the tool has an output schema and the value
/// is an object (which MCP before 2026-07-28 requires). The direct loops write the same without building
/// it (`direct::result`).
fn done(result: ToolResult, structured_output: bool) -> CallToolResult {
    let text = result.structured_text();
    let mut blocks: Vec<ContentBlock> = text.into_iter().map(ContentBlock::text).collect();
    blocks.extend(result.content.into_iter().map(content));
    let mut call = if result.is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    if structured_output {
        call.structured_content = result
            .structured
            .filter(StructuredValue::holds_object)
            .map(StructuredValue::into_value);
    }
    call
}

/// A `tools/call` answer before it takes rmcp's types: a finished result, which the direct loops write
/// themselves, or the response as rmcp's dispatch returns it.
pub(crate) enum CallAnswer {
    Done {
        result: ToolResult,
        /// Whether the tool has an output schema, so that its structured value is `structuredContent`.
        structured_output: bool,
    },
    Response(CallToolResponse),
}

impl From<CallToolResult> for CallAnswer {
    fn from(result: CallToolResult) -> Self {
        CallAnswer::Response(result.into())
    }
}

impl CallAnswer {
    /// The answer as rmcp's dispatch returns it.
    pub(crate) fn into_response(self) -> CallToolResponse {
        match self {
            CallAnswer::Done {
                result,
                structured_output,
            } => done(result, structured_output).into(),
            CallAnswer::Response(response) => response,
        }
    }
}
