//! A REST API as tools: a FastAPI application that serves its own OpenAPI document and checks each
//! caller's bearer token itself. toolgate turns the document into tools, and each caller reaches the
//! API as themselves: Rita and Bob see their own orders, Bob may not place one, a write waits for a
//! person's approval and runs once, and what the API answers wrongly (HTML where JSON was promised, a
//! redirect to another host, no answer) is a clear error.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../support/real_clients.rs"]
#[allow(dead_code)] // shared with the other tests of real clients, which use all of it
mod real_clients;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::openapi::OpenApi;
use toolgate::output::Outcome;
use toolgate::{Caller, ErrorKind, Registry};

/// The FastAPI application on a free port; killed when dropped.
struct Api {
    child: Child,
    url: String,
}

impl Api {
    fn start() -> Option<Api> {
        let dir = real_clients::installed(&["py-api/bin/python"])?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/api.py");
        let child = Command::new(dir.join("py-api/bin/python"))
            .arg(script)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let api = Api {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(api);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the API did not listen on {port}");
    }

    /// Its own OpenAPI document, as it serves it.
    async fn document(&self) -> String {
        let address = format!("{}/openapi.json", self.url);
        reqwest::get(address).await.unwrap().text().await.unwrap()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(outcome: Outcome) -> String {
    outcome.into_result().text_for_model()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_reaches_the_api_as_themselves_and_a_write_waits_for_approval() {
    let Some(api) = Api::start() else { return };
    let document = api.document().await;
    // ANCHOR: convert
    let orders = OpenApi::from_json("orders", &document, &api.url)
        .unwrap()
        .callers_credential()
        .timeout(Duration::from_secs(2));
    let converted = orders.tools().unwrap();
    let registry = Registry::builder().tools(converted.tools).build().unwrap();
    // ANCHOR_END: convert
    assert!(converted.skipped.is_empty(), "{:?}", converted.skipped);
    let listed = registry.get("orders_list_orders").unwrap();
    assert!(listed.is_read_only());
    assert_eq!(
        listed.description(),
        "List your orders\n\nYour orders, newest last; `item` keeps those of one item."
    );
    let placed = registry.get("orders_place_order").unwrap();
    assert!(!placed.is_read_only());
    let body = &placed.input_schema()["properties"]["body"];
    assert_eq!(body["required"], json!(["item", "quantity"]));
    assert!(
        body["properties"].get("id").is_none(),
        "no read-only field is asked for"
    );
    assert_eq!(
        registry
            .get("orders_get_order")
            .unwrap()
            .output_schema()
            .unwrap()["properties"]["owner"]["type"],
        "string"
    );

    let rita = Caller::new("rita").with_credential("rita-token");
    let bob = Caller::new("bob").with_credential("bob-token");
    let mine = |caller: &Caller| {
        let registry = registry.clone();
        let caller = caller.clone();
        async move {
            let result = registry
                .call(&caller, "orders_list_orders", json!({}))
                .await
                .into_result();
            let orders: Value = result.structured.map(|s| (*s).clone()).unwrap_or_default();
            (orders["orders"].as_array().into_iter().flatten())
                .map(|order| order["item"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(mine(&rita).await, ["tea"], "the API sees Rita");
    assert_eq!(mine(&bob).await, ["coffee"], "and Bob, each as themselves");
    let refused = registry
        .call(&bob, "orders_get_order", json!({"order_id": 1}))
        .await;
    assert_eq!(refused.error().map(|e| e.kind()), Some(ErrorKind::Denied));
    assert_eq!(
        text(refused),
        "[ERROR] The API `orders` refused `orders_get_order` (403 Forbidden): This order is not yours."
    );
    let nobody = registry
        .call(&Caller::new("eve"), "orders_list_orders", json!({}))
        .await;
    assert!(text(nobody).contains("carries no credential of yours; nothing was sent"));

    // Arguments are checked before any request.
    let wrong = registry
        .call(
            &rita,
            "orders_place_order",
            json!({"body": {"item": "tea", "quantity": "many"}}),
        )
        .await;
    assert_eq!(
        wrong.error().map(|e| e.kind()),
        Some(ErrorKind::InvalidArguments)
    );

    // A write waits for a person, who reads what it will do; approved, it runs once.
    let order = json!({"body": {"item": "cake", "quantity": 3}});
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&rita, "orders_place_order", order.clone())
        .await
    else {
        panic!("a write waits for approval");
    };
    assert_eq!(
        pending.preview().text(),
        format!(
            r#"Place an order: POST {}/orders with {{"item":"cake","quantity":3}}"#,
            api.url
        )
    );
    let placed = registry
        .confirm(&rita, pending.confirmation())
        .await
        .into_result();
    assert!(!placed.is_error, "{}", placed.text_for_model());
    let replayed = registry
        .confirm(&rita, pending.confirmation())
        .await
        .into_result();
    assert_eq!(
        replayed.text_for_model(),
        placed.text_for_model(),
        "a replay gives the first run's result"
    );
    assert_eq!(mine(&rita).await, ["tea", "cake"], "placed once");
    let Outcome::NeedsConfirmation(pending) =
        registry.call(&bob, "orders_place_order", order).await
    else {
        panic!("a write waits for approval");
    };
    let by_bob = registry.confirm(&bob, pending.confirmation()).await;
    assert_eq!(
        text(by_bob),
        "[ERROR] The API `orders` refused `orders_place_order` (403 Forbidden): Bob may not place orders."
    );

    // What the API answers wrongly.
    let html = text(registry.call(&rita, "orders_broken", json!({})).await);
    assert_eq!(
        html,
        "[ERROR] The API `orders` answered `orders_broken` with text/html where its document promised JSON; the answer is not passed on."
    );
    let away = text(registry.call(&rita, "orders_away", json!({})).await);
    assert!(
        away.contains("with a redirect to another origin, which is not followed"),
        "{away}"
    );
    let slow = registry.call(&rita, "orders_slow", json!({})).await;
    assert_eq!(slow.error().map(|e| e.kind()), Some(ErrorKind::Unavailable));
    assert!(text(slow).contains("did not answer within 2s"));
}

/// An operator serves the API from the configuration file: its document, where it is, who may call it,
/// and which of its operations (by tag).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_serves_the_api_from_the_configuration_file() {
    let Some(api) = Api::start() else { return };
    let document = Path::new(env!("CARGO_TARGET_TMPDIR")).join("orders-openapi.json");
    std::fs::write(&document, api.document().await).unwrap();
    let url = &api.url;
    let document = document.display();
    // ANCHOR: config
    let config = toolgate::registry::Config::from_toml(&format!(
        r#"
        [apis.orders]
        document = "{document}"
        base_url = "{url}"
        callers_credential = true
        tags = ["orders"]
        methods = ["GET", "POST"]
        paths = ["/orders"]
        rename = {{ list_orders = "orders_mine" }}
        timeout_secs = 5
        "#
    ))
    .unwrap();
    // ANCHOR_END: config
    let registry = Registry::builder().config(config).build().unwrap();
    assert!(registry.get("orders_place_order").is_some());
    assert!(
        registry.get("orders_broken").is_none(),
        "only the operations tagged `orders`"
    );
    assert!(registry.get("orders_list_orders").is_none() && registry.get("orders_mine").is_some());
    let rita = Caller::new("rita").with_credential("rita-token");
    let found = registry
        .call(&rita, "orders_get_order", json!({"order_id": 1}))
        .await;
    assert!(!found.into_result().is_error);
    let unsaid = toolgate::registry::Config::from_toml(&format!(
        "[apis.orders]\ndocument = \"{document}\"\nbase_url = \"{url}\"\n"
    ));
    assert!(
        unsaid
            .unwrap_err()
            .to_string()
            .contains("say who may call it")
    );
}

#[test]
fn what_is_not_an_openapi_document_or_is_too_large_is_refused_clearly() {
    let refused = |text: &str| {
        OpenApi::from_json("x", text, "http://127.0.0.1:9")
            .and_then(|api| api.public().tools())
            .unwrap_err()
            .to_string()
    };
    assert!(refused("<html>").contains("is not JSON"));
    assert!(refused(r#"{"swagger": "2.0"}"#).contains("Swagger 2.0"));
    assert!(refused(r#"{"openapi": "3.1.0"}"#).contains("has no `paths`"));
    let huge = format!(
        "{{\"openapi\": \"3.1.0\", \"x\": \"{}\"}}",
        "a".repeat(toolgate::openapi::MAX_DOCUMENT)
    );
    assert!(refused(&huge).contains("more than 16777216"));
    let unsaid = OpenApi::new(
        "x",
        json!({"openapi": "3.1.0", "paths": {}}),
        "http://127.0.0.1:9",
    )
    .tools();
    assert!(
        unsaid
            .unwrap_err()
            .to_string()
            .contains("say who may call it")
    );
    let looping = json!({"openapi": "3.1.0", "paths": {"/a": {"post": {"operationId": "a",
        "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}}}},
        "components": {"schemas": {"A": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/A"}}},
                                   "E": {"$ref": "https://elsewhere.example/e.json"}}}});
    let converted = OpenApi::new("x", looping, "http://127.0.0.1:9")
        .public()
        .tools()
        .unwrap();
    assert_eq!(
        converted.tools.len(),
        1,
        "a type that contains itself is served"
    );

    let document = json!({"openapi": "3.1.0", "paths": {"/stock/{sku}": {
        "put": {"operationId": "set_stock", "parameters": [{"name": "sku", "in": "path", "required": true}]},
        "delete": {"operationId": "drop_stock", "parameters": [{"name": "sku", "in": "path", "required": true}]},
    }}});
    let stock = OpenApi::new("shop", document, "http://127.0.0.1:9")
        .ability("stock.write")
        .idempotent("set_stock")
        .methods(["put"]);
    let converted = stock.tools().unwrap();
    assert_eq!(converted.skipped[0].why, "its method is not served");
    let registry = Registry::builder()
        .compiled_tools(std::iter::empty::<&str>())
        .tools(converted.tools)
        .build()
        .unwrap();
    assert!(registry.get("shop_set_stock").unwrap().is_idempotent());
}

/// GitHub's published description, `@octokit/openapi` (1,223 operations, 13 MB): every operation becomes
/// a tool or is skipped with a reason, the registry takes them all, and a search by what a person wants
/// finds the operation that does it. Its fully dereferenced form (73 MB) is refused as too large.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn githubs_published_document_becomes_tools_that_a_search_finds() {
    let Some(dir) = real_clients::installed(&[GITHUB]) else {
        return;
    };
    let text = std::fs::read_to_string(dir.join(GITHUB)).unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    let operations: usize = (document["paths"].as_object().unwrap().values())
        .map(|item| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|key| METHODS.contains(&key.as_str()))
                .count()
        })
        .sum();
    let started = std::time::Instant::now();
    let converted = OpenApi::from_json("github", &text, "https://api.github.com")
        .unwrap()
        .public()
        .tools()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(converted.tools.len() + converted.skipped.len(), operations);
    for skipped in &converted.skipped {
        assert!(!skipped.why.is_empty(), "{skipped:?}");
    }
    let served = converted.tools.len();
    let registry = Registry::builder().tools(converted.tools).build().unwrap();
    eprintln!(
        "GitHub's document: {operations} operations, {served} tools, {} skipped, converted in {took:?}, \
         the registry built in {:?}",
        operations - served,
        started.elapsed() - took
    );
    assert!(
        served * 10 >= operations * 9,
        "most operations are served: {served} of {operations}"
    );
    let anyone = Caller::anonymous();
    // What a search by words finds in the top five. (Phrasings it misses there, for the record of what a
    // BM25 search without synonyms can do on 1,221 tools: "open a new issue", "which pull requests are
    // open", "add a comment to an issue", "list the pull requests of a repository".)
    for (wanted, operation) in [
        ("create an issue", "github_issues_create"),
        ("merge a pull request", "github_pulls_merge"),
        (
            "star a repository",
            "github_activity_star-repo-for-authenticated-user",
        ),
        (
            "get the contents of a file in a repository",
            "github_repos_get-content",
        ),
        ("list open pull requests", "github_pulls_list"),
        ("delete a repository", "github_repos_delete"),
        ("search code", "github_search_code"),
    ] {
        let found: Vec<String> = (registry.search(&anyone, wanted, 5).iter())
            .map(|tool| tool.name().to_owned())
            .collect();
        assert!(
            found.iter().any(|name| name == operation),
            "{wanted:?} found {found:?}"
        );
    }
    let whole = dir.join(GITHUB.replace(".json", ".deref.json"));
    let whole = std::fs::read_to_string(whole).unwrap();
    let refused = OpenApi::from_json("github", &whole, "https://api.github.com").unwrap_err();
    assert!(
        refused.to_string().contains("more than 16777216"),
        "{refused}"
    );
}

/// Where `.ci/run` puts GitHub's published description.
const GITHUB: &str = "npm-api/node_modules/@octokit/openapi/generated/api.github.com.json";

/// The methods of a path item.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The official Python SDK calls the converted tools over Streamable HTTP, as Rita and as Bob, and Rita
/// approves her write through the elicitation the SDK answers (`tests/openapi/python_client.py`).
#[test]
fn the_python_sdk_calls_the_converted_tools_and_approves_a_write() {
    let Some(dir) = real_clients::installed(&["py/bin/python"]) else {
        return;
    };
    let Some(api) = Api::start() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let url = runtime.block_on(async {
        let document = api.document().await;
        let orders = OpenApi::from_json("orders", &document, &api.url)
            .unwrap()
            .callers_credential()
            .tags(["orders"]);
        let registry = Registry::builder()
            .compiled_tools(std::iter::empty::<&str>())
            .tools(orders.tools().unwrap().tools)
            .build()
            .unwrap();
        let person = |id: &str, token: &str| Caller::new(id).with_credential(token);
        let tokens = toolgate::http::BearerTokens::new()
            .token("rita-token", person("rita", "rita-token"))
            .token("bob-token", person("bob", "bob-token"));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let served = toolgate::http::HttpServer::new(toolgate::mcp::McpServer::new(registry))
            .authenticator(tokens);
        tokio::spawn(served.serve_listener(listener, std::future::pending()));
        url
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi/python_client.py");
    let output = Command::new(dir.join("py/bin/python"))
        .arg(script)
        .arg(&url)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.ends_with("6 passed, 0 failed\n"), "{printed}");
}
