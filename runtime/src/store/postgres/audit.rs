//! The audit sink of a [`PostgresStore`](super::PostgresStore): calls hand their rows to a queue, and one
//! task writes them in batches, retrying with backoff while the database is away.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, watch};

use crate::policy::{AuditEvent, AuditSink};
use crate::store::tables;

/// How many rows wait for the database at most; past that, rows are dropped and the drop is logged.
const QUEUE: usize = 10_000;

/// How many rows one insert writes at most.
const BATCH: usize = 256;

/// How long the writer waits, after the first row of a batch, for more: under load a replica then writes
/// at most a hundred batches a second, one round trip each, however many calls it serves.
const LINGER: Duration = Duration::from_millis(10);

/// One call's row, owned, on its way to the database.
#[derive(Debug)]
struct Row {
    at_ms: i64,
    caller: String,
    tool: String,
    action: &'static str,
    digest: String,
    outcome: &'static str,
    session: Option<String>,
    elapsed_us: i64,
    revision: i64,
    on_behalf_of: Option<String>,
    session_log: Option<String>,
    telemetry: Option<String>,
    preview: Option<String>,
}

/// The audit sink of a [`PostgresStore`](super::PostgresStore): one row per call in `toolgate_audit`,
/// written in the background.
///
/// ```
/// use toolgate::store::postgres::PostgresStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// if let Ok(url) = std::env::var("DATABASE_URL") {
///     let db = PostgresStore::connect(&url).await?;
///     let registry = toolgate::Registry::builder().audit(db.audit()).build()?;
///     # let _ = registry;
///     assert!(db.audit().flush(std::time::Duration::from_secs(5)).await);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct PostgresAudit {
    queue: mpsc::Sender<Row>,
    progress: Arc<Progress>,
}

/// How far the writer got: rows queued, and rows written (a watch, so readers can wait for it).
#[derive(Debug)]
struct Progress {
    queued: AtomicU64,
    written: watch::Sender<u64>,
}

impl PostgresAudit {
    /// Starts the writer; it ends when every sink is dropped and the queue is written.
    pub(super) fn spawn(pool: Pool) -> Self {
        let (queue, rows) = mpsc::channel(QUEUE);
        let progress = Arc::new(Progress {
            queued: AtomicU64::new(0),
            written: watch::channel(0).0,
        });
        tokio::spawn(write_rows(pool, rows, Arc::clone(&progress)));
        PostgresAudit { queue, progress }
    }

    /// Waits until every row queued before now is written, for at most `limit`, and says whether they
    /// were. Call it before the process exits, so that the last calls' rows are not lost.
    ///
    /// ```
    /// async fn shut_down(db: toolgate::store::postgres::PostgresStore) {
    ///     if !db.audit().flush(std::time::Duration::from_secs(5)).await {
    ///         eprintln!("some audit rows were not written: the database is away");
    ///     }
    /// }
    /// # let _ = shut_down;
    /// ```
    pub async fn flush(&self, limit: Duration) -> bool {
        let target = self.progress.queued.load(Ordering::Acquire);
        let mut written = self.progress.written.subscribe();
        tokio::time::timeout(limit, written.wait_for(|n| *n >= target))
            .await
            .is_ok_and(|w| w.is_ok())
    }
}

impl AuditSink for PostgresAudit {
    fn record(&self, event: &AuditEvent<'_>) {
        let extra = event.extra_columns();
        let row = Row {
            at_ms: super::ms(event.at),
            caller: event.caller.id().to_owned(),
            tool: event.tool.to_owned(),
            action: event.action.as_str(),
            digest: event.argument_digest(),
            outcome: event.outcome.label(),
            session: event.invocation.session_id.as_deref().map(str::to_owned),
            elapsed_us: i64::try_from(event.elapsed.as_micros()).unwrap_or(i64::MAX),
            revision: i64::try_from(event.revision).unwrap_or(i64::MAX),
            on_behalf_of: extra.on_behalf_of,
            session_log: extra.session_log,
            telemetry: extra.telemetry,
            preview: extra.preview,
        };
        match self.queue.try_send(row) {
            Ok(()) => {
                self.progress.queued.fetch_add(1, Ordering::AcqRel);
            }
            Err(error) => tracing::error!(
                target: "toolgate::audit",
                tool = event.tool,
                caller = event.caller.id(),
                "the audit queue is full (the database has been away a while); this call's row is lost: {error}"
            ),
        }
    }
}

/// Writes what the queue holds, a batch at a time, each in one statement; a batch that fails is retried
/// until it is written.
async fn write_rows(pool: Pool, mut rows: mpsc::Receiver<Row>, progress: Arc<Progress>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rows.recv_many(&mut batch, BATCH).await > 0 {
        if batch.len() < BATCH {
            tokio::time::sleep(LINGER).await;
            while batch.len() < BATCH
                && let Ok(row) = rows.try_recv()
            {
                batch.push(row);
            }
        }
        let mut backoff = Duration::from_millis(100);
        let mut down = false;
        while let Err(error) = insert(&pool, &batch).await {
            if !down {
                tracing::error!(target: "toolgate::audit", %error, rows = batch.len(), "cannot write the audit trail; keeping the rows and retrying");
                down = true;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
        if down {
            tracing::info!(target: "toolgate::audit", "the audit trail is written again");
        }
        progress.written.send_modify(|n| *n += batch.len() as u64);
        batch.clear();
    }
}

/// The batch in one statement, so one round trip: each column as an array, unnested into rows.
async fn insert(pool: &Pool, batch: &[Row]) -> Result<(), String> {
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let statement = client
        .prepare_cached(concat!(
            "INSERT INTO toolgate_audit (",
            tables::audit_columns!(),
            ") SELECT * FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], \
             $7::TEXT[], $8::BIGINT[], $9::BIGINT[], $10::TEXT[], $11::TEXT[], $12::TEXT[], $13::TEXT[])"
        ))
        .await
        .map_err(|e| e.to_string())?;
    let column = |value: fn(&Row) -> &str| batch.iter().map(value).collect::<Vec<_>>();
    let number = |value: fn(&Row) -> i64| batch.iter().map(value).collect::<Vec<_>>();
    let optional = |value: fn(&Row) -> Option<&str>| batch.iter().map(value).collect::<Vec<_>>();
    client
        .execute(
            &statement,
            &[
                &number(|r| r.at_ms),
                &column(|r| &r.caller),
                &column(|r| &r.tool),
                &column(|r| r.action),
                &column(|r| &r.digest),
                &column(|r| r.outcome),
                &optional(|r| r.session.as_deref()),
                &number(|r| r.elapsed_us),
                &number(|r| r.revision),
                &optional(|r| r.on_behalf_of.as_deref()),
                &optional(|r| r.session_log.as_deref()),
                &optional(|r| r.telemetry.as_deref()),
                &optional(|r| r.preview.as_deref()),
            ],
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}
