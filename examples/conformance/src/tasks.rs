//! The suite's task fixtures (SEP-2663): tools whose calls run as tasks for a client that declared the
//! tasks extension, with `#[tool(task)]`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use toolgate::prelude::*;
use toolgate::{Ask, Elicited};

/// Greets someone; never a task.
#[tool(public, read_only)]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

// ANCHOR: slow_compute
/// Computes for `seconds`, then answers; a client that can poll gets a task.
#[tool(public, read_only, task)]
async fn slow_compute(seconds: u64, label: Option<String>) -> String {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    format!("{} computed in {seconds} s", label.unwrap_or_default())
}
// ANCHOR_END: slow_compute

/// Fails after a second, as a tool that reports its failure; only ever a task.
#[tool(public, read_only, task = "required")]
async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new("the job failed: its input was empty"))
}

/// Panics: the task fails with a protocol error, and the server serves on.
#[tool(public, read_only, task)]
async fn protocol_error_job() -> String {
    panic!("the job broke")
}

/// A person's go-ahead, with a name when asked for one.
#[derive(Deserialize, JsonSchema)]
struct GoAhead {
    /// Whether to go on.
    confirm: bool,
    /// A name.
    #[serde(default)]
    name: String,
}

/// Asks before deleting `filename`: the task waits for the answer.
#[tool(public, task)]
async fn confirm_delete(ask: Ask, filename: String) -> Result<String, ToolError> {
    match ask.elicit::<GoAhead>("confirm", &format!("Delete {filename}?"))? {
        Elicited::Accepted(GoAhead { confirm: true, .. }) => Ok(format!("deleted {filename}")),
        _ => Ok(format!("kept {filename}")),
    }
}

/// Asks two questions at once; the task waits until both are answered.
#[tool(public, read_only, task)]
async fn multi_input(ask: Ask) -> Result<String, ToolError> {
    let first = ask.elicit::<GoAhead>("first", "First name?");
    let second = ask.elicit::<GoAhead>("second", "Second name?");
    ask.ready()?;
    let name = |answer: Elicited<GoAhead>| match answer {
        Elicited::Accepted(GoAhead { name, .. }) if !name.is_empty() => name,
        _ => "nobody".to_owned(),
    };
    Ok(format!("{} and {}", name(first?), name(second?)))
}

/// A name, for `test_tool_with_task`.
#[derive(Deserialize, JsonSchema)]
struct UserName {
    name: String,
}

/// Asks the user's name while the request waits, then greets them as a task.
#[tool(public, read_only, task = "after_questions")]
async fn test_tool_with_task(ask: Ask) -> Result<String, ToolError> {
    match ask.elicit::<UserName>("user_name", "What is your name?")? {
        Elicited::Accepted(UserName { name }) => Ok(format!("Hello, {name}!")),
        _ => Ok("Hello, stranger!".to_owned()),
    }
}
