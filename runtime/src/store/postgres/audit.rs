//! The audit sink of a [`PostgresStore`](super::PostgresStore): calls hand their rows to a queue, and one
//! task writes them in batches, retrying with backoff while the database is away.

use std::time::Duration;

use deadpool_postgres::Pool;

use crate::policy::{AuditEvent, AuditSink};
use crate::store::audit_queue::{AuditQueue, AuditRow, Runs, WriteRows};
use crate::store::tables;

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
pub struct PostgresAudit(pub(crate) AuditQueue);

impl PostgresAudit {
    /// Starts the writer; it ends when every sink is dropped and the queue is written.
    pub(super) fn spawn(pool: Pool) -> Self {
        PostgresAudit(AuditQueue::spawn(Rows(pool), Runs::OnRuntime))
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
        self.0.flush(limit).await
    }
}

impl AuditSink for PostgresAudit {
    fn record(&self, event: &AuditEvent<'_>) {
        self.0.push(event);
    }
}

/// Writes the rows to the pool's database.
struct Rows(Pool);

impl WriteRows for Rows {
    async fn write(&mut self, rows: &[AuditRow]) -> Result<(), String> {
        insert(&self.0, rows).await
    }
}

/// The batch in one statement, so one round trip: each column as an array, unnested into rows.
async fn insert(pool: &Pool, batch: &[AuditRow]) -> Result<(), String> {
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let statement = client
        .prepare_cached(concat!(
            "INSERT INTO toolgate_audit (",
            tables::audit_columns!(),
            ") SELECT * FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[], \
             $7::TEXT[], $8::BIGINT[], $9::BIGINT[], $10::TEXT[], $11::TEXT[], $12::TEXT[], $13::TEXT[], \
             $14::TEXT[], $15::TEXT[], $16::TEXT[])"
        ))
        .await
        .map_err(|e| e.to_string())?;
    let column = |value: fn(&AuditRow) -> &str| batch.iter().map(value).collect::<Vec<_>>();
    let number = |value: fn(&AuditRow) -> i64| batch.iter().map(value).collect::<Vec<_>>();
    let optional =
        |value: fn(&AuditRow) -> Option<&str>| batch.iter().map(value).collect::<Vec<_>>();
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
                &optional(|r| r.root.as_deref()),
                &optional(|r| r.client.as_deref()),
                &optional(|r| r.actors.as_deref()),
            ],
        )
        .await
        .map(drop)
        .map_err(|e| e.to_string())
}
