//! The fixture tools every pipeline test registers (at link time, so each test sees all of them), and helpers.

pub(crate) use std::sync::{Arc, Mutex};
pub(crate) use std::time::Duration;

pub(crate) use schemars::JsonSchema;
pub(crate) use serde::{Deserialize, Serialize};
pub(crate) use serde_json::{Value, json};
pub(crate) use toolgate::param::{CallParts, Param, ParamKind, ParamSpec};
pub(crate) use toolgate::policy::hooks;
pub(crate) use toolgate::policy::hooks::{CallInfo, Hook, Lookup};
pub(crate) use toolgate::prelude::*;
pub(crate) use toolgate::{Content, DynamicTool, ErrorKind, Tool, ToolResult};

/// What the tools did, so tests can tell whether anything ran.
#[derive(Clone, Default)]
pub(crate) struct Ledger(Arc<Mutex<Vec<String>>>);

impl Ledger {
    pub(crate) fn push(&self, line: impl Into<String>) {
        self.0.lock().unwrap().push(line.into());
    }

    pub(crate) fn lines(&self) -> Vec<String> {
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

/// Refund an order in full, back to the card it was paid with.
#[tool(ability = "orders.manage", defer, idempotent)]
async fn refund_order(ledger: State<Ledger>, number: String) -> String {
    ledger.push(format!("refunded {number}"));
    format!("{number} refunded")
}

#[derive(Deserialize, Default, schemars::JsonSchema)]
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
        "{} {} ({:?}) tool={} session={:?} call={:?} tenant={}",
        settings.0.greeting,
        caller.id(),
        caller.role(),
        invocation.tool_name,
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
    ToolResult::text("all good")
        .with_session_log("report: 0 issues")
        .with_telemetry("issues", json!(0))
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

pub(crate) fn registry(ledger: &Ledger) -> Registry {
    Registry::builder()
        .state(ledger.clone())
        .settings("whoami", json!({ "greeting": "hello" }))
        .first(["shop_overview"])
        .build()
        .expect("the test tools are consistent")
}

pub(crate) fn viewer() -> Caller {
    Caller::new("vera@acme")
        .with_role("Viewer")
        .with_abilities(["orders.view"])
}

pub(crate) fn manager() -> Caller {
    Caller::new("max@acme")
        .with_role("Manager")
        .with_abilities(["orders.view", "orders.manage", "customers.manage"])
}

/// The text of the line a `file:line` source points at.
pub(crate) fn line_at(source: &str) -> String {
    let (file, line) = source.rsplit_once(':').unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    text.lines()
        .nth(line.parse::<usize>().unwrap() - 1)
        .unwrap()
        .trim()
        .to_owned()
}

pub(crate) fn names(tools: &[std::sync::Arc<Tool>]) -> Vec<String> {
    tools.iter().map(|t| t.name().to_owned()).collect()
}

pub(crate) fn failure(outcome: &Outcome) -> (ErrorKind, String) {
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("expected a failure, got {outcome:?}"));
    (error.kind(), error.message().to_owned())
}
