//! The embedded database: used confirmations, the audit trail, a sealing key and the operator's records
//! of the tools, in one SQLite file. Its tables are created and migrated when it is opened.
//!
//! Several processes may open the same file: claims are atomic across them, so a confirmation acts once
//! however many replicas see it.
//!
//! ```
//! use toolgate::sqlite::SqliteStore;
//! use toolgate::Registry;
//!
//! let db = SqliteStore::in_memory()?;
//! let registry = Registry::builder()
//!     .keys(db.key_ring()?)
//!     .confirmation_store(db.clone())
//!     .audit(db.audit())
//!     .build()
//!     .unwrap();
//! # let _ = registry;
//! # Ok::<(), toolgate::sqlite::rusqlite::Error>(())
//! ```

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, TransactionBehavior, params};

use crate::confirm::{
    Claim, Claimed, ConfirmationStore, Decision, KEEP_USED, KeyRing, StoreFuture, store_failed,
};
use crate::error::ToolError;
use crate::policy::ceiling::Sweep;
use crate::policy::{AuditEvent, AuditSink};
use crate::store::audit_queue::{AuditQueue, AuditRow, Runs, WriteRows};
use crate::store::tables::{self, SqlDialect};
use crate::store::{RecordError, RecordErrorKind, millis as ms};
use crate::sync::Locked;

pub use rusqlite;

mod ceilings;
mod keys;
mod records;
mod revision;
#[cfg(signs_in)]
mod sign_ins;
mod tasks;

/// SQLite's types for the tables.
const DIALECT: SqlDialect = SqlDialect {
    int: "INTEGER",
    serial: "INTEGER PRIMARY KEY AUTOINCREMENT",
    bytes: "BLOB",
};

/// Used confirmations (a [`ConfirmationStore`]), the audit trail ([`audit`](Self::audit)) and a sealing
/// key ([`key_ring`](Self::key_ring)) in one SQLite database. Clones share the connection.
///
/// Two replicas on one file: a confirmation issued by one is approved on the other, and acts once.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::sqlite::SqliteStore;
///
/// /// Pay a supplier. Changes data.
/// #[tool(public, preview = preview_pay)]
/// async fn pay(supplier: String) -> String {
///     format!("Paid {supplier}.")
/// }
///
/// async fn preview_pay(supplier: String) -> Preview {
///     Preview::new(format!("Pay {supplier} 1,200 EUR"))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let path = std::env::temp_dir().join(format!("toolgate-doc-{}.db", std::process::id()));
/// let replica = || -> Result<Registry, Box<dyn std::error::Error>> {
///     let db = SqliteStore::open(&path)?;
///     Ok(Registry::builder().keys(db.key_ring()?).confirmation_store(db).build()?)
/// };
/// let (a, b) = (replica().unwrap(), replica().unwrap());
/// let ada = Caller::new("ada");
/// let Outcome::NeedsConfirmation(pending) = a.call(&ada, "pay", json!({ "supplier": "Acme" })).await else { unreachable!() };
/// let paid = b.confirm(&ada, pending.confirmation()).await;
/// assert_eq!(paid.into_result().text_for_model(), "Paid Acme.");
/// let again = a.confirm(&ada, pending.confirmation()).await;
/// assert_eq!(again.into_result().text_for_model(), "Paid Acme.", "the first result, not a second payment");
/// # for suffix in ["", "-wal", "-shm"] { let _ = std::fs::remove_file(format!("{}{suffix}", path.display())); }
/// # });
/// ```
#[derive(Clone)]
pub struct SqliteStore(Arc<Shared>);

