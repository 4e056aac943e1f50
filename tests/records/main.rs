//! The operator's records in real databases, SQLite and PostgreSQL, with the same tests on both: a live
//! registry that changes while it serves, edits that are checked and recorded, a sync that never deletes,
//! changes that reach another process, an outage survived; and the admin API over them.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::Notify;
use toolgate::prelude::*;
use toolgate::store::ToolRecord;

mod admin;
mod both;
mod db;
mod keys;
mod limits;
#[path = "../support/mcp_client.rs"]
mod mcp_client;
mod operator;
mod outage;
#[path = "../support/postgres.rs"]
mod postgres;
mod replicas;
mod tasks;
#[path = "../support/tasks_client.rs"]
mod tasks_client;

use db::Db;

/// How many rows a search returns.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SearchSettings {
    /// At most this many rows.
    max_rows: u32,
}

/// Search the catalogue.
#[tool(ability = "catalogue.view", read_only)]
async fn search_catalogue(settings: Settings<SearchSettings>, query: String) -> String {
    format!("{} rows for {query}", settings.0.max_rows)
}

/// Count the lamps in stock, with a line for people and telemetry.
#[tool(ability = "catalogue.view", read_only)]
async fn count_lamps() -> ToolResult {
    ToolResult::text("12 lamps")
        .with_session_log("count_lamps: 12 in stock")
        .with_telemetry("lamps", serde_json::json!(12))
}

/// Says when a `slow_report` started, and lets it finish.
#[derive(Default)]
struct Gate {
    started: Notify,
    finish: Notify,
}

/// Waits until the test lets it finish.
#[tool(public, read_only)]
async fn slow_report(gate: State<Arc<Gate>>) -> &'static str {
    gate.started.notify_one();
    gate.finish.notified().await;
    "report done"
}

/// Refund an order. Changes data.
#[tool(ability = "catalogue.view", preview = preview_refund, task)]
async fn refund(order: u32) -> String {
    REFUNDED.lock().unwrap().push(order);
    format!("Refunded order {order}.")
}

/// Every order `refund` ran for, in this process.
static REFUNDED: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// How many times `refund` ran for `order`.
fn refunds(order: u32) -> usize {
    REFUNDED
        .lock()
        .unwrap()
        .iter()
        .filter(|o| **o == order)
        .count()
}

async fn preview_refund(order: u32) -> Preview {
    Preview::new(format!("Refund order {order}"))
}

/// Rebuild the catalogue's index: `seconds` long, reporting progress every tenth of a second.
#[tool(ability = "catalogue.view", read_only, task)]
async fn rebuild_index(progress: Progress, seconds: u64) -> String {
    for tenth in 1..=seconds * 10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        progress.report(
            tenth as f64,
            Some((seconds * 10) as f64),
            Some("rebuilding"),
        );
    }
    format!("index rebuilt in {seconds} s")
}

/// A name and whether to go on, for `import_feed`'s questions.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct FeedAnswer {
    /// The feed's name.
    name: String,
}

/// Import a supplier's feed, once told its name and its owner's.
#[tool(ability = "catalogue.view", read_only, task)]
async fn import_feed(ask: Ask) -> Result<String, ToolError> {
    let feed = ask.elicit::<FeedAnswer>("feed", "Which feed?");
    let owner = ask.elicit::<FeedAnswer>("owner", "Whose feed is it?");
    ask.ready()?;
    match (feed?, owner?) {
        (Elicited::Accepted(feed), Elicited::Accepted(owner)) => {
            Ok(format!("imported {} of {}", feed.name, owner.name))
        }
        _ => Ok("nothing imported".into()),
    }
}

/// Export the catalogue. Heavy, so at most two runs per conversation.
#[tool(ability = "catalogue.view", read_only, max_runs = 2)]
async fn export_catalogue() -> &'static str {
    "catalogue.csv"
}

/// Close an account, once `gate` lets it finish. Changes data.
#[tool(ability = "catalogue.view", preview = preview_close, timeout = "1s")]
async fn close_account(
    gate: State<Arc<Gate>>,
    approval: toolgate::param::Approval,
    account: u32,
) -> String {
    let run = (
        account,
        approval.id().unwrap_or("-").to_owned(),
        approval.resumed(),
    );
    CLOSE_RUNS.lock().unwrap().push(run);
    gate.started.notify_one();
    gate.finish.notified().await;
    format!("Closed account {account}.")
}

/// The approval each run of `close_account` saw: the account, the approval's id, and whether the run
/// resumed an abandoned one.
static CLOSE_RUNS: std::sync::Mutex<Vec<(u32, String, bool)>> = std::sync::Mutex::new(Vec::new());

async fn preview_close(
    _gate: State<Arc<Gate>>,
    _approval: toolgate::param::Approval,
    account: u32,
) -> Preview {
    Preview::new(format!("Close account {account}"))
}

fn clerk() -> Caller {
    Caller::new("clerk").with_abilities(["catalogue.view"])
}

async fn registry(db: &Db) -> Registry {
    with_gate(db, Arc::default()).await
}

/// A registry on `db`'s records, confirmations and audit, whose `slow_report` finishes when `gate` is
/// notified.
async fn with_gate(db: &Db, gate: Arc<Gate>) -> Registry {
    let builder = Registry::builder()
        .state(gate)
        .settings("search_catalogue", json!({ "max_rows": 20 }));
    db.serve(builder).load().await.unwrap()
}

async fn record(registry: &Registry, tool: &str) -> ToolRecord {
    let records = registry.records().unwrap().load().await.unwrap();
    records.tools[tool].clone()
}

fn names(registry: &Registry, caller: &Caller) -> Vec<String> {
    registry
        .list(caller)
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

fn lists(registry: &Registry, tool: &str) -> bool {
    names(registry, &clerk()).iter().any(|name| name == tool)
}

/// Waits, without a deadline of its own, until `done`; the test's timeout bounds it.
async fn wait_until(done: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the change arrives");
}
