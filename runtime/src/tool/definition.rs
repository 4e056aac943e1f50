//! [`Tool`]: a registered tool's declaration, schemas and origin, as listed to callers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::caller::Caller;

use super::rights::{Admission, Rights};

/// A tool as the registry knows it: what it is called, what it does, who may run it, its schemas.
///
/// ```rust,standalone_crate
/// use std::time::Duration;
/// use toolgate::prelude::*;
///
/// /// Look up the weather in a city.
/// #[tool(ability = "weather.read", read_only, capability = "weather", timeout = "5s")]
/// async fn weather(
///     /// The city's name.
///     city: String,
/// ) -> String {
///     format!("Sunny in {city}")
/// }
///
/// let registry = Registry::builder().build()?;
/// let tool = registry.get("weather").unwrap();
/// assert_eq!(tool.description(), "Look up the weather in a city.");
/// assert_eq!(tool.abilities(), ["weather.read"]);
/// assert!(tool.is_read_only() && !tool.has_preview());
/// assert_eq!(tool.capability(), Some("weather"));
/// assert_eq!(tool.timeout(), Some(Duration::from_secs(5)));
/// assert_eq!(tool.input_schema()["properties"]["city"]["description"], "The city's name.");
/// assert!(tool.allows(&Caller::new("ada").with_abilities(["weather.read"])));
/// assert!(!tool.allows(&Caller::anonymous()));
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Tool {
    pub(crate) name: Arc<str>,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) rights: Rights,
    pub(crate) read_only: bool,
    pub(crate) capability: Option<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) system: bool,
    pub(crate) defer: Defer,
    pub(crate) task: TaskSupport,
    pub(crate) idempotent: bool,
    pub(crate) open_world: bool,
    pub(crate) max_runs: Option<u32>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) has_preview: bool,
    pub(crate) overrides_builtin: bool,
    pub(crate) input_schema: Arc<Value>,
    pub(crate) output_schema: Option<Arc<Value>>,
    pub(crate) settings_schema: Option<Arc<Value>>,
    pub(crate) source: Source,
}

impl Tool {
    /// The unique name callers use.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The display title.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// What the tool does, for the model.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Whether anyone may run it.
    pub fn is_public(&self) -> bool {
        self.rights.is_public()
    }

    /// The abilities a caller must all hold.
    pub fn abilities(&self) -> &[String] {
        self.rights.abilities()
    }

    /// The default rule: public, or the caller holds every required ability (and, for a tool whose
    /// rights are enforced downstream, has an identity).
    pub fn allows(&self, caller: &Caller) -> bool {
        self.rights.allow(caller)
    }

    /// Its part of the default rule that needs no abilities' names: public, enforced downstream.
    pub(crate) fn admission(&self) -> Admission {
        self.rights.admission()
    }

    /// Whether its own backend checks each caller's rights (`#[tool(enforced_downstream)]`, or a remote
    /// server marked so): any caller with an identity may call it, with the abilities it requires, and
    /// the backend decides. Unlike `public`, which says the tool reads no business data, such a tool
    /// may: it is never open to an anonymous caller.
    pub fn is_enforced_downstream(&self) -> bool {
        self.rights.is_enforced_downstream()
    }

    /// Whether it only reads; a tool that is not read-only is a write.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The capability it fulfils, e.g. `web_search`.
    pub fn capability(&self) -> Option<&str> {
        self.capability.as_deref()
    }

    /// Its categories.
    pub fn categories(&self) -> &[String] {
        &self.categories
    }

    /// Whether it stays available regardless of the operator's allow-list.
    pub fn is_system(&self) -> bool {
        self.system
    }

    /// When it is left out of the tools a caller gets up front, to be found through `tool_search`.
    pub fn defer(&self) -> Defer {
        self.defer
    }

    /// Whether a call may run as a task (`#[tool(task)]`): the client polls for the result.
    pub fn task_support(&self) -> TaskSupport {
        self.task
    }

