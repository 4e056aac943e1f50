//! The registry's tools as they are now: a snapshot, swapped whole when a source changes. A call keeps the
//! snapshot it started with until it finishes; the next call sees the new one.

use std::any::Any;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use arc_swap::{ArcSwap, Guard};
use rustc_hash::FxHashMap;

use crate::search::Index;

use crate::store::RecordStore;

use super::registered::{RegisteredTool, Visibility};

/// A tool of one snapshot: what a name resolves to, and what each step of a call reads the tool by. It
/// means something only in the snapshot that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ToolId(usize);

impl ToolId {
    /// The tool at `index` of a snapshot's tools.
    pub(crate) fn at(index: usize) -> Self {
        ToolId(index)
    }

    /// Its place among the snapshot's tools.
    #[cfg(feature = "mcp")]
    pub(crate) fn index(self) -> usize {
        self.0
    }
}

/// The tools in listing order, their index by name, and the abilities they require.
pub(crate) struct Snapshot {
    pub(crate) tools: Vec<RegisteredTool>,
    /// What decides who sees each tool, in the same order.
    pub(crate) visibility: Vec<Visibility>,
    pub(crate) by_name: FxHashMap<Box<str>, ToolId>,
    /// Every ability some tool requires, sorted; a tool's `required` indexes into it.
    pub(crate) abilities: Vec<String>,
    /// The operator's policy revision the snapshot was built from (0 without records).
    pub(crate) revision: u64,
    /// How many changes of remote servers' tools or health it includes.
    pub(crate) remote_generation: u64,
    /// Whether the operator's records are in it: a registry with records serves nothing but system
    /// tools until they are loaded.
    pub(crate) loaded: bool,
    /// Where the built-in `tool_search` is, when some tool may be deferred.
    pub(crate) tool_search: Option<ToolId>,
    /// The operator's rate limits, when there are any: calls then take the path that counts them.
    pub(crate) rates: Option<Arc<crate::catalog::Rates>>,
    /// What the operator's records say access tokens' scopes and roles grant.
    pub(crate) grants: Arc<crate::catalog::Grants>,
    /// The search index of these tools, made on first search.
    search: OnceLock<Index>,
    /// What a transport derives from these tools once (MCP's tool definitions), made on first use.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl Snapshot {
    /// The snapshot of `tools`, in the order given.
    pub(crate) fn new(
        mut tools: Vec<RegisteredTool>,
        (revision, remote_generation): (u64, u64),
        loaded: bool,
    ) -> Self {
        let mut abilities: Vec<String> = tools
            .iter()
            .flat_map(|r| r.tool.abilities().iter().cloned())
            .collect();
        abilities.sort();
        abilities.dedup();
        for registered in &mut tools {
            registered.required = registered
                .tool
                .abilities()
                .iter()
                .map(|a| abilities.binary_search(a).unwrap_or_default())
                .collect();
        }
        let visibility = tools.iter().map(Visibility::of).collect();
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, r)| (Box::from(&*r.tool.name), ToolId(i)))
            .collect();
        let tool_search = tools
            .iter()
            .position(|r| r.tool.is_tool_search())
            .map(ToolId);
        Snapshot {
            tool_search,
            tools,
            visibility,
            by_name,
            abilities,
            revision,
            remote_generation,
            loaded,
            rates: None,
            grants: Arc::default(),
            search: OnceLock::new(),
            derived: OnceLock::new(),
        }
    }

    /// The tool `id` names.
    #[inline]
    pub(crate) fn tool(&self, id: ToolId) -> &RegisteredTool {
        &self.tools[id.0]
    }

    /// What decides who sees tool `id`.
    #[inline]
    pub(crate) fn visibility_of(&self, id: ToolId) -> Visibility {
        self.visibility[id.0]
    }

    /// Every tool, with its id, in listing order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = ToolId> + use<> {
        (0..self.tools.len()).map(ToolId)
    }

    /// The search index of these tools, by their positions.
    pub(crate) fn search_index(&self) -> &Index {
        self.search
            .get_or_init(|| Index::new(self.tools.iter().map(|r| &*r.tool)))
    }

    /// Whether a call of the tool a name resolved to may end with a question for the client (a write's
    /// approval, an `Ask`): it takes more than one round.
    #[cfg(feature = "mcp")]
    pub(crate) fn may_ask(&self, resolved: Option<ToolId>) -> bool {
        resolved.is_some_and(|i| self.tool(i).has_rounds)
    }

    /// What `derive` makes of these tools, made once per snapshot. One transport type uses it (MCP, for
    /// its tool definitions); another type asking would get `None`.
    #[cfg(feature = "mcp")]
    pub(crate) fn derived<T: Any + Send + Sync>(
        &self,
        derive: impl FnOnce(&Self) -> T,
    ) -> Option<&T> {
        self.derived
            .get_or_init(|| Box::new(derive(self)))
            .downcast_ref()
    }
}

