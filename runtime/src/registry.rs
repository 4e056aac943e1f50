//! The [`Registry`]: every tool linked into the binary plus dynamic ones, built once, listed per caller.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jsonschema::Validator;
use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::audit::AuditSink;
use crate::ceiling::Ceilings;
use crate::config::{Config, merge_settings};
use crate::confirm::{ConfirmationStore, Confirmations, KeyRing, MemoryStore, SkipPolicy};
use crate::dynamic::{DynHandler, DynamicTool};
use crate::entry::{Access, PreviewFuture, ToolEntry, ToolFuture};
use crate::hooks::{Hook, Lookup};
use crate::param::Need;
use crate::parts::StateMap;
use crate::tool::Source;
use crate::{Authorizer, CallParts, Caller, Tool, schema};

/// All the tools an application offers, with the policy that decides who sees and runs them.
///
/// Built once at start-up: schemas are computed and validators compiled then, never per call. Cloning a
/// `Registry` is cheap and clones share everything (state, call ceilings, pending confirmations).
///
/// ```rust,standalone_crate
/// use toolgate::{tool, Caller, Registry};
///
/// /// Add two numbers.
/// #[tool(public, read_only)]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().expect("tools are consistent");
/// let names: Vec<&str> = registry.list(&Caller::anonymous()).iter().map(|t| t.name()).collect();
/// assert!(names.contains(&"add"));
/// let outcome = registry.call(&Caller::anonymous(), "add", serde_json::json!({"a": 2, "b": 40})).await;
/// assert_eq!(outcome.into_result().structured, Some(serde_json::json!(42)));
/// # });
/// ```
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) slots: Vec<Slot>,
    by_name: FxHashMap<Box<str>, usize>,
    abilities: Vec<String>,
    pub(crate) state: Arc<StateMap>,
    authorizer: Option<Box<dyn Authorizer>>,
    pub(crate) hooks: Vec<Box<dyn Hook>>,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    read_only: bool,
    pub(crate) mask_internal_errors: bool,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) ceilings: Ceilings,
    /// Tell a caller who may not run a tool that their role may not, instead of the unknown tool's answer.
    pub(crate) explain_denials: bool,
    pub(crate) confirmations: Confirmations,
}

/// A tool with everything needed to run it.
pub(crate) struct Slot {
    pub(crate) tool: Tool,
    pub(crate) handler: Handler,
    pub(crate) validator: Validator,
    pub(crate) defaults: Vec<(String, Value)>,
    pub(crate) settings: Option<Arc<Value>>,
    /// A write with a preview, or a tool that asks the client for input: its calls take the confirmation
    /// path, which keeps the arguments to seal them.
    pub(crate) gated: bool,
    enabled: bool,
    required: Box<[usize]>,
}

