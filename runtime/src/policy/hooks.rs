//! [`Hook`]s: filters around resolution and calls, for mocking in tests, rewriting results and policy.

use serde_json::Value;

use crate::caller::Caller;
use crate::output::{Outcome, ToolResult};
use crate::param::Invocation;
use crate::tool::Tool;

/// How a tool was looked up.
///
/// A hook that sends every lookup of the capability `search` to a newer tool:
///
/// ```
/// use serde_json::json;
/// use toolgate::policy::hooks::{Hook, Lookup};
/// use toolgate::{Caller, DynamicTool, Registry, Tool};
///
/// struct PreferV2;
///
/// impl Hook for PreferV2 {
///     fn on_resolve(&self, lookup: Lookup<'_>, _found: &Tool) -> Option<String> {
///         matches!(lookup, Lookup::Capability("search")).then(|| "lookup_search_v2".to_owned())
///     }
/// }
///
/// let tool = |name: &str| DynamicTool::new(name, "Search.", json!({ "type": "object" }), |_, _| async { "" })
///     .public()
///     .read_only()
///     .capability("search");
/// let registry = Registry::builder()
///     .tool(tool("lookup_search_v1"))
///     .tool(tool("lookup_search_v2"))
///     .hook(PreferV2)
///     .build()?;
/// assert_eq!(registry.for_capability(&Caller::anonymous(), "search").unwrap().name(), "lookup_search_v2");
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// By its name, for a call.
    Name(&'a str),
    /// By the capability it fulfils.
    Capability(&'a str),
}

/// A call as hooks see it.
///
/// ```
/// use serde_json::json;
/// use toolgate::policy::hooks::{CallInfo, Hook};
/// use toolgate::{Caller, DynamicTool, Registry, ToolError, ToolResult};
///
/// /// Refuses refunds above 500 for anyone without the `payments.large` ability.
/// struct RefundCeiling;
///
/// impl Hook for RefundCeiling {
///     fn before_call(&self, call: &CallInfo<'_>) -> Option<ToolResult> {
///         let large = call.arguments["amount"].as_u64().unwrap_or(0) > 500;
///         (call.tool.name() == "info_refund" && large && !call.caller.has("payments.large"))
///             .then(|| ToolResult::error(&ToolError::new("Refunds above 500 need a supervisor.")))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let refund = DynamicTool::new("info_refund", "Refund.", json!({ "type": "object" }), |_, _| async { "refunded" })
///     .public();
/// let registry = Registry::builder().tool(refund).hook(RefundCeiling).build()?;
/// let outcome = registry.call(&Caller::new("clerk"), "info_refund", json!({ "amount": 900 })).await;
/// assert_eq!(outcome.into_result().text_for_model(), "[ERROR] Refunds above 500 need a supervisor.");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct CallInfo<'a> {
    /// The tool being called.
    pub tool: &'a Tool,
    /// Who calls.
    pub caller: &'a Caller,
    /// The validated arguments, defaults filled in.
    pub arguments: &'a Value,
    /// The call's metadata.
    pub invocation: &'a Invocation,
}

/// Filters that run at fixed points of every call, in the order they were added.
///
/// All methods have defaults that change nothing; implement the ones you need.
///
/// ```
/// use toolgate::ToolResult;
/// use toolgate::policy::{hooks::{CallInfo, Hook}};
///
/// /// Answers `web_search` from a fixture instead of the network.
/// struct OfflineSearch;
///
/// impl Hook for OfflineSearch {
///     fn before_call(&self, call: &CallInfo<'_>) -> Option<ToolResult> {
///         (call.tool.name() == "web_search").then(|| ToolResult::text("1. toolgate: tools for agents"))
///     }
/// }
/// ```
pub trait Hook: Send + Sync + 'static {
    /// After a tool is resolved by name or capability: return another tool's name to use that tool instead.
    fn on_resolve(&self, lookup: Lookup<'_>, tool: &Tool) -> Option<String> {
        let _ = (lookup, tool);
        None
    }

    /// Before the tool runs (after authorization and validation): return a result to answer without running it.
    fn before_call(&self, call: &CallInfo<'_>) -> Option<ToolResult> {
        let _ = call;
        None
    }

    /// After the call: inspect or replace the outcome.
    fn after_call(&self, call: &CallInfo<'_>, outcome: &mut Outcome) {
        let _ = (call, outcome);
    }
}

/// A hook that answers calls of one tool with `answer(arguments)` instead of running it: a mock for tests.
///
/// ```rust,standalone_crate
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use toolgate::{tool, Caller, Registry, ToolResult};
/// use toolgate::policy::hooks;
///
/// /// Search the web.
/// #[tool(public, read_only)]
/// async fn web_search(query: String) -> String { unreachable!("mocked in this example") }
///
/// let registry = Registry::builder()
///     .hook(hooks::mock("web_search", |args| ToolResult::text(format!("results for {}", args["query"]))))
///     .build()
///     .unwrap();
/// let outcome = registry.call(&Caller::anonymous(), "web_search", serde_json::json!({"query": "rust"})).await;
/// assert_eq!(outcome.into_result().text_for_model(), "results for \"rust\"");
/// # });
/// ```
pub fn mock<F>(tool: impl Into<String>, answer: F) -> impl Hook
where
    F: Fn(&Value) -> ToolResult + Send + Sync + 'static,
{
    Mock {
        tool: tool.into(),
        answer,
    }
}

struct Mock<F> {
    tool: String,
    answer: F,
}

impl<F> Hook for Mock<F>
where
    F: Fn(&Value) -> ToolResult + Send + Sync + 'static,
{
    fn before_call(&self, call: &CallInfo<'_>) -> Option<ToolResult> {
        (call.tool.name() == self.tool).then(|| (self.answer)(call.arguments))
    }
}
