//! The call pipeline, in-process: schemas, listing per caller, policy, validation, errors, panics, timeouts,
//! ceilings, hooks, injection, dynamic tools and write previews.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::sync::{Arc, Mutex};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate::hooks::{CallInfo, Hook, Lookup};
use toolgate::prelude::*;
use toolgate::{
    CallParts, Content, DynamicTool, ErrorKind, Param, ParamKind, ParamSpec, Tool, ToolResult,
    hooks,
};

/// What the tools did, so tests can tell whether anything ran.
#[derive(Clone, Default)]
struct Ledger(Arc<Mutex<Vec<String>>>);

impl Ledger {
    fn push(&self, line: impl Into<String>) {
        self.0.lock().unwrap().push(line.into());
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Add two integers.
#[tool(public, read_only, idempotent)]
async fn add(
    /// The left operand.
    a: i64,
    /// The right operand.
    b: i64,
) -> i64 {
    a + b
}

/// What the shop looks like today: start here.
#[tool(public, read_only, category = "orders")]
async fn shop_overview() -> &'static str {
    "3 open orders"
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Open,
    Shipped,
}

#[derive(Serialize, JsonSchema)]
struct OrderRow {
    number: String,
    status: Status,
}

/// Find orders by customer.
///
/// Returns compact rows, each with a url.
#[tool(
    ability = "orders.view",
    read_only,
    category = "orders",
    capability = "order_search"
)]
async fn find_orders(
    /// Customer name.
    #[arg(length(min = 1, max = 20))]
    query: String,
    /// Only orders in this status.
    status: Option<Status>,
    limit: Limit,
) -> Page<OrderRow> {
    let rows = (0..100).map(|i| OrderRow {
        number: format!("RO-{i}"),
        status: Status::Open,
    });
    let rows: Vec<OrderRow> = rows
        .filter(|_| status.as_ref().is_none_or(|s| *s == Status::Open))
        .collect();
    let total = rows.len() as u64;
    let shown = rows.into_iter().take(limit.as_usize()).map(|mut r| {
        r.number = format!("{}:{}", query, r.number);
        r
    });
    Page::new(total, shown, |row| {
        format!("https://shop.example/orders/{}", row.number)
    })
}

/// Confirm a pending order. Changes data.
#[tool(ability = "orders.manage", preview = preview_confirm, category = "orders")]
async fn confirm_order(
    ledger: State<Ledger>,
    /// The order number.
    #[arg(pattern = "^RO-[0-9]+$")]
    number: String,
    caller: Caller,
) -> Result<String, ToolError> {
    ledger.push(format!("confirmed {number} for {}", caller.id()));
    Ok(format!("Order {number} is confirmed."))
}

/// What `confirm_order` would do.
async fn preview_confirm(
    ledger: State<Ledger>,
    number: String,
    caller: Caller,
) -> Result<Preview, ToolError> {
    if number == "RO-404" {
        return Err(ToolError::new("Order RO-404 does not exist."));
    }
    ledger.push(format!("previewed {number}"));
    Ok(Preview::new(format!(
        "Confirm order {number} (129.00 EUR) for {}",
        caller.id()
    )))
}

/// Refuses, as a tool does when the state is wrong.
#[tool(public)]
async fn ship_order(number: String) -> Result<(), ToolError> {
    Err(
        ToolError::new(format!("Order {number} is already shipped."))
            .with_data(json!({ "number": number })),
    )
}

/// Reads a file that is not there.
#[tool(public, read_only)]
async fn read_config() -> Result<String, ToolError> {
    Ok(std::fs::read_to_string("/definitely/not/here.toml")?)
}

/// Panics.
#[tool(public)]
async fn explode(ledger: State<Ledger>) -> String {
    ledger.push("explode ran");
    panic!("the flux capacitor broke")
}

/// Takes too long.
#[tool(public, read_only, timeout = "50ms")]
async fn slow(ledger: State<Ledger>, cancellation: Cancellation) -> String {
    let token = cancellation.0.clone();
    tokio::spawn(async move {
        token.cancelled().await;
        ledger.push("slow saw its cancellation");
    });
    tokio::time::sleep(Duration::from_secs(30)).await;
    "never".into()
}

/// Takes too long, with no timeout of its own.
#[tool(public, read_only)]
async fn stall() -> &'static str {
    tokio::time::sleep(Duration::from_secs(30)).await;
    "never"
}

/// Search the web.
#[tool(
    public,
    read_only,
    capability = "web_search",
    max_runs = 2,
    defer,
    open_world
)]
async fn web_search(query: String) -> Vec<String> {
    vec![format!("result for {query}")]
}

