//! The operator's records in a real SQLite database: a live registry that changes while it serves, edits
//! that are checked and recorded, a sync that never deletes, and changes that reach another process.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::Notify;
use toolgate::ErrorKind;
use toolgate::prelude::*;
use toolgate::sqlite::{SqliteStore, rusqlite};
use toolgate::store::{Change, Edit, RecordErrorKind, Status, SyncPlan, ToolRecord};

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

/// Waits until the test lets it finish.
#[tool(public, read_only)]
async fn slow_report(gate: State<Arc<Notify>>) -> &'static str {
    gate.notified().await;
    "report done"
}

fn clerk() -> Caller {
    Caller::new("clerk").with_abilities(["catalogue.view"])
}

/// A database file of its own, removed when the test ends.
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("toolgate-{name}-{}.db", std::process::id()));
        let db = TempDb(path);
        db.remove();
        db
    }

    fn open(&self) -> SqliteStore {
        SqliteStore::open(&self.0).unwrap()
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        self.remove();
    }
}

async fn registry(store: SqliteStore) -> Registry {
    with_gate(store, Arc::new(Notify::new())).await
}

/// A registry whose `slow_report` finishes when `gate` is notified.
async fn with_gate(store: SqliteStore, gate: Arc<Notify>) -> Registry {
    // ANCHOR: load
    Registry::builder()
        .state(gate)
        .settings("search_catalogue", json!({ "max_rows": 20 }))
        .records(store)
        .load()
        .await
        .unwrap()
    // ANCHOR_END: load
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

#[tokio::test]
async fn a_registry_with_records_serves_nothing_until_they_are_loaded() {
    let store = SqliteStore::in_memory().unwrap();
    let registry = Registry::builder()
        .state(Arc::new(Notify::new()))
        .records(store)
        .build()
        .unwrap();
    assert!(
        names(&registry, &clerk()).is_empty(),
        "fails closed before the records are read"
    );
    assert!(registry.refresh().await.unwrap());
    assert!(names(&registry, &clerk()).contains(&"search_catalogue".to_owned()));
}

#[tokio::test]
async fn a_disabled_tool_vanishes_for_the_next_call_while_a_call_in_flight_finishes() {
    let gate = Arc::new(Notify::new());
    let registry = with_gate(SqliteStore::in_memory().unwrap(), Arc::clone(&gate)).await;
    registry.sync("deploy").await.unwrap();

    let in_flight = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(&clerk(), "slow_report", json!({})).await }
    });
    tokio::task::yield_now().await;
    // ANCHOR: edit
    let before = registry.revision();
    let edit = Edit::new(
        "ops",
        &record(&registry, "slow_report").await,
        Change::Disable,
    );
    let revision = registry.edit(&edit).await.unwrap();
    // ANCHOR_END: edit
    assert!(revision > before && registry.revision() == revision);

    assert!(!names(&registry, &clerk()).contains(&"slow_report".to_owned()));
    let refused = registry.call(&clerk(), "slow_report", json!({})).await;
    assert_eq!(
        refused.error().unwrap().kind(),
        ErrorKind::Unavailable,
        "{refused:?}"
    );

    gate.notify_one();
    let finished = in_flight.await.unwrap();
    assert_eq!(
        finished.into_result().text_for_model(),
        "report done",
        "it ran on its snapshot"
    );
}

#[tokio::test]
async fn settings_that_do_not_match_their_schema_are_refused_naming_the_field() {
    let registry = registry(SqliteStore::in_memory().unwrap()).await;
    registry.sync("deploy").await.unwrap();
    let schema = registry
        .get("search_catalogue")
        .unwrap()
        .settings_schema()
        .cloned()
        .unwrap();
    assert_eq!(
        schema["properties"]["max_rows"]["description"],
        "At most this many rows."
    );

    let before = registry.revision();
    let current = record(&registry, "search_catalogue").await;
    let wrong = Edit::new(
        "ops",
        &current,
        Change::Settings(json!({ "max_rows": "many" })),
    );
    let error = registry.edit(&wrong).await.unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Invalid);
    assert!(error.message().contains("`max_rows`"), "{error}");
    assert_eq!(registry.revision(), before, "nothing changed");

    let right = Edit::new("ops", &current, Change::Settings(json!({ "max_rows": 5 })));
    registry.edit(&right).await.unwrap();
    let outcome = registry
        .call(&clerk(), "search_catalogue", json!({ "query": "lamps" }))
        .await;
    assert_eq!(outcome.into_result().text_for_model(), "5 rows for lamps");

    let built = Registry::builder()
        .state(Arc::new(Notify::new()))
        .settings("search_catalogue", json!({ "max_rows": -1 }))
        .build()
        .unwrap_err();
    assert!(built.to_string().contains("`max_rows`"), "{built}");
}

