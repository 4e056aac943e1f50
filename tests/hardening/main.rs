//! The findings of the December 2026 red team (`redteam-turn3.md`), each attacked again over the transport
//! where it happened: HTTP for callers, a hostile MCP server of our own (`hostile.py`, raw JSON-RPC) for
//! federation, the operator's commands for what they print. Every test here failed before the fix.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

mod admin;
mod budgets;
mod identifiers;
mod policy;
mod remotes;
mod shares;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::http::{BearerTokens, HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::operator::AdminApi;
use toolgate::prelude::*;
use toolgate::store::Database;
use toolgate::{DynamicTool, RegistryBuilder};

/// Waits `ms` milliseconds.
#[tool(public, read_only, task)]
async fn slow(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    "waited".to_owned()
}

/// How many calls of a [`gauged`] tool run now, and the most that ever ran at once.
#[derive(Debug, Default)]
struct Gauge {
    running: AtomicUsize,
    most: AtomicUsize,
}

impl Gauge {
    fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

/// A tool `name` that waits `ms` milliseconds (it may run as a task), counting in `gauge` how many run
/// at once.
fn gauged(name: &str, gauge: &std::sync::Arc<Gauge>) -> DynamicTool {
    let gauge = std::sync::Arc::clone(gauge);
    let schema = json!({ "type": "object", "properties": { "ms": { "type": "integer" } }, "required": ["ms"] });
    DynamicTool::new(name, "Waits.", schema, move |arguments: Value, _| {
        let gauge = std::sync::Arc::clone(&gauge);
        async move {
            let now = gauge.running.fetch_add(1, Ordering::SeqCst) + 1;
            gauge.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(arguments["ms"].as_u64().unwrap())).await;
            gauge.running.fetch_sub(1, Ordering::SeqCst);
            "waited"
        }
    })
    .public()
    .read_only()
    .task(toolgate::TaskSupport::Optional)
}

/// Exports the orders: at most three runs per conversation.
#[tool(ability = "orders.view", read_only, max_runs = 3)]
async fn export_orders() -> &'static str {
    "exported"
}

/// Reads the secret ledger; runs only as a task.
#[tool(ability = "t.secret", read_only, task = "required")]
async fn hidden_job() -> &'static str {
    "secret"
}

/// What `tuned` runs with.
#[derive(Deserialize, JsonSchema)]
struct Tuning {
    /// An API key.
    key: String,
    /// Rows at most.
    limit: u32,
}

/// Says which settings it runs with.
#[tool(ability = "orders.view", read_only)]
async fn tuned(settings: Settings<Tuning>) -> String {
    format!("key={} limit={}", settings.0.key, settings.0.limit)
}

/// Says hello.
#[tool(public, read_only)]
async fn hello() -> &'static str {
    "hello"
}

/// The tools of these tests, by name.
const TOOLS: [&str; 5] = ["slow", "export_orders", "hidden_job", "tuned", "hello"];

fn vera() -> Caller {
    Caller::new("vera@shop.example")
        .with_role("Viewer")
        .with_abilities(["orders.view"])
}

fn max() -> Caller {
    Caller::new("max@shop.example")
        .with_role("Manager")
        .with_abilities(["orders.view", "orders.manage"])
}

fn olga() -> Caller {
    Caller::new("olga@shop.example")
        .with_role("Operator")
        .with_abilities(["orders.view", toolgate::operator::ADMIN_ABILITY])
}

fn bot() -> Caller {
    Caller::new("support-bot")
        .with_abilities(["orders.view"])
        .with_profile("narrow")
}

fn tokens() -> BearerTokens {
    BearerTokens::new()
        .token("viewer-token", vera())
        .token("manager-token", max())
        .token("admin-token", olga())
        .token("bot-token", bot())
}

/// A registry of these tests' tools on `db`, synced, with `tuned`'s settings.
async fn registry(db: &Database, builder: RegistryBuilder) -> Registry {
    let registry = builder
        .compiled_tools(TOOLS)
        .settings("tuned", json!({ "key": "BASE-KEY", "limit": 20 }))
        .database(db)
        .load()
        .await
        .unwrap();
    registry.sync("deploy").await.unwrap();
    registry
}

/// A fresh SQLite database in a file of its own under the target's scratch directory.
async fn database(name: &str) -> (Database, std::path::PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hardening");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{}.db", std::process::id()));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let db = Database::open(path.to_str().unwrap()).await.unwrap();
    (db, path)
}

/// `registry` served over Streamable HTTP on loopback with the tokens above, delegations and the admin
/// API; its base URL (without `/mcp`).
async fn serve(registry: &Registry, options: HttpOptions) -> String {
    let server = HttpServer::new(McpServer::new(registry.clone()))
        .authenticator(tokens())
        .options(options)
        .accept_delegations()
        .mount(AdminApi);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    url
}

/// `POST path` with `token` and a JSON body: the status and the body.
async fn post(url: &str, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A delegation token for `to` from the caller of `token`, with `extra` fields in the request.
async fn delegate(url: &str, token: &str, to: &str, extra: Value) -> String {
    let mut asked = json!({ "to": to, "expires_in_secs": 600 });
    asked
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let (status, body) = post(url, "/delegations", token, &asked).await;
    assert_eq!(status, 201, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// The options of a server without sessions, answering JSON: one request per call.
fn stateless() -> HttpOptions {
    HttpOptions::default().stateless(true).json_response(true)
}

/// One JSON-RPC request to a [`stateless`] server as the caller of `token`: the JSON-RPC answer.
async fn rpc(url: &str, token: &str, method: &str, params: Value) -> Value {
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let response = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&request)
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// `tools/call` of `tool` with `arguments` (see [`rpc`]).
async fn call(url: &str, token: &str, tool: &str, arguments: Value) -> Value {
    rpc(
        url,
        token,
        "tools/call",
        json!({ "name": tool, "arguments": arguments }),
    )
    .await
}

/// The text of a tool result in a JSON-RPC answer, and whether it is an error.
fn result_text(answer: &Value) -> (String, bool) {
    let result = &answer["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    (text.to_owned(), result["isError"] == true)
}

/// The store of `db`'s file as SQLite, for looking at its tables directly.
fn sqlite_count(path: &Path, sql: &str) -> i64 {
    let connection = toolgate::sqlite::rusqlite::Connection::open(path).unwrap();
    connection.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[path = "../support/tasks_client.rs"]
mod tasks_client;

use tasks_client::{Client, call as call_params, connect as connect_mcp};

/// A 2026-07-28 client of the server at `url` as the caller of `token`, declaring tasks or not.
async fn connect(url: &str, token: &str, tasks: bool) -> Client {
    connect_mcp(&format!("{url}/mcp"), token, tasks).await
}

/// The id of the task a `tools/call` answered with.
async fn task_of(client: &Client, name: &str, arguments: Value) -> Result<String, String> {
    match client
        .peer()
        .call_tool_once(call_params(name, arguments))
        .await
    {
        Ok(rmcp::model::CallToolResponse::Task(created)) => Ok(created.task.task_id),
        Ok(other) => Err(format!("{other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

/// Waits until `ready` holds, for at most a minute on a loaded machine; then fails saying what never
/// happened.
async fn until(what: &str, mut ready: impl AsyncFnMut() -> bool) {
    for _ in 0..1200 {
        if ready().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen");
}
