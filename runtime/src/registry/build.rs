//! Building a registry: every declared tool registered and checked once, the built-in tools added, the
//! operator's configuration applied, and the catalog and the pipeline assembled.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::call::{Pipeline, PipelineParts, Tasks};
use crate::catalog::{
    BuildError, Catalog, CatalogParts, Live, RegisteredTool, Snapshot, Tools, compiled_tool,
    defined, dynamic_tool,
};
use crate::confirm::{Confirmations, KeyRing, MemoryStore};
use crate::policy::ceiling::Ceilings;
use crate::policy::slots::Slots;
use crate::store::RecordError;
use crate::tool::{Defer, DynamicTool, Source, ToolEntry, is_replaceable};

use super::builder::{MAX_CONFIRMATION_TTL, RegistryBuilder};
use super::builtin::{self, Finder};
use super::core::Core;
use super::handle::Registry;

impl RegistryBuilder {
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
        let mut tools = Vec::new();
        let taken = |entry: &ToolEntry| {
            self.compiled
                .as_ref()
                .is_none_or(|c| c.contains(entry.name))
        };
        for entry in inventory::iter::<ToolEntry>
            .into_iter()
            .filter(|e| taken(e))
        {
            tools.push(compiled_tool(entry, &self.state)?);
        }
        if let Some(name) = self.compiled.iter().flatten().find(|name| {
            !inventory::iter::<ToolEntry>
                .into_iter()
                .any(|e| e.name == name.as_str())
        }) {
            return Err(BuildError::UnknownTool {
                setting: "compiled_tools",
                name: name.clone(),
            });
        }
        for tool in self.dynamic {
            tools.push(dynamic_tool(tool)?);
        }
        let finder = Finder::default();
        let deferrable =
            |defer| defer == Defer::Always || (defer == Defer::Auto && self.defer_above.is_some());
        let mut offered: Vec<DynamicTool> = self.built_ins.iter().map(|b| b.tool()).collect();
        if tools.iter().any(|r| deferrable(r.tool.defer)) {
            offered.push(builtin::tool_search(&finder));
        }
        add_built_ins(&mut tools, offered)?;
        tools.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        if let Some(pair) = tools.windows(2).find(|w| w[0].tool.name == w[1].tool.name) {
            return Err(BuildError::DuplicateName {
                name: pair[0].tool.name.to_string(),
                first: pair[0].tool.source.to_string(),
                second: pair[1].tool.source.to_string(),
            });
        }
        let known: HashSet<&str> = tools.iter().map(|s| &*s.tool.name).collect();
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
        tools.sort_by_key(|s| rank(&s.tool.name));