#[derive(Deserialize, Default)]
struct Greeting {
    greeting: String,
}

/// Says who is calling.
#[tool(public, read_only)]
async fn whoami(
    caller: Caller,
    invocation: Invocation,
    settings: Settings<Greeting>,
    tenant: Tenant,
) -> String {
    format!(
        "{} {} ({:?}) session={:?} call={:?} tenant={}",
        settings.0.greeting,
        caller.id(),
        caller.role(),
        invocation.session_id,
        invocation.tool_call_id,
        tenant.0
    )
}

// ANCHOR: tenant
/// A user-defined injectable: the part of the caller id after `@`.
struct Tenant(String);

impl Param for Tenant {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(Tenant(
            parts
                .caller()
                .id()
                .split('@')
                .nth(1)
                .unwrap_or("none")
                .to_owned(),
        ))
    }
}
// ANCHOR_END: tenant

/// Counts to three, reporting progress.
#[tool(public, read_only)]
async fn count(progress: Progress) -> u32 {
    for i in 1..=3 {
        progress.report(f64::from(i), Some(3.0), Some(&format!("step {i}")));
    }
    3
}

// ANCHOR: input
/// A new customer.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NewCustomer {
    /// Full name.
    name: String,
    /// Contact address.
    email: String,
}

/// Create a customer.
#[tool(ability = "customers.manage")]
async fn create_customer(ledger: State<Ledger>, input: Input<NewCustomer>) -> String {
    ledger.push(format!("customer {} <{}>", input.0.name, input.0.email));
    "created".into()
}
// ANCHOR_END: input

/// Draw a one-pixel picture.
#[tool(public, read_only)]
async fn picture() -> Vec<Content> {
    vec![
        Content::text("a dot"),
        Content::image([1u8, 2, 3], "image/png"),
    ]
}

/// A report with a log line for people.
#[tool(public, read_only)]
async fn report() -> ToolResult {
    ToolResult::text("all good").with_session_log("report: 0 issues")
}

/// Sort things.
#[tool(public, read_only)]
async fn sort_things(
    /// Sort order.
    #[arg(one_of = ["newest", "oldest"], default = "newest")]
    order: String,
    /// How many.
    #[arg(range(min = 1, max = 10), default = 3)]
    count: u32,
) -> String {
    format!("{order} {count}")
}

fn registry(ledger: &Ledger) -> Registry {
    Registry::builder()
        .state(ledger.clone())
        .settings("whoami", json!({ "greeting": "hello" }))
        .first(["shop_overview"])
        .build()
        .expect("the test tools are consistent")
}

fn viewer() -> Caller {
    Caller::new("vera@acme")
        .with_role("Viewer")
        .with_abilities(["orders.view"])
}

fn manager() -> Caller {
    Caller::new("max@acme")
        .with_role("Manager")
        .with_abilities(["orders.view", "orders.manage", "customers.manage"])
}

/// The text of the line a `file:line` source points at.
fn line_at(source: &str) -> String {
    let (file, line) = source.rsplit_once(':').unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    text.lines()
        .nth(line.parse::<usize>().unwrap() - 1)
        .unwrap()
        .trim()
        .to_owned()
}

fn names(tools: &[&Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name().to_owned()).collect()
}

fn failure(outcome: &Outcome) -> (ErrorKind, String) {
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("expected a failure, got {outcome:?}"));
    (error.kind(), error.message().to_owned())
}

#[test]
fn input_schema_comes_from_the_signature_and_docs() {
    let registry = registry(&Ledger::default());
    let tool = registry.get("find_orders").unwrap();
    assert_eq!(
        tool.title(),
        Some("Find orders"),
        "the title reads like the name"
    );
    assert_eq!(
        tool.description(),
        "Find orders by customer.\n\nReturns compact rows, each with a url."
    );
    let schema = tool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(
        schema["properties"]["query"],
        json!({
            "type": "string", "description": "Customer name.", "minLength": 1, "maxLength": 20
        })
    );
    assert_eq!(schema["properties"]["limit"]["default"], 20);
    assert_eq!(
        schema["properties"]["status"]["description"],
        "Only orders in this status."
    );
    assert_eq!(
        schema["$defs"]["Status"]["enum"],
        json!(["open", "shipped"])
    );
    let output = tool.output_schema().expect("a page has an output schema");
    assert_eq!(output["properties"]["total"]["type"], "integer");
    assert!(output.get("$schema").is_none() && output.get("title").is_none());

    let sort = registry.get("sort_things").unwrap().input_schema();
    assert_eq!(
        sort["properties"]["order"]["enum"],
        json!(["newest", "oldest"])
    );
    assert_eq!(sort["properties"]["order"]["default"], "newest");
    assert_eq!(sort["properties"]["count"]["minimum"], 1);
    assert_eq!(sort["properties"]["count"]["maximum"], 10);
    assert!(
        sort.get("required").is_none(),
        "arguments with defaults are optional"
    );

    let whole = registry.get("create_customer").unwrap().input_schema();
    assert_eq!(whole["required"], json!(["name", "email"]));
    assert_eq!(
        whole["properties"]["email"]["description"],
        "Contact address."
    );

    let injected = registry.get("whoami").unwrap().input_schema();
    assert_eq!(
        injected["properties"],
        json!({}),
        "injected parameters are not arguments"
    );
    assert!(
        registry
            .get("shop_overview")
            .unwrap()
            .output_schema()
            .is_none(),
        "text results have no schema"
    );
}

