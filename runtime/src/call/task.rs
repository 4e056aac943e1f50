//! Long calls as tasks ([SEP-2663]): a call of a tool that may run as a task
//! ([`#[tool(task)]`](crate::TaskSupport)) is written to the registry's task store, then runs in the
//! background; its caller asks for it by id. The result is kept in the store, so it outlives the future
//! that started the task, the connection, and a restart; any process on the same database answers for it.
//!
//! The process running a task renews a lease on it every few seconds. A task whose lease ran out while it
//! was working lost its process: it is reported as failed, never left working forever. A tool that asks
//! questions parks its task as `input_required` until every question is answered
//! ([`Registry::answer_task`](crate::Registry::answer_task)), and then runs again with the answers, once.
//!
//! [SEP-2663]: https://modelcontextprotocol.io/seps/2663-tasks-extension
//!
//! ```rust,standalone_crate
//! use serde_json::json;
//! use toolgate::prelude::*;
//! use toolgate::store::TaskStatus;
//! use toolgate::Call;
//!
//! /// Rebuild the search index.
//! #[tool(public, task)]
//! async fn reindex(shards: u32) -> String {
//!     format!("{shards} shards reindexed")
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Registry::builder().build().unwrap();
//! let ada = Caller::new("ada");
//! let task = registry.start_task(&ada, Call::new("reindex", json!({ "shards": 3 }))).await?;
//! let done = task.finished().await?;
//! assert_eq!(done.status, TaskStatus::Completed);
//! assert_eq!(done.result.unwrap().text_for_model(), "3 shards reindexed");
//! assert!(registry.task(&Caller::new("eve"), task.id()).await.is_err(), "only its owner sees it");
//! # Ok::<(), toolgate::TaskError>(())
//! # }).unwrap();
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::Call;
use super::flight::unknown_tool_error;
use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};
use crate::output::Outcome;
use crate::store::{MemoryTasks, TaskFailure, TaskRecord, TaskStatus, TaskStore, unix_ms};
use crate::sync::Locked;
use crate::tool::{TaskSupport, Tool};

/// How long the process running a task is trusted without news of it; it renews every third of it.
const LEASE: Duration = Duration::from_secs(15);

/// How often a caller should ask for a task's state.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// The JSON-RPC code of a task that failed inside: a panic, or a lost process.
const INTERNAL_ERROR: i64 = -32603;

/// Why a task request was refused.
///
/// ```
/// let error = toolgate::TaskError::Unknown("tgt_0".into());
/// assert_eq!(error.to_string(), "no task `tgt_0`");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskError {
    /// No such task, or not the caller's: the same answer for both.
    Unknown(String),
    /// The call cannot start as a task: the tool is unknown to the caller, takes no tasks, or is a write
    /// whose preview has not been approved yet.
    NotStarted(ToolError),
    /// The task store cannot be reached.
    Unavailable(ToolError),
}

impl std::fmt::Display for TaskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskError::Unknown(id) => write!(f, "no task `{id}`"),
            TaskError::NotStarted(error) | TaskError::Unavailable(error) => {
                f.write_str(error.message())
            }
        }
    }
}

impl std::error::Error for TaskError {}

