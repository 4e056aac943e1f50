//! The shop's own agent loop, with a scripted model: what reaches the model, what runs, what a person
//! decides.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use example_shop::agent::{self, Scripted};
use example_shop::db::Status;
use example_shop::{Db, manager, registry, viewer};
use serde_json::{Value, json};
use toolgate::Caller;
use toolgate::output::Pending;
use toolgate::registry::Config;

async fn shop() -> (Db, toolgate::Registry) {
    let db = Db::open(":memory:").unwrap();
    let store = toolgate::store::Database::open(":memory:").await.unwrap();
    let registry = registry(db.clone(), &store, Config::default())
        .await
        .unwrap();
    (db, registry)
}

fn status(db: &Db, number: &str) -> Status {
    db.order(number).unwrap().unwrap().status
}

/// Runs the loop for `caller` with a model that confirms RO-00003 and then answers.
async fn confirm_by_agent(
    caller: &Caller,
    approve: bool,
) -> (Db, Scripted, Vec<String>, agent::Finished) {
    let (db, registry) = shop().await;
    let mut model = Scripted::new([
        Scripted::call("call_1", "confirm_order", json!({ "number": "RO-00003" })),
        Scripted::answer("Done."),
    ]);
    let mut asked = Vec::new();
    let decide = |pending: &Pending| {
        asked.push(pending.preview().text().to_owned());
        approve
    };
    let finished = agent::run(
        &registry,
        caller,
        &mut model,
        decide,
        "Confirm RO-00003.",
        4,
    )
    .await
    .unwrap();
    (db, model, asked, finished)
}

/// The tool result the model received for `id` in its last request.
fn tool_message<'a>(model: &'a Scripted, id: &str) -> &'a Value {
    let last = model.requests.last().unwrap();
    last.messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap()
}

#[tokio::test]
async fn an_approved_write_runs_once_and_its_result_reaches_the_model() {
    let (db, model, asked, finished) = confirm_by_agent(&manager(), true).await;
    assert_eq!(
        asked,
        ["Confirm order RO-00003 for Katherine Johnson (56.57 EUR)."]
    );
    assert_eq!(status(&db, "RO-00003"), Status::Confirmed);
    let result = tool_message(&model, "call_1")["content"].as_str().unwrap();
    assert!(result.contains(r#""status":"confirmed""#), "{result}");
    assert_eq!(finished.answer, "Done.");
    assert_eq!(finished.messages.len(), 4, "task, call, result, answer");

    let offered: Vec<&str> = model.requests[0]
        .tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        offered,
        [
            "shop_overview",
            "confirm_order",
            "draw_chart",
            "export_orders",
            "order_details",
            "orders_per_day",
            "search_orders",
            "ship_order",
            "show_table",
            "tool_search"
        ]
    );
}

#[tokio::test]
async fn a_declined_write_changes_nothing_and_the_model_is_told() {
    let (db, model, asked, _) = confirm_by_agent(&manager(), false).await;
    assert_eq!(asked.len(), 1);
    assert_eq!(status(&db, "RO-00003"), Status::Pending);
    assert_eq!(
        tool_message(&model, "call_1")["content"],
        "The user declined: Confirm order RO-00003 for Katherine Johnson (56.57 EUR). Nothing changed."
    );
}

#[tokio::test]
async fn a_viewer_is_offered_reads_only_and_a_write_it_calls_anyway_is_unknown_to_her() {
    let (db, model, asked, _) = confirm_by_agent(&viewer(), true).await;
    let offered = model.requests[0].tools.to_string();
    assert!(!offered.contains("confirm_order") && offered.contains("search_orders"));
    assert!(asked.is_empty(), "no preview is shown for a denied call");
    assert_eq!(status(&db, "RO-00003"), Status::Pending);
    assert_eq!(
        tool_message(&model, "call_1")["content"],
        "[ERROR] Unknown tool `confirm_order`. List the tools to see which ones you can use."
    );
}

#[tokio::test]
async fn malformed_arguments_and_unknown_tools_come_back_as_errors_the_model_can_fix() {
    let (_, registry) = shop().await;
    let mut model = Scripted::new([
        json!({ "role": "assistant", "tool_calls": [
            { "id": "a", "type": "function", "function": { "name": "order_details", "arguments": "{\"number\": " } },
            { "id": "b", "type": "function", "function": { "name": "drop_tables", "arguments": "{}" } },
        ]}),
        Scripted::answer("Sorry."),
    ]);
    agent::run(&registry, &manager(), &mut model, |_| true, "Look.", 4)
        .await
        .unwrap();
    let malformed = tool_message(&model, "a")["content"].as_str().unwrap();
    assert!(
        malformed.starts_with("[ERROR] Invalid arguments for `order_details`"),
        "{malformed}"
    );
    let unknown = tool_message(&model, "b")["content"].as_str().unwrap();
    assert!(
        unknown.starts_with("[ERROR] ") && unknown.contains("drop_tables"),
        "{unknown}"
    );
}

#[tokio::test]
async fn a_model_that_never_answers_is_stopped_after_its_turns() {
    let (_, registry) = shop().await;
    let call = || Scripted::call("c", "shop_overview", json!({}));
    let mut model = Scripted::new([call(), call(), call()]);
    let error = agent::run(&registry, &viewer(), &mut model, |_| true, "Loop.", 2)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "no final answer after 2 turns");
    assert_eq!(model.requests.len(), 2);
}

/// The function names a request offered.
fn offered(request: &agent::Request) -> Vec<String> {
    let tools = request.tools.as_array().unwrap();
    tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_deferred_tool_joins_the_request_after_the_model_found_it() {
    let (_, registry) = shop().await;
    let mut model = Scripted::new([
        Scripted::call(
            "call_1",
            "tool_search",
            json!({ "query": "total spend per customer" }),
        ),
        Scripted::call("call_2", "customer_totals", json!({})),
        Scripted::answer("Grace Hopper spent the most."),
    ]);
    let finished = agent::run(
        &registry,
        &viewer(),
        &mut model,
        |_| false,
        "Who spends most?",
        4,
    )
    .await
    .unwrap();
    assert_eq!(finished.answer, "Grace Hopper spent the most.");
    let first = offered(&model.requests[0]);
    assert!(
        first.contains(&"tool_search".to_owned()) && !first.contains(&"customer_totals".to_owned()),
        "deferred at first: {first:?}"
    );
    assert!(offered(&model.requests[1]).contains(&"customer_totals".to_owned()));
    let found = tool_message(&model, "call_1")["content"].as_str().unwrap();
    assert!(found.contains(r#""name":"customer_totals""#), "{found}");
    let totals = tool_message(&model, "call_2")["content"].as_str().unwrap();
    assert!(
        totals.starts_with(r#"[{"customer":"Grace Hopper""#),
        "{totals}"
    );
}