#[test]
fn declarations_reach_the_tool() {
    let registry = registry(&Ledger::default());
    let confirm = registry.get("confirm_order").unwrap();
    assert!(!confirm.is_read_only() && confirm.has_preview() && !confirm.is_public());
    assert_eq!(confirm.abilities(), ["orders.manage"]);
    let search = registry.get("web_search").unwrap();
    assert!(search.is_deferred() && search.is_open_world() && search.is_public());
    assert_eq!(
        (search.capability(), search.max_runs()),
        (Some("web_search"), Some(2))
    );
    assert!(registry.get("add").unwrap().is_idempotent());
    assert_eq!(
        registry.get("slow").unwrap().timeout(),
        Some(Duration::from_millis(50))
    );
    let source = registry.get("add").unwrap().source().to_string();
    assert_eq!(
        line_at(&source),
        "async fn add(",
        "the source names the tool's fn: {source}"
    );
}

#[test]
fn lists_show_each_caller_only_what_they_may_run() {
    let registry = registry(&Ledger::default());
    let public = names(&registry.list(&Caller::anonymous()));
    assert_eq!(
        public[0], "shop_overview",
        "the overview tool is listed first"
    );
    assert!(
        public[1..].windows(2).all(|w| w[0] < w[1]),
        "the rest by name: {public:?}"
    );
    assert!(
        !public.contains(&"find_orders".to_owned())
            && !public.contains(&"confirm_order".to_owned())
    );
    assert!(
        !public.contains(&"web_search".to_owned()),
        "deferred tools are not preloaded"
    );

    let for_viewer = names(&registry.list(&viewer()));
    assert!(
        for_viewer.contains(&"find_orders".to_owned())
            && !for_viewer.contains(&"confirm_order".to_owned())
    );
    let for_manager = names(&registry.list(&manager()));
    assert!(
        for_manager.contains(&"confirm_order".to_owned())
            && for_manager.contains(&"create_customer".to_owned())
    );

    assert_eq!(
        names(&registry.list_category(&viewer(), "orders")),
        ["shop_overview", "find_orders"]
    );
    assert_eq!(
        names(&registry.list_category(&manager(), "orders")),
        ["shop_overview", "confirm_order", "find_orders"]
    );
    assert_eq!(
        names(&registry.search(&Caller::anonymous(), "search the web", 5))[0],
        "web_search"
    );
    assert_eq!(
        registry
            .for_capability(&viewer(), "order_search")
            .map(Tool::name),
        Some("find_orders")
    );
    assert!(
        registry
            .for_capability(&Caller::anonymous(), "order_search")
            .is_none()
    );
}

#[tokio::test]
async fn a_denied_call_runs_nothing_and_says_so_in_the_seed_wording() {
    let ledger = Ledger::default();
    let hidden = registry(&ledger);
    let args = json!({ "number": "RO-1" });
    let outcome = hidden.call(&viewer(), "confirm_order", args.clone()).await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::UnknownTool,
            "Unknown tool `confirm_order`. List the tools to see which ones you can use.".into()
        ),
        "by default a caller learns nothing of a tool it may not run"
    );
    let registry = Registry::builder()
        .state(ledger.clone())
        .explain_denials(true)
        .build()
        .unwrap();
    let outcome = registry
        .call(&viewer(), "confirm_order", args.clone())
        .await;
    assert!(matches!(outcome, Outcome::Denied(_)));
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::Denied,
            "Your role (Viewer) is not allowed to do this.".into()
        )
    );
    assert_eq!(
        outcome.into_result().text_for_model(),
        "[ERROR] Your role (Viewer) is not allowed to do this."
    );
    let outcome = registry
        .call(&Caller::new("x"), "confirm_order", args)
        .await;
    assert_eq!(failure(&outcome).1, "You are not allowed to do this.");
    assert!(ledger.lines().is_empty(), "not even the preview ran");
}

