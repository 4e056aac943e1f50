//! The operator's records of the tools, in a real database: what a sync found in the code, and what the
//! operator changed (switched on or off, settings, abilities required on top of the code's), each change
//! with who made it, under a policy revision that moves with every change.
//!
//! Tables, the same on both backends: `toolgate_tools`, `toolgate_profiles`, `toolgate_servers`,
//! `toolgate_limits` and `toolgate_grants` (one JSON record per name), `toolgate_revision`, `toolgate_changes` (the history), `toolgate_audit`,
//! `toolgate_confirmations`, `toolgate_keys` and `toolgate_tasks`.
//!
//! The registry loads the records into memory and swaps in a new snapshot when the revision moves; a
//! call never reads the database. SQLite ([`sqlite`]) is the embedded default; PostgreSQL (`postgres`,
//! with the feature of that name) serves several replicas.

mod audit;
#[cfg(database)]
mod audit_queue;
#[cfg(database)]
mod database;
mod grant;
#[cfg(any(database, edits))]
mod keys;
mod limit;
#[cfg(feature = "postgres")]
pub mod postgres;
mod profile;
mod record;
mod records;
mod server;
#[cfg(signs_in)]
mod sign_ins;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod sync;
#[cfg(database)]
mod tables;
mod task;
mod write;

#[cfg(any(database, feature = "operator"))]
pub(crate) use crate::clock::epoch_ms as millis;
pub use crate::clock::unix_ms;
pub use audit::{AuditQuery, AuditRecord, ToolCalls};
#[cfg(database)]
pub use database::{Database, DatabaseAudit};
#[cfg(signs_in)]
pub(crate) use grant::is_scope;
pub use grant::{Claim, GrantChange, GrantEdit, GrantRecord};
#[cfg(edits)]
pub(crate) use keys::KeyInfo;
#[cfg(database)]
pub(crate) use keys::retirable;
pub use limit::{LimitChange, LimitEdit, LimitRecord, Rate, Scope};
#[cfg(edits)]
pub(crate) use profile::unknown_profile;
pub use profile::{Assignment, Profile, ProfileChange, ProfileEdit};
pub use record::{Change, ChangeEntry, Edit, RecordError, RecordErrorKind, Status, ToolRecord};
#[cfg(database)]
pub(crate) use record::{from_json, to_json};
pub use records::Records;
#[cfg(database)]
pub(crate) use records::Table;
pub use server::{ServerChange, ServerEdit, ServerRecord};
#[cfg(signs_in)]
pub(crate) use sign_ins::SignInStore;
pub use sync::{Drift, SyncPlan};
pub use task::{MemoryTasks, TaskFailure, TaskRecord, TaskStatus, TaskStore};
pub use write::{Effects, Logged, Reads, Write};

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::confirm::KeyRing;

/// What a [`RecordStore`] returns.
///
/// ```
/// use toolgate::store::{RecordFuture, Records};
///
/// fn empty<'a>() -> RecordFuture<'a, Records> {
///     Box::pin(async { Ok(Records::default()) })
/// }
/// # let _ = empty();
/// ```
pub type RecordFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, RecordError>> + Send + 'a>>;

/// Where the operator's records live, with the audit trail beside them. Every backend resolves a
/// [`Write`] the same way; it only reads and writes, each write in one transaction that advances the
/// revision and records who changed what.
///
/// ```
/// use toolgate::sqlite::SqliteStore;
/// use toolgate::store::RecordStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = SqliteStore::in_memory()?;
/// assert_eq!(store.revision().await?, 0);
/// assert!(store.load().await?.tools.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub trait RecordStore: Send + Sync + 'static {
    /// The policy revision now: cheap, so that a running registry can ask it often.
    fn revision(&self) -> RecordFuture<'_, u64>;

    /// Every record, with the revision they were read at.
    fn load(&self) -> RecordFuture<'_, Records>;

    /// Writes `write` in one transaction: locks the records it [reads](Write::reads), writes what it
    /// [resolves](Write::resolve) to, and, when that logs a change, the next revision with the history
    /// rows. Returns the revision after it.
    fn write<'a>(&'a self, write: Write<'a>) -> RecordFuture<'a, u64>;

    /// The newest `limit` changes, newest first.
    fn history(&self, limit: usize) -> RecordFuture<'_, Vec<ChangeEntry>>;

    /// The audit rows `query` selects, newest first.
    fn audit_trail<'a>(&'a self, query: &'a AuditQuery) -> RecordFuture<'a, Vec<AuditRecord>>;

    /// How many calls each tool had that finished at or after `since_ms` (milliseconds since the Unix
    /// epoch), most called first.
    fn calls_per_tool(&self, since_ms: u64) -> RecordFuture<'_, Vec<ToolCalls>>;

    /// Forgets the audit rows of calls that finished before `before_ms`: the audit's retention. How many.
    fn prune_audit(&self, before_ms: u64) -> RecordFuture<'_, u64>;

    /// Returns when the records may have changed: after `every` at the latest, sooner when the backend is
    /// told of a change (PostgreSQL's `LISTEN`). A registry [watching](crate::Registry::watch) its records
    /// then checks the revision.
    fn changed(&self, every: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(tokio::time::sleep(every))
    }

    /// The sealing keys kept beside the records, newest first; one is made the first time. A registry built
    /// without [`keys`](crate::RegistryBuilder::keys) seals with these, and takes up a rotation when the
    /// revision moves. A store that keeps no keys answers `NotFound` (the default).
    fn key_ring(&self) -> RecordFuture<'_, KeyRing> {
        Box::pin(std::future::ready(Err(no_keys())))
    }

    /// Adds a random key that opens confirmations at once and seals them from `seals_from_ms` on
    /// (milliseconds since the Unix epoch), so that it reaches every replica before any seals with it.
    /// Returns its id and the new revision.
    fn add_key<'a>(
        &'a self,
        actor: &'a str,
        seals_from_ms: u64,
    ) -> RecordFuture<'a, (String, u64)> {
        let _ = (actor, seals_from_ms);
        Box::pin(std::future::ready(Err(no_keys())))
    }

    /// Deletes key `id`: what it sealed no longer opens. Refused for the key that seals now, or the last.
    /// Returns the new revision.
    fn retire_key<'a>(&'a self, actor: &'a str, id: &'a str) -> RecordFuture<'a, u64> {
        let _ = (actor, id);
        Box::pin(std::future::ready(Err(no_keys())))
    }

    /// Applies one operator's edit to one record, if the record is still at the version the edit was
    /// made against. Returns the new revision.
    fn edit<'a>(&'a self, edit: &'a Edit) -> RecordFuture<'a, u64> {
        self.write(Write::Edit(edit))
    }

    /// Writes a sync plan: every record or none. Returns the new revision.
    fn apply_sync<'a>(&'a self, actor: &'a str, plan: &'a SyncPlan) -> RecordFuture<'a, u64> {
        self.write(Write::Sync { actor, plan })
    }

    /// Deletes the record of a tool the code no longer has (`missing`), with its settings. Returns the
    /// new revision.
    fn delete<'a>(&'a self, actor: &'a str, tool: &'a str) -> RecordFuture<'a, u64> {
        self.write(Write::Delete { actor, tool })
    }
}

fn no_keys() -> RecordError {
    RecordError::new(
        RecordErrorKind::NotFound,
        "this store keeps no keys; give the registry a key ring (`RegistryBuilder::keys`)",
    )
}