pub(crate) enum Handler {
    Compiled {
        call: fn(CallParts<'_>) -> ToolFuture,
        preview: Option<fn(CallParts<'_>) -> PreviewFuture>,
    },
    Dynamic(DynHandler),
}

impl Registry {
    /// Starts a registry of every `#[tool]` linked into the binary.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The tools `caller` may run, in listing order, without deferred ones.
    pub fn list(&self, caller: &Caller) -> Vec<&Tool> {
        self.visible(caller).filter(|t| !t.defer).collect()
    }

    /// The tools `caller` may run, deferred ones included.
    pub fn list_all(&self, caller: &Caller) -> Vec<&Tool> {
        self.visible(caller).collect()
    }

    /// The tools `caller` may run in `category`, deferred ones included.
    pub fn list_category(&self, caller: &Caller, category: &str) -> Vec<&Tool> {
        self.visible(caller)
            .filter(|t| t.categories.iter().any(|c| c == category))
            .collect()
    }

    /// The first tool `caller` may run that fulfils `capability`; hooks may substitute another.
    pub fn for_capability(&self, caller: &Caller, capability: &str) -> Option<&Tool> {
        let (index, _) = self
            .visible_slots(caller)
            .find(|(_, s)| s.tool.capability.as_deref() == Some(capability))?;
        let index = self.redirect(Lookup::Capability(capability), index);
        let slot = &self.inner.slots[index];
        self.may_see(slot, caller, None).then_some(&slot.tool)
    }

    /// Tools `caller` may run whose name, title, description, capability or categories match words of
    /// `query`, best first; this is how deferred tools are found.
    pub fn search(&self, caller: &Caller, query: &str, limit: usize) -> Vec<&Tool> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut scored: Vec<(usize, &Tool)> = self
            .visible(caller)
            .map(|tool| (relevance(tool, &words), tool))
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
        scored
            .into_iter()
            .take(limit)
            .map(|(_, tool)| tool)
            .collect()
    }

    /// A tool by name, whoever may run it (for administration; callers use [`list`](Self::list)).
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|&i| &self.inner.slots[i].tool)
    }

    /// Every tool, in listing order, whoever may run it (for administration).
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.inner.slots.iter().map(|s| &s.tool)
    }

    /// The slots `caller` may run, without deferred ones, in listing order.
    #[cfg(feature = "mcp")]
    pub(crate) fn visible_indices<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> impl Iterator<Item = usize> + 'a {
        self.visible_slots(caller)
            .filter(|(_, s)| !s.tool.defer)
            .map(|(i, _)| i)
    }

    /// The slot of a tool by name (no hooks, no policy).
    #[cfg(feature = "mcp")]
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.inner.by_name.get(name).copied()
    }

    /// Whether a call of `name` may end with a question for the client (a write's approval, an `Ask`):
    /// its tool takes the confirmation path, or hooks may resolve the name to one that does.
    #[cfg(feature = "mcp")]
    pub(crate) fn may_ask(&self, name: &str) -> bool {
        !self.inner.hooks.is_empty()
            || self
                .index_of(name)
                .is_some_and(|i| self.inner.slots[i].gated)
    }

    /// Forgets the call counts of a session, for `max_runs`; call it when a conversation ends. The MCP
    /// server calls it when one of its sessions closes or idles out.
    pub fn end_session(&self, session_id: &str) {
        self.inner.ceilings.end_session(session_id);
    }

    fn visible<'a, 'c>(
        &'a self,
        caller: &'c Caller,
    ) -> impl Iterator<Item = &'a Tool> + use<'a, 'c> {
        self.visible_slots(caller).map(|(_, s)| &s.tool)
    }

    /// The slots `caller` may see, with their indices, in listing order: the one filter every listing uses.
    fn visible_slots<'a, 'c>(
        &'a self,
        caller: &'c Caller,
    ) -> impl Iterator<Item = (usize, &'a Slot)> + use<'a, 'c> {
        let held = self.held(caller);
        self.inner
            .slots
            .iter()
            .enumerate()
            .filter(move |(_, s)| self.may_see(s, caller, held.as_deref()))
    }

    /// With the default authorizer: which of the registry's abilities `caller` holds, looked up once per listing.
    fn held(&self, caller: &Caller) -> Option<Vec<bool>> {
        self.inner
            .authorizer
            .is_none()
            .then(|| self.inner.abilities.iter().map(|a| caller.has(a)).collect())
    }

    fn may_see(&self, slot: &Slot, caller: &Caller, held: Option<&[bool]>) -> bool {
        self.availability(slot).is_ok() && self.authorized(slot, caller, held)
    }

    /// Whether the tool is switched on and allowed in the current mode.
    pub(crate) fn availability(&self, slot: &Slot) -> Result<(), &'static str> {
        if !slot.enabled && !slot.tool.system {
            Err("This tool is switched off.")
        } else if self.inner.read_only && !slot.tool.read_only {
            Err("This tool changes data and the server only allows reading.")
        } else {
            Ok(())
        }
    }

    pub(crate) fn authorized(&self, slot: &Slot, caller: &Caller, held: Option<&[bool]>) -> bool {
        match (&self.inner.authorizer, held) {
            (Some(authorizer), _) => authorizer.allows(caller, &slot.tool),
            (None, Some(held)) => slot.tool.public || slot.required.iter().all(|&i| held[i]),
            (None, None) => slot.tool.allows(caller),
        }
    }

    /// The slot for a name, after resolution hooks.
    pub(crate) fn resolve(&self, name: &str) -> Option<usize> {
        let index = *self.inner.by_name.get(name)?;
        Some(self.redirect(Lookup::Name(name), index))
    }

    fn redirect(&self, lookup: Lookup<'_>, index: usize) -> usize {
        let mut index = index;
        for hook in &self.inner.hooks {
            if let Some(other) = hook.on_resolve(lookup, &self.inner.slots[index].tool) {
                match self.inner.by_name.get(other.as_str()) {
                    Some(&i) => index = i,
                    None => tracing::warn!(
                        tool = other,
                        "a resolution hook named a tool that does not exist"
                    ),
                }
            }
        }
        index
    }
}

