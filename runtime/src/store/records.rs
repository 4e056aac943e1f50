//! [`Records`]: every tool record and profile, as a backend loaded them.

use std::collections::BTreeMap;

use super::limit::LimitRecord;
use super::profile::Profile;
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
}
