//! The registry served over MCP, driven by rmcp's client: in memory (as over stdio) and over Streamable
//! HTTP on loopback, with authentication, the HTTP safety checks, notifications and graceful shutdown.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use toolgate::http::{BearerTokens, HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::prelude::*;

/// Add two integers.
#[tool(public, read_only, idempotent)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Order {
    number: String,
}

/// List orders.
#[tool(
    ability = "orders.view",
    read_only,
    capability = "order_search",
    category = "orders"
)]
async fn list_orders(limit: Limit) -> Page<Order> {
    let orders = (1..=3)
        .map(|i| Order {
            number: format!("RO-{i}"),
        })
        .take(limit.as_usize());
    Page::new(3, orders, |o| format!("https://shop.example/{}", o.number))
}

/// Delete an order.
#[tool(ability = "orders.delete")]
async fn delete_order(number: String) -> Result<String, ToolError> {
    Err(ToolError::new(format!(
        "Order {number} is already shipped."
    )))
}

/// Count to three, reporting progress and logging each step.
#[tool(public, read_only)]
async fn count(progress: Progress, log: Log) -> &'static str {
    for step in 1..=3 {
        progress.report(f64::from(step), Some(3.0), Some("counting"));
        log.info(format!("step {step}"));
    }
    "done"
}

/// Sleep a while.
#[tool(public, read_only)]
async fn nap(
    /// Milliseconds.
    ms: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}

/// Orders archived in earlier years, by number.
#[tool(ability = "orders.view", read_only, defer)]
async fn archived_orders(year: u16) -> String {
    format!("RO-{year}-1")
}

/// Panics.
#[tool(public)]
async fn boom() -> String {
    panic!("the tool's own bug")
}

fn viewer() -> Caller {
    Caller::new("vera")
        .with_role("Viewer")
        .with_abilities(["orders.view"])
}

fn server() -> McpServer {
    let registry = Registry::builder().build().unwrap();
    McpServer::new(registry)
        .name("test-shop")
        .version("9.9.9")
        .instructions("Start with list_orders.")
        .default_caller(viewer())
}

/// Records the notifications a client receives.
#[derive(Clone, Default)]
struct Notes(Arc<Mutex<Vec<String>>>);

impl Notes {
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl ClientHandler for Notes {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(format!(
            "progress {}/{}",
            params.progress,
            params.total.unwrap_or(0.0)
        ));
    }

    #[allow(deprecated)] // MCP logging is deprecated by SEP-2577 but still served to these versions
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(format!("log {}", params.data.as_str().unwrap_or("?")));
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push("tools changed".into());
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolgate-tests", "0"),
        )
    }
}

// ANCHOR: in_memory
/// A client talking to `server` over an in-memory pipe, as over stdio.
async fn in_memory(server: McpServer) -> (RunningService<RoleClient, Notes>, Notes) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (input, output) = tokio::io::split(server_io);
    tokio::spawn(server.serve_io(input, output));
    let notes = Notes::default();
    (notes.clone().serve(client_io).await.unwrap(), notes)
}
// ANCHOR_END: in_memory

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().unwrap().clone()
}