#[tokio::test]
async fn read_only_mode_exposes_only_read_only_tools() {
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .read_only(true)
        .build()
        .unwrap();
    let listed = names(&registry.list_all(&manager()));
    assert!(listed.contains(&"find_orders".to_owned()));
    assert!(
        !listed.contains(&"confirm_order".to_owned())
            && !listed.contains(&"create_customer".to_owned())
    );
    let outcome = registry
        .call(
            &manager(),
            "create_customer",
            json!({ "name": "Ada", "email": "a@b" }),
        )
        .await;
    assert_eq!(failure(&outcome).0, ErrorKind::Unavailable);
    assert!(ledger.lines().is_empty());
}

#[tokio::test]
async fn operators_switch_tools_off_but_not_system_tools() {
    let registry = Registry::builder()
        .state(Ledger::default())
        .allow_only(["add"])
        .tool(
            DynamicTool::new(
                "help",
                "How to use this assistant.",
                json!({"type": "object"}),
                |_, _| async { "Ask about orders." },
            )
            .public()
            .read_only()
            .system(),
        )
        .build()
        .unwrap();
    assert_eq!(names(&registry.list(&manager())), ["add", "help"]);
    let outcome = registry
        .call(&manager(), "find_orders", json!({ "query": "x" }))
        .await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Unavailable, "This tool is switched off.".into())
    );
    assert_eq!(
        registry
            .call(&manager(), "help", Value::Null)
            .await
            .into_result()
            .text_for_model(),
        "Ask about orders."
    );

    let error = Registry::builder()
        .state(Ledger::default())
        .disable("nope")
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`disable` names `nope`, but no tool has that name"
    );
}

