//! The catalog: the tools a registry serves now, as one snapshot swapped whole when a source changes, and
//! who may see and run each. The call pipeline reads a tool here; the registry lists, searches and swaps.

mod error;
mod grants;
mod rates;
mod registered;
#[cfg(feature = "remote")]
pub(crate) mod remote;
mod snapshot;

use std::sync::Arc;

use tokio::sync::watch;

use crate::caller::Caller;
use crate::param::StateMap;
use crate::policy::Authorizer;
use crate::store::{RecordError, RecordErrorKind, RecordStore};
use crate::tool::Tool;

pub use error::BuildError;
pub(crate) use grants::Grants;
pub use grants::ScopeMap;
pub(crate) use rates::Rates;
#[cfg(feature = "mcp")]
pub(crate) use registered::Uses;
pub(crate) use registered::{
    Handler, Profiles, RegisteredTool, Visibility, compiled_tool, defined, dynamic_tool,
};
#[cfg(feature = "mcp")]
pub(crate) use snapshot::Handover;
pub(crate) use snapshot::{Current, Live, Resolved, Snapshot, ToolId, Tools};

/// The tools as they are now, and the rules of who sees them: the snapshot, the application's state the
/// tools are given, and the authorization the registry was built with.
pub(crate) struct Catalog {
    tools: Tools,
    /// The revision of each snapshot swapped in, for whoever tells clients that the list changed.
    revisions: watch::Sender<u64>,
    state: Arc<StateMap>,
    authorizer: Option<Box<dyn Authorizer>>,
    /// Only tools that only read may run.
    read_only: bool,
    /// Defer the tools marked `auto` for a caller who may run more tools than this.
    defer_above: Option<usize>,
}

/// What a [`Catalog`] is made of, as the builder assembles it.
pub(crate) struct CatalogParts {
    pub(crate) tools: Tools,
    pub(crate) revision: u64,
    pub(crate) state: StateMap,
    pub(crate) authorizer: Option<Box<dyn Authorizer>>,
    pub(crate) read_only: bool,
    pub(crate) defer_above: Option<usize>,
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

impl Catalog {
    pub(crate) fn new(parts: CatalogParts) -> Self {
        let CatalogParts {
            tools,
            revision,
            state,
            authorizer,
            read_only,
            defer_above,
        } = parts;
        Catalog {
            tools,
            revisions: watch::Sender::new(revision),
            state: Arc::new(state),
            authorizer,
            read_only,
            defer_above,
        }
    }

    /// The tools as they are now; a call holds its snapshot until it finishes.
    #[inline]
    pub(crate) fn snapshot(&self) -> Current<'_> {
        self.tools.current()
    }

    /// The application's state, which tools take as `State<T>`.
    #[inline]
    pub(crate) fn state(&self) -> &Arc<StateMap> {
        &self.state
    }

    /// The tools, when records or remote servers change them.
    pub(crate) fn live(&self) -> Option<&Live> {
        match &self.tools {
            Tools::Live(live) => Some(live),
            Tools::Fixed(_) => None,
        }
    }

    /// Lists every remote server's tools now.
    #[cfg(feature = "remote")]
    pub(crate) async fn list_remotes(&self) {
        if let Some(live) = self.live() {
            for remote in live.remotes.servers().iter() {
                remote.list().await;
            }
        }
    }

    /// The operator's records, when there are any.
    pub(crate) fn records(&self) -> Option<&dyn RecordStore> {
        self.live().and_then(|live| live.store.as_deref())
    }

    /// The store of the records, or the error that says there is none: for the operator's commands.
    ///
    /// # Errors
    /// When the registry was built without records.
    pub(crate) fn store(&self) -> Result<&dyn RecordStore, RecordError> {
        self.records().ok_or_else(|| {
            RecordError::new(
                RecordErrorKind::NotFound,
                "this registry has no records: build it with `RegistryBuilder::records`",
            )
        })
    }

    /// The tools `caller` gets up front: see [`Registry::list`](crate::Registry::list).
    pub(crate) fn list(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let listing = self.listing(&snapshot, caller);
        tools_at(&snapshot, &listing.shown)
    }

    /// The tools `caller` may run, deferred ones included.
    pub(crate) fn list_all(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let listing = self.listing(&snapshot, caller);
        tools_at(&snapshot, &listing.with(|_| true))
    }

    /// The tools deferred for `caller`, in listing order.
    pub(crate) fn list_deferred(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        let listing = self.listing(&snapshot, caller);
        tools_at(&snapshot, &listing.deferred)
    }

