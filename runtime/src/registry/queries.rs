//! The [`Registry`]: every tool linked into the binary plus dynamic ones, built once, listed per caller.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::caller::Caller;
use crate::confirm::Confirmations;
use crate::param::StateMap;
use crate::policy::ceiling::Ceilings;
use crate::policy::hooks::{Hook, Lookup};
use crate::policy::slots::Slots;
use crate::policy::{AuditSink, Authorizer};
use crate::tool::Tool;

use super::registered::{RegisteredTool, Visibility};
use super::snapshot::{Current, Live, Snapshot, ToolId, Tools};

/// All the tools an application offers, with the policy that decides who sees and runs them.
///
/// Built at start-up: schemas are computed and argument checks made then, never per call. What the
/// operator changes (switched on or off, settings, abilities) is swapped in as a new snapshot while it
/// serves: a call finishes on the snapshot it started with. Cloning a `Registry` is cheap and clones share
/// everything (state, call ceilings, pending confirmations, the snapshot).
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
/// let names: Vec<String> = registry.list(&Caller::anonymous()).iter().map(|t| t.name().to_owned()).collect();
/// assert!(names.contains(&"add".to_owned()));
/// let outcome = registry.call(&Caller::anonymous(), "add", serde_json::json!({"a": 2, "b": 40})).await;
/// assert_eq!(outcome.into_result().structured.as_deref(), Some(&serde_json::json!(42)));
/// # });
/// ```
#[derive(Clone)]
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The tools as they are now.
    pub(crate) tools: Tools,
    /// The revision of each snapshot swapped in, for whoever tells clients that the list changed.
    pub(crate) revisions: watch::Sender<u64>,
    pub(crate) state: Arc<StateMap>,
    pub(crate) authorizer: Option<Box<dyn Authorizer>>,
    pub(crate) hooks: Vec<Box<dyn Hook>>,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    pub(crate) read_only: bool,
    pub(crate) mask_internal_errors: bool,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) ceilings: Ceilings,
    /// The slots calls and tasks run in.
    pub(crate) slots: Slots,
    /// How long the audit trail in the records' database keeps a call.
    pub(crate) audit_retention: Option<Duration>,
    /// Tell a caller who may not run a tool that their role may not, instead of the unknown tool's answer.
    pub(crate) explain_denials: bool,
    pub(crate) confirmations: Confirmations,
    /// Defer the tools marked `auto` for a caller who may run more tools than this.
    pub(crate) defer_above: Option<usize>,
    /// Where tasks are kept, and the cancellations of those this process runs.
    pub(crate) tasks: crate::store::Tasks,
}

/// What one caller may run, split into the tools they get up front and those left to `tool_search`.
pub(crate) struct Listing {
    /// In listing order; `tool_search` is among them when something is deferred.
    pub(crate) shown: Vec<ToolId>,
    /// In listing order.
    pub(crate) deferred: Vec<ToolId>,
}

impl Listing {
    /// The tools shown with the deferred ones `loaded` picks, in listing order.
    pub(crate) fn with(self, mut loaded: impl FnMut(ToolId) -> bool) -> Vec<ToolId> {
        let mut indices = self.shown;
        let shown = indices.len();
        indices.extend(self.deferred.into_iter().filter(|&i| loaded(i)));
        if indices.len() > shown {
            indices.sort_unstable();
        }
        indices
    }
}

impl Registry {
    /// The tools `caller` gets up front, in listing order: those they may run, without the deferred ones
    /// (see [`Defer`](crate::Defer)), with `tool_search` when something is deferred.
    pub fn list(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let listing = self.listing(&snapshot, caller);
        tools_at(&snapshot, &listing.shown)
    }

    /// The tools `caller` may run, deferred ones included.
    pub fn list_all(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let listing = self.listing(&snapshot, caller);
        tools_at(&snapshot, &listing.with(|_| true))
    }

