//! The tools toolgate offers itself: `tool_search`, added when some tool may be deferred, and
//! `show_table` and `draw_chart`, which an app switches on.

use std::sync::{Arc, OnceLock, Weak};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::ToolError;
use crate::output::{Chart, IntoOutput, Table, ToolResult};
use crate::schema;
use crate::tool::{DRAW_CHART, Defer, DynamicTool, SHOW_TABLE, TOOL_SEARCH, Tool};

use super::core::Core;

/// How many tools a search returns unless it asks for another number, and the most it may ask for.
const DEFAULT_LIMIT: u64 = 5;
const MAX_LIMIT: u64 = 20;

const DESCRIPTION: &str = "Find tools that are not loaded yet. Describe the task in a few words; the best \
    matching tools come back with their full definitions, and can be called next.";

/// The registry a `tool_search` searches, set once it is built; weak, so that the tool does not keep its
/// own registry alive.
pub(crate) type Finder = Arc<OnceLock<Weak<Core>>>;

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
        let core = finder.get().and_then(Weak::upgrade);
        async move {
            let core = core.ok_or_else(|| ToolError::new("The registry has shut down."))?;
            let query = args["query"].as_str().unwrap_or_default();
            let limit = args["limit"]
                .as_u64()
                .unwrap_or(DEFAULT_LIMIT)
                .min(MAX_LIMIT);
            let limit = usize::try_from(limit).unwrap_or(usize::MAX);
            let found: Vec<Value> = (core.catalog)
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

/// A built-in tool an app switches on with [`RegistryBuilder::built_in`](crate::RegistryBuilder::built_in).
/// Both need no ability, because they only show what the model hands them; they are `read_only` and
/// `system`. An app's own tool of the same name replaces one only with `#[tool(overrides_builtin)]`.
///
/// ```
/// use serde_json::json;
/// use toolgate::registry::BuiltIn;
/// use toolgate::{Caller, Registry};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().built_in(BuiltIn::DrawChart).built_in(BuiltIn::ShowTable).build()?;
/// let chart = json!({ "type": "bar", "title": "Stock", "labels": ["lamps", "desks"], "datasets": [{ "label": "Units", "data": [12, 3] }] });
/// let result = registry.call(&Caller::anonymous(), "draw_chart", chart).await.into_result();
/// assert_eq!(result.structured.unwrap()["chart"]["labels"][1], "desks");
///
/// let wrong = json!({ "type": "bar", "title": "Stock", "labels": ["lamps"], "datasets": [{ "label": "Units", "data": [12, 3] }] });
/// let refused = registry.call(&Caller::anonymous(), "draw_chart", wrong).await;
/// assert_eq!(
///     refused.error().unwrap().message(),
///     "Invalid arguments for `draw_chart`: the chart \"Stock\" cannot be drawn: dataset \"Units\" has 2 values for 1 labels. Fix them and call again."
/// );
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BuiltIn {
    /// `show_table`: shows a [`Table`] of columns and rows the model hands it.
    ShowTable,
    /// `draw_chart`: draws a [`Chart`] of numbers the model hands it.
    DrawChart,
}

impl BuiltIn {
    /// The tool's name.
    pub fn name(self) -> &'static str {
        match self {
            BuiltIn::ShowTable => SHOW_TABLE,
            BuiltIn::DrawChart => DRAW_CHART,
        }
    }

    /// The tool.
    pub(crate) fn tool(self) -> DynamicTool {
        match self {
            BuiltIn::ShowTable => display_tool::<Table>(
                SHOW_TABLE,
                "Show a table",
                "Show the person a table: columns with a title and a type (text, number, date or boolean), \
                 and rows with one cell per column and an optional http(s) link. Use it for lists the person \
                 will scan or compare. You get the table back as text.",
                Table::check,
            ),
            BuiltIn::DrawChart => display_tool::<Chart>(
                DRAW_CHART,
                "Draw a chart",
                "Draw a chart for the person: bar, line, pie or doughnut, with a title, one label per point, \
                 and datasets of one value per label (a pie or doughnut takes one dataset). Use it for numbers \
                 you already have; a tool that returns its own chart is better for data over time.",
                Chart::check,
            ),
        }
    }
}

/// A tool that shows the `T` it is handed, once `check` passes.
fn display_tool<T>(
    name: &'static str,
    title: &'static str,
    description: &'static str,
    check: fn(&T) -> Result<(), crate::output::DisplayError>,
) -> DynamicTool
where
    T: JsonSchema + DeserializeOwned + IntoOutput,
{
    let mut input = schema::taken_schema(T::json_schema);
    input["additionalProperties"] = json!(false);
    let output = schema::output_schema(T::output_schema);
    let tool = DynamicTool::new(name, description, input, move |args, _parts| async move {
        let invalid = |problem: String| schema::arguments_error(name, &problem);
        let shown = T::deserialize(&args).map_err(|e| invalid(e.to_string()))?;
        check(&shown).map_err(|e| invalid(e.to_string()))?;
        Ok::<_, ToolError>(shown)
    })
    .title(title)
    .public()
    .read_only()
    .idempotent()
    .system()
    .defer_as(Defer::Never);
    match output {
        Some(output) => tool.output_schema(output),
        None => tool,
    }
}