#[tokio::test]
async fn an_operator_may_require_more_abilities_never_fewer() {
    let registry = registry(SqliteStore::in_memory().unwrap()).await;
    registry.sync("deploy").await.unwrap();
    let current = record(&registry, "search_catalogue").await;

    let loosen = Edit::new("ops", &current, Change::Unrequire("catalogue.view".into()));
    let error = registry.edit(&loosen).await.unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Invalid);
    assert!(error.message().contains("never less"), "{error}");

    let tighten = Edit::new("ops", &current, Change::Require("catalogue.audit".into()));
    registry.edit(&tighten).await.unwrap();
    assert!(!names(&registry, &clerk()).contains(&"search_catalogue".to_owned()));
    let auditor = Caller::new("auditor").with_abilities(["catalogue.view", "catalogue.audit"]);
    assert!(names(&registry, &auditor).contains(&"search_catalogue".to_owned()));
    let refused = registry
        .call(&clerk(), "search_catalogue", json!({ "query": "x" }))
        .await;
    assert_eq!(
        refused.error().unwrap().kind(),
        ErrorKind::UnknownTool,
        "listed to no one it was not granted to"
    );
}

#[tokio::test]
async fn the_second_of_two_operators_editing_one_record_sees_the_first_ones_change() {
    let registry = registry(SqliteStore::in_memory().unwrap()).await;
    registry.sync("deploy").await.unwrap();
    let seen = record(&registry, "slow_report").await;
    registry
        .edit(&Edit::new("ana", &seen, Change::Disable))
        .await
        .unwrap();
    let error = registry
        .edit(&Edit::new("ben", &seen, Change::Enable))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Conflict);
    assert!(
        !record(&registry, "slow_report").await.enabled,
        "ana's change stands"
    );

    let history = registry.records().unwrap().history(10).await.unwrap();
    assert_eq!(
        (history[0].actor.as_str(), history[0].tool.as_str()),
        ("ana", "slow_report")
    );
    assert_eq!(history[0].what, json!({ "change": "disable" }));
}

#[tokio::test]
async fn a_sync_marks_vanished_tools_missing_and_never_deletes_them() {
    let registry = registry(SqliteStore::in_memory().unwrap()).await;
    let store = registry.records().unwrap();
    // A tool an earlier version of the binary had, with the operator's settings.
    let mut old = ToolRecord::example();
    old.name = "old_export".into();
    old.settings = Some(json!({ "bucket": "reports" }));
    let mut plan = SyncPlan::default();
    plan.new.push(old);
    store.apply_sync("earlier", &plan).await.unwrap();

    let plan = registry.sync_plan().await.unwrap();
    assert_eq!(plan.vanished, ["old_export"]);
    assert!(
        plan.to_string().contains("+ search_catalogue: new"),
        "{plan}"
    );
    registry.sync("deploy").await.unwrap();
    let kept = record(&registry, "old_export").await;
    assert_eq!(
        (kept.status, kept.settings),
        (Status::Missing, Some(json!({ "bucket": "reports" })))
    );
    assert!(
        registry.sync_plan().await.unwrap().is_empty(),
        "a second sync has nothing to do"
    );

    let present = store.delete("ops", "search_catalogue").await.unwrap_err();
    assert_eq!(present.kind(), RecordErrorKind::Invalid);
    store.delete("ops", "old_export").await.unwrap();
    assert!(!store.load().await.unwrap().tools.contains_key("old_export"));
}