fn relevance(tool: &Tool, words: &[String]) -> usize {
    let name = tool.name.to_lowercase();
    let mut text = format!(
        "{} {}",
        tool.title.as_deref().unwrap_or(""),
        tool.description
    )
    .to_lowercase();
    for extra in tool.capability.iter().chain(&tool.categories) {
        text.push(' ');
        text.push_str(&extra.to_lowercase());
    }
    words
        .iter()
        .map(|w| {
            3 * usize::from(name.contains(w.as_str())) + usize::from(text.contains(w.as_str()))
        })
        .sum()
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field(
                "tools",
                &self
                    .inner
                    .slots
                    .iter()
                    .map(|s| &*s.tool.name)
                    .collect::<Vec<_>>(),
            )
            .field("state", &self.inner.state)
            .field("read_only", &self.inner.read_only)
            .finish_non_exhaustive()
    }
}

/// Configures a [`Registry`]: state, dynamic tools, order, policy, hooks and audit.
///
/// ```rust,standalone_crate
/// use std::time::Duration;
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::{DynamicTool, KeyRing};
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
/// let names: Vec<&str> = registry.list(&admin).iter().map(|t| t.name()).collect();
/// assert_eq!(names, ["help", "stock"]);
/// let stock = registry.call(&admin, "stock", json!({})).await;
/// assert_eq!(stock.into_result().text_for_model(), "main: 12 items");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
pub struct RegistryBuilder {
    dynamic: Vec<DynamicTool>,
    first: Vec<String>,
    state: StateMap,
    settings: HashMap<String, Value>,
    disabled: HashSet<String>,
    allow_only: Option<HashSet<String>>,
    authorizer: Option<Box<dyn Authorizer>>,
    hooks: Vec<Box<dyn Hook>>,
    audit: Option<Box<dyn AuditSink>>,
    read_only: bool,
    explain_denials: bool,
    mask_internal_errors: bool,
    default_timeout: Option<Duration>,
    confirmation_ttl: Duration,
    keys: Option<KeyRing>,
    store: Option<Box<dyn ConfirmationStore>>,
    skip_confirmation: Option<SkipPolicy>,
    configured: Vec<String>,
}

/// The longest a write preview can wait for its approval.
const MAX_CONFIRMATION_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            dynamic: Vec::new(),
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
            store: None,
            skip_confirmation: None,
            configured: Vec::new(),
        }
    }
}

impl RegistryBuilder {
    /// Adds a tool defined at run time.
    #[must_use]
    pub fn tool(mut self, tool: DynamicTool) -> Self {
        self.dynamic.push(tool);
        self
    }

    /// Adds application state, injected into tools as [`State<T>`](crate::State). One value per type.
    #[must_use]
    pub fn state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
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

    /// How long a write preview can be approved (default ten minutes, at most seven days; `build` refuses
    /// zero and longer times).
    #[must_use]
    pub fn confirmation_ttl(mut self, ttl: Duration) -> Self {
        self.confirmation_ttl = ttl;
        self
    }