/// What the clones of a store share.
struct Shared {
    connection: Mutex<Connection>,
    /// When its counts are next swept.
    sweep: Sweep,
    /// Its audit trail's queue, started with the first sink.
    audit: OnceLock<AuditQueue>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`, in WAL mode so that other processes can share it.
    ///
    /// # Errors
    /// When the file cannot be opened or its tables cannot be created.
    pub fn open(path: impl AsRef<Path>) -> rusqlite::Result<Self> {
        let connection = Connection::open(path)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        Self::with_connection(connection)
    }

    /// A private database in memory, for tests.
    ///
    /// # Errors
    /// When SQLite cannot create it.
    pub fn in_memory() -> rusqlite::Result<Self> {
        Self::with_connection(Connection::open_in_memory()?)
    }

    fn with_connection(mut connection: Connection) -> rusqlite::Result<Self> {
        connection.busy_timeout(BUSY_TIMEOUT)?;
        migrate(&mut connection)?;
        Ok(SqliteStore(Arc::new(Shared {
            connection: Mutex::new(connection),
            sweep: Sweep::default(),
            audit: OnceLock::new(),
        })))
    }

    /// Runs `work` on the connection. On a multi-threaded runtime its worker steps aside meanwhile
    /// (`block_in_place`), so that a file another process holds locked, which makes SQLite wait up to
    /// its busy timeout, never holds up the runtime's other tasks (a `ping`, another call); elsewhere it
    /// runs here.
    pub(super) fn with<T>(&self, work: impl FnOnce(&mut Connection) -> T) -> T {
        let run = || work(&mut self.0.connection.locked());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime)
                if runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread =>
            {
                tokio::task::block_in_place(run)
            }
            _ => run(),
        }
    }

    /// When the store's counts are next swept.
    pub(super) fn sweep(&self) -> &Sweep {
        &self.0.sweep
    }

    /// The sealing keys kept in this database, newest first; creates a random one the first time. Every
    /// process that opens the same file gets the same ring, and pending confirmations survive a restart.
    ///
    /// Anyone who can read the file can forge confirmations: keep it as private as the data the tools
    /// change, or give the registry a ring from a secret manager instead.
    ///
    /// # Errors
    /// When the database cannot be read or written.
    pub fn key_ring(&self) -> rusqlite::Result<KeyRing> {
        self.with(keys::ring)
    }

    /// An audit sink that appends every call to the `toolgate_audit` table, from a queue that a thread
    /// of its own writes: a call never waits for the file, and while another process holds it locked the
    /// rows wait and are written once it is free.
    pub fn audit(&self) -> SqliteAudit {
        let queue = self
            .0
            .audit
            .get_or_init(|| AuditQueue::spawn(Rows(Arc::downgrade(&self.0)), Runs::OnThread));
        SqliteAudit(queue.clone())
    }

    /// Waits until the audit rows queued before now are written, for at most `limit`; whether they were
    /// (true when nothing was queued).
    pub(crate) async fn audit_written(&self, limit: Duration) -> bool {
        match self.0.audit.get() {
            Some(queue) => queue.flush(limit).await,
            None => true,
        }
    }

    fn claim_now(
        &self,
        connection: &mut Connection,
        id: &str,
        claim: Claim,
    ) -> rusqlite::Result<Claimed> {
        let now = SystemTime::now();
        let forget_before = now.checked_sub(KEEP_USED).map_or(0, ms);
        connection
            .prepare_cached("DELETE FROM toolgate_confirmations WHERE expires < ?1")?
            .execute(params![forget_before])?;
        let inserted = connection
            .prepare_cached(
                "INSERT INTO toolgate_confirmations (id, decision, outcome, expires, held_until) \
                 VALUES (?1, ?2, NULL, ?3, ?4) ON CONFLICT (id) DO NOTHING",
            )?
            .execute(params![
                id,
                claim.decision.as_str(),
                ms(claim.expires),
                ms(claim.held_until)
            ])?;
        if inserted == 1 {
            return Ok(Claimed::First);
        }
        if claim.decision == Decision::Approve {
            let resumed = connection
                .prepare_cached(
                    "UPDATE toolgate_confirmations SET held_until = ?2 \
                     WHERE id = ?1 AND decision = 'approve' AND outcome IS NULL AND held_until < ?3",
                )?
                .execute(params![id, ms(claim.held_until), ms(now)])?;
            if resumed == 1 {
                return Ok(Claimed::Resumed);
            }
        }
        connection
            .prepare_cached("SELECT decision, outcome FROM toolgate_confirmations WHERE id = ?1")?
            .query_row(params![id], |r| Ok(Claimed::recorded(r.get(0)?, r.get(1)?)))
    }
}

impl ConfirmationStore for SqliteStore {
    fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed> {
        Box::pin(async move {
            self.with(|connection| self.claim_now(connection, id, claim))
                .map_err(store_error)
        })
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.with(|connection| {
                connection
                    .prepare_cached("UPDATE toolgate_confirmations SET outcome = ?2 WHERE id = ?1")?
                    .execute(params![id, outcome])
            })
            .map(drop)
            .map_err(store_error)
        })
    }
}

/// The audit sink of a [`SqliteStore`]: one row per call in `toolgate_audit`.
///
/// ```
/// use toolgate::sqlite::SqliteStore;
/// use toolgate::store::{AuditQuery, RecordStore};
/// use toolgate::Registry;
///
/// let db = SqliteStore::in_memory()?;
/// let registry = Registry::builder().audit(db.audit()).build();
/// assert!(registry.is_ok());
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// assert!(db.audit_trail(&AuditQuery::newest(10)).await?.is_empty(), "nothing called yet");
/// # Ok::<(), toolgate::store::RecordError>(())
/// # }).unwrap();
/// # Ok::<(), toolgate::sqlite::rusqlite::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SqliteAudit(pub(crate) AuditQueue);

impl SqliteAudit {
    /// Waits until every row queued before now is written, for at most `limit`, and says whether they
    /// were. Call it before the process exits, so that the last calls' rows are not lost.
    pub async fn flush(&self, limit: Duration) -> bool {
        self.0.flush(limit).await
    }
}

impl AuditSink for SqliteAudit {
    fn record(&self, event: &AuditEvent<'_>) {
        self.0.push(event);
    }
}

/// Writes audit rows to the file, a batch in one transaction. It holds the store only while it writes,
/// so that the store, its connection and this thread end once the application has dropped the store.
struct Rows(std::sync::Weak<Shared>);

impl WriteRows for Rows {
    async fn write(&mut self, rows: &[AuditRow]) -> Result<(), String> {
        let Some(shared) = self.0.upgrade() else {
            tracing::warn!(target: "toolgate::audit", rows = rows.len(), "the database was closed before these audit rows were written");
            return Ok(());
        };
        // On the writer's own thread, where waiting for a lock holds up no one.
        let mut connection = shared.connection.locked();
        let transaction = connection.transaction().map_err(|e| e.to_string())?;
        {
            let mut insert = transaction
                .prepare_cached(concat!(
                    "INSERT INTO toolgate_audit (",
                    tables::audit_columns!(),
                    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
                ))
                .map_err(|e| e.to_string())?;
            for row in rows {
                insert
                    .execute(params![
                        row.at_ms,
                        row.caller,
                        row.tool,
                        row.action,
                        row.digest,
                        row.outcome,
                        row.session,
                        row.elapsed_us,
                        row.revision,
                        row.on_behalf_of,
                        row.session_log,
                        row.telemetry,
                        row.preview,
                        row.root,
                        row.client,
                        row.actors,
                    ])
                    .map_err(|e| e.to_string())?;
            }
        }
        transaction.commit().map_err(|e| e.to_string())
    }
}

/// `sql` written with PostgreSQL's `$n` placeholders, as SQLite's numbered `?n`.
pub(super) fn numbered(sql: &str) -> String {
    sql.replace('$', "?")
}

/// How long SQLite waits for a file another process holds locked before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Applies the migrations this database lacks, each in a transaction of its own; refuses a database that a
/// newer toolgate migrated further.
fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let applied: i64 = transaction.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let applied = usize::try_from(applied).unwrap_or(usize::MAX);
    if applied > tables::KNOWN {
        return Err(rusqlite::Error::ToSqlConversionFailure(Box::new(
            RecordError::newer_schema(applied, tables::KNOWN),
        )));
    }
    for (version, migration) in tables::pending(applied, DIALECT) {
        transaction.execute_batch(&migration)?;
        transaction.pragma_update(None, "user_version", version as i64)?;
    }
    transaction.commit()
}

/// A SQLite error as the records report it; a refusal of our own (a newer schema) as itself.
pub(crate) fn record_error(error: rusqlite::Error) -> RecordError {
    match error {
        rusqlite::Error::ToSqlConversionFailure(inner) => match inner.downcast::<RecordError>() {
            Ok(record) => *record,
            Err(other) => RecordError::new(RecordErrorKind::Database, other.to_string()),
        },
        other => RecordError::new(
            RecordErrorKind::Database,
            format!("the SQLite database failed: {other}"),
        ),
    }
}

fn store_error(error: rusqlite::Error) -> ToolError {
    store_failed(&error.to_string())
}
