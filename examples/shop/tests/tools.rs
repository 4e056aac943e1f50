//! The shop's tools against a real (in-memory) SQLite database, through the registry.

use example_shop::db::Status;
use example_shop::{Db, manager, registry, viewer};
use serde_json::json;
use toolgate::registry::Config;
use toolgate::{Outcome, Registry};

// ANCHOR: registry_test
async fn shop() -> (Db, Registry) {
    let db = Db::open(":memory:").expect("sqlite opens");
    let store = toolgate::store::Database::open(":memory:")
        .await
        .expect("sqlite opens");
    let registry = registry(db.clone(), &store, Config::default())
        .await
        .expect("the shop's tools are consistent");
    (db, registry)
}

#[tokio::test]
async fn the_overview_counts_the_seeded_orders() {
    let (_, registry) = shop().await;
    let result = registry
        .call(&viewer(), "shop_overview", json!({}))
        .await
        .into_result();
    let summary = result.structured.expect("structured");
    assert_eq!(
        (
            summary["pending"].as_u64(),
            summary["confirmed"].as_u64(),
            summary["shipped"].as_u64()
        ),
        (Some(10), Some(10), Some(10))
    );
    assert_eq!(
        registry.list(&viewer())[0].name(),
        "shop_overview",
        "the overview is listed first"
    );
}

#[tokio::test]
async fn orders_per_day_is_a_line_chart_straight_from_the_query() {
    let (_, registry) = shop().await;
    let result = registry
        .call(&viewer(), "orders_per_day", json!({}))
        .await
        .into_result();
    let structured = result.structured.as_ref().unwrap();
    assert_eq!(structured["chart"]["type"], "line");
    assert_eq!(structured["chart"]["labels"][0], "2026-11-24");
    assert_eq!(
        structured["chart"]["datasets"][0]["data"],
        json!([2.0, 3.0, 4.0, 3.0, 5.0, 6.0, 7.0])
    );
    assert_eq!(structured["total"], 30);
    let text = result.text_for_model();
    assert!(
        text.starts_with(
            "Orders per day (line chart)\n|  | Orders |\n|---|---|\n| 2026-11-24 | 2 |"
        ),
        "{text}"
    );
    assert!(text.ends_with("{\"total\":30}"), "{text}");
    assert!(registry.get("orders_per_day").unwrap().shows_view());
}

#[tokio::test]
async fn the_export_is_every_order_as_csv_three_times_per_conversation() {
    let (_, registry) = shop().await;
    let export = registry.call(&viewer(), "export_orders", json!({})).await;
    let csv = export.into_result().text_for_model();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 31, "a header and 30 orders");
    assert_eq!(lines[0], "number,customer,status,total_eur,carrier");
    let shipped = lines.iter().find(|l| l.starts_with("RO-00002,")).unwrap();
    assert!(
        shipped.contains(",shipped,") && shipped.ends_with(",DHL"),
        "{shipped}"
    );
    for _ in 0..2 {
        assert!(
            registry
                .call(&viewer(), "export_orders", json!({}))
                .await
                .is_done()
        );
    }
    let fourth = registry.call(&viewer(), "export_orders", json!({})).await;
    assert_eq!(
        fourth.error().map(toolgate::ToolError::kind),
        Some(toolgate::ErrorKind::LimitReached)
    );
}

#[tokio::test]
async fn search_pages_rows_with_urls() {
    let (_, registry) = shop().await;
    let page = registry
        .call(
            &viewer(),
            "search_orders",
            json!({ "query": "Lovelace", "limit": 2 }),
        )
        .await;
    let page = page.into_result().structured.expect("structured");
    assert_eq!(page["total"], 5);
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        page["rows"][0]["url"],
        "https://shop.example/admin/orders/RO-00030"
    );
    let shipped = registry
        .call(&viewer(), "search_orders", json!({ "status": "shipped" }))
        .await;
    assert_eq!(
        shipped.into_result().structured.expect("structured")["total"],
        10
    );
}

#[tokio::test]
async fn confirming_previews_first_and_writes_once_when_approved() {
    let (db, registry) = shop().await;
    let outcome = registry
        .call(&manager(), "confirm_order", json!({ "number": "RO-00003" }))
        .await;
    let Outcome::NeedsConfirmation(pending) = outcome else {
        panic!("expected a preview, got {outcome:?}")
    };
    assert_eq!(
        pending.preview().text(),
        "Confirm order RO-00003 for Katherine Johnson (56.57 EUR)."
    );
    assert_eq!(
        db.order("RO-00003").unwrap().unwrap().status,
        Status::Pending,
        "the preview wrote nothing"
    );

    let done = registry.confirm(&manager(), pending.confirmation()).await;
    assert!(done.is_done(), "{done:?}");
    assert_eq!(
        db.order("RO-00003").unwrap().unwrap().status,
        Status::Confirmed
    );
    // A retry of the same approval returns the first result and writes nothing more.
    let again = registry.confirm(&manager(), pending.confirmation()).await;
    assert_eq!(again.into_result(), done.into_result());
}
// ANCHOR_END: registry_test

