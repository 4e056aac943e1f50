//! The suite's multi-round fixtures (SEP-2322): tools that ask the client for input through [`Ask`].

use schemars::JsonSchema;
use serde::Deserialize;
use toolgate::prelude::*;
use toolgate::{Ask, Elicited};

/// A name.
#[derive(Deserialize, JsonSchema)]
struct UserName {
    name: String,
}

/// A yes or no.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// A colour.
#[derive(Deserialize, JsonSchema)]
struct FavouriteColour {
    color: String,
}

/// The name from a form, or `stranger` when the user declined.
fn name_of(answer: Elicited<UserName>) -> String {
    match answer {
        Elicited::Accepted(UserName { name }) => name,
        _ => "stranger".to_owned(),
    }
}

/// The text of a sampling answer.
fn text_of(answer: &serde_json::Value) -> &str {
    answer["content"]["text"].as_str().unwrap_or_default()
}

// ANCHOR: elicitation
/// Asks the user's name, then greets them.
#[tool(public, read_only)]
async fn test_input_required_result_elicitation(ask: Ask) -> Result<String, ToolError> {
    let name = name_of(ask.elicit("user_name", "What is your name?")?);
    Ok(format!("Hello, {name}!"))
}
// ANCHOR_END: elicitation

/// Asks the client's model a question.
#[tool(public, read_only)]
async fn test_input_required_result_sampling(ask: Ask) -> Result<String, ToolError> {
    let answer = ask.sample("capital_question", "What is the capital of France?", 100)?;
    Ok(format!("The model answered: {}", text_of(&answer)))
}

/// Lists the client's roots.
#[tool(public, read_only)]
async fn test_input_required_result_list_roots(ask: Ask) -> Result<String, ToolError> {
    let roots = ask.roots("client_roots")?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(format!("Client roots: {}", uris.join(", ")))
}

/// Asks for a confirmation; its answer travels back with the sealed request state.
#[tool(public, read_only)]
async fn test_input_required_result_request_state(ask: Ask) -> Result<String, ToolError> {
    match ask.elicit::<Confirm>("confirm", "Please confirm")? {
        Elicited::Accepted(Confirm { ok }) => Ok(format!("state-ok: confirmed={ok}")),
        _ => Ok("state-ok: not confirmed".to_owned()),
    }
}

// ANCHOR: multiple
/// Asks three questions in one round.
#[tool(public, read_only)]
async fn test_input_required_result_multiple_inputs(ask: Ask) -> Result<String, ToolError> {
    let name = ask.elicit::<UserName>("user_name", "What is your name?");
    let greeting = ask.sample("greeting", "Generate a greeting", 50);
    let roots = ask.roots("client_roots");
    ask.ready()?;
    Ok(format!(
        "{} to {} with {} roots",
        text_of(&greeting?),
        name_of(name?),
        roots?.len()
    ))
}
// ANCHOR_END: multiple

/// Asks two questions in two rounds.
#[tool(public, read_only)]
async fn test_input_required_result_multi_round(ask: Ask) -> Result<String, ToolError> {
    let name = name_of(ask.elicit("step1", "Step 1: What is your name?")?);
    let color =
        match ask.elicit::<FavouriteColour>("step2", "Step 2: What is your favorite color?")? {
            Elicited::Accepted(FavouriteColour { color }) => color,
            _ => "no colour".to_owned(),
        };
    Ok(format!("{name} likes {color}"))
}

/// Asks a question; a tampered request state is refused.
#[tool(public, read_only)]
async fn test_input_required_result_tampered_state(ask: Ask) -> Result<String, ToolError> {
    let name = name_of(ask.elicit("user_name", "What is your name?")?);
    Ok(format!("Hello, {name}! The request state was intact."))
}

/// Asks only what the client declared it can answer.
#[tool(public, read_only)]
async fn test_input_required_result_capabilities(ask: Ask) -> Result<String, ToolError> {
    let can = ask.supports();
    let answer = can
        .sampling
        .then(|| ask.sample("capital_question", "What is the capital of France?", 100));
    let name = can
        .elicitation
        .then(|| ask.elicit::<UserName>("user_name", "What is your name?"));
    ask.ready()?;
    let mut parts = Vec::new();
    if let Some(answer) = answer {
        parts.push(format!("sampled: {}", text_of(&answer?)));
    }
    if let Some(name) = name {
        parts.push(format!("name: {}", name_of(name?)));
    }
    Ok(parts.join("; "))
}

/// Needs sampling whatever the client declared: refused with `-32021` when it did not.
#[tool(public, read_only)]
async fn test_missing_capability(ask: Ask) -> Result<String, ToolError> {
    let answer = ask.sample("question", "Say hello", 10)?;
    Ok(text_of(&answer).to_owned())
}

/// Asks the user's name; the request's stream carries only the result, never a request to the client.
#[tool(public, read_only)]
async fn test_streaming_elicitation(ask: Ask) -> Result<String, ToolError> {
    let name = name_of(ask.elicit("user_name", "What is your name?")?);
    Ok(format!("Hello, {name}!"))
}