    /// Whether calling it twice with the same arguments has no further effect.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent
    }

    /// Whether it reaches outside systems (the web, third-party APIs).
    pub fn is_open_world(&self) -> bool {
        self.open_world
    }

    /// Its call ceiling per session.
    pub fn max_runs(&self) -> Option<u32> {
        self.max_runs
    }

    /// Its own timeout.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Whether a write of this tool is previewed and confirmed before it runs.
    pub fn has_preview(&self) -> bool {
        self.has_preview
    }

    /// The JSON Schema (2020-12) of its arguments; always an object schema.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The JSON Schema of its structured result, when it returns data.
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_deref()
    }

    /// The schema of the settings it takes as `Settings<T>`: `T`'s. Settings that do not match it are
    /// refused, from the code, the configuration file or the operator's records.
    pub fn settings_schema(&self) -> Option<&Value> {
        self.settings_schema.as_deref()
    }

    /// Where it was defined.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Whether it replaces toolgate's built-in tool of its name (`#[tool(overrides_builtin)]`).
    pub fn overrides_builtin(&self) -> bool {
        self.overrides_builtin
    }

    /// Whether its results may hold a [`Chart`](crate::output::Chart) or a [`Table`](crate::output::Table) beside their
    /// data (its output schema has a `chart` or `table` of toolgate's types), which MCP Apps hosts draw.
    pub fn shows_view(&self) -> bool {
        self.output_schema()
            .is_some_and(crate::output::display::shows_view)
    }

    /// Whether it is the built-in `tool_search`.
    pub(crate) fn is_tool_search(&self) -> bool {
        self.source == Source::BuiltIn && &*self.name == TOOL_SEARCH
    }
}

/// The `_meta` key of the capability a tool fulfils, in MCP's tool definitions: toolgate writes it, and
/// reads it from a remote server's.
///
/// ```
/// assert_eq!(toolgate::mcp::META_CAPABILITY, "io.toolgate/capability");
/// ```
#[cfg(feature = "mcp")]
pub const META_CAPABILITY: &str = "io.toolgate/capability";

/// The name of the built-in tool that finds deferred tools.
///
/// ```
/// assert_eq!(toolgate::registry::TOOL_SEARCH, "tool_search");
/// ```
pub const TOOL_SEARCH: &str = "tool_search";

/// The name of the built-in tool that shows a table the model hands it.
///
/// ```
/// assert_eq!(toolgate::registry::SHOW_TABLE, "show_table");
/// ```
pub const SHOW_TABLE: &str = "show_table";

/// The name of the built-in tool that draws a chart of numbers the model hands it.
///
/// ```
/// assert_eq!(toolgate::registry::DRAW_CHART, "draw_chart");
/// ```
pub const DRAW_CHART: &str = "draw_chart";

/// The built-in tools an app's own tool may replace, with `#[tool(overrides_builtin)]`.
pub(crate) const REPLACEABLE: [&str; 2] = [SHOW_TABLE, DRAW_CHART];

/// When a tool is left out of the tools a caller gets up front (`tools/list`, a model's `tools`), to be
/// found through the built-in `tool_search` instead. A deferred tool still runs when called by name.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::Defer;
///
/// /// Export every order as CSV.
/// #[tool(public, read_only, defer)]
/// async fn export_all() -> &'static str { "id,total" }
///
/// /// Say hello.
/// #[tool(public, read_only, defer = "never")]
/// async fn hello() -> &'static str { "hello" }
///
/// let registry = Registry::builder().build()?;
/// assert_eq!(registry.get("export_all").unwrap().defer(), Defer::Always);
/// assert_eq!(registry.get("hello").unwrap().defer(), Defer::Never);
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Defer {
    /// Deferred when the caller may run more tools than the registry's threshold
    /// ([`RegistryBuilder::defer_above`](crate::registry::RegistryBuilder::defer_above)), loaded otherwise.
    /// What a tool gets when it says nothing (`#[tool(defer = "auto")]` says it).
    #[default]
    Auto,
    /// Always deferred: `#[tool(defer)]`.
    Always,
    /// Never deferred, however many tools the caller may run: `#[tool(defer = "never")]`.
    Never,
}