#[tokio::test]
async fn writes_refuse_orders_in_the_wrong_state_with_a_sentence() {
    let (db, registry) = shop().await;
    let outcome = registry
        .call(&manager(), "confirm_order", json!({ "number": "RO-00002" }))
        .await;
    assert_eq!(
        outcome.error().map(toolgate::ToolError::message),
        Some("Order RO-00002 is shipped, not pending; only pending orders can be confirmed.")
    );
    let ship = registry
        .call(&manager(), "ship_order", json!({ "number": "RO-00003" }))
        .await;
    assert_eq!(
        ship.error().map(toolgate::ToolError::message),
        Some("Order RO-00003 is not confirmed yet; confirm it before shipping.")
    );
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&manager(), "ship_order", json!({ "number": "RO-00001" }))
        .await
    else {
        panic!("RO-00001 is confirmed in the demo data")
    };
    assert_eq!(
        pending.preview().text(),
        "Ship order RO-00001 to Grace Hopper with DHL."
    );
    assert!(
        registry
            .confirm(&manager(), pending.confirmation())
            .await
            .is_done()
    );
    let shipped = db.order("RO-00001").unwrap().unwrap();
    assert_eq!(
        (shipped.status, shipped.carrier.as_deref()),
        (Status::Shipped, Some("DHL"))
    );
}

#[tokio::test]
async fn viewers_cannot_write() {
    let (db, registry) = shop().await;
    let outcome = registry
        .call(&viewer(), "confirm_order", json!({ "number": "RO-00003" }))
        .await;
    assert_eq!(
        outcome.into_result().text_for_model(),
        "[ERROR] Unknown tool `confirm_order`. List the tools to see which ones you can use.",
        "a viewer learns nothing of the writes she may not run"
    );
    assert_eq!(
        db.order("RO-00003").unwrap().unwrap().status,
        Status::Pending
    );
}

#[tokio::test]
async fn the_operators_file_pauses_shipping_without_recompiling() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/shop.toml");
    let config = Config::load(path).expect("deploy/shop.toml parses");
    let db = Db::open(":memory:").expect("sqlite opens");
    let store = toolgate::store::Database::open(":memory:")
        .await
        .expect("sqlite opens");
    let registry = registry(db, &store, config)
        .await
        .expect("deploy/shop.toml names real tools");
    let names: Vec<String> = registry
        .list(&manager())
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(
        names,
        [
            "shop_overview",
            "confirm_order",
            "draw_chart",
            "export_orders",
            "order_details",
            "orders_per_day",
            "search_orders",
            "show_table",
            "tool_search"
        ]
    );
    let refused = registry
        .call(&manager(), "ship_order", json!({ "number": "RO-00011" }))
        .await;
    assert_eq!(
        refused.error().map(|e| e.message()),
        Some("This tool is switched off.")
    );
}

#[tokio::test]
async fn the_support_bot_sees_only_what_the_operator_assigns_to_its_profile() {
    let (_, registry) = shop().await;
    let bot = example_shop::support_bot();
    let names = |registry: &Registry| -> Vec<String> {
        registry
            .list(&bot)
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    };
    let operator = |args: &'static [&'static str]| {
        let line = ["toolgate", "--actor", "olga"].iter().chain(args).copied();
        toolgate::operator::run(&registry, line.collect::<Vec<_>>())
    };
    assert_eq!(operator(&["sync", "--apply"]).await.0, 0);
    assert_eq!(
        names(&registry),
        ["draw_chart", "show_table"],
        "no profile `support` yet: only the system tools, which show what the model hands them"
    );

    assert_eq!(operator(&["profiles", "create", "support"]).await.0, 0);
    let (code, out) = operator(&[
        "profiles",
        "assign",
        "support",
        "search_orders",
        "--settings",
        "{}",
    ])
    .await;
    assert_eq!(code, 1, "search_orders takes no settings: {out}");
    let (code, out) = operator(&["profiles", "assign", "support", "search_orders"]).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        names(&registry),
        ["draw_chart", "search_orders", "show_table"],
        "not the overview, not the order details"
    );
    let found = registry
        .call(
            &bot,
            "search_orders",
            json!({ "query": "Lovelace", "limit": 1 }),
        )
        .await;
    assert!(!found.into_result().is_error);
}

// ANCHOR: task_test
#[tokio::test]
async fn customer_totals_run_as_a_task_whose_result_outlives_the_caller() {
    let (_, registry) = shop().await;
    let call = toolgate::Call::new("customer_totals", json!({}));
    let task = registry
        .start_task(&manager(), call)
        .await
        .expect("stored, then started");
    let id = task.id().to_owned();
    drop(task);
    // Later, anywhere with the same database: the task by its id.
    let done = loop {
        let task = registry
            .task(&manager(), &id)
            .await
            .expect("the manager's task");
        if task.status != toolgate::store::TaskStatus::Working {
            break task;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(done.status, toolgate::store::TaskStatus::Completed);
    let totals = done.result.expect("a result").structured.expect("data");
    assert_eq!(
        totals[0]["customer"], "Grace Hopper",
        "the biggest spender first: {totals}"
    );
    assert_eq!(totals.as_array().map(Vec::len), Some(6), "six customers");
    assert!(
        registry.task(&viewer(), &id).await.is_err(),
        "the viewer does not see it"
    );
}
// ANCHOR_END: task_test

#[test]
fn an_operators_command_on_a_database_that_cannot_be_used_exits_3() {
    let dir = std::env::temp_dir().join(format!("shop-unusable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_a_database = dir.join("notes.db");
    std::fs::write(
        &not_a_database,
        "these are notes, not a database\n".repeat(100),
    )
    .unwrap();
    let missing = dir.join("no/such/folder/shop.db");
    for db in [&not_a_database, &missing] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_example-shop"))
            .args(["--db", db.to_str().unwrap(), "toolgate", "tools", "list"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(toolgate::operator::UNAVAILABLE),
            "{said}"
        );
        assert!(said.contains("the database cannot be used"), "{said}");
    }
}
