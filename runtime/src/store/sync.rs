//! A sync as a reviewed diff: what the code declares against what the records hold. Nothing is ever
//! deleted by it: a tool gone from the code is marked `missing`, hidden, with its settings kept.

use std::borrow::Borrow;
use std::collections::BTreeSet;
use std::fmt;

use crate::tool::Tool;

use super::record::{Status, ToolRecord};
use super::records::Records;

/// What a sync would write, computed in memory; a store writes all of it or nothing.
///
/// ```
/// use toolgate::store::{Records, SyncPlan, ToolRecord};
///
/// let mut stored = Records::default();
/// let gone = ToolRecord::example(); // `search_orders`, no longer in the code
/// stored.tools.insert(gone.name.clone(), gone);
/// let plan = SyncPlan::new(std::iter::empty::<&toolgate::Tool>(), &stored, 1_000);
/// assert_eq!(plan.vanished, ["search_orders"]);
/// assert_eq!(plan.to_string(), "- search_orders: gone from the code; marked missing and hidden, settings kept\n");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SyncPlan {
    /// Tools the records do not have yet.
    pub new: Vec<ToolRecord>,
    /// Tools whose declaration changed, or that came back: the record as it will be written.
    pub changed: Vec<Drift>,
    /// Tools the records hold as present that the code no longer has: they will be marked `missing`.
    pub vanished: Vec<String>,
    /// Tools found again unchanged: only their last-seen time moves.
    pub unchanged: Vec<String>,
    /// When the sync ran (milliseconds since the Unix epoch).
    pub at_ms: u64,
}

/// A record whose declared part changed, and what changed.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::store::{Records, Status, SyncPlan, ToolRecord};
///
/// /// Export the day's orders.
/// #[tool(public, read_only)]
/// async fn export_orders() -> &'static str {
///     "exported"
/// }
///
/// let registry = Registry::builder().build().unwrap();
/// let tool = registry.get("export_orders").unwrap();
/// let mut gone = ToolRecord::declared(&tool, 0);
/// gone.status = Status::Missing;
/// let mut stored = Records::default();
/// stored.tools.insert(gone.name.clone(), gone);
/// let plan = SyncPlan::new([tool], &stored, 1);
/// assert_eq!(plan.changed[0].what, ["back"], "missing, and in the code again");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Drift {
    /// The record as it will be written: the new declaration, the operator's part as it was.
    pub record: ToolRecord,
    /// What changed: `back` (it was missing), `description`, `schema`, `abilities`, `read_only`, ...
    pub what: Vec<&'static str>,
}

impl SyncPlan {
    /// The plan that brings `stored` in line with the tools the code declares, at `now`.
    pub fn new<T: Borrow<Tool>>(
        declared: impl IntoIterator<Item = T>,
        stored: &Records,
        now: u64,
    ) -> SyncPlan {
        let mut plan = SyncPlan {
            at_ms: now,
            ..SyncPlan::default()
        };
        let mut seen = BTreeSet::new();
        for tool in declared {
            let fresh = ToolRecord::declared(tool.borrow(), now);
            seen.insert(fresh.name.clone());
            match stored.tools.get(&fresh.name) {
                None => plan.new.push(fresh),
                Some(old) => {
                    let what = drift(old, &fresh);
                    if what.is_empty() {
                        plan.unchanged.push(fresh.name);
                    } else {
                        let record = ToolRecord {
                            enabled: old.enabled,
                            settings: old.settings.clone(),
                            required_abilities: old.required_abilities.clone(),
                            capability_override: old.capability_override.clone(),
                            first_seen_ms: old.first_seen_ms,
                            version: old.version + 1,
                            ..fresh
                        };
                        plan.changed.push(Drift { record, what });
                    }
                }
            }
        }
        plan.vanished = stored
            .tools
            .values()
            .filter(|r| r.status == Status::Present && !seen.contains(&r.name))
            .map(|r| r.name.clone())
            .collect();
        plan
    }

    /// Whether the sync would change nothing but last-seen times.
    pub fn is_empty(&self) -> bool {
        self.new.is_empty() && self.changed.is_empty() && self.vanished.is_empty()
    }
}

/// What differs between the declared parts of two records.
fn drift(old: &ToolRecord, new: &ToolRecord) -> Vec<&'static str> {
    let mut what = Vec::new();
    if old.status == Status::Missing {
        what.push("back");
    }
    if old.fingerprint == new.fingerprint && old.source == new.source {
        return what;
    }
    let checks: [(&'static str, bool); 7] = [
        ("source", old.source != new.source),
        ("description", old.description != new.description),
        (
            "abilities",
            (old.public, &old.declared_abilities) != (new.public, &new.declared_abilities),
        ),
        ("read_only", old.read_only != new.read_only),
        ("capability", old.capability != new.capability),
        ("categories", old.categories != new.categories),
        (
            "settings schema",
            old.settings_schema != new.settings_schema,
        ),
    ];
    what.extend(
        checks
            .iter()
            .filter(|(_, differs)| *differs)
            .map(|(name, _)| *name),
    );
    if what.is_empty() || what == ["back"] {
        what.push("schema");
    }
    what
}

impl fmt::Display for SyncPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for record in &self.new {
            writeln!(f, "+ {}: new, switched on", record.name)?;
        }
        for drift in &self.changed {
            writeln!(f, "~ {}: {}", drift.record.name, drift.what.join(", "))?;
        }
        for name in &self.vanished {
            writeln!(
                f,
                "- {name}: gone from the code; marked missing and hidden, settings kept"
            )?;
        }
        Ok(())
    }
}
