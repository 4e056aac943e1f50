//! [`Database`]: either backend, chosen by where it is, so that a server and its operator's commands take
//! a file or a PostgreSQL URL alike.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::confirm::{Claim, Claimed, ConfirmationStore, KeyRing, StoreFuture};
use crate::policy::{AuditEvent, AuditSink, CeilingStore, RunKey};
use crate::store::audit_queue::AuditQueue;
#[cfg(feature = "postgres")]
use crate::store::postgres::PostgresStore;
#[cfg(feature = "sqlite")]
use crate::store::sqlite::{SqliteStore, record_error};

use super::{
    AuditQuery, AuditRecord, ChangeEntry, RecordError, RecordFuture, RecordStore, Records,
    TaskRecord, TaskStore, ToolCalls, Write,
};

/// The records, confirmations, keys and audit trail in one database: SQLite in a file (or `:memory:`),
/// or PostgreSQL at a `postgres://` URL. Clones share the connections.
///
/// ```
/// use toolgate::Registry;
/// use toolgate::store::Database;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = Database::open(":memory:").await?;
/// let registry = Registry::builder()
///     .keys(db.key_ring().await?)
///     .database(&db)
///     .load()
///     .await?;
/// assert_eq!(registry.revision(), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Database {
    /// An embedded SQLite database.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteStore),
    /// A PostgreSQL database, shared by replicas.
    #[cfg(feature = "postgres")]
    Postgres(PostgresStore),
}

/// `body` on whichever backend `database` is, with the store bound to `store`.
macro_rules! each {
    ($database:expr, $store:ident => $body:expr) => {
        match $database {
            #[cfg(feature = "sqlite")]
            Database::Sqlite($store) => $body,
            #[cfg(feature = "postgres")]
            Database::Postgres($store) => $body,
        }
    };
}

impl Database {
    /// Opens the database at `location`: a `postgres://` or `postgresql://` URL, `:memory:`, or the path
    /// of a SQLite file (created if missing). Its tables are created or migrated.
    ///
    /// # Errors
    /// When it cannot be opened or reached, when it was migrated by a newer toolgate, or when this build
    /// lacks the backend (the `sqlite` and `postgres` features).
    pub async fn open(location: &str) -> Result<Database, RecordError> {
        let is_url = location.starts_with("postgres://") || location.starts_with("postgresql://");
        if is_url {
            #[cfg(feature = "postgres")]
            return Ok(Database::Postgres(PostgresStore::connect(location).await?));
            #[cfg(not(feature = "postgres"))]
            return Err(RecordError::new(
                super::RecordErrorKind::Invalid,
                "this build has no PostgreSQL: enable toolgate's `postgres` feature",
            ));
        }
        #[cfg(feature = "sqlite")]
        return match location {
            ":memory:" => SqliteStore::in_memory(),
            path => SqliteStore::open(path),
        }
        .map(Database::Sqlite)
        .map_err(record_error);
        #[cfg(not(feature = "sqlite"))]
        Err(RecordError::new(
            super::RecordErrorKind::Invalid,
            format!(
                "`{location}` is not a postgres:// URL, and this build has no SQLite: enable toolgate's `sqlite` feature"
            ),
        ))
    }

    /// The sealing keys kept in the database, newest first; one is made the first time.
    ///
    /// # Errors
    /// When the database cannot be read or written.
    pub async fn key_ring(&self) -> Result<KeyRing, RecordError> {
        RecordStore::key_ring(self).await
    }

    /// The audit sink that writes to this database.
    pub fn audit(&self) -> DatabaseAudit {
        each!(self, store => DatabaseAudit(store.audit().0))
    }
}

/// The audit sink of a [`Database`].
///
/// ```
/// use toolgate::Registry;
/// use toolgate::store::{AuditQuery, Database, RecordStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = Database::open(":memory:").await?;
/// let registry = Registry::builder().audit(db.audit()).build()?;
/// registry.call(&toolgate::Caller::new("eve"), "no_such_tool", serde_json::json!({})).await;
/// assert_eq!(db.audit_trail(&AuditQuery::newest(1)).await?[0].outcome, "unknown_tool");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct DatabaseAudit(AuditQueue);

impl DatabaseAudit {
    /// Waits until every row queued before now is written, for at most `limit`, and says whether they
    /// were. Call it before the process exits, so that the last calls' rows are not lost.
    pub async fn flush(&self, limit: Duration) -> bool {
        self.0.flush(limit).await
    }
}

