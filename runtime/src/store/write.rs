//! [`Write`]: one write to the records, resolved the same way by every backend: the backend locks and reads
//! the records the write names, the write says what to put, delete and log, and the backend writes that in
//! the same transaction with the next revision.

use serde_json::{Value, json};

use super::grant::{GrantEdit, GrantRecord};
use super::limit::{LimitEdit, LimitRecord};
use super::profile::{Profile, ProfileEdit};
use super::record::{Edit, RecordError, RecordErrorKind, Status, ToolRecord};
use super::records::Records;
#[cfg(database)]
use super::records::Table;
use super::server::{ServerEdit, ServerRecord};
use super::sync::SyncPlan;

/// One write to the records, as a [`RecordStore`](super::RecordStore) receives it.
///
/// ```
/// use toolgate::store::{Change, Edit, Records, ToolRecord, Write};
///
/// let record = ToolRecord::example();
/// let edit = Edit::new("ana", &record, Change::Disable);
/// let write = Write::Edit(&edit);
/// assert_eq!(write.reads().tools, [record.name.as_str()]);
/// let mut current = Records::default();
/// current.tools.insert(record.name.clone(), record);
/// let effects = write.resolve(&current)?;
/// assert!(!effects.put[0].enabled);
/// assert_eq!(effects.log[0].actor, "ana");
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Write<'a> {
    /// An operator's edit of one record.
    Edit(&'a Edit),
    /// A sync plan: every record in it, or none.
    Sync {
        /// Who syncs.
        actor: &'a str,
        /// What the sync found.
        plan: &'a SyncPlan,
    },
    /// The deletion of a record a sync marked missing.
    Delete {
        /// Who deletes.
        actor: &'a str,
        /// The tool.
        tool: &'a str,
    },
    /// An operator's change of a profile.
    Profile(&'a ProfileEdit),
    /// An operator's change of a remote server.
    Server(&'a ServerEdit),
    /// An operator's change of a rate limit.
    Limit(&'a LimitEdit),
    /// An operator's change of what a scope or role grants.
    Grant(&'a GrantEdit),
}

/// The records a [`Write`] reads, by name.
///
/// ```
/// use toolgate::store::{ProfileChange, ProfileEdit, Write};
///
/// let edit = ProfileEdit::for_profile("ana", "support-bot", 3, ProfileChange::Unassign { tool: "ship_order".into() });
/// let reads = Write::Profile(&edit).reads();
/// assert_eq!((reads.tools, reads.profiles), (vec!["ship_order"], vec!["support-bot"]));
/// ```
#[derive(Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Reads<'a> {
    /// Tool records.
    pub tools: Vec<&'a str>,
    /// Profiles.
    pub profiles: Vec<&'a str>,
    /// Remote servers, by label.
    pub servers: Vec<&'a str>,
    /// Rate limits, by scope.
    pub limits: Vec<String>,
    /// Grants, by claim.
    pub grants: Vec<String>,
}

#[cfg(database)]
impl Reads<'_> {
    /// The names read from each table.
    pub(crate) fn by_table(&self) -> [(Table, Vec<&str>); 5] {
        fn named(names: &[String]) -> Vec<&str> {
            names.iter().map(String::as_str).collect()
        }
        [
            (Table::Tools, self.tools.clone()),
            (Table::Profiles, self.profiles.clone()),
            (Table::Servers, self.servers.clone()),
            (Table::Limits, named(&self.limits)),
            (Table::Grants, named(&self.grants)),
        ]
    }
}

/// What a [`Write`] does to the records: the backend writes all of it, or nothing.
///
/// ```
/// use toolgate::store::{Records, Status, ToolRecord, Write};
///
/// let mut gone = ToolRecord::example();
/// gone.status = Status::Missing;
/// let mut current = Records::default();
/// current.tools.insert(gone.name.clone(), gone.clone());
/// let effects = Write::Delete { actor: "ana", tool: &gone.name }.resolve(&current)?;
/// assert_eq!(effects.delete, [gone.name]);
/// assert!(effects.put.is_empty());
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Effects {
    /// Records to insert or replace.
    pub put: Vec<ToolRecord>,
    /// Records to delete, by tool name.
    pub delete: Vec<String>,
    /// Profiles to insert or replace.
    pub put_profiles: Vec<Profile>,
    /// Profiles to delete, by name.
    pub delete_profiles: Vec<String>,
    /// Remote servers to insert or replace.
    pub put_servers: Vec<ServerRecord>,
    /// Remote servers to delete, by label.
    pub delete_servers: Vec<String>,
    /// Rate limits to insert or replace.
    pub put_limits: Vec<LimitRecord>,
    /// Rate limits to delete, by scope.
    pub delete_limits: Vec<String>,
    /// Grants to insert or replace.
    pub put_grants: Vec<GrantRecord>,
    /// Grants to delete, by claim.
    pub delete_grants: Vec<String>,
    /// The history rows; when there are none, the revision stays.
    pub log: Vec<Logged>,
}

/// One row of history a [`Write`] leaves, before the backend gives it its revision and time.
///
/// ```
/// use toolgate::store::Logged;
///
/// let row = Logged::new("ana", "-", serde_json::json!({ "keys": "rotated" }));
/// assert_eq!(row.tool, "-");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Logged {
    /// Who made the change.
    pub actor: String,
    /// The tool.
    pub tool: String,
    /// What changed, as JSON.
    pub what: Value,
}

impl<'a> Write<'a> {
    /// The records the write reads: lock and read them inside the transaction before [`resolve`](Self::resolve).
    pub fn reads(&self) -> Reads<'a> {
        let tools = match *self {
            Write::Edit(edit) => vec![edit.tool.as_str()],
            Write::Sync { plan, .. } => plan
                .vanished
                .iter()
                .chain(&plan.unchanged)
                .map(String::as_str)
                .collect(),
            Write::Delete { tool, .. } => vec![tool],
            Write::Profile(edit) => edit.tool().into_iter().collect(),
            Write::Server(_) | Write::Limit(_) | Write::Grant(_) => Vec::new(),
        };
        let profiles = match *self {
            Write::Profile(edit) => vec![edit.profile.as_str()],
            _ => Vec::new(),
        };
        let servers = match *self {
            Write::Server(edit) => vec![edit.label.as_str()],
            _ => Vec::new(),
        };
        let limits = match *self {
            Write::Limit(edit) => vec![edit.scope.to_string()],
            _ => Vec::new(),
        };
        let grants = match *self {
            Write::Grant(edit) => vec![edit.claim.to_string()],
            _ => Vec::new(),
        };
        Reads {
            tools,
            profiles,
            servers,
            limits,
            grants,
        }
    }

    /// What the write does, given the records [`reads`](Self::reads) named as they are now (the
    /// revision of `current` is not read); a name absent from `current` has no record.
    ///
    /// # Errors
    /// Why the write is refused: an unknown tool or profile, an edit [`Edit::apply`] or
    /// [`ProfileEdit::apply`] refuses, or the deletion of a tool still in the code. Then write nothing.
    pub fn resolve(&self, current: &Records) -> Result<Effects, RecordError> {
        let find = |name: &str| {
            current
                .tools
                .get(name)
                .ok_or_else(|| RecordError::unknown_tool(name))
        };
        let mut effects = Effects::default();
        match *self {
            Write::Edit(edit) => {
                effects.put.push(edit.apply(find(&edit.tool)?)?);
                effects.log(&edit.actor, &edit.tool, json!(edit.change));
            }
            Write::Sync { actor, plan } => {
                for record in &plan.new {
                    effects.put.push(record.clone());
                    effects.log(actor, &record.name, json!({ "sync": "new" }));
                }
                for drift in &plan.changed {
                    effects.put.push(drift.record.clone());
                    let what = json!({ "sync": "changed", "what": drift.what });
                    effects.log(actor, &drift.record.name, what);
                }
                for name in &plan.vanished {
                    let mut record = find(name)?.clone();
                    record.status = Status::Missing;
                    record.version += 1;
                    effects.put.push(record);
                    effects.log(actor, name, json!({ "sync": "missing" }));
                }
                for name in &plan.unchanged {
                    if let Some(record) = current.tools.get(name) {
                        let mut seen = record.clone();
                        seen.last_seen_ms = plan.at_ms;
                        effects.put.push(seen);
                    }
                }
            }
            Write::Delete { actor, tool } => {
                if find(tool)?.status != Status::Missing {
                    return Err(RecordError::new(
                        RecordErrorKind::Invalid,
                        format!(
                            "`{tool}` is still in the code; only a tool a sync marked missing can be deleted"
                        ),
                    ));
                }
                effects.delete.push(tool.to_owned());
                effects.log(actor, tool, json!({ "deleted": true }));
            }
            Write::Profile(edit) => {
                let tool = edit.tool().map(|name| current.tools.get(name));
                let profile = current.profiles.get(&edit.profile);
                match edit.apply(profile, tool.flatten())? {
                    Some(next) => effects.put_profiles.push(next),
                    None => effects.delete_profiles.push(edit.profile.clone()),
                }
                let what = json!({ "profile": edit.profile, "change": edit.change });
                effects.log(&edit.actor, edit.tool().unwrap_or("-"), what);
            }
            Write::Server(edit) => {
                match edit.apply(current.servers.get(&edit.label))? {
                    Some(next) => effects.put_servers.push(next),
                    None => effects.delete_servers.push(edit.label.clone()),
                }
                let what = json!({ "server": edit.label, "change": edit.change });
                effects.log(&edit.actor, "-", what);
            }
            Write::Limit(edit) => {
                let scope = edit.scope.to_string();
                match edit.apply(current.limits.get(&scope))? {
                    Some(next) => effects.put_limits.push(next),
                    None => effects.delete_limits.push(scope.clone()),
                }
                let tool = match &edit.scope {
                    crate::store::Scope::Tool(name) => name.as_str(),
                    _ => "-",
                };
                let what = json!({ "limit": scope, "change": edit.change });
                effects.log(&edit.actor, tool, what);
            }
            Write::Grant(edit) => {
                let claim = edit.claim.to_string();
                match edit.apply(current.grants.get(&claim))? {
                    Some(next) => effects.put_grants.push(next),
                    None => effects.delete_grants.push(claim.clone()),
                }
                let what = json!({ "grant": claim, "change": edit.change });
                effects.log(&edit.actor, "-", what);
            }
        }
        Ok(effects)
    }
}

