//! PostgreSQL, for several replicas on one database: the operator's records, used confirmations, the
//! audit trail and the sealing keys, in the same tables as [SQLite](crate::sqlite), migrated when a
//! replica connects. A change of the records is announced with `NOTIFY`, and every replica `LISTEN`s.
//!
//! With a server at `DATABASE_URL` (`postgres://toolgate@127.0.0.1:5432/toolgate`):
//!
//! ```
//! use toolgate::Registry;
//! use toolgate::store::postgres::PostgresStore;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! if let Ok(url) = std::env::var("DATABASE_URL") {
//!     let db = PostgresStore::connect(&url).await?;
//!     let registry = Registry::builder()
//!         .confirmation_store(db.clone())
//!         .audit(db.audit())
//!         .records(db)
//!         .load()
//!         .await?;
//!     tokio::spawn(registry.watch(std::time::Duration::from_secs(1)));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

mod audit;
mod ceilings;
mod keys;
mod listen;
mod records;
mod revision;
#[cfg(signs_in)]
mod sign_ins;
mod tasks;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::watch;

pub use audit::PostgresAudit;
pub use tokio_postgres;

use crate::confirm::{
    Claim, Claimed, ConfirmationStore, Decision, KEEP_USED, KeyRing, StoreFuture, store_failed,
};
use crate::error::ToolError;
use crate::store::tables::{self, SqlDialect};
use crate::store::{RecordError, RecordErrorKind, millis as ms};

/// PostgreSQL's types for the tables.
const DIALECT: SqlDialect = SqlDialect {
    int: "BIGINT",
    serial: "BIGSERIAL PRIMARY KEY",
    bytes: "BYTEA",
};

/// The channel a write of the records notifies, with the new revision as its payload.
const CHANNEL: &str = "toolgate_records";

/// Held while migrating, so that replicas starting together migrate once.
const MIGRATION_LOCK: i64 = 0x746f_6f6c_6761_7465;

/// How long an operation waits for a connection before it fails: a database that went away fails calls
/// that need it quickly and clearly, and never hangs them.
const WAIT: Duration = Duration::from_secs(5);

