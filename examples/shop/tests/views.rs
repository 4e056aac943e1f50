//! The charts and tables as a person sees them: the shop serves its tools and its MCP App over HTTP,
//! and headless Chromium (Debian's `chromium`) loads the App inside a small test host that plays the MCP
//! Apps host's part, hands it each tool result, and reports what was drawn. Each view is saved as a
//! screenshot in `target/tmp/views/`.
//!
//! `.ci/run` installs Chromium; without it these tests say that they skipped, except in CI
//! (`TOOLGATE_REQUIRE_CLIENTS`), where they fail.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the client tests, which use all of it
mod real_clients;

use std::path::Path;
use std::process::Command;

use real_clients::{Served, chromium};
use serde_json::{Value, json};

const SHOP: &str = env!("CARGO_BIN_EXE_example-shop");
const HOST: &str = include_str!("views/host.html");

/// One MCP session with the shop over Streamable HTTP, as the manager.
struct Session {
    http: reqwest::Client,
    url: String,
    id: Option<String>,
    next: u64,
}

impl Session {
    async fn open(url: &str) -> Session {
        let mut session = Session {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            id: None,
            next: 1,
        };
        let capabilities = json!({ "extensions": { "io.modelcontextprotocol/ui": { "mimeTypes": ["text/html;profile=mcp-app"] } } });
        let init = json!({ "protocolVersion": "2025-11-25", "capabilities": capabilities,
                           "clientInfo": { "name": "views-test", "version": "1" } });
        let initialized = session.request("initialize", init).await;
        assert_eq!(
            initialized["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
            json!({}),
            "the shop declares the MCP Apps extension: {initialized}"
        );
        session
            .send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        session
    }

    async fn send(&mut self, body: Value) -> reqwest::Response {
        let mut request = self
            .http
            .post(&self.url)
            .bearer_auth("manager-token")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(id) = &self.id {
            request = request.header("mcp-session-id", id);
        }
        let response = request.send().await.expect("the shop answers");
        if let Some(id) = response.headers().get("mcp-session-id") {
            self.id = Some(id.to_str().unwrap().to_owned());
        }
        response
    }

    /// A request's result, from a JSON body or the first message of an event stream.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let text = self.send(body).await.text().await.unwrap();
        let message = text
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.contains("\"id\""))
            .unwrap_or(&text);
        let message: Value =
            serde_json::from_str(message).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(message["error"].is_null(), "{method}: {message}");
        message["result"].clone()
    }

    async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self
            .request(
                "tools/call",
                json!({ "name": tool, "arguments": arguments }),
            )
            .await;
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result
    }
}

/// Loads the App in the test host with `result`, saves a screenshot as `name.png`, and returns what the
/// host saw it draw.
fn look(chromium: &Path, view: &str, tool: &str, result: &Value, name: &str) -> Value {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("views");
    std::fs::create_dir_all(&dir).unwrap();
    // JSON in a script: `</` is written `<\/` so that no string can end the script early.
    let script = |value: &Value| value.to_string().replace("</", "<\\/");
    let page = HOST
        .replace("/*TOOL*/", tool)
        .replace("/*VIEW*/", &script(&Value::from(view)))
        .replace("/*RESULT*/", &script(result));
    let host = dir.join(format!("{name}.html"));
    std::fs::write(&host, page).unwrap();
    let url = format!("file://{}", host.display());
    let run = |extra: &[&str]| {
        // A profile of its own: browsers sharing one hand their pages to whichever started first.
        let profile = dir.join(format!("{name}-profile"));
        let output = Command::new(chromium)
            .arg(format!("--user-data-dir={}", profile.display()))
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .args([
                "--no-first-run",
                "--disable-extensions",
                "--virtual-time-budget=10000",
            ])
            .args(extra)
            .arg(&url)
            .output()
            .expect("chromium runs");
        assert!(
            output.status.success(),
            "chromium: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    };
    let screenshot = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&screenshot);
    run(&[
        &format!("--screenshot={}", screenshot.display()),
        "--window-size=760,470",
        "--run-all-compositor-stages-before-draw",
    ]);
    let png = std::fs::read(&screenshot).expect("a screenshot was saved");
    assert!(
        png.starts_with(b"\x89PNG"),
        "{} is a PNG",
        screenshot.display()
    );

    let dom = String::from_utf8(run(&["--dump-dom"]).stdout).unwrap();
    let report = dom
        .split_once("<pre id=\"report\">")
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(report, _)| {
            report
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&")
        })
        .unwrap_or_default();
    let seen: Value = serde_json::from_str(&report)
        .unwrap_or_else(|e| panic!("{name}: {e}; the host page reported: {dom}"));
    assert_eq!(
        seen["seen"].as_array().map(|s| &s[..2]),
        Some(
            &[
                json!("ui/initialize"),
                json!("ui/notifications/initialized")
            ][..]
        ),
        "the App connects as the MCP Apps protocol says: {seen}"
    );
    assert!(
        seen["sizes"]
            .as_array()
            .is_some_and(|s| s.iter().any(|h| h.as_f64() > Some(20.0))),
        "{seen}"
    );
    assert_eq!(seen["ran"], false, "nothing injected ran: {seen}");
    seen
}

