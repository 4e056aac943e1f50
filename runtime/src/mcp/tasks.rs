//! Tasks over MCP (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a task as `CreateTaskResult`
//! and `tasks/get`'s `DetailedTask`, and the errors of task requests. rmcp refuses `tasks/*` from a client
//! that did not declare the extension (-32021) before they reach the handler.

use std::time::{Duration, UNIX_EPOCH};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, CreateTaskResult, DetailedTask, GetTaskResult, JsonObject, Task,
    TaskPayload, TaskStatus as WireStatus,
};
use serde_json::Value;

use crate::call::{POLL_INTERVAL, TaskError};
use crate::output::Outcome;
use crate::store::{TaskRecord, TaskStatus};

use super::{convert, input};

/// The error for a call that can run only as a task, from a client that did not declare the extension.
pub(super) fn required() -> ErrorData {
    ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

/// A task's base fields as the wire has them.
fn base(task: &TaskRecord) -> Task {
    let status = match task.status {
        TaskStatus::Working => WireStatus::Working,
        TaskStatus::InputRequired => WireStatus::InputRequired,
        TaskStatus::Completed => WireStatus::Completed,
        TaskStatus::Failed => WireStatus::Failed,
        TaskStatus::Cancelled => WireStatus::Cancelled,
    };
    let mut wire = Task::new(&task.id, status, iso(task.created_ms), iso(task.updated_ms))
        .with_ttl_ms(task.ttl_ms)
        .with_poll_interval_ms(u64::try_from(POLL_INTERVAL.as_millis()).unwrap_or(1000));
    if let Some(message) = &task.message {
        wire = wire.with_status_message(message);
    }
    wire
}

/// The answer to the `tools/call` that started `task`.
pub(super) fn created(task: &TaskRecord) -> CreateTaskResult {
    CreateTaskResult::new(base(task))
}

/// `tasks/get`'s answer: the task, with its result, error or questions inlined.
pub(super) fn detailed(task: TaskRecord, structured: bool) -> Result<GetTaskResult, ErrorData> {
    let payload = match task.status {
        TaskStatus::Working => TaskPayload::Working,
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: input::requests(
                task.input_requests.as_ref().unwrap_or(&Default::default()),
            )?,
        },
        TaskStatus::Completed => {
            let result = task.result.clone().unwrap_or_default();
            let call = convert::call_result(Outcome::Done(result), structured)?;
            TaskPayload::Completed {
                result: object(serde_json::to_value(call))?,
            }
        }
        TaskStatus::Failed => {
            let failure = task
                .error
                .clone()
                .unwrap_or_else(|| crate::store::TaskFailure::new(-32603, "the task failed"));
            TaskPayload::Failed {
                error: object(serde_json::to_value(failure))?,
            }
        }
    };
    Ok(GetTaskResult::new(DetailedTask::new(base(&task), payload)))
}

fn object(value: Result<Value, serde_json::Error>) -> Result<JsonObject, ErrorData> {
    match value {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ErrorData::internal_error(
            "a task's payload is no object",
            None,
        )),
        Err(error) => Err(ErrorData::internal_error(error.to_string(), None)),
    }
}

/// A task request's error: an unknown id (or another caller's) is invalid params, as the spec asks.
pub(super) fn error(error: TaskError) -> ErrorData {
    match error {
        TaskError::Unknown(_) => ErrorData::invalid_params(error.to_string(), None),
        TaskError::NotStarted(refused) => {
            ErrorData::invalid_params(refused.message().to_owned(), None)
        }
        TaskError::Unavailable(refused) => {
            ErrorData::internal_error(refused.message().to_owned(), None)
        }
    }
}

/// Milliseconds since the Unix epoch as an ISO 8601 time.
fn iso(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