/// Records (a [`RecordStore`](crate::store::RecordStore)), used confirmations (a [`ConfirmationStore`]),
/// the audit trail ([`audit`](Self::audit)) and the sealing keys ([`key_ring`](Self::key_ring)) in one
/// PostgreSQL database, through a pool of connections. Clones share the pool.
///
/// Connections are plain TCP (no TLS): keep the database on a private network or a local socket.
///
/// A database that cannot be reached is an error that says so, at once:
///
/// ```
/// use toolgate::store::RecordErrorKind;
/// use toolgate::store::postgres::PostgresStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let refused = PostgresStore::connect("postgres://toolgate:secret@127.0.0.1:1/toolgate").await.unwrap_err();
/// assert_eq!(refused.kind(), RecordErrorKind::Database);
/// assert!(refused.message().starts_with("cannot reach the PostgreSQL database"), "{refused}");
/// let garbled = PostgresStore::connect("postgres://toolgate:secret@/:x").await.unwrap_err();
/// assert!(!garbled.message().contains("secret"), "no password in messages: {garbled}");
/// # });
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    /// Moves whenever this replica hears of a change of the records.
    heard: watch::Receiver<u64>,
    audit: PostgresAudit,
    /// When its counts are next swept.
    sweep: Arc<crate::policy::ceiling::Sweep>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/database`, or
    /// `host=... user=...`), migrates it, and starts listening for changes and writing the audit trail
    /// in the background. Call it inside a Tokio runtime.
    ///
    /// # Errors
    /// When the URL does not parse, the database cannot be reached, or it was migrated by a newer
    /// toolgate.
    pub async fn connect(url: &str) -> Result<Self, RecordError> {
        let config: tokio_postgres::Config = url.parse().map_err(|e| {
            RecordError::new(
                RecordErrorKind::Invalid,
                format!("`{}` is not a PostgreSQL URL: {e}", redact(url)),
            )
        })?;
        Self::with_config(config).await
    }

    /// As [`connect`](Self::connect), with a configuration built in code.
    ///
    /// # Errors
    /// As for [`connect`](Self::connect).
    pub async fn with_config(mut config: tokio_postgres::Config) -> Result<Self, RecordError> {
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(WAIT);
        }
        let manager = Manager::from_config(
            config.clone(),
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(WAIT))
            .recycle_timeout(Some(WAIT))
            .build()
            .map_err(|e| RecordError::new(RecordErrorKind::Database, e.to_string()))?;
        migrate(&pool).await?;
        Ok(PostgresStore {
            heard: listen::spawn(config),
            audit: PostgresAudit::spawn(pool.clone()),
            sweep: Arc::default(),
            pool,
        })
    }

    /// A connection from the pool.
    async fn client(&self) -> Result<deadpool_postgres::Object, RecordError> {
        self.pool.get().await.map_err(pool_error)
    }

    /// The sealing keys kept in this database, newest first; creates a random one the first time. Every
    /// replica on the database gets the same ring, and pending confirmations survive a restart.
    ///
    /// Anyone who can read the table can forge confirmations: keep the database as private as the data
    /// the tools change, or give the registry a ring from a secret manager instead.
    ///
    /// # Errors
    /// When the database cannot be read or written.
    pub async fn key_ring(&self) -> Result<KeyRing, RecordError> {
        keys::ring(&mut *self.client().await?).await
    }

    /// An audit sink that appends every call to the `toolgate_audit` table. Rows are written in the
    /// background, in batches, so that a call never waits for the database; while it is away they wait
    /// in memory (up to a bound, past which they are dropped and logged).
    pub fn audit(&self) -> PostgresAudit {
        self.audit.clone()
    }

    async fn claim_now(&self, id: &str, claim: Claim) -> Result<Claimed, RecordError> {
        let client = self.client().await?;
        let now = SystemTime::now();
        let forget_before = now.checked_sub(KEEP_USED).map_or(0, ms);
        client
            .execute(
                "DELETE FROM toolgate_confirmations WHERE expires < $1",
                &[&forget_before],
            )
            .await
            .map_err(database)?;
        let inserted = client
            .execute(
                "INSERT INTO toolgate_confirmations (id, decision, outcome, expires, held_until) \
                 VALUES ($1, $2, NULL, $3, $4) ON CONFLICT (id) DO NOTHING",
                &[
                    &id,
                    &claim.decision.as_str(),
                    &ms(claim.expires),
                    &ms(claim.held_until),
                ],
            )
            .await
            .map_err(database)?;
        if inserted == 1 {
            return Ok(Claimed::First);
        }
        if claim.decision == Decision::Approve {
            let resumed = client
                .execute(
                    "UPDATE toolgate_confirmations SET held_until = $2 \
                     WHERE id = $1 AND decision = 'approve' AND outcome IS NULL AND held_until < $3",
                    &[&id, &ms(claim.held_until), &ms(now)],
                )
                .await
                .map_err(database)?;
            if resumed == 1 {
                return Ok(Claimed::Resumed);
            }
        }
        let row = client
            .query_one(
                "SELECT decision, outcome FROM toolgate_confirmations WHERE id = $1",
                &[&id],
            )
            .await
            .map_err(database)?;
        Ok(Claimed::recorded(row.get(0), row.get(1)))
    }
}

impl ConfirmationStore for PostgresStore {
    fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed> {
        Box::pin(async move { self.claim_now(id, claim).await.map_err(store_error) })
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let client = self.client().await.map_err(store_error)?;
            client
                .execute(
                    "UPDATE toolgate_confirmations SET outcome = $2 WHERE id = $1",
                    &[&id, &outcome],
                )
                .await
                .map(drop)
                .map_err(|e| store_error(database(e)))
        })
    }
}

/// Applies the migrations the database lacks, in one transaction under an advisory lock; refuses a
/// database that a newer toolgate migrated further.
async fn migrate(pool: &Pool) -> Result<(), RecordError> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let transaction = client.transaction().await.map_err(database)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(database)?;
    transaction
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS toolgate_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL); \
             INSERT INTO toolgate_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;",
        )
        .await
        .map_err(database)?;
    let applied: i32 = transaction
        .query_one("SELECT version FROM toolgate_schema WHERE id = 1", &[])
        .await
        .map_err(database)?
        .get(0);
    let applied = usize::try_from(applied).unwrap_or(usize::MAX);
    if applied > tables::KNOWN {
        return Err(RecordError::newer_schema(applied, tables::KNOWN));
    }
    for (version, migration) in tables::pending(applied, DIALECT) {
        transaction
            .batch_execute(&migration)
            .await
            .map_err(database)?;
        let version = i32::try_from(version).unwrap_or(i32::MAX);
        transaction
            .execute(
                "UPDATE toolgate_schema SET version = $1 WHERE id = 1",
                &[&version],
            )
            .await
            .map_err(database)?;
    }
    transaction.commit().await.map_err(database)
}

fn database(error: tokio_postgres::Error) -> RecordError {
    let detail = match error.as_db_error() {
        Some(refused) => format!("{}: {}", refused.severity(), refused.message()),
        None => error.to_string(),
    };
    RecordError::new(
        RecordErrorKind::Database,
        format!("the PostgreSQL database failed: {detail}"),
    )
}

fn pool_error(error: deadpool_postgres::PoolError) -> RecordError {
    RecordError::new(
        RecordErrorKind::Database,
        format!("cannot reach the PostgreSQL database: {error}"),
    )
}

fn store_error(error: RecordError) -> ToolError {
    store_failed(error.message())
}

/// `url` without its password, for messages and logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let credentials = &url[scheme + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ if url.contains("password") => "(a connection string with a password)".to_owned(),
        _ => url.to_owned(),
    }
}
