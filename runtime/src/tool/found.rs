//! What a `tool_search` answers: the names of the tools its result holds.

use serde_json::Value;

use crate::output::ToolResult;

/// The names of the tools a `tool_search` result holds, best first: what an agent loop loads for the
/// model's next request ([`Registry::definitions_with`](crate::Registry::definitions_with)). Empty for any other result.
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