    /// The keys that seal confirmations and request states. Give every replica the same ring (for
    /// example from [`KeyRing::parse`] of a secret) so that each accepts the others' confirmations.
    /// Default: a random key, so confirmations die with the process.
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

    /// Applies an operator's [`Config`]: what it sets overrides what the code set before this call. A tool
    /// name the registry does not have fails [`build`](Self::build).
    ///
    /// ```rust,standalone_crate
    /// use toolgate::prelude::*;
    /// use toolgate::Config;
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
            tools,
        } = config;
        self.read_only = read_only.unwrap_or(self.read_only);
        self.mask_internal_errors = mask_internal_errors.unwrap_or(self.mask_internal_errors);
        if let Some(secs) = default_timeout_secs {
            self.default_timeout = Duration::try_from_secs_f64(secs).ok();
        }
        if let Some(secs) = confirmation_ttl_secs {
            self.confirmation_ttl = Duration::from_secs(secs);
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

    /// Builds the registry: computes every schema, and checks names, state and configuration.
    ///
    /// # Errors
    /// A [`BuildError`] naming the tool and what to fix.
    pub fn build(self) -> Result<Registry, BuildError> {
        if self.confirmation_ttl.is_zero() || self.confirmation_ttl > MAX_CONFIRMATION_TTL {
            return Err(BuildError::OutOfRange {
                setting: "confirmation_ttl",
                range: "more than zero and at most 7 days",
            });
        }
        let mut slots = Vec::new();
        for entry in inventory::iter::<ToolEntry> {
            slots.push(compiled_slot(entry, &self.state)?);
        }
        for tool in self.dynamic {
            slots.push(dynamic_slot(tool)?);
        }
        slots.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        if let Some(pair) = slots.windows(2).find(|w| w[0].tool.name == w[1].tool.name) {
            return Err(BuildError::DuplicateName {
                name: pair[0].tool.name.to_string(),
                first: pair[0].tool.source.to_string(),
                second: pair[1].tool.source.to_string(),
            });
        }
        let known: HashSet<&str> = slots.iter().map(|s| &*s.tool.name).collect();
        // The configuration's names first: a misspelt tool there is reported as the file's mistake.
        let configured = self.configured.iter();
        let named = configured.map(|n| ("config", n));
        let named = named.chain(self.first.iter().map(|n| ("first", n)));
        let named = named.chain(self.disabled.iter().map(|n| ("disable", n)));
        let named = named.chain(self.allow_only.iter().flatten().map(|n| ("allow_only", n)));
        for (setting, name) in named.chain(self.settings.keys().map(|n| ("settings", n))) {
            if !known.contains(name.as_str()) {
                return Err(BuildError::UnknownTool {
                    setting,
                    name: name.clone(),
                });
            }
        }
        let rank = |name: &str| {
            self.first
                .iter()
                .position(|f| f == name)
                .unwrap_or(usize::MAX)
        };
        slots.sort_by_key(|s| rank(&s.tool.name));

        let mut abilities: Vec<String> = slots
            .iter()
            .flat_map(|s| s.tool.abilities.iter().cloned())
            .collect();
        abilities.sort();
        abilities.dedup();
        let mut settings = self.settings;
        for slot in &mut slots {
            let name = &*slot.tool.name;
            slot.required = slot
                .tool
                .abilities
                .iter()
                .map(|a| abilities.binary_search(a).unwrap_or_default())
                .collect();
            slot.enabled = !self.disabled.contains(name)
                && self.allow_only.as_ref().is_none_or(|a| a.contains(name));
            slot.settings = settings.remove(name).map(Arc::new);
        }
        let by_name = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (Box::from(&*s.tool.name), i))
            .collect();
        Ok(Registry {
            inner: Arc::new(Inner {
                slots,
                by_name,
                abilities,
                state: Arc::new(self.state),
                authorizer: self.authorizer,
                hooks: self.hooks,
                audit: self.audit,
                read_only: self.read_only,
                mask_internal_errors: self.mask_internal_errors,
                default_timeout: self.default_timeout,
                ceilings: Ceilings::default(),
                explain_denials: self.explain_denials,
                confirmations: Confirmations {
                    keys: self.keys.unwrap_or_else(KeyRing::random),
                    store: self.store.unwrap_or_else(|| Box::new(MemoryStore::new())),
                    ttl: self.confirmation_ttl,
                    skip: self.skip_confirmation,
                },
            }),
        })
    }
}

