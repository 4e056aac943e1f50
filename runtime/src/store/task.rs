//! Tasks (SEP-2663) as a store keeps them: one [`TaskRecord`] per task, written before its id is handed
//! out, so that any process on the same database answers for it, and a restart loses no result.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::confirm::StoreFuture;
use crate::output::ToolResult;
use crate::sync::Locked;

/// Where a task is.
///
/// ```
/// use toolgate::store::TaskStatus;
///
/// assert!(TaskStatus::Cancelled.is_terminal());
/// assert_eq!(TaskStatus::InputRequired.as_str(), "input_required");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// The tool is running.
    Working,
    /// The tool asked questions; the task waits for the answers.
    InputRequired,
    /// The tool ran: its result is kept, a failure it reported (`is_error`) included.
    Completed,
    /// The task could not finish: the tool panicked, or the process running it stopped.
    Failed,
    /// The task was cancelled before it finished.
    Cancelled,
}

impl TaskStatus {
    /// Whether the task has ended.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// Its name on the wire: `working`, `input_required`, `completed`, `failed` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// Why a task failed, as a JSON-RPC error: `code` and `message`.
///
/// ```
/// let failure = toolgate::store::TaskFailure::new(-32603, "the tool panicked");
/// assert_eq!(failure.code, -32603);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskFailure {
    /// The JSON-RPC error code.
    pub code: i64,
    /// What went wrong.
    pub message: String,
}

impl TaskFailure {
    /// A failure with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        TaskFailure {
            code,
            message: message.into(),
        }
    }
}

/// One task: whose it is, what it runs, and where it is.
///
/// ```
/// use toolgate::store::{TaskRecord, TaskStatus};
///
/// let task = TaskRecord::example();
/// assert_eq!(task.status, TaskStatus::Working);
/// assert!(task.result.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// Its id: unguessable, so that it is a handle only its owner holds.
    pub id: String,
    /// Moves with every change, so that two processes never both write a change made from the same state.
    pub version: u64,
    /// Who may see it: the caller that started it (a delegated caller's whole chain).
    pub owner: String,
    /// The tool it runs.
    pub tool: String,
    /// Where it is.
    pub status: TaskStatus,
    /// The latest progress the tool reported, in words.
    pub message: Option<String>,
    /// When it was created (milliseconds since the Unix epoch).
    pub created_ms: u64,
    /// When it last changed.
    pub updated_ms: u64,
    /// How long after its creation it is kept.
    pub ttl_ms: u64,
    /// The tool's result, once completed.
    pub result: Option<ToolResult>,
    /// Why it failed, once failed.
    pub error: Option<TaskFailure>,
    /// The questions still unanswered, while the status is `input_required`.
    pub input_requests: Option<Map<String, Value>>,
    /// The call's arguments, to run it again with the answers.
    pub arguments: Value,
    /// The sealed state of the round that asked, which the answers go back with.
    pub resume_state: Option<String>,
    /// The answers given so far.
    pub answers: Map<String, Value>,
    /// Until when the process running it is known to be alive; past it a `working` task has lost its runner.
    pub lease_until_ms: u64,
    /// Whether someone asked it to stop.
    pub cancel_requested: bool,
}

impl TaskRecord {
    /// A task of `tool` for `owner`, just created, running.
    pub(crate) fn new(
        owner: &str,
        tool: &str,
        arguments: Value,
        ttl_ms: u64,
        lease_ms: u64,
    ) -> Self {
        let now = crate::store::unix_ms();
        TaskRecord {
            id: format!("tgt_{}", crate::random::random_id()),
            version: 0,
            owner: owner.to_owned(),
            tool: tool.to_owned(),
            status: TaskStatus::Working,
            message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms,
            result: None,
            error: None,
            input_requests: None,
            arguments,
            resume_state: None,
            answers: Map::new(),
            lease_until_ms: now + lease_ms,
            cancel_requested: false,
        }
    }

    /// An example, for documentation and tests.
    pub fn example() -> Self {
        TaskRecord::new("ada", "export_orders", Value::Null, 3_600_000, 10_000)
    }

    /// When it may be forgotten.
    pub(crate) fn expires_ms(&self) -> u64 {
        self.created_ms.saturating_add(self.ttl_ms)
    }
}

