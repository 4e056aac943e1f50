//! [`RegistryBuilder`]: state, dynamic tools, order, policy, hooks and audit, then `build`.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::call::Tasks;
use crate::caller::Caller;
use crate::catalog::ScopeMap;
use crate::confirm::{ConfirmationStore, KeyRing, SkipPolicy};
use crate::param::StateMap;
use crate::policy::CeilingStore;
use crate::policy::ceiling;
use crate::policy::hooks::Hook;
use crate::policy::slots;
use crate::policy::{AuditSink, Authorizer};
use crate::schema::merge_settings;
use crate::store::{RecordStore, TaskStore};
use crate::tool::{DynamicTool, Tool};

use super::builtin::BuiltIn;
use super::config::Config;

/// Configures a [`Registry`](crate::Registry): state, dynamic tools, order, policy, hooks and audit.
///
/// ```rust,standalone_crate
/// use std::time::Duration;
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::DynamicTool;
/// use toolgate::confirm::KeyRing;
///
/// #[derive(Clone)]
/// struct Db(&'static str);
///
/// /// What is in stock.
/// #[tool(public, read_only)]
/// async fn stock(db: State<Db>) -> String {
///     format!("{}: 12 items", db.0 .0)
/// }
///
/// /// Delete everything.
/// #[tool(ability = "admin")]
/// async fn wipe() -> &'static str {
///     "wiped"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder()
///     .state(Db("main"))                                   // injected as State<Db>
///     .tool(DynamicTool::new("help", "How to use this.", json!({ "type": "object" }), |_, _| async { "Ask me." })
///         .public()
///         .read_only()
///         .system())                                       // stays on whatever is switched off
///     .first(["help"])                                     // listed first
///     .disable("wipe")                                     // listed to nobody, calls refused
///     .default_timeout(Duration::from_secs(30))
///     .keys(KeyRing::random())                             // seals write confirmations
///     .build()?;
///
/// let admin = Caller::new("root").with_abilities(["admin"]);
/// let names: Vec<String> = registry.list(&admin).iter().map(|t| t.name().to_owned()).collect();
/// assert_eq!(names, ["help", "stock"]);
/// let stock = registry.call(&admin, "stock", json!({})).await;
/// assert_eq!(stock.into_result().text_for_model(), "main: 12 items");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
pub struct RegistryBuilder {
    pub(super) dynamic: Vec<DynamicTool>,
    /// Where the gateway's sign-ins to remote servers are kept: the records database's.
    #[cfg(signs_in)]
    pub(super) sign_ins: Option<Arc<dyn crate::store::SignInStore>>,
    pub(super) compiled: Option<HashSet<String>>,
    pub(super) first: Vec<String>,
    pub(super) state: StateMap,
    pub(super) settings: HashMap<String, Value>,
    pub(super) disabled: HashSet<String>,
    pub(super) allow_only: Option<HashSet<String>>,
    pub(super) authorizer: Option<Box<dyn Authorizer>>,
    pub(super) hooks: Vec<Box<dyn Hook>>,
    pub(super) audit: Option<Box<dyn AuditSink>>,
    pub(super) read_only: bool,
    pub(super) explain_denials: bool,
    pub(super) mask_internal_errors: bool,
    pub(super) default_timeout: Option<Duration>,
    pub(super) confirmation_ttl: Duration,
    pub(super) keys: Option<KeyRing>,
    pub(super) store: Option<Box<dyn ConfirmationStore>>,
    pub(super) records: Option<Arc<dyn RecordStore>>,
    pub(super) ceilings: Option<Arc<dyn CeilingStore>>,
    pub(super) tasks: Option<Arc<dyn TaskStore>>,
    pub(super) task_ttl: Duration,
    pub(super) skip_confirmation: Option<SkipPolicy>,
    pub(super) configured: Vec<String>,
    /// What the code says scopes and roles grant.
    pub(super) scope_map: ScopeMap,
    /// What the configuration file says scopes and roles grant, over the code's map.
    pub(super) configured_grants: Vec<crate::store::GrantRecord>,
    pub(super) defer_above: Option<usize>,
    pub(super) built_ins: Vec<BuiltIn>,
    #[cfg(feature = "remote")]
    pub(super) remotes: Vec<crate::remote::RemoteServer>,
    pub(super) limits: Bounds,
}