        let mut settings = self.settings;
        for registered in &mut tools {
            let name = &*registered.tool.name;
            registered.enabled = !self.disabled.contains(name)
                && self.allow_only.as_ref().is_none_or(|a| a.contains(name));
            registered.settings = settings.remove(name).map(Arc::new);
            registered.via_rounds |= self.ceilings.is_some() && registered.tool.max_runs.is_some();
            registered
                .check_settings()
                .map_err(|reason| BuildError::InvalidSettings {
                    tool: name.to_owned(),
                    reason,
                })?;
        }
        let keys_from_records = self.keys.is_none() && self.records.is_some();
        let keys = Arc::new(ArcSwap::from_pointee(
            self.keys.unwrap_or_else(KeyRing::random),
        ));
        #[cfg(signs_in)]
        let vault = (self.sign_ins).map(|store| crate::remote::Vault {
            store,
            keys: Arc::clone(&keys),
        });
        #[cfg(all(feature = "remote", not(signs_in)))]
        let vault = None;
        #[cfg(feature = "remote")]
        let remotes = crate::catalog::remote::checked(self.remotes, vault)?;
        #[cfg(feature = "remote")]
        let live = self.records.is_some() || !remotes.is_empty();
        #[cfg(not(feature = "remote"))]
        let live = self.records.is_some();
        let mut map = self.scope_map;
        for grant in self.configured_grants {
            map.replace(grant.claim, grant.abilities);
        }
        let grants = Arc::new(crate::catalog::Grants { revision: 0, map });
        let tools = if live {
            let mut first = unloaded(&tools);
            first.grants = Arc::clone(&grants);
            Tools::Live(Live {
                current: ArcSwap::from_pointee(first),
                declared: tools,
                store: self.records,
                grants,
                #[cfg(feature = "remote")]
                remotes,
                #[cfg(feature = "remote")]
                prepared: Default::default(),
            })
        } else {
            let mut snapshot = Snapshot::new(tools, (0, 0), true);
            snapshot.grants = grants;
            Tools::Fixed(Arc::new(snapshot))
        };
        let catalog = Catalog::new(CatalogParts {
            tools,
            revision: 0,
            state: self.state,
            authorizer: self.authorizer,
            read_only: self.read_only,
            defer_above: self.defer_above,
        });
        let limits = self.limits;
        let pipeline = Pipeline::new(PipelineParts {
            hooks: self.hooks,
            audit: self.audit,
            mask_internal_errors: self.mask_internal_errors,
            default_timeout: self.default_timeout,
            ceilings: Ceilings::new(self.ceilings, limits.count_window),
            slots: Slots::new(
                limits.max_concurrent_calls,
                limits
                    .max_calls_per_caller
                    .unwrap_or(limits.max_concurrent_calls / 4),
            ),
            explain_denials: self.explain_denials,
            confirmations: Confirmations {
                from_records: keys_from_records,
                keys,
                store: self.store.unwrap_or_else(|| Box::new(MemoryStore::new())),
                ttl: self.confirmation_ttl,
                skip: self.skip_confirmation,
            },
            tasks: Tasks::new(
                self.tasks,
                self.task_ttl,
                limits.max_unfinished_tasks_per_caller,
            ),
            audit_retention: limits.audit_retention,
        });
        let registry = Registry::new(Core { catalog, pipeline });
        // Set only here, so a search never runs on a registry that is still being built.
        let _ = finder.set(registry.downgrade());
        Ok(registry)
    }

    /// [`build`](Self::build), then loads the operator's records, so that the first call is already
    /// served under the operator's policy.
    ///
    /// # Errors
    /// As for `build`, and when the records cannot be read.
    pub async fn load(self) -> Result<Registry, LoadError> {
        let registry = self.build()?;
        registry.refresh().await?;
        Ok(registry)
    }
}

/// Adds the tools toolgate `offered`, except where an app's tool of the same name replaces one; any other
/// clash, or an `overrides_builtin` that replaces nothing, stops the build.
fn add_built_ins(
    tools: &mut Vec<RegisteredTool>,
    offered: Vec<DynamicTool>,
) -> Result<(), BuildError> {
    if let Some(stray) = tools
        .iter()
        .find(|r| r.tool.overrides_builtin && !is_replaceable(&r.tool.name))
    {
        let tool = stray.tool.name.to_string();
        return Err(BuildError::NotBuiltIn { tool });
    }
    for offer in offered {
        match tools.iter().find(|r| &*r.tool.name == offer.name()) {
            Some(own) if own.tool.overrides_builtin => {}
            Some(own) => {
                let tool = own.tool.source.to_string();
                return Err(BuildError::BuiltInClash {
                    name: offer.name().to_owned(),
                    tool,
                });
            }
            None => tools.push(built_in(offer)?),
        }
    }
    Ok(())
}

/// A tool toolgate itself offers, registered like a dynamic one.
fn built_in(tool: DynamicTool) -> Result<RegisteredTool, BuildError> {
    defined(tool, Source::BuiltIn)
}

/// What a registry with records serves before they are read: only system tools, so that nothing the
/// operator switched off runs for a moment at start-up.
fn unloaded(tools: &[RegisteredTool]) -> Snapshot {
    let mut tools = tools.to_vec();
    for tool in &mut tools {
        tool.enabled = false;
    }
    Snapshot::new(tools, (0, 0), false)
}

/// Why [`RegistryBuilder::load`] failed.
///
/// ```
/// use toolgate::Registry;
/// use toolgate::registry::LoadError;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let built = Registry::builder().settings("no_such_tool", serde_json::json!({})).load().await;
/// assert!(matches!(built, Err(LoadError::Build(_))));
/// # });
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The registry could not be built.
    Build(BuildError),
    /// The records could not be read.
    Records(RecordError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Build(error) => error.fmt(f),
            LoadError::Records(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<BuildError> for LoadError {
    fn from(error: BuildError) -> Self {
        LoadError::Build(error)
    }
}

impl From<RecordError> for LoadError {
    fn from(error: RecordError) -> Self {
        LoadError::Records(error)
    }
}
