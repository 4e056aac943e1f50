//! The audit trail's way to a database, the same for SQLite and PostgreSQL: a call hands its row to a
//! bounded queue and goes on; one writer writes the rows in batches, retrying with backoff while the
//! database is away or locked. A call never waits for the database, and a database that is away for a
//! while loses no row until the queue is full.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::caller::Caller;
use crate::policy::AuditEvent;
use crate::text::capped;

/// How many rows wait for the database at most; past that, rows are dropped and the drop is logged.
const QUEUE: usize = 10_000;

/// How many rows one write takes at most.
const BATCH: usize = 256;

/// How long the writer waits, after the first row of a batch, for more: under load it then writes at
/// most a hundred batches a second, however many calls it serves.
const LINGER: Duration = Duration::from_millis(10);

/// How long a reader of the trail waits for the rows queued before it to be written.
pub(crate) const READ_AFTER_WRITES: Duration = Duration::from_secs(2);

/// One call's row, owned, on its way to the database. Names a client chose are cut to
/// [`MAX_IDENT`](crate::text::MAX_IDENT) characters (with a digest of the rest), so no row grows with
/// them.
#[derive(Debug)]
pub(crate) struct AuditRow {
    pub(crate) at_ms: i64,
    pub(crate) caller: String,
    pub(crate) tool: String,
    pub(crate) action: &'static str,
    pub(crate) digest: String,
    pub(crate) outcome: &'static str,
    pub(crate) session: Option<String>,
    pub(crate) elapsed_us: i64,
    pub(crate) revision: i64,
    /// Whom the caller acted for, as a JSON array, nearest first.
    pub(crate) on_behalf_of: Option<String>,
    pub(crate) session_log: Option<String>,
    /// The result's telemetry, as a JSON object.
    pub(crate) telemetry: Option<String>,
    pub(crate) preview: Option<String>,
    /// The person at the root of a delegated caller's chain.
    pub(crate) root: Option<String>,
    /// The client the caller signed in through.
    pub(crate) client: Option<String>,
    /// Who acted for the caller by its token's `act` chain, as a JSON array, nearest first.
    pub(crate) actors: Option<String>,
}

impl AuditRow {
    pub(crate) fn of(event: &AuditEvent<'_>) -> AuditRow {
        let name = |caller: &Caller| capped(caller.id()).into_owned();
        let chain: Vec<String> = event.caller.chain().skip(1).map(name).collect();
        AuditRow {
            at_ms: super::millis(event.at),
            caller: name(event.caller),
            tool: capped(event.tool).into_owned(),
            action: event.action.as_str(),
            digest: event.argument_digest(),
            outcome: event.outcome.label(),
            session: event.invocation.session_id.as_deref().map(str::to_owned),
            elapsed_us: i64::try_from(event.elapsed.as_micros()).unwrap_or(i64::MAX),
            revision: i64::try_from(event.revision).unwrap_or(i64::MAX),
            root: chain.last().cloned(),
            on_behalf_of: (!chain.is_empty()).then(|| Value::from(chain).to_string()),
            session_log: event.session_log().map(str::to_owned),
            telemetry: event
                .telemetry()
                .map(|t| Value::Object(t.clone()).to_string()),
            preview: event.preview().map(str::to_owned),
            client: (event.caller.chain())
                .find_map(Caller::client)
                .map(|client| capped(client).into_owned()),
            actors: (event.caller.chain())
                .map(Caller::actors)
                .find(|actors| !actors.is_empty())
                .map(|actors| {
                    let actors: Vec<String> =
                        actors.iter().map(|a| capped(a).into_owned()).collect();
                    Value::from(actors).to_string()
                }),
        }
    }
}

/// What writes the rows to one database.
pub(crate) trait WriteRows: Send + 'static {
    /// Writes `rows`, all or none.
    fn write(&mut self, rows: &[AuditRow]) -> impl Future<Output = Result<(), String>> + Send;
}

/// A database's audit queue: clones share it.
#[derive(Debug, Clone)]
pub(crate) struct AuditQueue {
    queue: mpsc::Sender<AuditRow>,
    progress: Arc<Progress>,
}

/// How far the writer got: rows queued, and rows written (a watch, so readers can wait for it).
#[derive(Debug)]
struct Progress {
    queued: AtomicU64,
    written: watch::Sender<u64>,
}

/// Where the writer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// On the current runtime: a writer that only waits (a network database).
    #[cfg(feature = "postgres")]
    OnRuntime,
    /// On a thread of its own: a writer that blocks (an embedded database, locked by another process).
    #[cfg(feature = "sqlite")]
    OnThread,
}

impl AuditQueue {
    /// Starts `writer`; it ends when every clone of the queue is dropped and the queue is written.
    pub(crate) fn spawn(writer: impl WriteRows, runs: Runs) -> Self {
        let (queue, rows) = mpsc::channel(QUEUE);
        let progress = Arc::new(Progress {
            queued: AtomicU64::new(0),
            written: watch::channel(0).0,
        });
        let work = write_rows(writer, rows, Arc::clone(&progress));
        match runs {
            #[cfg(feature = "postgres")]
            Runs::OnRuntime => drop(tokio::spawn(work)),
            #[cfg(feature = "sqlite")]
            Runs::OnThread => {
                let thread = std::thread::Builder::new().name("toolgate-audit".into());
                let started = thread.spawn(move || {
                    match tokio::runtime::Builder::new_current_thread()
                        .enable_time()
                        .build()
                    {
                        Ok(runtime) => runtime.block_on(work),
                        Err(error) => {
                            tracing::error!(target: "toolgate::audit", %error, "cannot start the audit writer");
                        }
                    }
                });
                if let Err(error) = started {
                    tracing::error!(target: "toolgate::audit", %error, "cannot start the audit writer");
                }
            }
        }
        AuditQueue { queue, progress }
    }

    /// Queues the row of `event`; when the queue is full, the row is dropped and that is logged.
    pub(crate) fn push(&self, event: &AuditEvent<'_>) {
        match self.queue.try_send(AuditRow::of(event)) {
            Ok(()) => {
                self.progress.queued.fetch_add(1, Ordering::AcqRel);
            }
            Err(error) => tracing::error!(
                target: "toolgate::audit",
                tool = &*capped(event.tool),
                "the audit queue is full (the database has been away a while); this call's row is lost: {error}"
            ),
        }
    }

    /// Waits until every row queued before now is written, for at most `limit`, and says whether they
    /// were.
    pub(crate) async fn flush(&self, limit: Duration) -> bool {
        let target = self.progress.queued.load(Ordering::Acquire);
        let mut written = self.progress.written.subscribe();
        tokio::time::timeout(limit, written.wait_for(|n| *n >= target))
            .await
            .is_ok_and(|w| w.is_ok())
    }
}

/// Writes what the queue holds, a batch at a time; a batch that fails is retried until it is written.
async fn write_rows(
    mut writer: impl WriteRows,
    mut rows: mpsc::Receiver<AuditRow>,
    progress: Arc<Progress>,
) {
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
        while let Err(error) = writer.write(&batch).await {
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