#[tokio::test]
async fn a_sync_whose_one_upsert_fails_writes_nothing() {
    let db = TempDb::new("failed-sync");
    let registry = registry(db.open()).await;
    let store = registry.records().unwrap();
    let mut other = ToolRecord::example();
    other.name = "old_export".into();
    let mut plan = SyncPlan::default();
    plan.new.push(other);
    store.apply_sync("earlier", &plan).await.unwrap();
    let before = store.load().await.unwrap();

    // The database refuses to write one record, as a full disk or a constraint would.
    let raw = rusqlite::Connection::open(&db.0).unwrap();
    raw.execute_batch(
        "CREATE TRIGGER refuse_one BEFORE INSERT ON toolgate_tools WHEN NEW.name = 'slow_report' \
         BEGIN SELECT RAISE(ABORT, 'disk full'); END;",
    )
    .unwrap();
    let error = registry.sync("deploy").await.unwrap_err();
    assert_eq!(error.kind(), RecordErrorKind::Database);
    assert_eq!(
        store.load().await.unwrap(),
        before,
        "neither the others nor itself changed"
    );
    assert_eq!(
        record(&registry, "old_export").await.status,
        Status::Present,
        "not marked missing"
    );
}

#[tokio::test]
async fn a_change_in_one_process_reaches_another_within_a_second() {
    let db = TempDb::new("two-processes");
    let (one, two) = (registry(db.open()).await, registry(db.open()).await);
    one.sync("deploy").await.unwrap();
    tokio::spawn(two.watch(Duration::from_millis(100)));
    wait_until(|| names(&two, &clerk()).contains(&"slow_report".to_owned())).await;

    let started = Instant::now();
    one.edit(&Edit::new(
        "ops",
        &record(&one, "slow_report").await,
        Change::Disable,
    ))
    .await
    .unwrap();
    wait_until(|| !names(&two, &clerk()).contains(&"slow_report".to_owned())).await;
    println!(
        "SQLite: a change reached the second registry after {:?}",
        started.elapsed()
    );
    assert_eq!(two.revision(), one.revision());
}

#[tokio::test]
async fn a_database_from_a_newer_toolgate_is_refused() {
    let db = TempDb::new("newer");
    drop(db.open());
    rusqlite::Connection::open(&db.0)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let error = SqliteStore::open(&db.0).unwrap_err();
    assert!(error.to_string().contains("newer toolgate"), "{error}");
}

#[tokio::test]
async fn every_audit_row_names_the_policy_revision_it_ran_under() {
    let store = SqliteStore::in_memory().unwrap();
    let registry = Registry::builder()
        .state(Arc::new(Notify::new()))
        .settings("search_catalogue", json!({ "max_rows": 20 }))
        .audit(store.audit())
        .records(store.clone())
        .load()
        .await
        .unwrap();
    registry.sync("deploy").await.unwrap();
    let revision = registry.revision();
    registry
        .call(&clerk(), "search_catalogue", json!({ "query": "x" }))
        .await;
    assert_eq!(store.audit_records(1).unwrap()[0].revision, Some(revision));
}

/// Waits, without a deadline of its own, until `done`; the test's timeout bounds it.
async fn wait_until(done: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the change arrives");
}

/// Counts the `tools/list_changed` notifications a client receives.
#[derive(Clone, Default)]
struct Changes(Arc<std::sync::atomic::AtomicUsize>);