/// Whether a tool's calls may run as tasks ([SEP-2663]): a client that declared the tasks extension gets a
/// task id at once and asks for the result, instead of holding the request open while the tool runs.
///
/// [SEP-2663]: https://modelcontextprotocol.io/seps/2663-tasks-extension
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::TaskSupport;
///
/// /// Rebuild the search index; takes minutes.
/// #[tool(public, task)]
/// async fn reindex() -> &'static str { "reindexed" }
///
/// /// Export every order; only ever as a task.
/// #[tool(public, read_only, task = "required")]
/// async fn export_orders() -> &'static str { "orders.csv" }
///
/// let registry = Registry::builder().build()?;
/// assert_eq!(registry.get("reindex").unwrap().task_support(), TaskSupport::Optional);
/// assert_eq!(registry.get("export_orders").unwrap().task_support(), TaskSupport::Required);
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Every call runs while the request waits: what a tool gets when it says nothing.
    #[default]
    Forbidden,
    /// A call runs as a task when the client declared the tasks extension: `#[tool(task)]`.
    Optional,
    /// A call runs only as a task; a client without the extension is refused: `#[tool(task = "required")]`.
    Required,
    /// As `Required`, but the tool's questions come first, while the request waits, and the call that
    /// brings their answers becomes the task: `#[tool(task = "after_questions")]`. For a tool that gathers
    /// what it needs, then works for long.
    AfterQuestions,
}

impl Defer {
    /// Whether a tool so marked is deferred for a caller who may run `many` tools, more than the threshold.
    pub(crate) fn applies(self, many: bool) -> bool {
        match self {
            Defer::Always => true,
            Defer::Auto => many,
            Defer::Never => false,
        }
    }
}

/// Where a tool comes from; its `Display` is `file:line`, as build errors print it.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::{DynamicTool, Source};
///
/// /// Ping.
/// #[tool(public, read_only)]
/// async fn ping() -> &'static str {
///     "pong"
/// }
///
/// let registry = Registry::builder()
///     .tool(DynamicTool::new("echo", "Echo.", serde_json::json!({ "type": "object" }), |args, _| async move { args }).public())
///     .build()?;
/// let ping = registry.get("ping").unwrap();
/// let source = ping.source();
/// assert!(matches!(source, Source::Compiled { .. }));
/// assert!(source.to_string().contains(".rs:"), "file:line, not {source}");
/// assert_eq!(registry.get("echo").unwrap().source(), &Source::Dynamic);
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A `#[tool]` function.
    Compiled {
        /// Its module path.
        module: &'static str,
        /// Its file.
        file: &'static str,
        /// The line of its name.
        line: u32,
    },
    /// A [`DynamicTool`](crate::DynamicTool) defined at run time.
    Dynamic,
    /// A tool toolgate itself offers, such as `tool_search`.
    BuiltIn,
    /// A tool of a remote MCP server, served under the registry's policy.
    Remote {
        /// The server's label.
        server: Arc<str>,
        /// The tool's name on that server.
        tool: Arc<str>,
    },
}

impl Source {
    /// `compiled`, `dynamic` or `built-in`, as the operator's records name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Compiled { .. } => "compiled",
            Source::Dynamic => "dynamic",
            Source::BuiltIn => "built-in",
            Source::Remote { .. } => "remote",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Compiled { file, line, .. } => write!(f, "{file}:{line}"),
            Source::Dynamic => f.write_str("a dynamic tool"),
            Source::BuiltIn => f.write_str("a tool built into toolgate"),
            Source::Remote { server, tool } => {
                write!(f, "the tool `{tool}` of the remote server `{server}`")
            }
        }
    }
}