/// A task started in-process ([`Registry::start_task`](crate::Registry::start_task)): its id, and its state whenever asked, for as long
/// as the store keeps it, whatever became of the future that started it.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::store::TaskStatus;
///
/// /// Wait for a long time.
/// #[tool(public, read_only, task)]
/// async fn wait(seconds: u64) -> &'static str {
///     tokio::time::sleep(std::time::Duration::from_secs(seconds)).await;
///     "waited"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let task = registry.start_task(&Caller::new("ada"), Call::new("wait", json!({ "seconds": 600 }))).await?;
/// task.cancel().await?;
/// assert_eq!(task.finished().await?.status, TaskStatus::Cancelled);
/// # Ok::<(), toolgate::TaskError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct TaskHandle {
    tasks: Arc<Tasks>,
    caller: Caller,
    id: String,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl TaskHandle {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The task as it is now.
    ///
    /// # Errors
    /// When the store cannot be reached, or the task expired.
    pub async fn state(&self) -> Result<TaskRecord, TaskError> {
        self.tasks.get(&self.caller, &self.id).await
    }

    /// Waits until the task has ended or asks for input, and returns it then.
    ///
    /// # Errors
    /// As [`state`](Self::state).
    pub async fn finished(&self) -> Result<TaskRecord, TaskError> {
        let mut wait = Duration::from_millis(5);
        loop {
            let task = self.state().await?;
            if task.status != TaskStatus::Working {
                return Ok(task);
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(POLL_INTERVAL);
        }
    }

    /// Asks the task to stop.
    ///
    /// # Errors
    /// As [`state`](Self::state).
    pub async fn cancel(&self) -> Result<(), TaskError> {
        self.tasks.cancel(&self.caller, &self.id).await
    }
}

/// What runs a task's call: the registry's whole pipeline, in one of its slots, on a task of its own.
pub(crate) type Runner =
    Arc<dyn Fn(Caller, Call) -> Pin<Box<dyn Future<Output = Outcome> + Send>> + Send + Sync>;

/// A registry's tasks: where they are kept, how long, and the cancellation of each one this process runs.
pub(crate) struct Tasks {
    store: Arc<dyn TaskStore>,
    ttl: Duration,
    running: Mutex<HashMap<String, CancellationToken>>,
    /// How many tasks each caller (by its budget) runs or waits to run here, and how many it may.
    unfinished: Mutex<HashMap<Box<str>, usize>>,
    per_caller: usize,
}

impl Tasks {
    /// How long a task is kept when the registry says nothing.
    pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(3600);

    /// How many of one caller's tasks run or wait to run at once by default.
    pub(crate) const DEFAULT_UNFINISHED_PER_CALLER: usize = 32;

    pub(crate) fn new(store: Option<Arc<dyn TaskStore>>, ttl: Duration, per_caller: usize) -> Self {
        Tasks {
            store: store.unwrap_or_else(|| Arc::new(MemoryTasks::default())),
            ttl,
            running: Mutex::default(),
            unfinished: Mutex::default(),
            per_caller,
        }
    }

    /// Counts one more unfinished task of `budget`'s, unless it has as many as it may: then how many.
    fn count(&self, budget: &str) -> Result<(), usize> {
        let mut unfinished = self.unfinished.locked();
        let count = unfinished.entry(budget.into()).or_default();
        if *count >= self.per_caller {
            return Err(self.per_caller);
        }
        *count += 1;
        Ok(())
    }

    /// One of `budget`'s tasks ended, or parked waiting for answers.
    fn end(&self, budget: &str) {
        let mut unfinished = self.unfinished.locked();
        if let Some(count) = unfinished.get_mut(budget) {
            *count -= 1;
            if *count == 0 {
                unfinished.remove(budget);
            }
        }
    }

    /// A handle on task `id` of `caller`'s.
    pub(crate) fn handle(self: &Arc<Self>, caller: &Caller, id: String) -> TaskHandle {
        TaskHandle {
            tasks: Arc::clone(self),
            caller: caller.clone(),
            id,
        }
    }

    /// Starts `call` of `tool` (the tool its name resolved to, if `caller` may run it) as a task of
    /// `caller`'s: it is in the task store when this returns, then runs in the background through `run`.
    /// A write with a preview starts as a task once a person approved it.
    ///
    /// # Errors
    /// As [`Registry::start_task`](crate::Registry::start_task).
    pub(crate) async fn start(
        self: &Arc<Self>,
        tool: Option<&Tool>,
        caller: &Caller,
        call: Call,
        run: Runner,
    ) -> Result<TaskRecord, TaskError> {
        let name = call.name();
        let Some(tool) = tool else {
            return Err(TaskError::NotStarted(unknown_tool_error(name)));
        };
        if tool.task_support() == TaskSupport::Forbidden {
            let message = format!("`{name}` does not run as a task; call it instead.");
            return Err(TaskError::NotStarted(ToolError::new(message)));
        }
        if tool.has_preview() && !call.replies() {
            let message = format!(
                "`{name}` changes data: call it for its preview, and start the task with the person's \
                 approval."
            );
            return Err(TaskError::NotStarted(ToolError::with_kind(
                ErrorKind::Denied,
                message,
            )));
        }
        let unfinished = Unfinished::count(self, caller)?;
        let ttl = u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX);
        let task = TaskRecord::new(
            caller.owner(),
            name,
            call.arguments().clone(),
            ttl,
            lease_ms(),
        );
        self.store
            .create(&task)
            .await
            .map_err(TaskError::Unavailable)?;
        self.run(caller.clone(), call, task.clone(), Some(unfinished), run);
        Ok(task)
    }

    /// Task `id` as `caller` may see it: another caller's task is as unknown as one that never was. A task
    /// whose process stopped while it was working is reported, and kept, as failed.
    ///
    /// # Errors
    /// [`TaskError::Unknown`], or [`TaskError::Unavailable`] when the store cannot be reached.
    pub(crate) async fn get(&self, caller: &Caller, id: &str) -> Result<TaskRecord, TaskError> {
        let store = &self.store;
        loop {
            let mut task = store
                .get(id)
                .await
                .map_err(TaskError::Unavailable)?
                .filter(|t| t.owner == caller.owner())
                .ok_or_else(|| TaskError::Unknown(id.to_owned()))?;
            if task.status != TaskStatus::Working || task.lease_until_ms >= unix_ms() {
                return Ok(task);
            }
            task.status = TaskStatus::Failed;
            task.error = Some(TaskFailure::new(
                INTERNAL_ERROR,
                "the server running this task stopped before it finished; start it again",
            ));
            task.updated_ms = unix_ms();
            if store.update(&task).await.map_err(TaskError::Unavailable)? {
                task.version += 1;
                return Ok(task);
            }
        }
    }

    /// Answers some of the questions task `id` waits on (keys it did not ask are ignored). Once every one
    /// is answered, the tool runs again with the answers, once, here.
    ///
    /// # Errors
    /// As [`Registry::task`](crate::Registry::task).
    pub(crate) async fn answer(
        self: &Arc<Self>,
        caller: &Caller,
        id: &str,
        answers: Map<String, Value>,
        run: Runner,
    ) -> Result<(), TaskError> {
        let store = &self.store;
        loop {
            let mut task = self.get(caller, id).await?;
            let Some(mut pending) = task.input_requests.take() else {
                return Ok(());
            };
            for (key, answer) in &answers {
                if pending.remove(key).is_some() {
                    task.answers.insert(key.clone(), answer.clone());
                }
            }
            task.updated_ms = unix_ms();
            let resume = pending.is_empty();
            if resume {
                task.status = TaskStatus::Working;
                task.lease_until_ms = unix_ms() + lease_ms();
            } else {
                task.input_requests = Some(pending);
            }
            if !store.update(&task).await.map_err(TaskError::Unavailable)? {
                // It moved meanwhile (another answer, a cancel): read it again.
                continue;
            }
            task.version += 1;
            if resume {
                let answers = std::mem::take(&mut task.answers);
                let call = Call::new(task.tool.clone(), task.arguments.clone())
                    .resume(task.resume_state.take(), answers);
                self.run(caller.clone(), call, task, None, run);
            }
            return Ok(());
        }
    }

    /// Asks task `id` to stop: its tool's [`Cancellation`](crate::param::Cancellation) fires, here at once
    /// or within seconds on the process running it; a task waiting for answers is cancelled at once. An
    /// ended task stays as it is.
    ///
    /// # Errors
    /// As [`Registry::task`](crate::Registry::task).
    pub(crate) async fn cancel(&self, caller: &Caller, id: &str) -> Result<(), TaskError> {
        let task = self.get(caller, id).await?;
        if task.status.is_terminal() {
            return Ok(());
        }
        if let Some(token) = self.running.locked().get(id) {
            token.cancel();
        }
        self.store.cancel(id).await.map_err(TaskError::Unavailable)
    }

    /// Runs `task`'s call in the background, in one of the slots calls run in (it waits as `working`
    /// for one, its lease renewed), keeping its progress, and writes how it ended; then it is no longer
    /// one of its caller's `unfinished` tasks.
    fn run(
        self: &Arc<Self>,
        caller: Caller,
        call: Call,
        task: TaskRecord,
        unfinished: Option<Unfinished>,
        run: Runner,
    ) {
        let token = CancellationToken::new();
        self.running.locked().insert(task.id.clone(), token.clone());
        let progress = Arc::new(Mutex::new(None::<String>));
        let noted = Arc::clone(&progress);
        let call = call.cancellation(token.clone()).on_progress(move |update| {
            let done = match update.total {
                Some(total) => format!("{}/{total}", update.progress),
                None => update.progress.to_string(),
            };
            let line = match update.message {
                Some(message) => format!("{done}: {message}"),
                None => done,
            };
            *noted.locked() = Some(line);
        });
        let tasks = Arc::clone(self);
        tokio::spawn(async move {
            let outcome = tokio::select! {
                outcome = run(caller, call) => outcome,
                () = tasks.keep_alive(&task.id, &token, &progress) => unreachable!("renews until dropped"),
            };
            tasks.running.locked().remove(&task.id);
            let message = progress.locked().take();
            tasks
                .settle(task, outcome, token.is_cancelled(), message)
                .await;
            drop(unfinished);
        });
    }

    /// Renews the lease of task `id` while it runs, with its latest progress, and cancels `token` when
    /// someone asked the task to stop; never returns.
    async fn keep_alive(
        &self,
        id: &str,
        token: &CancellationToken,
        progress: &Mutex<Option<String>>,
    ) {
        let store = &self.store;
        let mut every = tokio::time::interval(LEASE / 3);
        every.tick().await;
        loop {
            every.tick().await;
            let message = progress.locked().clone();
            match store
                .beat(id, unix_ms() + lease_ms(), message.as_deref())
                .await
            {
                Ok(true) => token.cancel(),
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(target: "toolgate::task", task = id, error = error.message(), "cannot renew the task's lease");
                }
            }
        }
    }

    /// Writes how `task` ended (or that it asks for input), retrying while the store is away, and over a
    /// change made meanwhile (a cancel) unless the task has ended already.
    async fn settle(
        &self,
        mut task: TaskRecord,
        outcome: Outcome,
        cancelled: bool,
        message: Option<String>,
    ) {
        let store = &self.store;
        match outcome {
            _ if cancelled => task.status = TaskStatus::Cancelled,
            Outcome::InputRequired(input) => {
                task.status = TaskStatus::InputRequired;
                task.input_requests = Some(input.requests().clone());
                task.resume_state = Some(input.state().to_owned());
            }
            Outcome::Failed(error) if error.is_panic() => {
                task.status = TaskStatus::Failed;
                task.error = Some(TaskFailure::new(INTERNAL_ERROR, error.message()));
            }
            outcome => {
                task.status = TaskStatus::Completed;
                task.result = Some(outcome.into_result());
            }
        }
        task.message = message.or(task.message.take());
        let mut wait = Duration::from_millis(100);
        for _ in 0..10 {
            task.updated_ms = unix_ms();
            match store.update(&task).await {
                Ok(true) => return,
                Ok(false) => match store.get(&task.id).await {
                    Ok(Some(current)) if !current.status.is_terminal() => {
                        // A cancel came meanwhile: a task that would wait for answers ends instead.
                        task.version = current.version;
                        if current.cancel_requested && task.status == TaskStatus::InputRequired {
                            task.status = TaskStatus::Cancelled;
                            task.input_requests = None;
                        }
                    }
                    Ok(_) => return,
                    Err(_) => {}
                },
                Err(error) => {
                    tracing::warn!(target: "toolgate::task", task = task.id, error = error.message(), "cannot write the task's end; retrying");
                }
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(5));
        }
        tracing::error!(target: "toolgate::task", task = task.id, "gave up writing the task's end: it reads as failed once its lease runs out");
    }
}

/// One of a caller's tasks counted as unfinished in this process, until dropped.
struct Unfinished {
    tasks: Arc<Tasks>,
    budget: Box<str>,
}

impl Unfinished {
    /// Counts a new task of `caller`'s, unless it has as many unfinished as it may.
    fn count(tasks: &Arc<Tasks>, caller: &Caller) -> Result<Self, TaskError> {
        let budget = caller.budget();
        tasks.count(budget).map_err(|most| {
            TaskError::NotStarted(ToolError::with_kind(
                ErrorKind::LimitReached,
                format!(
                    "You have {most} tasks running or waiting to run, as many as you may. Nothing was \
                     started; wait for one of them to end, then start this again."
                ),
            ))
        })?;
        Ok(Unfinished {
            tasks: Arc::clone(tasks),
            budget: budget.into(),
        })
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        self.tasks.end(&self.budget);
    }
}

fn lease_ms() -> u64 {
    u64::try_from(LEASE.as_millis()).unwrap_or(u64::MAX)
}