impl rmcp::ClientHandler for Changes {
    async fn on_tool_list_changed(&self, _: rmcp::service::NotificationContext<rmcp::RoleClient>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_connected_mcp_client_is_told_and_lists_without_the_disabled_tool() {
    use rmcp::ServiceExt;
    let registry = registry(SqliteStore::in_memory().unwrap()).await;
    registry.sync("deploy").await.unwrap();
    let server = toolgate::mcp::McpServer::new(registry.clone()).default_caller(clerk());
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let handler = server.handler();
    tokio::spawn(async move {
        let running = handler.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let changes = Changes::default();
    let client = changes.clone().serve(client_io).await.unwrap();
    let listed = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    };
    assert!(listed(client.list_all_tools().await.unwrap()).contains(&"slow_report".to_owned()));

    let edit = Edit::new(
        "ops",
        &record(&registry, "slow_report").await,
        Change::Disable,
    );
    registry.edit(&edit).await.unwrap();
    wait_until(|| changes.0.load(std::sync::atomic::Ordering::SeqCst) > 0).await;
    assert!(!listed(client.list_all_tools().await.unwrap()).contains(&"slow_report".to_owned()));
    client.cancel().await.unwrap();
}

/// The JSON the admin API answers to the operator at `url`.
async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    let response = http.get(url).bearer_auth("ops-token").send().await.unwrap();
    response.json().await.unwrap()
}

/// The shop-like server with the admin API on loopback, and its URL.
async fn admin_server() -> (Registry, String) {
    use toolgate::mcp::admin::ADMIN_ABILITY;
    use toolgate::mcp::{BearerTokens, McpServer};
    let registry = registry(SqliteStore::in_memory().unwrap()).await;
    registry.sync("deploy").await.unwrap();
    let tokens = BearerTokens::new()
        .token(
            "ops-token",
            Caller::new("ops@example.com").with_abilities([ADMIN_ABILITY]),
        )
        .token("clerk-token", clerk());
    let server = McpServer::new(registry.clone())
        .authenticator(tokens)
        .admin_api();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    (registry, url)
}

#[tokio::test]
async fn the_admin_api_needs_the_admin_ability_and_changes_nothing_without_it() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let tools = format!("{url}/admin/tools");
    assert_eq!(http.get(&tools).send().await.unwrap().status(), 401);
    let as_clerk = http
        .get(&tools)
        .bearer_auth("clerk-token")
        .send()
        .await
        .unwrap();
    assert_eq!(as_clerk.status(), 403);
    let before = registry.revision();
    let edit = json!({ "version": 1, "change": { "change": "disable" } });
    let refused = http
        .post(format!("{url}/admin/tools/slow_report/edit"))
        .bearer_auth("clerk-token")
        .json(&edit)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert_eq!(registry.revision(), before, "nothing changed");
    let elsewhere = http
        .get(&tools)
        .bearer_auth("ops-token")
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        elsewhere.status(),
        403,
        "a host the server does not answer for"
    );
}

#[tokio::test]
async fn the_admin_api_edits_records_with_the_same_checks_as_everywhere() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let ops = |request: reqwest::RequestBuilder| request.bearer_auth("ops-token");
    let listed = get_json(&http, &format!("{url}/admin/tools")).await;
    let slow = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "slow_report")
        .unwrap();
    let version = slow["version"].as_u64().unwrap();
    let search = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_catalogue")
        .unwrap();

    let edit_url = format!("{url}/admin/tools/slow_report/edit");
    let disable = json!({ "version": version, "change": { "change": "disable" } });
    let done = ops(http.post(&edit_url))
        .json(&disable)
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    let done: serde_json::Value = done.json().await.unwrap();
    assert_eq!(done["tool"]["enabled"], false);
    assert!(
        !names(&registry, &clerk()).contains(&"slow_report".to_owned()),
        "served at once"
    );

    let stale = ops(http.post(&edit_url))
        .json(&disable)
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 409, "made against a version that moved");
    let settings = json!({ "version": search["version"], "change": { "change": "settings", "value": { "max_rows": "lots" } } });
    let wrong = ops(http.post(format!("{url}/admin/tools/search_catalogue/edit")))
        .json(&settings)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 422);
    let wrong: serde_json::Value = wrong.json().await.unwrap();
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`max_rows`"),
        "{wrong}"
    );
    let unknown = ops(http.get(format!("{url}/admin/tools/no_such_tool")))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    let history = get_json(&http, &format!("{url}/admin/history?limit=1")).await;
    assert_eq!(history[0]["actor"], "ops@example.com");
    let plan = get_json(&http, &format!("{url}/admin/sync")).await;
    assert_eq!(plan["applied"], false);
}

#[tokio::test]
async fn the_openapi_document_describes_every_route() {
    let (_, url) = admin_server().await;
    let http = reqwest::Client::new();
    let document = get_json(&http, &format!("{url}/admin/openapi.json")).await;
    assert_eq!(document["openapi"], "3.1.0");
    let source = include_str!("../runtime/src/mcp/admin.rs");
    let routes: Vec<&str> = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix(".route(\""))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert!(routes.len() >= 6, "{routes:?}");
    for route in routes {
        assert!(
            document["paths"].get(route).is_some(),
            "`{route}` is not in the OpenAPI document"
        );
    }
}