/// What [`Effects`] writes to one table: the records to put, as `(name, JSON)`, and the names to delete.
#[cfg(database)]
pub(crate) struct TableRows<'a> {
    pub(crate) table: Table,
    pub(crate) put: Vec<(String, String)>,
    pub(crate) delete: &'a [String],
}

#[cfg(database)]
impl Effects {
    /// What to write to each table.
    ///
    /// # Errors
    /// A record that cannot be written as JSON.
    pub(crate) fn by_table(&self) -> Result<[TableRows<'_>; 5], RecordError> {
        use super::record::to_json;
        fn rows<T: serde::Serialize>(
            records: &[T],
            name: impl Fn(&T) -> String,
        ) -> Result<Vec<(String, String)>, RecordError> {
            records.iter().map(|r| Ok((name(r), to_json(r)?))).collect()
        }
        Ok([
            TableRows {
                table: Table::Tools,
                put: rows(&self.put, |r| r.name.clone())?,
                delete: &self.delete,
            },
            TableRows {
                table: Table::Profiles,
                put: rows(&self.put_profiles, |p| p.name.clone())?,
                delete: &self.delete_profiles,
            },
            TableRows {
                table: Table::Servers,
                put: rows(&self.put_servers, |s| s.label.clone())?,
                delete: &self.delete_servers,
            },
            TableRows {
                table: Table::Limits,
                put: rows(&self.put_limits, |l| l.scope.to_string())?,
                delete: &self.delete_limits,
            },
            TableRows {
                table: Table::Grants,
                put: rows(&self.put_grants, |g| g.claim.to_string())?,
                delete: &self.delete_grants,
            },
        ])
    }
}

impl Effects {
    fn log(&mut self, actor: &str, tool: &str, what: Value) {
        self.log.push(Logged::new(actor, tool, what));
    }
}

impl Logged {
    /// `actor` changed `tool` (`-` for none): `what`.
    pub fn new(actor: &str, tool: &str, what: Value) -> Self {
        Logged {
            actor: actor.to_owned(),
            tool: tool.to_owned(),
            what,
        }
    }
}