impl fmt::Debug for RegistryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryBuilder")
            .field("dynamic", &self.dynamic)
            .finish_non_exhaustive()
    }
}

fn compiled_slot(entry: &'static ToolEntry, state: &StateMap) -> Result<Slot, BuildError> {
    let source = Source::Compiled {
        module: entry.module,
        file: entry.file,
        line: entry.line,
    };
    let invalid = |reason: String| BuildError::InvalidSchema {
        tool: entry.name.to_owned(),
        reason,
    };
    let mut asks = false;
    for spec in entry.params {
        match (spec.requirement)().map(|r| r.need) {
            Some(Need::State { type_id, type_name }) if !state.contains(type_id()) => {
                return Err(BuildError::MissingState {
                    tool: entry.name.to_owned(),
                    type_name: type_name.to_owned(),
                });
            }
            Some(Need::Asks) => asks = true,
            _ => {}
        }
    }
    let input = schema::input_schema(entry.params).map_err(invalid)?;
    let validator = schema::validator(&input.schema).map_err(invalid)?;
    if !input.defaults.is_empty() {
        // Each default alone must satisfy its property's schema; the other arguments' `required` does not apply.
        let mut lenient = input.schema.clone();
        lenient.as_object_mut().map(|o| o.remove("required"));
        let lenient = schema::validator(&lenient).map_err(invalid)?;
        for (name, value) in &input.defaults {
            let probe = Value::Object([((*name).to_owned(), value.clone())].into_iter().collect());
            if !lenient.is_valid(&probe) {
                return Err(invalid(format!(
                    "the default of `{name}` ({value}) does not satisfy its own schema"
                )));
            }
        }
    }
    let (public, abilities) = match entry.access {
        Access::Public => (true, Vec::new()),
        Access::Abilities(list) => (false, list.iter().map(|a| (*a).to_owned()).collect()),
    };
    let tool = Tool {
        name: entry.name.into(),
        title: entry.title.map(str::to_owned),
        description: entry.description.to_owned(),
        public,
        abilities,
        read_only: entry.read_only,
        capability: entry.capability.map(str::to_owned),
        categories: entry.categories.iter().map(|c| (*c).to_owned()).collect(),
        system: entry.system,
        defer: entry.defer,
        idempotent: entry.idempotent,
        open_world: entry.open_world,
        max_runs: entry.max_runs,
        timeout: entry.timeout_ms.map(Duration::from_millis),
        has_preview: entry.preview.is_some(),
        input_schema: Arc::new(input.schema),
        output_schema: schema::output_schema(entry.output_schema).map(Arc::new),
        source,
    };
    Ok(Slot {
        gated: asks || entry.preview.is_some(),
        tool,
        handler: Handler::Compiled {
            call: entry.call,
            preview: entry.preview,
        },
        validator,
        defaults: input
            .defaults
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v))
            .collect(),
        settings: None,
        enabled: true,
        required: Box::default(),
    })
}

