//! `tool_search`, the tool toolgate adds when some tool may be deferred: it finds deferred tools again.

use std::sync::{Arc, OnceLock, Weak};

use serde_json::{Value, json};

use crate::error::ToolError;
use crate::output::ToolResult;
use crate::tool::{Defer, DynamicTool, TOOL_SEARCH, Tool};

use super::queries::{Inner, Registry};

/// How many tools a search returns unless it asks for another number, and the most it may ask for.
const DEFAULT_LIMIT: u64 = 5;
const MAX_LIMIT: u64 = 20;

const DESCRIPTION: &str = "Find tools that are not loaded yet. Describe the task in a few words; the best \
    matching tools come back with their full definitions, and can be called next.";

/// The registry a `tool_search` searches, set once it is built; weak, so that the tool does not keep its
/// own registry alive.
pub(crate) type Finder = Arc<OnceLock<Weak<Inner>>>;

/// The `tool_search` tool of the registry `finder` will point to.
pub(crate) fn tool_search(finder: &Finder) -> DynamicTool {
    let input = json!({
        "type": "object",
        "properties": {
            "query": { "type": "string", "minLength": 1, "description": "What the tool should do, in a few words." },
            "limit": {
                "type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                "description": format!("How many tools to return (default {DEFAULT_LIMIT}).")
            }
        },
        "required": ["query"],
        "additionalProperties": false
    });
    let output = json!({
        "type": "object",
        "properties": { "tools": { "type": "array", "items": { "type": "object" } } },
        "required": ["tools"]
    });
    let finder = Arc::clone(finder);
    DynamicTool::new(TOOL_SEARCH, DESCRIPTION, input, move |args, parts| {
        let registry = finder
            .get()
            .and_then(Weak::upgrade)
            .map(|inner| Registry { inner });
        async move {
            let registry = registry.ok_or_else(|| ToolError::new("The registry has shut down."))?;
            let query = args["query"].as_str().unwrap_or_default();
            let limit = args["limit"]
                .as_u64()
                .unwrap_or(DEFAULT_LIMIT)
                .min(MAX_LIMIT);
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            let found: Vec<Value> = registry
                .search(parts.caller(), query, limit + 1)
                .iter()
                .filter(|tool| !tool.is_tool_search())
                .take(limit)
                .map(|tool| definition(tool))
                .collect();
            Ok::<_, ToolError>(ToolResult::structured(json!({ "tools": found })))
        }
    })
    .title("Find tools")
    .output_schema(output)
    .public()
    .read_only()
    .idempotent()
    .system()
    .defer_as(Defer::Never)
}

/// A tool's full definition as `tool_search` returns it, in MCP's names.
fn definition(tool: &Tool) -> Value {
    let mut definition = json!({
        "name": tool.name(),
        "description": tool.description(),
        "inputSchema": tool.input_schema(),
    });
    if let Some(title) = tool.title() {
        definition["title"] = json!(title);
    }
    if let Some(schema) = tool.output_schema() {
        definition["outputSchema"] = schema.clone();
    }
    definition
}

/// The names of the tools a `tool_search` result holds, best first: what an agent loop loads for the
/// model's next request ([`Registry::definitions_with`]). Empty for any other result.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::registry::{TOOL_SEARCH, tools_found};
///
/// /// Refund an order in full.
/// #[tool(public, read_only, defer)]
/// async fn refund_order(order: u32) -> String { format!("refund of {order} drafted") }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let outcome = registry.call(&Caller::anonymous(), TOOL_SEARCH, json!({ "query": "refund an order" })).await;
/// assert_eq!(tools_found(&outcome.into_result()), ["refund_order"]);
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
pub fn tools_found(result: &ToolResult) -> Vec<String> {
    let tools = result.structured.as_ref().map(|s| &s["tools"]);
    tools
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}