    /// The tools `caller` may run in `category`, deferred ones included.
    pub(crate) fn list_category(&self, caller: &Caller, category: &str) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        self.visible_tools(&snapshot, caller)
            .into_iter()
            .map(|i| &snapshot.tool(i).tool)
            .filter(|tool| tool.categories.iter().any(|c| c == category))
            .map(Arc::clone)
            .collect()
    }

    /// The first tool of `snapshot` that `caller` may run that fulfils `capability`.
    pub(crate) fn first_with(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        capability: &str,
    ) -> Option<ToolId> {
        snapshot.ids().find(|&i| {
            snapshot.tool(i).tool.capability.as_deref() == Some(capability)
                && self.may_run(snapshot, i, caller)
        })
    }

    /// The tools `caller` may run that best match `query`: see [`Registry::search`](crate::Registry::search).
    pub(crate) fn search(&self, caller: &Caller, query: &str, limit: usize) -> Vec<Arc<Tool>> {
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

    /// A tool by name, whoever may run it.
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Tool>> {
        let snapshot = self.snapshot();
        let index = *snapshot.by_name.get(name)?;
        Some(Arc::clone(&snapshot.tool(index).tool))
    }

    /// The settings a tool runs with now, the operator's merged over the code's and the configuration
    /// file's (for the admin page's form).
    #[cfg(admin)]
    pub(crate) fn settings_of(&self, name: &str) -> Option<Arc<serde_json::Value>> {
        let snapshot = self.snapshot();
        let index = *snapshot.by_name.get(name)?;
        snapshot.tool(index).settings.clone()
    }

    /// Every tool, in listing order, whoever may run it.
    pub(crate) fn tools(&self) -> Vec<Arc<Tool>> {
        let snapshot = self.snapshot();
        snapshot.tools.iter().map(|r| Arc::clone(&r.tool)).collect()
    }

    /// The revision of the operator's policy served now.
    pub(crate) fn revision(&self) -> u64 {
        self.snapshot().revision
    }

    /// Waits until a new snapshot is swapped in, and returns its revision.
    pub(crate) async fn changed(&self) -> u64 {
        let mut revisions = self.revisions.subscribe();
        // Only a change after this call counts.
        revisions.mark_unchanged();
        let _ = revisions.changed().await;
        *revisions.borrow()
    }

    /// The revisions of the snapshots swapped in from now on; `None` when the tools are fixed, as they
    /// never change.
    #[cfg(feature = "mcp")]
    pub(crate) fn subscribe(&self) -> Option<watch::Receiver<u64>> {
        matches!(self.tools, Tools::Live(_)).then(|| self.revisions.subscribe())
    }

    /// Swaps in the snapshot of `tools` at `revision` (of the records, and of the remote servers) into
    /// `live`, unless a newer one was swapped in meanwhile (by a refresh that read later but finished
    /// first).
    pub(crate) fn swap(
        &self,
        live: &Live,
        tools: Vec<RegisteredTool>,
        revision: (u64, u64),
        (rates, grants): (Option<crate::catalog::Rates>, Arc<Grants>),
    ) {
        let stale = |current: &Snapshot| {
            current.loaded && (current.revision, current.remote_generation) > revision
        };
        let mut next = Snapshot::new(tools, revision, true);
        next.rates = rates.map(Arc::new);
        next.grants = grants;
        let next = Arc::new(next);
        let previous = live.current.rcu(|current| {
            if stale(current) {
                Arc::clone(current)
            } else {
                Arc::clone(&next)
            }
        });
        if !stale(&previous) {
            self.revisions.send_replace(revision.0);
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
        let many = self.defer_above.is_some_and(|n| shown.len() > n);
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

    /// The tools `caller` may see, in listing order: the one filter every listing uses.
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
        self.authorizer
            .is_none()
            .then(|| snapshot.abilities.iter().map(|a| caller.has(a)).collect())
    }

    /// Whether `caller` may see and run tool `id` of `snapshot` now: what a transport asks before it
    /// tells a caller anything of a tool, so that one it may not run is an unknown one.
    pub(crate) fn may_run(&self, snapshot: &Snapshot, id: ToolId, caller: &Caller) -> bool {
        self.may_see(snapshot, id, caller, None)
    }

    /// The abilities `caller` lacks to run tool `id` of `snapshot`, when they are why it may not: none
    /// when it may, when the tool is switched off or not allowed now, or when it holds them all and
    /// something else stops it (its profile, a delegation, an authorizer).
    #[cfg(feature = "mcp")]
    pub(crate) fn missing_abilities(
        &self,
        snapshot: &Snapshot,
        id: ToolId,
        caller: &Caller,
    ) -> Option<Vec<String>> {
        let (registered, visibility) = (snapshot.tool(id), snapshot.visibility_of(id));
        if self.may_see(snapshot, id, caller, None)
            || self.availability(registered, visibility).is_err()
            || registered.tool.is_public()
        {
            return None;
        }
        let missing: Vec<String> = (registered.tool.abilities().iter())
            .filter(|ability| !caller.has(ability))
            .cloned()
            .collect();
        (!missing.is_empty()).then_some(missing)
    }

    /// Whether `caller` may see tool `id` of `snapshot`: from its visibility, and from its entry only when
    /// that does not decide (a narrowed caller, an authorizer, abilities to check).
    #[inline]
    fn may_see(
        &self,
        snapshot: &Snapshot,
        id: ToolId,
        caller: &Caller,
        abilities_held: Option<&[bool]>,
    ) -> bool {
        let (registered, visibility) = (&snapshot.tool(id), snapshot.visibility_of(id));
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
        } else if self.read_only && !visibility.read_only {
            Err("This tool changes data and the server only allows reading.")
        } else {
            Ok(())
        }
    }

    /// Whether `caller` may run the tool: its scope, its admission, then the authorizer or the abilities
    /// it requires (`abilities_held` when a listing looked them up once).
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
        match (&self.authorizer, abilities_held) {
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
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let snapshot = self.snapshot();
        let names: Vec<&str> = snapshot.tools.iter().map(|r| &*r.tool.name).collect();
        f.debug_struct("Catalog")
            .field("tools", &names)
            .field("state", &self.state)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// The tools at `indices` of `snapshot`.
fn tools_at(snapshot: &Snapshot, indices: &[ToolId]) -> Vec<Arc<Tool>> {
    indices
        .iter()
        .map(|&i| Arc::clone(&snapshot.tool(i).tool))
        .collect()
}