fn dynamic_slot(tool: DynamicTool) -> Result<Slot, BuildError> {
    let name = tool.name;
    if !is_tool_name(&name) {
        return Err(BuildError::InvalidName { name });
    }
    if tool.public != tool.abilities.is_empty() {
        return Err(BuildError::Undeclared { tool: name });
    }
    if tool.input_schema.get("type") != Some(&Value::from("object")) {
        let reason =
            "the input schema must be an object schema (`\"type\": \"object\"`)".to_owned();
        return Err(BuildError::InvalidSchema { tool: name, reason });
    }
    let validator =
        schema::validator(&tool.input_schema).map_err(|reason| BuildError::InvalidSchema {
            tool: name.clone(),
            reason,
        })?;
    let tool_info = Tool {
        name: name.into(),
        title: tool.title,
        description: tool.description,
        public: tool.public,
        abilities: tool.abilities,
        read_only: tool.read_only,
        capability: tool.capability,
        categories: tool.categories,
        system: tool.system,
        defer: tool.defer,
        idempotent: tool.idempotent,
        open_world: tool.open_world,
        max_runs: tool.max_runs,
        timeout: tool.timeout,
        has_preview: false,
        input_schema: Arc::new(tool.input_schema),
        output_schema: tool.output_schema.map(Arc::new),
        source: Source::Dynamic,
    };
    Ok(Slot {
        tool: tool_info,
        handler: Handler::Dynamic(tool.handler),
        validator,
        defaults: Vec::new(),
        settings: None,
        gated: false,
        enabled: true,
        required: Box::default(),
    })
}

/// MCP's tool-name rule: 1 to 128 of `[A-Za-z0-9_.-]` (the macro checks compiled-in names the same way).
fn is_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"_-.".contains(&c))
}

/// Why a registry could not be built. Each message names the tool and what to change.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::BuildError;
///
/// #[derive(Clone)]
/// struct Db;
///
/// /// Count the rows.
/// #[tool(public, read_only)]
/// async fn count(_db: State<Db>) -> u64 {
///     3
/// }
///
/// let error = Registry::builder().build().unwrap_err();
/// assert!(matches!(&error, BuildError::MissingState { tool, .. } if tool == "count"));
/// assert!(error.to_string().ends_with(
///     "Db>`, but the registry has no such state; add it with `Registry::builder().state(value)`"
/// ));
/// assert!(Registry::builder().state(Db).build().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name.
    DuplicateName {
        /// The name.
        name: String,
        /// Where the first is defined.
        first: String,
        /// Where the second is defined.
        second: String,
    },
    /// A tool asks for `State<T>` the builder was not given.
    MissingState {
        /// The tool.
        tool: String,
        /// The state's type.
        type_name: String,
    },
    /// A schema could not be built or compiled.
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// A dynamic tool declares neither `public` nor an ability, or both.
    Undeclared {
        /// The tool.
        tool: String,
    },
    /// A dynamic tool's name breaks MCP's naming rule.
    InvalidName {
        /// The name.
        name: String,
    },
    /// A builder setting names a tool that does not exist.
    UnknownTool {
        /// The builder method.
        setting: &'static str,
        /// The name given.
        name: String,
    },
    /// A builder setting has a value outside its range.
    OutOfRange {
        /// The builder method.
        setting: &'static str,
        /// The range it takes.
        range: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateName {
                name,
                first,
                second,
            } => {
                write!(
                    f,
                    "two tools are named `{name}`: one at {first}, one at {second}; rename one with `name = \"...\"`"
                )
            }
            BuildError::MissingState { tool, type_name } => write!(
                f,
                "tool `{tool}` takes `State<{type_name}>`, but the registry has no such state; \
                 add it with `Registry::builder().state(value)`"
            ),
            BuildError::InvalidSchema { tool, reason } => write!(f, "tool `{tool}`: {reason}"),
            BuildError::Undeclared { tool } => write!(
                f,
                "dynamic tool `{tool}` must declare who may run it: call exactly one of `.public()` or `.ability(..)`"
            ),
            BuildError::InvalidName { name } => write!(
                f,
                "`{name}` is not a valid tool name: use 1 to 128 ASCII letters, digits, `_`, `-` and `.`"
            ),
            BuildError::UnknownTool { setting, name } => {
                write!(f, "`{setting}` names `{name}`, but no tool has that name")
            }
            BuildError::OutOfRange { setting, range } => {
                write!(f, "`{setting}` must be {range}")
            }
        }
    }
}

impl std::error::Error for BuildError {}