#[tokio::test]
async fn an_operator_file_switches_tools_and_sets_settings_over_the_code() {
    let path = std::env::temp_dir().join(format!("toolgate-config-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        r#"
        first = ["add"]
        default_timeout_secs = 0.05

        [tools.find_orders]
        enabled = false

        [tools.shop_overview]
        enabled = true

        [tools.whoami.settings]
        greeting = "hi"
        "#,
    )
    .unwrap();
    let config = toolgate::Config::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .settings("whoami", json!({ "greeting": "hello", "unused": 1 }))
        .disable("shop_overview")
        .config(config)
        .build()
        .unwrap();

    let listed = names(&registry.list(&manager()));
    assert_eq!(listed[0], "add");
    assert!(listed.contains(&"shop_overview".to_owned()));
    assert!(!listed.contains(&"find_orders".to_owned()));
    let refused = registry
        .call(&manager(), "find_orders", json!({ "query": "x" }))
        .await;
    assert_eq!(failure(&refused).0, ErrorKind::Unavailable);
    assert!(ledger.lines().is_empty());
    let greeted = registry
        .call(&Caller::new("ada@acme"), "whoami", json!({}))
        .await;
    assert!(
        greeted
            .into_result()
            .text_for_model()
            .starts_with("hi ada@acme")
    );
    let stalled = registry.call(&manager(), "stall", json!({})).await;
    assert_eq!(
        failure(&stalled),
        (
            ErrorKind::Timeout,
            "`stall` did not finish within 50ms and was stopped.".into()
        )
    );

    let json = toolgate::Config::from_json(r#"{ "read_only": true, "tools": {} }"#).unwrap();
    let read_only = Registry::builder()
        .state(Ledger::default())
        .config(json)
        .build()
        .unwrap();
    let listed = read_only.list_all(&manager());
    assert!(listed.len() > 3 && listed.iter().all(|t| t.is_read_only()));
    assert!(
        registry.get("confirm_order").is_some()
            && !listed.iter().any(|t| t.name() == "confirm_order")
    );

    let typo = toolgate::Config::from_toml("[tools.ship]\nenabeld = false").unwrap_err();
    assert!(
        typo.to_string().contains("unknown field `enabeld`"),
        "{typo}"
    );
    let bad = toolgate::Config::from_toml("default_timeout_secs = -1").unwrap_err();
    assert_eq!(
        bad.to_string(),
        "configuration: `default_timeout_secs` must be a positive number of seconds, not -1"
    );
    let missing = toolgate::Config::load("/nonexistent/toolgate.toml").unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("configuration /nonexistent/toolgate.toml: ")
    );
}

#[tokio::test]
async fn each_model_dialect_offers_reads_and_answers_tool_calls() {
    use toolgate::Dialect;
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let add = registry.get("add").unwrap();
    let schema = add.input_schema().clone();
    let description = add.description();

    // One call to `add` as each API returns it, and the result as each expects it back.
    let cases = [
        (
            Dialect::OpenAiChat,
            json!({ "type": "function", "function": { "name": "add", "description": description, "parameters": schema } }),
            json!({ "id": "chatcmpl-1", "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": "call_9", "type": "function", "function": { "name": "add", "arguments": "{\"a\":2,\"b\":40}" } }],
            }}]}),
            json!({ "role": "tool", "tool_call_id": "call_9", "content": "42" }),
        ),
        (
            Dialect::OpenAiResponses,
            json!({ "type": "function", "name": "add", "description": description, "parameters": schema, "strict": false }),
            json!({ "id": "resp_1", "output": [
                { "type": "reasoning", "id": "rs_1", "summary": [] },
                { "type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "add", "arguments": "{\"a\":2,\"b\":40}" },
            ]}),
            json!({ "type": "function_call_output", "call_id": "call_9", "output": "42" }),
        ),
        (
            Dialect::Anthropic,
            json!({ "name": "add", "description": description, "input_schema": schema }),
            json!({ "id": "msg_1", "role": "assistant", "stop_reason": "tool_use", "content": [
                { "type": "text", "text": "Adding." },
                { "type": "tool_use", "id": "toolu_9", "name": "add", "input": { "a": 2, "b": 40 } },
            ]}),
            json!({ "type": "tool_result", "tool_use_id": "toolu_9", "content": "42", "is_error": false }),
        ),
        (
            Dialect::Gemini,
            json!({ "name": "add", "description": description, "parametersJsonSchema": schema }),
            json!({ "candidates": [{ "content": { "role": "model", "parts": [
                { "functionCall": { "name": "add", "args": { "a": 2, "b": 40 } } },
            ]}}]}),
            json!({ "functionResponse": { "name": "add", "response": { "output": 42 } } }),
        ),
    ];
    for (dialect, definition, reply, answer) in cases {
        let offered = registry.definitions(&anyone, dialect);
        let offered = match dialect {
            Dialect::Gemini => offered[0]["functionDeclarations"].clone(),
            _ => offered,
        };
        let offered = offered.as_array().unwrap();
        assert!(offered.contains(&definition), "{dialect:?}: {offered:?}");
        assert!(
            !offered
                .iter()
                .any(|d| d.to_string().contains("confirm_order")),
            "{dialect:?} offers only what the caller may run"
        );

        let calls = dialect.calls(&reply);
        assert_eq!(calls.len(), 1, "{dialect:?}");
        assert_eq!(
            (calls[0].name.as_str(), &calls[0].arguments),
            ("add", &json!({ "a": 2, "b": 40 }))
        );
        let result = registry
            .run(&anyone, calls[0].to_call())
            .await
            .into_result();
        assert_eq!(dialect.result(&calls[0], &result), answer, "{dialect:?}");
    }

    let refused = registry
        .call(&anyone, "add", json!({ "a": 2 }))
        .await
        .into_result();
    let call = &Dialect::Anthropic.calls(&json!({ "content": [{ "type": "tool_use", "id": "t", "name": "add", "input": { "a": 2 } }] }))[0];
    assert_eq!(Dialect::Anthropic.result(call, &refused)["is_error"], true);
    let call = &Dialect::Gemini.calls(&json!({ "parts": [{ "functionCall": { "id": "g1", "name": "add", "args": { "a": 2 } } }] }))[0];
    let answer = Dialect::Gemini.result(call, &refused);
    assert_eq!(answer["functionResponse"]["id"], "g1");
    assert!(
        answer["functionResponse"]["response"]["error"]
            .as_str()
            .unwrap()
            .starts_with("[ERROR] Invalid arguments")
    );
    assert!(
        Dialect::OpenAiChat
            .calls(
                &json!({ "choices": [{ "message": { "role": "assistant", "content": "Hi." } }] })
            )
            .is_empty()
    );
    let empty = Dialect::OpenAiChat.calls(&json!({ "tool_calls": [{ "id": "x", "function": { "name": "shop_overview", "arguments": "" } }] }));
    assert_eq!(empty[0].arguments, json!({}));
}