#[tokio::test]
async fn identity_tools_and_annotations_come_from_the_declarations() {
    let (client, _) = in_memory(server()).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.as_ref().unwrap();
    assert_eq!(
        (server.name.as_str(), server.version.as_str()),
        ("test-shop", "9.9.9")
    );
    assert_eq!(
        info.instructions.as_deref(),
        Some("Start with list_orders.")
    );

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        ["add", "boom", "count", "list_orders", "nap", "tool_search"],
        "the viewer does not see delete_order, nor the deferred archived_orders"
    );
    let listing = tools.iter().find(|t| t.name == "list_orders").unwrap();
    let annotations = listing.annotations.as_ref().unwrap();
    assert_eq!(
        (annotations.read_only_hint, annotations.destructive_hint),
        (Some(true), Some(false))
    );
    assert_eq!(annotations.open_world_hint, Some(false));
    let meta = &listing.meta.as_ref().unwrap().0;
    assert_eq!(meta["io.toolgate/abilities"], json!(["orders.view"]));
    assert_eq!(meta["io.toolgate/capability"], "order_search");
    assert_eq!(
        listing.output_schema.as_ref().unwrap()["properties"]["total"]["type"],
        "integer"
    );
    assert_eq!(listing.input_schema["properties"]["limit"]["default"], 20);
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    assert!(
        add.output_schema.is_none(),
        "a non-object result has no output schema for legacy clients"
    );
    assert_eq!(
        add.annotations.as_ref().unwrap().idempotent_hint,
        Some(true)
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn calls_map_to_results_errors_and_denials() {
    let (client, _) = in_memory(server()).await;
    let sum = client.call_tool(
        CallToolRequestParams::new("add").with_arguments(args(json!({ "a": 2, "b": 40 }))),
    );
    let sum = sum.await.unwrap();
    assert_eq!(
        (
            sum.is_error,
            sum.content[0].as_text().unwrap().text.as_str()
        ),
        (Some(false), "42")
    );

    let page = client.call_tool(
        CallToolRequestParams::new("list_orders").with_arguments(args(json!({"limit": 2}))),
    );
    let page = page.await.unwrap();
    let structured = page.structured_content.unwrap();
    assert_eq!(structured["rows"][1]["url"], "https://shop.example/RO-2");
    assert_eq!(
        serde_json::from_str::<Value>(&page.content[0].as_text().unwrap().text).unwrap(),
        structured
    );

    let hidden = client.call_tool(
        CallToolRequestParams::new("delete_order").with_arguments(args(json!({"number": "RO-1"}))),
    );
    let rmcp::ServiceError::McpError(hidden) = hidden.await.unwrap_err() else {
        panic!("a tool the caller may not run is an unknown tool")
    };
    assert_eq!(hidden.code, rmcp::model::ErrorCode::INVALID_PARAMS);
    assert_eq!(
        hidden.message,
        "Unknown tool `delete_order`. List the tools to see which ones you can use."
    );

    let invalid =
        client.call_tool(CallToolRequestParams::new("add").with_arguments(args(json!({"a": "x"}))));
    let invalid = invalid.await.unwrap();
    assert_eq!(
        invalid.is_error,
        Some(true),
        "invalid arguments are a tool error the model can fix"
    );
    assert!(
        invalid.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("`a`: \"x\" is not of type \"integer\"")
    );

    let unknown = client
        .call_tool(CallToolRequestParams::new("nope"))
        .await
        .unwrap_err();
    let unknown = unknown.to_string();
    assert!(
        unknown.contains("-32602") && unknown.contains("Unknown tool `nope`"),
        "{unknown}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn progress_and_log_messages_reach_the_client_before_the_result() {
    let (client, notes) = in_memory(server()).await;
    let done = client
        .call_tool(CallToolRequestParams::new("count"))
        .await
        .unwrap();
    assert_eq!(done.content[0].as_text().unwrap().text, "done");
    let notes = notes.all();
    let progress: Vec<&String> = notes.iter().filter(|n| n.starts_with("progress")).collect();
    assert_eq!(progress, ["progress 1/3", "progress 2/3", "progress 3/3"]);
    let logs: Vec<&String> = notes.iter().filter(|n| n.starts_with("log")).collect();
    assert_eq!(logs, ["log step 1", "log step 2", "log step 3"]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn list_changed_reaches_connected_clients() {
    let server = server();
    let handler = server.handler();
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let serving = handler.clone();
    tokio::spawn(async move {
        let running = serving.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let notes = Notes::default();
    let client = notes.clone().serve(client_io).await.unwrap();
    client.list_all_tools().await.unwrap();
    handler.notify_tools_changed().await;
    tokio::time::timeout(Duration::from_secs(5), async {
        while !notes.all().contains(&"tools changed".to_owned()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the client is told the list changed");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn pagination_follows_cursors() {
    let (client, _) = in_memory(server().page_size(1)).await;
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(
        (first.tools.len(), first.next_cursor.as_deref()),
        (1, Some("1"))
    );
    let all = client.list_all_tools().await.unwrap();
    assert_eq!(all.len(), 6, "five tools and tool_search: {all:?}");
    client.cancel().await.unwrap();
}

/// A server on a loopback port with two bearer tokens, and a handle that shuts it down.
async fn http_server(
    options: HttpOptions,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    // ANCHOR: tokens
    let tokens = BearerTokens::new().token("viewer-token", viewer()).token(
        "admin-token",
        Caller::new("ada").with_abilities(["orders.view", "orders.delete"]),
    );
    let server = HttpServer::new(server())
        .authenticator(tokens)
        .options(options);
    // ANCHOR_END: tokens
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        server
            .serve_listener(listener, async { stopped.await.unwrap_or(()) })
            .await
            .unwrap();
    });
    (url, stop, task)
}

async fn http_client(url: &str, token: &str) -> RunningService<RoleClient, Notes> {
    http_client_noting(url, token).await.0
}

/// The `anthropic/alwaysLoad` mark of `tool_search` as listed to `client`.
async fn always_load_of_tool_search(client: &RunningService<RoleClient, Notes>) -> Option<Value> {
    let tools = client.list_all_tools().await.unwrap();
    let search = tools.into_iter().find(|t| t.name == "tool_search")?;
    search.meta?.0.get(toolgate::mcp::META_ALWAYS_LOAD).cloned()
}

/// An HTTP client and the notifications it receives.
async fn http_client_noting(url: &str, token: &str) -> (RunningService<RoleClient, Notes>, Notes) {
    let config =
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned());
    let notes = Notes::default();
    let client = notes
        .clone()
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .unwrap();
    (client, notes)
}

#[tokio::test]
async fn a_session_lists_the_deferred_tools_its_searches_found_and_no_other_session_does() {
    let (url, stop, task) = http_server(HttpOptions::default()).await;
    let (searcher, notes) = http_client_noting(&url, "viewer-token").await;
    let (other, _) = http_client_noting(&url, "viewer-token").await;
    let names = |tools: Vec<rmcp::model::Tool>| {
        tools
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    let before = names(searcher.list_all_tools().await.unwrap());
    assert!(
        before.contains(&"tool_search".to_owned())
            && !before.contains(&"archived_orders".to_owned()),
        "{before:?}"
    );
    let found = searcher
        .call_tool(
            CallToolRequestParams::new("tool_search")
                .with_arguments(args(json!({ "query": "archived orders" }))),
        )
        .await
        .unwrap();
    assert_eq!(
        found.structured_content.unwrap()["tools"][0]["name"],
        "archived_orders"
    );
    let search = always_load_of_tool_search(&searcher).await;
    assert_eq!(
        search,
        Some(json!(true)),
        "hosts that search themselves are told to load tool_search"
    );
    tokio::time::timeout(Duration::from_secs(5), async {
        while !notes.all().contains(&"tools changed".to_owned()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the searching session is told its list changed");
    let after = names(searcher.list_all_tools().await.unwrap());
    assert!(after.contains(&"archived_orders".to_owned()), "{after:?}");
    assert_eq!(after.len(), before.len() + 1);
    let elsewhere = names(other.list_all_tools().await.unwrap());
    assert_eq!(elsewhere, before, "another session's listing is its own");
    let anonymous = names(
        in_memory(server().default_caller(Caller::anonymous()))
            .await
            .0
            .list_all_tools()
            .await
            .unwrap(),
    );
    assert!(
        !anonymous.contains(&"tool_search".to_owned()),
        "a caller who may run nothing deferred is offered no search: {anonymous:?}"
    );
    searcher.cancel().await.unwrap();
    other.cancel().await.unwrap();
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn http_callers_come_from_their_tokens() {
    let (url, stop, task) = http_server(HttpOptions::default()).await;
    let viewer = http_client(&url, "viewer-token").await;
    let admin = http_client(&url, "admin-token").await;
    let names = |tools: Vec<rmcp::model::Tool>| {
        tools
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>()
    };
    assert!(!names(viewer.list_all_tools().await.unwrap()).contains(&"delete_order".to_owned()));
    assert!(names(admin.list_all_tools().await.unwrap()).contains(&"delete_order".to_owned()));
    let refused = admin.call_tool(
        CallToolRequestParams::new("delete_order").with_arguments(args(json!({"number": "RO-7"}))),
    );
    assert_eq!(
        refused.await.unwrap().content[0].as_text().unwrap().text,
        "[ERROR] Order RO-7 is already shipped."
    );
    let hidden = viewer.call_tool(
        CallToolRequestParams::new("delete_order").with_arguments(args(json!({"number": "RO-7"}))),
    );
    assert!(
        hidden
            .await
            .unwrap_err()
            .to_string()
            .contains("Unknown tool `delete_order`"),
        "the viewer's token learns nothing of the admin's tool"
    );
    viewer.cancel().await.unwrap();
    admin.cancel().await.unwrap();
    stop.send(()).unwrap();
    task.await.unwrap();
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } }
    })
}

#[tokio::test]
async fn http_refuses_bad_requests_before_anything_runs() {
    let (url, stop, task) = http_server(HttpOptions::default().max_body_bytes(64 * 1024)).await;
    let http = reqwest::Client::new();
    let post = |body: String| {
        http.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
    };
    let no_token = post(initialize().to_string()).send().await.unwrap();
    assert_eq!(no_token.status(), 401);
    assert_eq!(no_token.headers()["www-authenticate"], "Bearer");
    let wrong_token = post(initialize().to_string())
        .bearer_auth("guess")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_token.status(), 401);

    let rebinding = post(initialize().to_string())
        .bearer_auth("viewer-token")
        .header("host", "evil.example")
        .send();
    assert_eq!(
        rebinding.await.unwrap().status(),
        403,
        "a foreign Host is refused (DNS rebinding)"
    );
    let origin = post(initialize().to_string())
        .bearer_auth("viewer-token")
        .header("origin", "https://evil.example");
    assert_eq!(
        origin.send().await.unwrap().status(),
        403,
        "a foreign Origin is refused"
    );
    let huge = post(format!("{{\"padding\": \"{}\"}}", "x".repeat(100 * 1024)))
        .bearer_auth("viewer-token");
    assert_eq!(huge.send().await.unwrap().status(), 413);
    let garbage = post("{not json".into())
        .bearer_auth("viewer-token")
        .send()
        .await
        .unwrap();
    assert!(
        garbage.status().is_client_error(),
        "malformed JSON-RPC: {}",
        garbage.status()
    );
    let ok = post(initialize().to_string())
        .bearer_auth("viewer-token")
        .header("origin", "http://localhost:6274");
    assert_eq!(
        ok.send().await.unwrap().status(),
        200,
        "a loopback Origin (the Inspector's) is accepted"
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn only_the_endpoints_own_path_reaches_it() {
    let (url, stop, task) = http_server(HttpOptions::default()).await;
    let http = reqwest::Client::new();
    let post = |to: String| {
        http.post(to)
            .bearer_auth("viewer-token")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize().to_string())
            .send()
    };
    let beside = [
        format!("{url}/"),
        url.replace("/mcp", "/MCP"),
        format!("{url}/x"),
    ];
    for to in beside {
        assert_eq!(post(to.clone()).await.unwrap().status(), 404, "{to}");
    }
    let queried = post(format!("{url}?from=docs")).await.unwrap();
    assert_eq!(queried.status(), 200, "a query is no part of the path");
    assert!(queried.headers().contains_key("mcp-session-id"));
    let get = http.get(&url).bearer_auth("viewer-token");
    let get = get
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(
        (get.status().as_u16(), get.text().await.unwrap()),
        (400, "Bad Request: Session ID is required".to_owned()),
        "a GET reaches rmcp's service through the router"
    );
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn shutdown_lets_calls_in_flight_finish() {
    let (url, stop, task) =
        http_server(HttpOptions::default().shutdown_grace(Duration::from_secs(120))).await;
    let client = http_client(&url, "viewer-token").await;
    let call = tokio::spawn(async move {
        let params = CallToolRequestParams::new("nap").with_arguments(args(json!({ "ms": 300 })));
        client
            .call_tool(params)
            .await
            .map(|r| r.content[0].as_text().unwrap().text.clone())
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopping = std::time::Instant::now();
    stop.send(()).unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(60), call)
        .await
        .expect("the call finishes");
    assert_eq!(answer.unwrap().unwrap(), "slept 300 ms");
    tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("the server stops")
        .unwrap();
    assert!(
        stopping.elapsed() < Duration::from_secs(60),
        "it stopped once the call was answered, not at the grace"
    );
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_and_the_server_keeps_serving() {
    let (client, _) = in_memory(server()).await;
    let crashed = client
        .call_tool(CallToolRequestParams::new("boom"))
        .await
        .unwrap();
    assert_eq!(crashed.is_error, Some(true));
    assert_eq!(
        crashed.content[0].as_text().unwrap().text,
        "[ERROR] The tool failed because of an internal error.",
        "the panic's message is masked from the model"
    );
    let sum = client.call_tool(
        CallToolRequestParams::new("add").with_arguments(args(json!({ "a": 1, "b": 1 }))),
    );
    assert_eq!(
        sum.await.unwrap().content[0].as_text().unwrap().text,
        "2",
        "the same session still serves"
    );
    client.cancel().await.unwrap();
}

/// Sends calls of `count`, which returns text, to `list_orders`, which returns a structured page.
struct Renamed;

impl toolgate::policy::hooks::Hook for Renamed {
    fn on_resolve(
        &self,
        lookup: toolgate::policy::hooks::Lookup<'_>,
        _: &toolgate::Tool,
    ) -> Option<String> {
        (lookup == toolgate::policy::hooks::Lookup::Name("count")).then(|| "list_orders".to_owned())
    }
}

#[tokio::test]
async fn a_redirected_call_is_encoded_against_the_tool_that_ran() {
    let registry = Registry::builder().hook(Renamed).build().unwrap();
    let server = McpServer::new(registry).default_caller(viewer());
    let (client, _) = in_memory(server).await;
    let redirected = client
        .call_tool(CallToolRequestParams::new("count").with_arguments(args(json!({ "limit": 2 }))))
        .await
        .unwrap();
    let structured = redirected
        .structured_content
        .expect("list_orders declares an output schema, so its page is structured content");
    assert_eq!(structured["rows"][1]["number"], "RO-2");
    client.cancel().await.unwrap();
}
