//! [`Records`]: every record an operator keeps, as a backend loaded them.

use std::collections::BTreeMap;

use super::grant::GrantRecord;
use super::limit::LimitRecord;
use super::profile::Profile;
#[cfg(database)]
use super::record::RecordError;
use super::record::ToolRecord;
use super::server::ServerRecord;

/// Every tool record and profile, by name, with the revision they were read at.
///
/// ```
/// use toolgate::store::Records;
///
/// let records = Records::default();
/// assert_eq!((records.revision, records.tools.len()), (0, 0));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Records {
    /// The policy revision.
    pub revision: u64,
    /// The records by tool name.
    pub tools: BTreeMap<String, ToolRecord>,
    /// The profiles by name.
    pub profiles: BTreeMap<String, Profile>,
    /// The remote servers operators added, by label.
    pub servers: BTreeMap<String, ServerRecord>,
    /// The rate limits, by scope (`caller`, `tool:NAME`, `profile:NAME`).
    pub limits: BTreeMap<String, LimitRecord>,
    /// What scopes and roles grant, by claim (`scope:NAME`, `role:NAME`).
    pub grants: BTreeMap<String, GrantRecord>,
}

/// The tables of records, each with one JSON record per name, as both backends keep them.
#[cfg(database)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Tools,
    Profiles,
    Servers,
    Limits,
    Grants,
}

#[cfg(database)]
impl Table {
    /// Every table, in the order a backend reads them.
    pub(crate) const ALL: [Table; 5] = [
        Table::Tools,
        Table::Profiles,
        Table::Servers,
        Table::Limits,
        Table::Grants,
    ];

    /// Its name in the database.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Table::Tools => "toolgate_tools",
            Table::Profiles => "toolgate_profiles",
            Table::Servers => "toolgate_servers",
            Table::Limits => "toolgate_limits",
            Table::Grants => "toolgate_grants",
        }
    }
}

#[cfg(database)]
impl Records {
    /// Reads `text`, one record of `table`, into these records under its name.
    pub(crate) fn insert_json(&mut self, table: Table, text: &str) -> Result<(), RecordError> {
        use super::record::from_json;
        match table {
            Table::Tools => {
                let record: ToolRecord = from_json(text)?;
                self.tools.insert(record.name.clone(), record);
            }
            Table::Profiles => {
                let profile: Profile = from_json(text)?;
                self.profiles.insert(profile.name.clone(), profile);
            }
            Table::Servers => {
                let server: ServerRecord = from_json(text)?;
                self.servers.insert(server.label.clone(), server);
            }
            Table::Limits => {
                let limit: LimitRecord = from_json(text)?;
                self.limits.insert(limit.scope.to_string(), limit);
            }
            Table::Grants => {
                let grant: GrantRecord = from_json(text)?;
                self.grants.insert(grant.claim.to_string(), grant);
            }
        }
        Ok(())
    }
}