/// Keeps tasks: the registry's runner writes them, any process on the store reads them. The SQLite and
/// PostgreSQL stores keep them in `toolgate_tasks`; [`MemoryTasks`] keeps them in this process only.
///
/// Every method answers for tasks not yet expired only.
///
/// ```
/// use toolgate::sqlite::SqliteStore;
/// use toolgate::store::{TaskRecord, TaskStatus, TaskStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = SqliteStore::in_memory().unwrap();
/// let mut task = TaskRecord::example();
/// db.create(&task).await?;
/// task.status = TaskStatus::Completed;
/// assert!(db.update(&task).await?, "written from the version it read");
/// assert!(!db.update(&task).await?, "a second write from the same version is refused");
/// assert_eq!(db.get(&task.id).await?.unwrap().status, TaskStatus::Completed);
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
pub trait TaskStore: Send + Sync + 'static {
    /// Writes a new task; it is readable once this returns.
    fn create<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, ()>;

    /// The task `id`.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Writes `task`'s new status, message, lease and record as the next version, unless the task moved
    /// since `task.version` was read, or has ended; says whether it was written.
    fn update<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, bool>;

    /// Asks task `id` to stop: a task waiting for answers is cancelled at once, a running one when its
    /// runner next looks; an ended one stays as it is.
    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;

    /// Extends a running task's lease to `until_ms` and keeps its progress `message`; says whether it was
    /// asked to stop.
    fn beat<'a>(
        &'a self,
        id: &'a str,
        until_ms: u64,
        message: Option<&'a str>,
    ) -> StoreFuture<'a, bool>;
}

/// Tasks in this process's memory: the default, lost when the process ends.
///
/// ```
/// use toolgate::store::{MemoryTasks, TaskRecord, TaskStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let tasks = MemoryTasks::default();
/// let task = TaskRecord::example();
/// tasks.create(&task).await?;
/// assert_eq!(tasks.get(&task.id).await?.unwrap().tool, "export_orders");
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryTasks(Arc<Mutex<HashMap<String, TaskRecord>>>);

impl TaskStore for MemoryTasks {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, ()> {
        let now = crate::store::unix_ms();
        let mut tasks = self.0.locked();
        tasks.retain(|_, t| t.expires_ms() > now);
        tasks.insert(task.id.clone(), task.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let now = crate::store::unix_ms();
        let found = self
            .0
            .locked()
            .get(id)
            .filter(|t| t.expires_ms() > now)
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, bool> {
        let mut tasks = self.0.locked();
        let written = match tasks.get_mut(&task.id) {
            Some(kept) if kept.version == task.version && !kept.status.is_terminal() => {
                let cancel_requested = kept.cancel_requested;
                *kept = task.clone();
                kept.version += 1;
                kept.cancel_requested = cancel_requested;
                true
            }
            _ => false,
        };
        Box::pin(std::future::ready(Ok(written)))
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        if let Some(task) = self.0.locked().get_mut(id) {
            cancel(task);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn beat<'a>(
        &'a self,
        id: &'a str,
        until_ms: u64,
        message: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let asked = match self.0.locked().get_mut(id) {
            Some(task) => {
                task.lease_until_ms = until_ms;
                task.message = message.map(str::to_owned);
                task.cancel_requested
            }
            None => false,
        };
        Box::pin(std::future::ready(Ok(asked)))
    }
}

/// What a cancel does to `task`: asks a running one to stop, ends one that waits for answers.
fn cancel(task: &mut TaskRecord) {
    if task.status.is_terminal() {
        return;
    }
    task.cancel_requested = true;
    task.version += 1;
    if task.status == TaskStatus::InputRequired {
        task.status = TaskStatus::Cancelled;
        task.input_requests = None;
        task.updated_ms = crate::store::unix_ms();
    }
}

/// A number of milliseconds as a database keeps it.
#[cfg(database)]
pub(crate) fn int(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A task as a database row gives it back: the columns are the truth, over what the record says.
#[cfg(database)]
pub(crate) fn from_row(
    version: i64,
    status: &str,
    message: Option<String>,
    lease_until: i64,
    cancel_requested: i64,
    record: &str,
) -> Result<TaskRecord, crate::store::RecordError> {
    let mut task: TaskRecord = crate::store::from_json(record)?;
    task.status = serde_json::from_value(Value::String(status.to_owned())).map_err(|e| {
        crate::store::RecordError::new(crate::store::RecordErrorKind::Database, e.to_string())
    })?;
    task.version = u64::try_from(version).unwrap_or_default();
    task.message = message;
    task.lease_until_ms = u64::try_from(lease_until).unwrap_or_default();
    task.cancel_requested = cancel_requested != 0;
    if task.status == TaskStatus::Cancelled {
        task.input_requests = None;
    }
    Ok(task)
}