/// A registry's tools: fixed when nothing can change them (no records), so that a call reads them with no
/// atomic operation at all; otherwise the current snapshot, swapped whole, built from the tools the code
/// and the configuration file declare with the operator's records over them.
pub(crate) enum Tools {
    Fixed(Arc<Snapshot>),
    Live(Live),
}

/// The tools of a registry with records or remote servers.
pub(crate) struct Live {
    pub(crate) current: ArcSwap<Snapshot>,
    /// In listing order: what every snapshot is built from.
    pub(crate) declared: Vec<RegisteredTool>,
    pub(crate) store: Option<Arc<dyn RecordStore>>,
    /// What the configuration file says scopes and roles grant, under the records' grants.
    pub(crate) grants: Arc<crate::catalog::Grants>,
    #[cfg(feature = "remote")]
    pub(crate) remotes: crate::remote::Remotes,
    /// Each remote server's tools as its last listing made them.
    #[cfg(feature = "remote")]
    pub(crate) prepared: super::remote::PreparedTools,
}

impl Live {
    /// How many changes of remote servers there have been.
    pub(crate) fn remote_generation(&self) -> u64 {
        #[cfg(feature = "remote")]
        {
            self.remotes.signal.generation()
        }
        #[cfg(not(feature = "remote"))]
        {
            0
        }
    }
}

/// A name resolved once for a call: the snapshot it was resolved in, and the tool it names there, if any.
pub(crate) struct Resolved<'a> {
    pub(crate) snapshot: Current<'a>,
    pub(crate) tool: Option<ToolId>,
}

#[cfg(feature = "mcp")]
impl Resolved<'_> {
    /// The resolution of `name` as a value of its own, for a call that another path will run.
    pub(crate) fn handed_over(&self, name: &str) -> Handover {
        let snapshot = match &self.snapshot {
            Current::Borrowed(snapshot) => Arc::clone(snapshot),
            Current::Live(guard) => Arc::clone(guard),
        };
        Handover {
            name: name.into(),
            snapshot,
            tool: self.tool,
        }
    }
}

#[cfg(feature = "mcp")]
/// A call's resolution handed from the path that resolved it to the one that runs it (from a transport's
/// own loop to rmcp's dispatch, say), so that its hooks run once: the name, its snapshot and its tool.
#[derive(Clone)]
pub(crate) struct Handover {
    name: Box<str>,
    snapshot: Arc<Snapshot>,
    tool: Option<ToolId>,
}

#[cfg(feature = "mcp")]
impl Handover {
    /// The snapshot the call's tool was looked up in, and the tool, if one is named so.
    pub(crate) fn resolution(&self) -> (&Snapshot, Option<ToolId>) {
        (&self.snapshot, self.tool)
    }

    /// The resolution again, for a call of `name`: none for a call of another name.
    pub(crate) fn resolved(&self, name: &str) -> Option<Resolved<'_>> {
        (*self.name == *name).then(|| Resolved {
            snapshot: Current::Borrowed(&self.snapshot),
            tool: self.tool,
        })
    }
}

/// The snapshot a call holds until it finishes: borrowed (from a fixed registry, or from whoever resolved
/// the call), or an arc-swap guard (no refcount traffic) of a live registry.
pub(crate) enum Current<'a> {
    Borrowed(&'a Arc<Snapshot>),
    Live(Guard<Arc<Snapshot>>),
}

impl Tools {
    #[inline]
    pub(crate) fn current(&self) -> Current<'_> {
        match self {
            Tools::Fixed(snapshot) => Current::Borrowed(snapshot),
            Tools::Live(live) => Current::Live(live.current.load()),
        }
    }
}

impl Deref for Current<'_> {
    type Target = Snapshot;

    #[inline]
    fn deref(&self) -> &Snapshot {
        match self {
            Current::Borrowed(snapshot) => snapshot,
            Current::Live(guard) => guard,
        }
    }
}
