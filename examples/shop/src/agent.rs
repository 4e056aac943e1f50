//! The app's own agent loop: a model proposes tool calls, the registry runs them with the caller's
//! permissions, and a person approves each write before it runs. No MCP in between.

use std::collections::VecDeque;
use std::error::Error;

use serde_json::{Value, json};
use toolgate::dialect::Dialect;
use toolgate::output::Pending;
use toolgate::registry::{TOOL_SEARCH, tools_found};
use toolgate::{Caller, Outcome, Registry, ToolResult};

/// A model behind a Chat Completions API (OpenAI, or any server compatible with it).
pub trait Model {
    /// The response body for a request with these `messages` and `tools`.
    fn reply(
        &mut self,
        messages: &[Value],
        tools: &Value,
    ) -> impl Future<Output = Result<Value, Box<dyn Error + Send + Sync>>> + Send;
}

/// How the loop ended.
#[derive(Debug)]
pub struct Finished {
    /// The model's final answer.
    pub answer: String,
    /// Every message of the conversation, tool results included.
    pub messages: Vec<Value>,
}

// ANCHOR: loop
/// Works on `task` for `caller` until the model answers without calling a tool, for at most `max_turns`
/// model replies. `approve` is the person's decision on each write's preview.
///
/// # Errors
/// When the model cannot be reached, or gives no final answer within `max_turns`.
pub async fn run(
    registry: &Registry,
    caller: &Caller,
    model: &mut impl Model,
    mut approve: impl FnMut(&Pending) -> bool,
    task: &str,
    max_turns: usize,
) -> Result<Finished, Box<dyn Error + Send + Sync>> {
    let dialect = Dialect::OpenAiChat;
    // Only the tools this caller may run are offered; the registry enforces the same policy on each call.
    // Deferred tools wait until a `tool_search` finds them, then join the next request.
    let mut found: Vec<String> = Vec::new();
    let mut messages = vec![json!({ "role": "user", "content": task })];
    for _ in 0..max_turns {
        let tools = registry.definitions_with(caller, dialect, &found);
        let reply = model.reply(&messages, &tools).await?;
        let message = reply["choices"][0]["message"].clone();
        let calls = dialect.calls(&message);
        messages.push(message);
        if calls.is_empty() {
            let answer = messages[messages.len() - 1]["content"]
                .as_str()
                .unwrap_or("");
            return Ok(Finished {
                answer: answer.to_owned(),
                messages,
            });
        }
        for call in calls {
            let outcome = match registry.run(caller, call.to_call()).await {
                // A write waits here for the person, not for the model: the model cannot approve it.
                Outcome::NeedsConfirmation(pending) if approve(&pending) => {
                    registry.confirm(caller, pending.confirmation()).await
                }
                Outcome::NeedsConfirmation(pending) => {
                    match registry.decline(caller, pending.confirmation()).await {
                        Ok(()) => Outcome::Done(ToolResult::text(format!(
                            "The user declined: {}. Nothing changed.",
                            pending.preview().text().trim_end_matches('.')
                        ))),
                        Err(error) => Outcome::Failed(error),
                    }
                }
                outcome => outcome,
            };
            let result = outcome.into_result();
            if call.name == TOOL_SEARCH {
                found.extend(tools_found(&result));
            }
            messages.push(dialect.result(&call, &result));
        }
    }
    Err(format!("no final answer after {max_turns} turns").into())
}
// ANCHOR_END: loop

/// A model that replies from a script, in order, and keeps what it was sent: the stand-in for a model API
/// in the demo and the tests, where no network is reachable.
#[derive(Debug, Default)]
pub struct Scripted {
    replies: VecDeque<Value>,
    /// What each request carried, in order.
    pub requests: Vec<Request>,
}

/// One request a [`Scripted`] model received.
#[derive(Debug, Clone)]
pub struct Request {
    /// The conversation so far.
    pub messages: Vec<Value>,
    /// The tools on offer.
    pub tools: Value,
}

impl Scripted {
    /// Replies with these assistant messages, one per request.
    pub fn new(messages: impl IntoIterator<Item = Value>) -> Scripted {
        let replies = messages
            .into_iter()
            .map(|message| json!({ "choices": [{ "message": message }] }))
            .collect();
        Scripted {
            replies,
            requests: Vec::new(),
        }
    }

    /// An assistant message that calls one tool.
    pub fn call(id: &str, tool: &str, arguments: Value) -> Value {
        json!({ "role": "assistant", "content": null, "tool_calls": [{
            "id": id, "type": "function",
            "function": { "name": tool, "arguments": arguments.to_string() },
        }]})
    }

    /// An assistant message that answers.
    pub fn answer(text: &str) -> Value {
        json!({ "role": "assistant", "content": text })
    }
}

impl Model for Scripted {
    async fn reply(
        &mut self,
        messages: &[Value],
        tools: &Value,
    ) -> Result<Value, Box<dyn Error + Send + Sync>> {
        self.requests.push(Request {
            messages: messages.to_vec(),
            tools: tools.clone(),
        });
        self.replies
            .pop_front()
            .ok_or_else(|| "the script has no more replies".into())
    }
}