    /// The tools deferred for `caller`, in listing order: those they may run but do not get up front.
    pub fn list_deferred(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let listing = self.listing(&snapshot, caller);
        tools_at(&snapshot, &listing.deferred)
    }

    /// The tools `caller` may run in `category`, deferred ones included.
    pub fn list_category(&self, caller: &Caller, category: &str) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        self.visible_tools(&snapshot, caller)
            .into_iter()
            .map(|i| &snapshot.tool(i).tool)
            .filter(|tool| tool.categories.iter().any(|c| c == category))
            .map(Arc::clone)
            .collect()
    }

    /// The first tool `caller` may run that fulfils `capability`; hooks may substitute another.
    pub fn for_capability(&self, caller: &Caller, capability: &str) -> Option<Arc<Tool>> {
        let snapshot = self.snapshot();
        let index = snapshot.ids().find(|&i| {
            snapshot.tool(i).tool.capability.as_deref() == Some(capability)
                && self.may_see(&snapshot, i, caller, None)
        })?;
        let index = self.redirect(&snapshot, Lookup::Capability(capability), index);
        self.may_see(&snapshot, index, caller, None)
            .then(|| Arc::clone(&snapshot.tool(index).tool))
    }

    /// The tools `caller` may run that best match `query`, best first: ranked with BM25 over their names,
    /// titles, descriptions, capabilities, categories and parameters. This is how deferred tools are
    /// found; a tool the caller may not run is never among them.
    pub fn search(&self, caller: &Caller, query: &str, limit: usize) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let held = self.abilities_held(&snapshot, caller);
        snapshot
            .search_index()
            .ranked(query)
            .into_iter()
            .map(|(index, score)| (ToolId::at(index), score))
            .filter(|&(index, _)| self.may_see(&snapshot, index, caller, held.as_deref()))
            .take(limit)
            .map(|(index, _)| Arc::clone(&snapshot.tool(index).tool))
            .collect()
    }

    /// A tool by name, whoever may run it (for administration; callers use [`list`](Self::list)).
    pub fn get(&self, name: &str) -> Option<Arc<Tool>> {
        let snapshot = self.snapshot();
        let index = *snapshot.by_name.get(name)?;
        Some(Arc::clone(&snapshot.tool(index).tool))
    }

    /// The tool `name` resolves to, when `caller` may see it and run it now.
    pub(crate) fn runnable(&self, caller: &Caller, name: &str) -> Option<Arc<Tool>> {
        let snapshot = self.snapshot();
        let index = self.resolve(&snapshot, name)?;
        self.may_run(&snapshot, index, caller)
            .then(|| Arc::clone(&snapshot.tool(index).tool))
    }

    /// The settings a tool runs with now, the operator's merged over the code's and the configuration
    /// file's (for the admin page's form).
    #[cfg(feature = "mcp")]
    pub(crate) fn settings_of(&self, name: &str) -> Option<Arc<serde_json::Value>> {
        let snapshot = self.snapshot();
        let index = *snapshot.by_name.get(name)?;
        snapshot.tool(index).settings.clone()
    }

    /// Every tool, in listing order, whoever may run it (for administration).
    pub fn tools(&self) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        snapshot.tools.iter().map(|r| Arc::clone(&r.tool)).collect()
    }

    /// The revision of the operator's policy the registry serves now: it moves when a change is swapped in.
    pub fn revision(&self) -> u64 {
        self.snapshot().revision
    }

    /// Waits until a new snapshot is swapped in, and returns its revision: for a transport that tells its
    /// clients that the list changed.
    pub async fn changed(&self) -> u64 {
        let mut revisions = self.inner.revisions.subscribe();
        // Only a change after this call counts.
        revisions.mark_unchanged();
        let _ = revisions.changed().await;
        *revisions.borrow()
    }

    /// The revisions of the snapshots swapped in from now on; `None` when the tools are fixed, as they
    /// never change.
    #[cfg(feature = "mcp")]
    pub(crate) fn subscribe(&self) -> Option<watch::Receiver<u64>> {
        matches!(self.inner.tools, Tools::Live(_)).then(|| self.inner.revisions.subscribe())
    }

    /// The tools as they are now; a call holds its snapshot until it finishes.
    #[inline]
    pub(crate) fn snapshot(&self) -> Current<'_> {
        self.inner.tools.current()
    }

    /// Swaps in the snapshot of `tools` at `revision` (of the records, and of the remote servers) into
    /// `live`, unless a newer one was swapped in meanwhile (by a refresh that read later but finished
    /// first).
    pub(crate) fn swap(
        &self,
        live: &Live,
        tools: Vec<RegisteredTool>,
        revision: (u64, u64),
        rates: Option<crate::policy::rates::Rates>,
    ) {
        let stale = |current: &Snapshot| {
            current.loaded && (current.revision, current.remote_generation) > revision
        };
        let mut next = Snapshot::new(tools, revision, true);
        next.rates = rates.map(Arc::new);
        let next = Arc::new(next);
        let previous = live.current.rcu(|current| {
            if stale(current) {
                Arc::clone(current)
            } else {
                Arc::clone(&next)
            }
        });
        if !stale(&previous) {
            self.inner.revisions.send_replace(revision.0);
        }
    }

    /// What `caller` may run, split into what they get up front and what is deferred for them: a tool
    /// marked `auto` is deferred when they may run more tools than the threshold, `tool_search` not
    /// counted. `tool_search` is shown only when something is deferred.
    pub(crate) fn listing(&self, snapshot: &Snapshot, caller: &Caller) -> Listing {
        let mut shown = self.visible_tools(snapshot, caller);
        let search = snapshot.tool_search;
        let finder = shown.iter().position(|&i| Some(i) == search);
        let finder = finder.map(|at| shown.remove(at));
        let many = self.inner.defer_above.is_some_and(|n| shown.len() > n);
        let mut deferred = Vec::new();
        shown.retain(|&i| {
            let defer = snapshot.visibility_of(i).defer.applies(many);
            if defer {
                deferred.push(i);
            }
            !defer
        });
        if let Some(finder) = finder.filter(|_| !deferred.is_empty()) {
            shown.insert(shown.partition_point(|&i| i < finder), finder);
        }
        Listing { shown, deferred }
    }

    /// Forgets the call counts of a session, for `max_runs`; call it when a conversation ends. The MCP
    /// server calls it when one of its sessions closes or idles out.
    pub fn end_session(&self, session_id: &str) {
        self.inner.ceilings.end_session(session_id);
    }

    /// The indices of the tools `caller` may see, in listing order: the one filter every listing uses.
    fn visible_tools(&self, snapshot: &Snapshot, caller: &Caller) -> Vec<ToolId> {
        let abilities_held = self.abilities_held(snapshot, caller);
        // Sized for every tool, so that a listing of many grows no vector as it goes.
        let mut visible = Vec::with_capacity(snapshot.visibility.len());
        for id in snapshot.ids() {
            if self.may_see(snapshot, id, caller, abilities_held.as_deref()) {
                visible.push(id);
            }
        }
        visible
    }

    /// With the default authorizer: which of the snapshot's abilities `caller` holds, looked up once per
    /// listing.
    fn abilities_held(&self, snapshot: &Snapshot, caller: &Caller) -> Option<Vec<bool>> {
        self.inner
            .authorizer
            .is_none()
            .then(|| snapshot.abilities.iter().map(|a| caller.has(a)).collect())
    }

    /// Whether `caller` may see and run the tool at `index` of `snapshot` now: what a transport asks
    /// before it tells a caller anything of a tool, so that one it may not run is an unknown one.
    pub(crate) fn may_run(&self, snapshot: &Snapshot, index: ToolId, caller: &Caller) -> bool {
        self.may_see(snapshot, index, caller, None)
    }

    /// Whether `caller` may see the tool at `index` of `snapshot`: from its visibility, and from its entry
    /// only when that does not decide (a narrowed caller, an authorizer, abilities to check).
    #[inline]
    fn may_see(
        &self,
        snapshot: &Snapshot,
        index: ToolId,
        caller: &Caller,
        abilities_held: Option<&[bool]>,
    ) -> bool {
        let (registered, visibility) = (&snapshot.tool(index), snapshot.visibility_of(index));
        self.availability(registered, visibility).is_ok()
            && self.authorized(registered, visibility, caller, abilities_held)
    }

    /// Whether the tool is switched on and allowed in the current mode, as its `visibility` says; its
    /// entry says why it is withheld.
    pub(crate) fn availability<'r>(
        &self,
        registered: &'r RegisteredTool,
        visibility: Visibility,
    ) -> Result<(), &'r str> {
        if !visibility.on {
            Err(registered
                .withheld
                .as_deref()
                .unwrap_or("This tool is switched off."))
        } else if self.inner.read_only && !visibility.read_only {
            Err("This tool changes data and the server only allows reading.")
        } else {
            Ok(())
        }
    }

    pub(crate) fn authorized(
        &self,
        registered: &RegisteredTool,
        visibility: Visibility,
        caller: &Caller,
        abilities_held: Option<&[bool]>,
    ) -> bool {
        if caller.is_scoped() && !self.scope_allows(registered, visibility, caller) {
            return false;
        }
        if !visibility.admission.admits(caller) {
            return false;
        }
        match (&self.inner.authorizer, abilities_held) {
            (Some(authorizer), _) => authorizer.allows(caller, &registered.tool),
            (None, Some(abilities_held)) => visibility
                .admission
                .allows_holding(registered.required.iter().map(|&i| abilities_held[i])),
            (None, None) => registered.tool.allows(caller),
        }
    }

    /// What narrows a caller: its profile must have the tool, and a delegated caller may run only what every
    /// caller up its chain may, until it expires. Kept apart, so that `authorized` is no recursion and
    /// inlines.
    #[inline(never)]
    fn scope_allows(
        &self,
        registered: &RegisteredTool,
        visibility: Visibility,
        caller: &Caller,
    ) -> bool {
        if let Some(profile) = caller.profile()
            && !registered.in_profile(profile)
        {
            return false;
        }
        caller.on_behalf_of().is_none_or(|parent| {
            !caller.expired() && self.authorized(registered, visibility, parent, None)
        })
    }

    /// The index of the tool for a name in `snapshot`, after resolution hooks.
    pub(crate) fn resolve(&self, snapshot: &Snapshot, name: &str) -> Option<ToolId> {
        let index = *snapshot.by_name.get(name)?;
        Some(self.redirect(snapshot, Lookup::Name(name), index))
    }

    /// `index`, or the tool a resolution hook names instead. Without hooks (inlined) one check.
    #[inline]
    fn redirect(&self, snapshot: &Snapshot, lookup: Lookup<'_>, index: ToolId) -> ToolId {
        if self.inner.hooks.is_empty() {
            return index;
        }
        self.redirect_by_hooks(snapshot, lookup, index)
    }

    fn redirect_by_hooks(
        &self,
        snapshot: &Snapshot,
        lookup: Lookup<'_>,
        mut index: ToolId,
    ) -> ToolId {
        for hook in &self.inner.hooks {
            if let Some(other) = hook.on_resolve(lookup, &snapshot.tool(index).tool) {
                match snapshot.by_name.get(other.as_str()) {
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

/// The tools at `indices` of `snapshot`.
fn tools_at(snapshot: &Snapshot, indices: &[ToolId]) -> Vec<Arc<Tool>> {
    indices
        .iter()
        .map(|&i| Arc::clone(&snapshot.tool(i).tool))
        .collect()
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field(
                "tools",
                &self
                    .snapshot()
                    .tools
                    .iter()
                    .map(|s| s.tool.name.to_string())
                    .collect::<Vec<_>>(),
            )
            .field("state", &self.inner.state)
            .field("read_only", &self.inner.read_only)
            .finish_non_exhaustive()
    }
}