/// The bounds that keep one caller from taking the whole server, each a builder method and a key of the
/// operator's file.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    pub(super) max_concurrent_calls: usize,
    pub(super) max_calls_per_caller: Option<usize>,
    pub(super) max_unfinished_tasks_per_caller: usize,
    pub(super) count_window: Duration,
    pub(super) audit_retention: Option<Duration>,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_concurrent_calls: slots::DEFAULT_MAX_CONCURRENT,
            max_calls_per_caller: None,
            max_unfinished_tasks_per_caller: Tasks::DEFAULT_UNFINISHED_PER_CALLER,
            count_window: ceiling::DEFAULT_COUNT_WINDOW,
            audit_retention: Some(DEFAULT_AUDIT_RETENTION),
        }
    }
}

/// How long the audit keeps a call by default: 90 days.
pub(super) const DEFAULT_AUDIT_RETENTION: Duration = Duration::from_secs(90 * 24 * 3600);

/// The longest a write preview can wait for its approval.
pub(super) const MAX_CONFIRMATION_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            dynamic: Vec::new(),
            compiled: None,
            first: Vec::new(),
            state: StateMap::default(),
            settings: HashMap::new(),
            disabled: HashSet::new(),
            allow_only: None,
            authorizer: None,
            hooks: Vec::new(),
            audit: None,
            read_only: false,
            explain_denials: false,
            mask_internal_errors: true,
            default_timeout: None,
            confirmation_ttl: Duration::from_secs(600),
            keys: None,
            #[cfg(signs_in)]
            sign_ins: None,
            store: None,
            records: None,
            ceilings: None,
            tasks: None,
            task_ttl: Tasks::DEFAULT_TTL,
            skip_confirmation: None,
            configured: Vec::new(),
            scope_map: ScopeMap::new(),
            configured_grants: Vec::new(),
            defer_above: None,
            built_ins: Vec::new(),
            #[cfg(feature = "remote")]
            remotes: Vec::new(),
            limits: Bounds::default(),
        }
    }
}

impl RegistryBuilder {
    /// Takes only these of the `#[tool]`s linked into the binary (default: all of them). The others are
    /// no part of this registry: not listed to anyone, not callable, not in the operator's records, and
    /// the state they take need not be given. For a binary that serves different tools on different
    /// endpoints, or a test of a few tools; to switch tools off while keeping them, use
    /// [`allow_only`](Self::allow_only). A name no `#[tool]` has fails [`build`](Self::build).
    ///
    /// ```rust,standalone_crate
    /// use toolgate::prelude::*;
    ///
    /// /// Add two integers.
    /// #[tool(public, read_only)]
    /// async fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// /// Count the orders (needs the shop's database, which this registry does not have).
    /// #[tool(public, read_only)]
    /// async fn count_orders(db: State<std::sync::Arc<str>>) -> usize { db.len() }
    ///
    /// let registry = Registry::builder().compiled_tools(["add"]).build()?;
    /// let names: Vec<String> = registry.tools().iter().map(|t| t.name().to_owned()).collect();
    /// assert_eq!(names, ["add"]);
    /// assert!(Registry::builder().compiled_tools(["sub"]).build().is_err());
    /// # Ok::<(), toolgate::BuildError>(())
    /// ```
    #[must_use]
    pub fn compiled_tools<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.compiled = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Adds a tool defined at run time.
    #[must_use]
    pub fn tool(mut self, tool: DynamicTool) -> Self {
        self.dynamic.push(tool);
        self
    }

    /// Adds tools defined at run time (an OpenAPI document's, say).
    #[must_use]
    pub fn tools<I: IntoIterator<Item = DynamicTool>>(mut self, tools: I) -> Self {
        self.dynamic.extend(tools);
        self
    }

    /// Serves the tools of a remote MCP server under this registry's policy, each named
    /// `<label>_<remote name>`. Spawn [`Registry::watch`](crate::Registry::watch): it lists the
    /// server's tools, checks its health and reconnects it.
    ///
    /// ```
    /// use toolgate::Registry;
    /// use toolgate::remote::RemoteServer;
    ///
    /// let registry = Registry::builder()
    ///     .remote(RemoteServer::http("search", "http://127.0.0.1:9000/mcp").ability("web.search"))
    ///     .build()?;
    /// assert_eq!(registry.servers()[0].label, "search");
    /// # Ok::<(), toolgate::BuildError>(())
    /// ```
    #[cfg(feature = "remote")]
    #[must_use]
    pub fn remote(mut self, server: crate::remote::RemoteServer) -> Self {
        self.remotes.push(server);
        self
    }