#[tokio::test]
async fn every_chart_type_and_a_table_are_drawn_in_a_real_browser() {
    let Some(chromium) = chromium() else { return };
    let shop = Served::start(SHOP);
    let mut session = Session::open(&shop.url).await;

    let tools = session.request("tools/list", json!({})).await;
    let app_tools: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["_meta"]["ui"]["resourceUri"] == "ui://toolgate/view.html")
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(app_tools, ["draw_chart", "orders_per_day", "show_table"]);
    let resources = session.request("resources/list", json!({})).await;
    assert_eq!(
        resources["resources"][0]["mimeType"],
        "text/html;profile=mcp-app"
    );
    let read = session
        .request(
            "resources/read",
            json!({ "uri": "ui://toolgate/view.html" }),
        )
        .await;
    let view = read["contents"][0]["text"]
        .as_str()
        .expect("the App's HTML")
        .to_owned();
    assert!(
        !view.contains("src=\"http") && !view.contains("href=\"http"),
        "the App fetches nothing"
    );

    // The line: the shop's own tool, straight from its query.
    let line = session.call("orders_per_day", json!({})).await;
    let seen = look(&chromium, &view, "orders_per_day", &line, "line");
    assert_eq!(
        (
            seen["drawn"].as_str(),
            seen["lines"].as_u64(),
            seen["points"].as_u64()
        ),
        (Some("chart"), Some(1), Some(7)),
        "{seen}"
    );
    assert_eq!(seen["title"], "Orders per day");

    let bar = json!({ "type": "bar", "title": "Revenue by quarter (kEUR)", "labels": ["Q1", "Q2", "Q3", "Q4"],
        "datasets": [{ "label": "2025", "data": [120, 135, 128, 160] }, { "label": "2026", "data": [131, 149, 152, 171] }] });
    let result = session.call("draw_chart", bar).await;
    let seen = look(&chromium, &view, "draw_chart", &result, "bar");
    assert_eq!(seen["bars"], 8, "one bar per label and dataset: {seen}");

    for kind in ["pie", "doughnut"] {
        let slices = json!({ "type": kind, "title": "Orders by status", "labels": ["pending", "confirmed", "shipped", "returned"],
            "datasets": [{ "label": "Orders", "data": [10, 10, 10, 0] }] });
        let result = session.call("draw_chart", slices).await;
        let seen = look(&chromium, &view, "draw_chart", &result, kind);
        assert_eq!(
            seen["slices"],
            json!(["pending", "confirmed", "shipped"]),
            "an empty slice is not drawn: {seen}"
        );
    }

    let injected = "<img src=x onerror=\"window.parent.__injected=true\">";
    let table = json!({ "title": "Open orders", "columns": [
            { "title": "Order" }, { "title": "Customer" }, { "title": "Total (EUR)", "type": "number" },
            { "title": "Placed", "type": "date" }, { "title": "Paid", "type": "boolean" }],
        "rows": [
            { "cells": ["RO-00030", "Ada Lovelace", 1290.5, "2026-11-30", true], "url": "https://shop.example/admin/orders/RO-00030" },
            { "cells": ["RO-00029", injected, 74, "2026-11-30", false] },
            { "cells": ["RO-00028", "Grace Hopper", null, "2026-11-29", null], "url": "https://shop.example/admin/orders/RO-00028" }] });
    let result = session.call("show_table", table).await;
    let seen = look(&chromium, &view, "show_table", &result, "table");
    assert_eq!(seen["drawn"], "table", "{seen}");
    let height = seen["sizes"]
        .as_array()
        .and_then(|s| s.last())
        .and_then(Value::as_f64);
    assert!(
        height.is_some_and(|h| h > 100.0 && h < 360.0),
        "the App reports its content's height, not the frame's: {seen}"
    );
    assert_eq!(
        seen["headings"],
        json!(["Order", "Customer", "Total (EUR)", "Placed", "Paid"])
    );
    assert_eq!(seen["rows"], 3);
    assert_eq!(
        seen["links"],
        json!([
            "https://shop.example/admin/orders/RO-00030",
            "https://shop.example/admin/orders/RO-00028"
        ])
    );
    let cells: Vec<&str> = seen["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(
        cells[..5],
        ["RO-00030", "Ada Lovelace", "1,290.5", "2026-11-30", "yes"]
    );
    assert_eq!(cells[6], injected, "markup in a cell is shown as text");
    assert_eq!(
        (seen["images"].as_u64(), seen["scripts"].as_u64()),
        (Some(0), Some(1)),
        "{seen}"
    );
}

#[tokio::test]
async fn a_result_without_a_chart_or_table_says_so_instead_of_drawing() {
    let Some(chromium) = chromium() else { return };
    let shop = Served::start(SHOP);
    let mut session = Session::open(&shop.url).await;
    let read = session
        .request(
            "resources/read",
            json!({ "uri": "ui://toolgate/view.html" }),
        )
        .await;
    let view = read["contents"][0]["text"].as_str().unwrap().to_owned();
    let overview = session.call("shop_overview", json!({})).await;
    let seen = look(&chromium, &view, "shop_overview", &overview, "nothing");
    assert_eq!(seen["drawn"], "problem");
    assert_eq!(
        seen["problem"],
        "This result has no chart or table to show."
    );
}