#[tokio::test]
async fn results_are_encoded_by_type() {
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let sum = registry
        .call(&anyone, "add", json!({ "a": 2, "b": 40 }))
        .await
        .into_result();
    assert_eq!(
        (sum.text_for_model(), sum.structured),
        ("42".to_owned(), Some(json!(42)))
    );

    let page = registry
        .call(
            &viewer(),
            "find_orders",
            json!({ "query": "ada", "limit": 500 }),
        )
        .await
        .into_result();
    let page = page.structured.unwrap();
    assert_eq!(page["total"], 100);
    assert_eq!(
        page["rows"].as_array().unwrap().len(),
        50,
        "limit is clamped to 50"
    );
    assert_eq!(
        page["rows"][0],
        json!({ "url": "https://shop.example/orders/ada:RO-0", "number": "ada:RO-0", "status": "open" })
    );

    let text = registry
        .call(&anyone, "shop_overview", Value::Null)
        .await
        .into_result();
    assert_eq!(
        (text.text_for_model(), text.structured),
        ("3 open orders".to_owned(), None)
    );

    let picture = registry
        .call(&anyone, "picture", json!({}))
        .await
        .into_result();
    let binary: Vec<(Vec<u8>, &str)> = picture.binary_results().collect();
    assert_eq!(binary, [(vec![1, 2, 3], "image/png")]);

    let report = registry
        .call(&anyone, "report", json!({}))
        .await
        .into_result();
    assert_eq!(report.session_log.as_deref(), Some("report: 0 issues"));

    let defaults = registry
        .call(&anyone, "sort_things", json!({}))
        .await
        .into_result();
    assert_eq!(defaults.text_for_model(), "newest 3");
}

#[tokio::test]
async fn bad_arguments_get_a_message_naming_the_field_and_run_nothing() {
    let ledger = Ledger::default();
    let registry = registry(&ledger);
    let outcome = registry
        .call(
            &viewer(),
            "find_orders",
            json!({ "query": "", "limit": "ten", "colour": 1 }),
        )
        .await;
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::InvalidArguments);
    assert!(
        message.starts_with("Invalid arguments for `find_orders`: "),
        "{message}"
    );
    assert!(
        message.contains("`query`: \"\" is shorter than 1 character"),
        "{message}"
    );
    assert!(
        message.contains("`limit`: \"ten\" is not of type \"integer\""),
        "{message}"
    );
    assert!(message.contains("unknown argument `colour`"), "{message}");
    let data = outcome.error().unwrap().data().unwrap();
    assert_eq!(data["problems"].as_array().unwrap().len(), 3);

    let outcome = registry
        .call(
            &manager(),
            "confirm_order",
            json!({ "number": "order one" }),
        )
        .await;
    assert!(
        failure(&outcome)
            .1
            .contains("`number`: \"order one\" does not match \"^RO-[0-9]+$\"")
    );
    let outcome = registry
        .call(&manager(), "create_customer", json!({ "name": "Ada" }))
        .await;
    assert_eq!(
        failure(&outcome).1,
        "Invalid arguments for `create_customer`: missing required argument `email`. Fix them and call again."
    );
    let outcome = registry.call(&manager(), "add", json!([1, 2])).await;
    assert_eq!(
        failure(&outcome).1,
        "Invalid arguments for `add`: expected a JSON object, got [1,2]."
    );
    let outcome = registry
        .call(&manager(), "sort_things", json!({ "order": "random" }))
        .await;
    assert!(
        failure(&outcome)
            .1
            .contains("`order`: \"random\" is not one of"),
        "{outcome:?}"
    );
    assert!(ledger.lines().is_empty());
}

#[tokio::test]
async fn unknown_tools_are_a_clear_failure() {
    let registry = registry(&Ledger::default());
    let outcome = registry.call(&manager(), "serch_orders", json!({})).await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::UnknownTool,
            "Unknown tool `serch_orders`. List the tools to see which ones you can use.".into()
        )
    );
}

#[tokio::test]
async fn tool_errors_reach_the_model_and_internal_details_are_masked() {
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let outcome = registry
        .call(&anyone, "ship_order", json!({ "number": "RO-7" }))
        .await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Failed, "Order RO-7 is already shipped.".into())
    );
    let result = outcome.into_result();
    assert!(result.is_error);
    assert_eq!(
        result.text_for_model(),
        "[ERROR] Order RO-7 is already shipped."
    );
    assert_eq!(
        result.structured,
        Some(
            json!({ "error": { "kind": "failed", "message": "Order RO-7 is already shipped.", "data": { "number": "RO-7" } } })
        )
    );

    let masked = registry.call(&anyone, "read_config", json!({})).await;
    assert_eq!(
        failure(&masked),
        (
            ErrorKind::Internal,
            "The tool failed because of an internal error.".into()
        )
    );
    let open = Registry::builder()
        .state(Ledger::default())
        .mask_internal_errors(false)
        .build()
        .unwrap();
    let detailed = open.call(&anyone, "read_config", json!({})).await;
    assert!(
        failure(&detailed).1.contains("No such file or directory"),
        "{detailed:?}"
    );
}

