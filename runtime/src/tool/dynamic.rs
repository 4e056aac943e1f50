//! [`DynamicTool`]: a tool defined at run time from a name, a description, a raw schema and a closure.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::output::{IntoOutput, IntoPreview};
use crate::param::CallParts;

use super::{Defer, PreviewFuture, Rights, Source, TaskSupport, Tool, ToolFuture};

pub(crate) type DynHandler = Arc<dyn Fn(Value, CallParts<'static>) -> ToolFuture + Send + Sync>;
pub(crate) type DynPreview = Arc<dyn Fn(Value, CallParts<'static>) -> PreviewFuture + Send + Sync>;

/// A tool defined at run time. It goes through the same pipeline as `#[tool]` functions: permissions,
/// validation against its schema, ceilings, timeouts, hooks and audit.
///
/// Like `#[tool]`, it must declare who may run it ([`public`](Self::public) or [`ability`](Self::ability)),
/// or the registry refuses to build.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::{DynamicTool, Registry};
///
/// let lookup = DynamicTool::new(
///     "lookup_fact",
///     "Returns a fun fact about a topic.",
///     json!({ "type": "object", "properties": { "topic": { "type": "string" } }, "required": ["topic"] }),
///     |args, _parts| async move { format!("{} is a topic.", args["topic"].as_str().unwrap_or("?")) },
/// )
/// .public()
/// .read_only();
/// let registry = Registry::builder().tool(lookup).build().unwrap();
/// assert!(registry.get("lookup_fact").is_some());
/// ```
#[derive(Clone)]
pub struct DynamicTool {
    /// Its declaration, as listed; its source and whether it previews are set when it is registered.
    pub(crate) tool: Tool,
    pub(crate) handler: DynHandler,
    pub(crate) preview: Option<DynPreview>,
    /// Its calls may end with questions for the client (a remote server's): they take the path of rounds.
    pub(crate) asks: bool,
}

impl DynamicTool {
    /// A tool whose `handler` receives the validated arguments and the call's parts.
    pub fn new<F, Fut, R>(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Value, CallParts<'static>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoOutput,
    {
        let handler = Arc::new(move |args, parts| -> ToolFuture {
            let future = handler(args, parts);
            Box::pin(async move { future.await.into_output() })
        });
        let tool = Tool {
            name: Arc::from(name.into()),
            title: None,
            description: description.into(),
            rights: Rights::default(),
            read_only: false,
            capability: None,
            categories: Vec::new(),
            system: false,
            defer: Defer::Auto,
            task: TaskSupport::Forbidden,
            idempotent: false,
            open_world: false,
            max_runs: None,
            timeout: None,
            has_preview: false,
            overrides_builtin: false,
            input_schema: Arc::new(input_schema),
            output_schema: None,
            settings_schema: None,
            source: Source::Dynamic,
        };
        DynamicTool {
            tool,
            handler,
            preview: None,
            asks: false,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// Anyone may run it.
    #[must_use]
    pub fn public(mut self) -> Self {
        self.tool.rights.public();
        self
    }

    /// Callers need `ability` (call again to require several).
    #[must_use]
    pub fn ability(mut self, ability: impl Into<String>) -> Self {
        self.tool.rights.ability(ability.into());
        self
    }

    /// Its backend checks each caller's rights itself: any caller with an identity may call it (with the
    /// abilities it requires), never an anonymous one. Declares who may run it, as `public` or an
    /// ability does, and cannot be `public`.
    #[must_use]
    pub fn enforced_downstream(mut self) -> Self {
        self.tool.rights.enforced_downstream();
        self
    }

    /// It only reads.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.tool.read_only = true;
        self
    }

    /// Its display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// The schema of its structured result.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.tool.output_schema = Some(Arc::new(schema));
        self
    }

    /// The capability it fulfils.
    #[must_use]
    pub fn capability(mut self, capability: impl Into<String>) -> Self {
        self.tool.capability = Some(capability.into());
        self
    }

    /// Adds a category.
    #[must_use]
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.tool.categories.push(category.into());
        self
    }

    /// Available regardless of the operator's allow-list.
    #[must_use]
    pub fn system(mut self) -> Self {
        self.tool.system = true;
        self
    }

    /// Replaces toolgate's built-in tool of the same name (`show_table` or `draw_chart`) when the registry
    /// switches it on: `#[tool(overrides_builtin)]`. Without it the name clash stops the build.
    #[must_use]
    pub fn overrides_builtin(mut self) -> Self {
        self.tool.overrides_builtin = true;
        self
    }

    /// Always left out of the tools a caller gets up front, found through `tool_search`: `#[tool(defer)]`.
    #[must_use]
    pub fn defer(self) -> Self {
        self.defer_as(Defer::Always)
    }

    /// When it is deferred ([`Defer::Auto`] unless set).
    #[must_use]
    pub fn defer_as(mut self, defer: Defer) -> Self {
        self.tool.defer = defer;
        self
    }

    /// Whether its calls may run as tasks ([`TaskSupport::Forbidden`] unless set).
    #[must_use]
    pub fn task(mut self, task: TaskSupport) -> Self {
        self.tool.task = task;
        self
    }

    /// Repeating a call has no further effect.
    #[must_use]
    pub fn idempotent(mut self) -> Self {
        self.tool.idempotent = true;
        self
    }

    /// Reaches outside systems.
    #[must_use]
    pub fn open_world(mut self) -> Self {
        self.tool.open_world = true;
        self
    }

    /// At most `n` runs per session.
    #[must_use]
    pub fn max_runs(mut self, n: u32) -> Self {
        self.tool.max_runs = Some(n);
        self
    }

    /// Its own timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.tool.timeout = Some(timeout);
        self
    }

    /// Previews each call for a person to approve, as `#[tool(preview = ...)]` does: the first call
    /// returns the preview with a sealed, single-use confirmation, and the handler runs once, with the
    /// arguments that were previewed, when the confirmation comes back. A tool with a preview is a write.
    ///
    /// ```rust,standalone_crate
    /// use serde_json::json;
    /// use toolgate::{Caller, DynamicTool, Outcome, Preview, Registry};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let refund = DynamicTool::new("refund", "Refund an order.", json!({ "type": "object" }), |args, _| async move {
    ///     format!("refunded {}", args["order"])
    /// })
    /// .ability("payments.refund")
    /// .preview(|args, _| async move { Preview::new(format!("Refund order {}", args["order"])) });
    /// let registry = Registry::builder().tool(refund).build()?;
    /// let clerk = Caller::new("clerk").with_abilities(["payments.refund"]);
    /// let Outcome::NeedsConfirmation(pending) = registry.call(&clerk, "refund", json!({ "order": 7 })).await else {
    ///     panic!("a preview first")
    /// };
    /// assert_eq!(pending.preview().text(), "Refund order 7");
    /// let done = registry.confirm(&clerk, pending.confirmation()).await;
    /// assert_eq!(done.into_result().text_for_model(), "refunded 7");
    /// # Ok::<(), toolgate::BuildError>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn preview<F, Fut, P>(mut self, preview: F) -> Self
    where
        F: Fn(Value, CallParts<'static>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = P> + Send + 'static,
        P: IntoPreview,
    {
        self.tool.read_only = false;
        self.preview = Some(Arc::new(move |args, parts| -> PreviewFuture {
            let future = preview(args, parts);
            Box::pin(async move { future.await.into_preview() })
        }));
        self
    }
}

impl std::fmt::Debug for DynamicTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicTool")
            .field("name", &self.tool.name)
            .finish_non_exhaustive()
    }
}