impl AuditSink for DatabaseAudit {
    fn record(&self, event: &AuditEvent<'_>) {
        self.0.push(event);
    }
}

impl ConfirmationStore for Database {
    fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed> {
        each!(self, store => store.claim(id, claim))
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        each!(self, store => store.finish(id, outcome))
    }
}

impl CeilingStore for Database {
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32, expires_ms: u64) -> StoreFuture<'a, bool> {
        each!(self, store => store.take(key, max, expires_ms))
    }

    fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()> {
        each!(self, store => store.give_back(key))
    }

    fn end_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        each!(self, store => store.end_session(session))
    }
}

impl TaskStore for Database {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, ()> {
        each!(self, store => TaskStore::create(store, task))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        each!(self, store => TaskStore::get(store, id))
    }

    fn update<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, bool> {
        each!(self, store => TaskStore::update(store, task))
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        each!(self, store => TaskStore::cancel(store, id))
    }

    fn beat<'a>(
        &'a self,
        id: &'a str,
        until_ms: u64,
        message: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        each!(self, store => store.beat(id, until_ms, message))
    }
}

impl RecordStore for Database {
    fn revision(&self) -> RecordFuture<'_, u64> {
        each!(self, store => store.revision())
    }

    fn load(&self) -> RecordFuture<'_, Records> {
        each!(self, store => store.load())
    }

    fn write<'a>(&'a self, write: Write<'a>) -> RecordFuture<'a, u64> {
        each!(self, store => store.write(write))
    }

    fn history(&self, limit: usize) -> RecordFuture<'_, Vec<ChangeEntry>> {
        each!(self, store => store.history(limit))
    }

    fn audit_trail<'a>(&'a self, query: &'a AuditQuery) -> RecordFuture<'a, Vec<AuditRecord>> {
        each!(self, store => store.audit_trail(query))
    }

    fn prune_audit(&self, before_ms: u64) -> RecordFuture<'_, u64> {
        each!(self, store => store.prune_audit(before_ms))
    }

    fn calls_per_tool(&self, since_ms: u64) -> RecordFuture<'_, Vec<ToolCalls>> {
        each!(self, store => store.calls_per_tool(since_ms))
    }

    fn key_ring(&self) -> RecordFuture<'_, KeyRing> {
        each!(self, store => RecordStore::key_ring(store))
    }

    fn add_key<'a>(
        &'a self,
        actor: &'a str,
        seals_from_ms: u64,
    ) -> RecordFuture<'a, (String, u64)> {
        each!(self, store => store.add_key(actor, seals_from_ms))
    }

    fn retire_key<'a>(&'a self, actor: &'a str, id: &'a str) -> RecordFuture<'a, u64> {
        each!(self, store => store.retire_key(actor, id))
    }

    fn changed(&self, every: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        each!(self, store => store.changed(every))
    }
}

#[cfg(signs_in)]
impl super::SignInStore for Database {
    fn sign_in<'a>(&'a self, server: &'a str) -> RecordFuture<'a, Option<String>> {
        each!(self, store => store.sign_in(server))
    }

    fn keep_sign_in<'a>(
        &'a self,
        server: &'a str,
        sealed: Option<&'a str>,
    ) -> RecordFuture<'a, ()> {
        each!(self, store => store.keep_sign_in(server, sealed))
    }

    fn forget_idle_sign_ins<'a>(
        &'a self,
        pattern: &'a str,
        before_ms: u64,
    ) -> RecordFuture<'a, ()> {
        each!(self, store => store.forget_idle_sign_ins(pattern, before_ms))
    }

    fn lease_sign_in<'a>(
        &'a self,
        server: &'a str,
        until_ms: u64,
        now_ms: u64,
    ) -> RecordFuture<'a, bool> {
        each!(self, store => store.lease_sign_in(server, until_ms, now_ms))
    }

    fn begin_sign_in<'a>(
        &'a self,
        state: &'a str,
        server: &'a str,
        sealed: &'a str,
        expires_ms: u64,
    ) -> RecordFuture<'a, ()> {
        each!(self, store => store.begin_sign_in(state, server, sealed, expires_ms))
    }

    fn finish_sign_in<'a>(&'a self, state: &'a str) -> RecordFuture<'a, Option<(String, String)>> {
        each!(self, store => store.finish_sign_in(state))
    }
}