#[tokio::test]
async fn a_panic_becomes_a_tool_error_and_the_registry_keeps_serving() {
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .mask_internal_errors(false)
        .build()
        .unwrap();
    let outcome = registry
        .call(&Caller::anonymous(), "explode", json!({}))
        .await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::Internal,
            "the tool panicked: the flux capacitor broke".into()
        )
    );
    assert_eq!(ledger.lines(), ["explode ran"]);
    let after = registry
        .call(&Caller::anonymous(), "add", json!({ "a": 1, "b": 1 }))
        .await;
    assert!(after.is_done());
}

#[tokio::test]
async fn timeouts_stop_the_tool_and_cancel_its_token() {
    let ledger = Ledger::default();
    let registry = registry(&ledger);
    let outcome = registry.call(&Caller::anonymous(), "slow", json!({})).await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::Timeout,
            "`slow` did not finish within 50ms and was stopped.".into()
        )
    );
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(ledger.lines(), ["slow saw its cancellation"]);
}

#[tokio::test]
async fn the_caller_can_cancel_a_call() {
    let registry = Registry::builder()
        .state(Ledger::default())
        .build()
        .unwrap();
    let token = toolgate::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancel.cancel();
    });
    let call = Call::new("slow", json!({})).cancellation(token);
    let outcome = registry.run(&Caller::anonymous(), call).await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Cancelled, "The call was cancelled.".into())
    );
}

#[tokio::test]
async fn call_ceilings_count_per_session_and_bad_calls_do_not_count() {
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let search =
        |session: &str| Call::new("web_search", json!({ "query": "rust" })).session(session);
    let invalid = registry
        .run(&anyone, Call::new("web_search", json!({})).session("s1"))
        .await;
    assert_eq!(failure(&invalid).0, ErrorKind::InvalidArguments);
    assert!(registry.run(&anyone, search("s1")).await.is_done());
    assert!(registry.run(&anyone, search("s1")).await.is_done());
    let third = registry.run(&anyone, search("s1")).await;
    assert_eq!(
        failure(&third),
        (
            ErrorKind::LimitReached,
            "`web_search` may run at most 2 times per conversation and has reached that limit. Answer with what you have."
                .into()
        )
    );
    assert!(
        registry.run(&anyone, search("s2")).await.is_done(),
        "another session has its own count"
    );
    registry.end_session("s1");
    assert!(registry.run(&anyone, search("s1")).await.is_done());
}

#[tokio::test]
async fn injected_values_reach_the_tool() {
    let registry = registry(&Ledger::default());
    // ANCHOR: call
    let call = Call::new("whoami", json!({}))
        .session("conv-9")
        .tool_call_id("call_3");
    let text = registry
        .run(&viewer(), call)
        .await
        .into_result()
        .text_for_model();
    // ANCHOR_END: call
    assert_eq!(
        text,
        "hello vera@acme (Some(\"Viewer\")) session=Some(\"conv-9\") call=Some(\"call_3\") tenant=acme"
    );

    let updates = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&updates);
    let call = Call::new("count", json!({}))
        .on_progress(move |u| seen.lock().unwrap().push((u.progress, u.message)));
    assert!(registry.run(&Caller::anonymous(), call).await.is_done());
    let updates = updates.lock().unwrap().clone();
    assert_eq!(
        updates,
        [
            (1.0, Some("step 1".into())),
            (2.0, Some("step 2".into())),
            (3.0, Some("step 3".into()))
        ]
    );
}

struct Recorder(Arc<Mutex<Vec<String>>>);

impl Hook for Recorder {
    fn on_resolve(&self, lookup: Lookup<'_>, tool: &Tool) -> Option<String> {
        self.0
            .lock()
            .unwrap()
            .push(format!("resolve {lookup:?} -> {}", tool.name()));
        (lookup == Lookup::Name("shop_overview")).then(|| "report".to_owned())
    }

    fn after_call(&self, call: &CallInfo<'_>, outcome: &mut Outcome) {
        self.0
            .lock()
            .unwrap()
            .push(format!("after {} {}", call.tool.name(), outcome.label()));
        if call.tool.name() == "add" {
            *outcome = Outcome::Done(ToolResult::text("rewritten"));
        }
    }
}