    /// Switches on one of toolgate's own tools, `show_table` or `draw_chart` (see [`BuiltIn`]). An app's
    /// tool of the same name replaces it if it says `overrides_builtin`; otherwise the build stops.
    #[must_use]
    pub fn built_in(mut self, tool: BuiltIn) -> Self {
        if !self.built_ins.contains(&tool) {
            self.built_ins.push(tool);
        }
        self
    }

    /// Adds application state, injected into tools as [`State<T>`](crate::State). One value per type.
    #[must_use]
    pub fn state<T: crate::param::Shareable>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Sets a tool's settings, injected as [`Settings<T>`](crate::Settings).
    #[must_use]
    pub fn settings(mut self, tool: impl Into<String>, settings: Value) -> Self {
        self.settings.insert(tool.into(), settings);
        self
    }

    /// Lists these tools first, in this order (put the overview tool here); the rest follow by name.
    #[must_use]
    pub fn first<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.first = names.into_iter().map(Into::into).collect();
        self
    }

    /// Switches a tool off: it is listed to nobody and its calls are refused.
    #[must_use]
    pub fn disable(mut self, name: impl Into<String>) -> Self {
        self.disabled.insert(name.into());
        self
    }

    /// Switches off every tool not named here, except `system` tools.
    #[must_use]
    pub fn allow_only<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.allow_only = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Replaces the default rule (public, or every required ability held).
    #[must_use]
    pub fn authorizer(mut self, authorizer: impl Authorizer) -> Self {
        self.authorizer = Some(Box::new(authorizer));
        self
    }

    /// Adds a hook; hooks run in the order they were added.
    #[must_use]
    pub fn hook(mut self, hook: impl Hook) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    /// Sets the audit sink.
    #[must_use]
    pub fn audit(mut self, sink: impl AuditSink) -> Self {
        self.audit = Some(Box::new(sink));
        self
    }

    /// In read-only mode only `read_only` tools are listed and run.
    #[must_use]
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// What a caller hears when calling a tool they may not run. By default the same answer as for a name
    /// no tool has, word for word, so that no refusal reveals that the tool exists. With `true`, the
    /// caller is told that their role may not (`Your role (Viewer) is not allowed to do this.`), which
    /// helps where tool names are no secret.
    #[must_use]
    pub fn explain_denials(mut self, explain: bool) -> Self {
        self.explain_denials = explain;
        self
    }

    /// Whether internal errors (from `?` on foreign errors, and panics) reach the model as a generic message.
    /// On by default; the detail is logged with `tracing` either way.
    #[must_use]
    pub fn mask_internal_errors(mut self, mask: bool) -> Self {
        self.mask_internal_errors = mask;
        self
    }

    /// A timeout for tools that declare none.
    #[must_use]
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = Some(timeout);
        self
    }

    /// Defers the tools marked [`Defer::Auto`](crate::Defer::Auto) (those that say nothing) for a caller who may run more than
    /// `tools` tools: they are left out of what the caller gets up front and found through `tool_search`.
    /// Without it only tools marked `defer` are deferred.
    ///
    /// ```rust,standalone_crate
    /// use toolgate::prelude::*;
    ///
    /// /// Say hello.
    /// #[tool(public, read_only, defer = "never")]
    /// async fn hello() -> &'static str { "hello" }
    ///
    /// /// Say goodbye.
    /// #[tool(public, read_only)]
    /// async fn goodbye() -> &'static str { "goodbye" }
    ///
    /// let registry = Registry::builder().defer_above(1).build()?;
    /// let listed: Vec<String> = registry.list(&Caller::anonymous()).iter().map(|t| t.name().to_owned()).collect();
    /// assert_eq!(listed, ["hello", "tool_search"]);
    /// # Ok::<(), toolgate::BuildError>(())
    /// ```
    #[must_use]
    pub fn defer_above(mut self, tools: usize) -> Self {
        self.defer_above = Some(tools);
        self
    }

    /// How long a write preview can be approved (default ten minutes, at most seven days; `build` refuses
    /// zero and longer times).
    #[must_use]
    pub fn confirmation_ttl(mut self, ttl: Duration) -> Self {
        self.confirmation_ttl = ttl;
        self
    }

    /// The keys that seal confirmations and request states. Give every replica the same ring (for
    /// example from [`KeyRing::parse`] of a secret) so that each accepts the others' confirmations.
    /// Default: the keys kept with the [records](Self::records), when there are records whose store keeps
    /// keys (both databases do), taken up again whenever an operator rotates them; otherwise a random
    /// key, so confirmations die with the process.
    #[must_use]
    pub fn keys(mut self, keys: KeyRing) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Where used confirmations are recorded, so each acts once (default: this process's memory).
    /// Share one store between replicas; see [`SqliteStore`](crate::sqlite::SqliteStore).
    #[must_use]
    pub fn confirmation_store(mut self, store: impl ConfirmationStore) -> Self {
        self.store = Some(Box::new(store));
        self
    }

    /// Where call ceilings (`max_runs`) are counted (default: this registry's memory). Replicas share one
    /// store, so that a client's runs count the same wherever its calls land.
    #[must_use]
    pub fn ceiling_store(mut self, store: impl CeilingStore) -> Self {
        self.ceilings = Some(Arc::new(store));
        self
    }

    /// Where tasks are kept ([`#[tool(task)]`](crate::TaskSupport)); default: this process's memory
    /// ([`MemoryTasks`](crate::store::MemoryTasks)). With a database, a task survives a restart and any
    /// replica answers for it.
    #[must_use]
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.tasks = Some(Arc::new(store));
        self
    }

    /// How long a task and its result are kept after it was created (default: an hour).
    #[must_use]
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.task_ttl = ttl;
        self
    }

    /// How many tool calls and tasks run at once, across every transport and session (default 64); more
    /// wait for a slot, and the wait counts toward the call's timeout. A call waiting for its client's
    /// answer holds none.
    #[must_use]
    pub fn max_concurrent_calls(mut self, calls: usize) -> Self {
        self.limits.max_concurrent_calls = calls.max(1);
        self
    }

    /// How many of those slots one caller holds at once, its delegated sub-agents' calls included
    /// (default: a quarter of [`max_concurrent_calls`](Self::max_concurrent_calls), at least one); its
    /// further calls wait for one of its own, so that one caller's slow calls never hold up the others'.
    #[must_use]
    pub fn max_calls_per_caller(mut self, calls: usize) -> Self {
        self.limits.max_calls_per_caller = Some(calls.max(1));
        self
    }

    /// How many of one caller's tasks run or wait to run at once in this process, its sub-agents'
    /// included (default 32); past it, starting another is refused until one ends.
    #[must_use]
    pub fn max_unfinished_tasks_per_caller(mut self, tasks: usize) -> Self {
        self.limits.max_unfinished_tasks_per_caller = tasks.max(1);
        self
    }

    /// How long a count of a tool's runs lasts (`max_runs`; default a day): a session's counts end with
    /// it sooner, and a caller without a session gets this many runs per window.
    #[must_use]
    pub fn count_window(mut self, window: Duration) -> Self {
        self.limits.count_window = window;
        self
    }

    /// How long the audit trail in the records' database keeps a call (default 90 days; `None` keeps
    /// every call): a [watched](crate::Registry::watch) registry forgets older rows every hour.
    #[must_use]
    pub fn audit_retention(mut self, retention: Option<Duration>) -> Self {
        self.limits.audit_retention = retention;
        self
    }

    /// The operator's records of the tools (see [`toolgate::store`](crate::store)): switched on or off,
    /// settings, abilities required on top of the code's, changed while the server runs. Build with
    /// [`load`](Self::load), which reads them before anything is served; a registry whose records are
    /// not loaded serves only system tools.
    #[must_use]
    pub fn records(mut self, store: impl RecordStore) -> Self {
        self.records = Some(Arc::new(store));
        self
    }

    /// One database for the operator's records, used confirmations, call ceilings, tasks and the audit
    /// trail (see [`Database`](crate::store::Database)): [`records`](Self::records),
    /// [`confirmation_store`](Self::confirmation_store), [`ceiling_store`](Self::ceiling_store),
    /// [`task_store`](Self::task_store) and [`audit`](Self::audit) in one call. Unless [`keys`](Self::keys) are given, the database's keys
    /// seal too.
    #[cfg(database)]
    #[must_use]
    pub fn database(self, database: &crate::store::Database) -> Self {
        let builder = (self.audit(database.audit()))
            .confirmation_store(database.clone())
            .ceiling_store(database.clone())
            .task_store(database.clone())
            .records(database.clone());
        #[cfg(signs_in)]
        let builder = RegistryBuilder {
            sign_ins: Some(Arc::new(database.clone())),
            ..builder
        };
        builder
    }

    /// Runs writes without a preview when `policy` says so for the caller and tool (a trusted automation,
    /// say). Off by default: every write with a preview waits for approval.
    #[must_use]
    pub fn skip_confirmation(
        mut self,
        policy: impl Fn(&Caller, &Tool) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.skip_confirmation = Some(Box::new(policy));
        self
    }

    /// What the scopes and roles of signed-in callers' access tokens grant, in the code: a
    /// `TokenVerifier` serving this registry makes its callers with it.
    /// The configuration file's `[grants]` and an operator's grants in the records (`toolgate grants`)
    /// each replace what it says of one scope or role. Without one, no scope grants anything.
    ///
    /// ```
    /// use toolgate::Registry;
    /// use toolgate::registry::ScopeMap;
    ///
    /// let registry = Registry::builder()
    ///     .scope_map(ScopeMap::new().scope("orders:read", ["orders.view"]))
    ///     .build()?;
    /// # let _ = registry;
    /// # Ok::<(), toolgate::BuildError>(())
    /// ```
    #[must_use]
    pub fn scope_map(mut self, map: ScopeMap) -> Self {
        self.scope_map = map;
        self
    }

    /// Applies an operator's [`Config`]: what it sets overrides what the code set before this call. A tool
    /// name the registry does not have fails [`build`](Self::build).
    ///
    /// ```rust,standalone_crate
    /// use toolgate::prelude::*;
    /// use toolgate::registry::Config;
    ///
    /// /// Say hello.
    /// #[tool(public, read_only)]
    /// async fn hello(settings: Settings<serde_json::Value>) -> String {
    ///     format!("{}, world", settings.0["greeting"].as_str().unwrap_or("Hello"))
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let config = Config::from_toml("[tools.hello.settings]\ngreeting = \"Hi\"")?;
    /// let registry = Registry::builder().config(config).build()?;
    /// let outcome = registry.call(&Caller::anonymous(), "hello", serde_json::json!({})).await;
    /// assert_eq!(outcome.into_result().text_for_model(), "Hi, world");
    ///
    /// let typo = Config::from_toml("[tools.helo]\nenabled = false")?;
    /// let error = Registry::builder().config(typo).build().unwrap_err();
    /// assert_eq!(error.to_string(), "`config` names `helo`, but no tool has that name");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    #[must_use]
    pub fn config(mut self, config: Config) -> Self {
        let Config {
            read_only,
            default_timeout_secs,
            confirmation_ttl_secs,
            mask_internal_errors,
            first,
            allow_only,
            max_concurrent_calls,
            max_calls_per_caller,
            max_unfinished_tasks_per_caller,
            count_window_secs,
            audit_retention_days,
            tools,
            grants,
            #[cfg(feature = "remote")]
            servers,
            #[cfg(feature = "openapi")]
            apis,
        } = config;
        #[cfg(feature = "openapi")]
        self.dynamic.extend(apis.into_tools());
        // Checked when the file was read.
        let grants = grants
            .iter()
            .filter_map(|(c, a)| super::config::grant(c, a).ok());
        self.configured_grants.extend(grants);
        #[cfg(feature = "remote")]
        self.remotes.extend(servers.into_values());
        self.read_only = read_only.unwrap_or(self.read_only);
        self.mask_internal_errors = mask_internal_errors.unwrap_or(self.mask_internal_errors);
        if let Some(secs) = default_timeout_secs {
            self.default_timeout = Duration::try_from_secs_f64(secs).ok();
        }
        if let Some(secs) = confirmation_ttl_secs {
            self.confirmation_ttl = Duration::from_secs(secs);
        }
        if let Some(calls) = max_concurrent_calls {
            self = self.max_concurrent_calls(calls);
        }
        if let Some(calls) = max_calls_per_caller {
            self = self.max_calls_per_caller(calls);
        }
        if let Some(tasks) = max_unfinished_tasks_per_caller {
            self = self.max_unfinished_tasks_per_caller(tasks);
        }
        if let Some(secs) = count_window_secs {
            self.limits.count_window = Duration::from_secs(secs);
        }
        if let Some(days) = audit_retention_days {
            self.limits.audit_retention =
                (days > 0).then(|| Duration::from_secs(days.saturating_mul(24 * 3600)));
        }
        self.first = first.unwrap_or(self.first);
        if let Some(names) = allow_only {
            self.allow_only = Some(names.into_iter().collect());
        }
        for (name, tool) in tools {
            match tool.enabled {
                Some(false) => _ = self.disabled.insert(name.clone()),
                Some(true) => _ = self.disabled.remove(&name),
                None => {}
            }
            if let Some(over) = tool.settings {
                match self.settings.get_mut(&name) {
                    Some(base) => merge_settings(base, over),
                    None => _ = self.settings.insert(name.clone(), over),
                }
            }
            self.configured.push(name);
        }
        self
    }
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("dynamic", &self.dynamic)
            .finish_non_exhaustive()
    }
}
