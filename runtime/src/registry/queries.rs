//! The [`Registry`]: every tool linked into the binary plus dynamic ones, built once, listed per caller.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rustc_hash::FxHashMap;

use crate::caller::Caller;
use crate::confirm::Confirmations;
use crate::param::StateMap;
use crate::policy::ceiling::Ceilings;
use crate::policy::hooks::{Hook, Lookup};
use crate::policy::{AuditSink, Authorizer};
use crate::tool::Tool;

use super::registered::RegisteredTool;

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
    pub(crate) tools: Vec<RegisteredTool>,
    pub(crate) by_name: FxHashMap<Box<str>, usize>,
    pub(crate) abilities: Vec<String>,
    pub(crate) state: Arc<StateMap>,
    pub(crate) authorizer: Option<Box<dyn Authorizer>>,
    pub(crate) hooks: Vec<Box<dyn Hook>>,
    pub(crate) audit: Option<Box<dyn AuditSink>>,
    pub(crate) read_only: bool,
    pub(crate) mask_internal_errors: bool,
    pub(crate) default_timeout: Option<Duration>,
    pub(crate) ceilings: Ceilings,
    /// Tell a caller who may not run a tool that their role may not, instead of the unknown tool's answer.
    pub(crate) explain_denials: bool,
    pub(crate) confirmations: Confirmations,
}

impl Registry {
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
            .visible_tools(caller)
            .find(|(_, s)| s.tool.capability.as_deref() == Some(capability))?;
        let index = self.redirect(Lookup::Capability(capability), index);
        let registered = &self.inner.tools[index];
        self.may_see(registered, caller, None)
            .then_some(&registered.tool)
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
            .map(|&i| &self.inner.tools[i].tool)
    }

    /// Every tool, in listing order, whoever may run it (for administration).
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.inner.tools.iter().map(|s| &s.tool)
    }

    /// The indices of the tools `caller` may run, without deferred ones, in listing order.
    #[cfg(feature = "mcp")]
    pub(crate) fn visible_indices<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> impl Iterator<Item = usize> + 'a {
        self.visible_tools(caller)
            .filter(|(_, s)| !s.tool.defer)
            .map(|(i, _)| i)
    }

    /// The index of a tool by name (no hooks, no policy).
    #[cfg(feature = "mcp")]
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.inner.by_name.get(name).copied()
    }

    /// Whether a call of the tool a name resolved to may end with a question for the client (a write's
    /// approval, an `Ask`): it takes more than one round.
    #[cfg(feature = "mcp")]
    pub(crate) fn may_ask(&self, resolved: Option<usize>) -> bool {
        resolved.is_some_and(|i| self.inner.tools[i].has_rounds)
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
        self.visible_tools(caller).map(|(_, s)| &s.tool)
    }

    /// The tools `caller` may see, with their indices, in listing order: the one filter every listing uses.
    fn visible_tools<'a, 'c>(
        &'a self,
        caller: &'c Caller,
    ) -> impl Iterator<Item = (usize, &'a RegisteredTool)> + use<'a, 'c> {
        let abilities_held = self.abilities_held(caller);
        self.inner
            .tools
            .iter()
            .enumerate()
            .filter(move |(_, s)| self.may_see(s, caller, abilities_held.as_deref()))
    }

    /// With the default authorizer: which of the registry's abilities `caller` holds, looked up once per listing.
    fn abilities_held(&self, caller: &Caller) -> Option<Vec<bool>> {
        self.inner
            .authorizer
            .is_none()
            .then(|| self.inner.abilities.iter().map(|a| caller.has(a)).collect())
    }

    fn may_see(
        &self,
        registered: &RegisteredTool,
        caller: &Caller,
        abilities_held: Option<&[bool]>,
    ) -> bool {
        self.availability(registered).is_ok() && self.authorized(registered, caller, abilities_held)
    }

    /// Whether the tool is switched on and allowed in the current mode.
    pub(crate) fn availability(&self, registered: &RegisteredTool) -> Result<(), &'static str> {
        if !registered.enabled && !registered.tool.system {
            Err("This tool is switched off.")
        } else if self.inner.read_only && !registered.tool.read_only {
            Err("This tool changes data and the server only allows reading.")
        } else {
            Ok(())
        }
    }

    pub(crate) fn authorized(
        &self,
        registered: &RegisteredTool,
        caller: &Caller,
        abilities_held: Option<&[bool]>,
    ) -> bool {
        match (&self.inner.authorizer, abilities_held) {
            (Some(authorizer), _) => authorizer.allows(caller, &registered.tool),
            (None, Some(abilities_held)) => registered
                .tool
                .allows_holding(registered.required.iter().map(|&i| abilities_held[i])),
            (None, None) => registered.tool.allows(caller),
        }
    }

    /// The index of the tool for a name, after resolution hooks.
    pub(crate) fn resolve(&self, name: &str) -> Option<usize> {
        let index = *self.inner.by_name.get(name)?;
        Some(self.redirect(Lookup::Name(name), index))
    }

    fn redirect(&self, lookup: Lookup<'_>, index: usize) -> usize {
        let mut index = index;
        for hook in &self.inner.hooks {
            if let Some(other) = hook.on_resolve(lookup, &self.inner.tools[index].tool) {
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
                    .tools
                    .iter()
                    .map(|s| &*s.tool.name)
                    .collect::<Vec<_>>(),
            )
            .field("state", &self.inner.state)
            .field("read_only", &self.inner.read_only)
            .finish_non_exhaustive()
    }
}