#[tokio::test]
async fn hooks_mock_redirect_and_rewrite() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // ANCHOR: hooks
    let registry = Registry::builder()
        .state(Ledger::default())
        .hook(hooks::mock("web_search", |args| {
            ToolResult::text(format!("mocked {}", args["query"]))
        }))
        .hook(Recorder(Arc::clone(&log)))
        .build()
        .unwrap();
    // ANCHOR_END: hooks
    let anyone = Caller::anonymous();
    let mocked = registry
        .call(&anyone, "web_search", json!({ "query": "q" }))
        .await;
    assert_eq!(mocked.into_result().text_for_model(), "mocked \"q\"");
    let redirected = registry.call(&anyone, "shop_overview", json!({})).await;
    assert_eq!(redirected.into_result().text_for_model(), "all good");
    let rewritten = registry
        .call(&anyone, "add", json!({ "a": 1, "b": 2 }))
        .await;
    assert_eq!(rewritten.into_result().text_for_model(), "rewritten");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "resolve Name(\"web_search\") -> web_search",
            "after web_search done",
            "resolve Name(\"shop_overview\") -> shop_overview",
            "after report done",
            "resolve Name(\"add\") -> add",
            "after add done",
        ]
    );
}

#[tokio::test]
async fn dynamic_tools_go_through_the_same_pipeline() {
    let lookup = DynamicTool::new(
        "lookup_fact",
        "Returns a fun fact about a topic.",
        json!({ "type": "object", "properties": { "topic": { "type": "string" } }, "required": ["topic"] }),
        |args, parts: CallParts<'static>| async move {
            match args["topic"].as_str() {
                Some("Rust") => Ok(json!({ "fact": "Rust 1.0 shipped in 2015.", "for": parts.caller().id() })),
                other => Err(ToolError::new(format!("No fact stored for {}.", other.unwrap_or("?")))),
            }
        },
    )
    .ability("facts.read")
    .read_only();
    let registry = Registry::builder()
        .state(Ledger::default())
        .tool(lookup)
        .build()
        .unwrap();
    let reader = Caller::new("r").with_abilities(["facts.read"]);
    let done = registry
        .call(&reader, "lookup_fact", json!({ "topic": "Rust" }))
        .await
        .into_result();
    assert_eq!(
        done.structured,
        Some(json!({ "fact": "Rust 1.0 shipped in 2015.", "for": "r" }))
    );
    let refused = registry
        .call(&reader, "lookup_fact", json!({ "topic": "PHP" }))
        .await;
    assert_eq!(failure(&refused).1, "No fact stored for PHP.");
    let invalid = registry
        .call(&reader, "lookup_fact", json!({ "topic": 3 }))
        .await;
    assert_eq!(failure(&invalid).0, ErrorKind::InvalidArguments);
    let denied = registry
        .call(
            &Caller::anonymous(),
            "lookup_fact",
            json!({ "topic": "Rust" }),
        )
        .await;
    assert_eq!(failure(&denied).0, ErrorKind::UnknownTool);
    assert!(!names(&registry.list(&Caller::anonymous())).contains(&"lookup_fact".to_owned()));

    let undeclared = DynamicTool::new("x", "X.", json!({ "type": "object" }), |_, _| async { "x" });
    let error = Registry::builder()
        .state(Ledger::default())
        .tool(undeclared)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "dynamic tool `x` must declare who may run it: call exactly one of `.public()` or `.ability(..)`"
    );
    let bad_name = DynamicTool::new("look up", "X.", json!({ "type": "object" }), |_, _| async {
        "x"
    })
    .public();
    assert!(
        Registry::builder()
            .state(Ledger::default())
            .tool(bad_name)
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn a_custom_authorizer_decides_both_listing_and_calling() {
    // ANCHOR: authorizer
    let registry = Registry::builder()
        .state(Ledger::default())
        .authorizer(|caller: &Caller, tool: &Tool| {
            caller.role() == Some("Admin") || tool.allows(caller)
        })
        .build()
        .unwrap();
    // ANCHOR_END: authorizer
    let admin = Caller::new("root").with_role("Admin");
    assert!(names(&registry.list(&admin)).contains(&"confirm_order".to_owned()));
    let outcome = registry
        .call(
            &admin,
            "create_customer",
            json!({ "name": "Ada", "email": "ada@example.org" }),
        )
        .await;
    assert!(outcome.is_done());
}
