//! Every attribute key and every `#[arg]` key together, on tools that compile.
#![allow(dead_code)]

use toolgate::prelude::*;

/// Search the web for pages.
#[tool(
    public,
    read_only,
    capability = "web_search",
    name = "web.search",
    title = "Web search",
    description = "Search the web.",
    categories = ["research", "web"],
    system,
    max_runs = 5,
    defer,
    task,
    idempotent,
    open_world,
    timeout = "10s",
    crate = ::toolgate,
)]
async fn web_search(
    /// What to look for.
    #[arg(length(min = 1, max = 200), pattern = "\\S")]
    query: String,
    /// Result language.
    #[arg(name = "lang", one_of = ["en", "de"], default = "en")]
    language: String,
    /// Pages to skip.
    #[arg(range(min = 0, max = 100), default = 0)]
    offset: u32,
    progress: Progress,
    cancellation: Cancellation,
    invocation: Invocation,
) -> Vec<String> {
    let _ = (progress, cancellation, invocation);
    vec![format!("{query} {language} {offset}")]
}

/// Cancel an order; only ever as a task.
#[tool(ability = ["orders.view", "orders.manage"], category = "orders", preview = preview_cancel, task = "required")]
async fn cancel_order(number: String) -> Result<(), ToolError> {
    let _ = number;
    Ok(())
}

async fn preview_cancel(number: String) -> Preview {
    Preview::new(format!("Cancel order {number}"))
}

fn main() {}

/// Ask which report, then build it as a task.
#[tool(public, read_only, task = "after_questions")]
async fn build_report(ask: Ask) -> Result<String, ToolError> {
    let _ = ask;
    Ok("report".into())
}

/// Say hello; always loaded.
#[tool(public, read_only, defer = "never")]
async fn hello() -> &'static str {
    "hello"
}

/// Say goodbye; deferred above the registry's threshold, and a task when the client can poll.
#[tool(public, read_only, defer = "auto", task = "optional")]
async fn goodbye() -> &'static str {
    "goodbye"
}

/// Show a table in the app's own way, in place of the built-in.
#[tool(public, read_only, overrides_builtin, name = "show_table")]
async fn own_table(rows: Vec<String>) -> String {
    rows.join(", ")
}

/// Read the caller's own invoices; the billing service checks their rights.
#[tool(enforced_downstream, read_only)]
async fn my_invoices() -> &'static str {
    "none"
}

/// Refund an invoice: an ability here, and the billing service checks the caller too.
#[tool(ability = "billing.refund", enforced_downstream)]
async fn refund_invoice(invoice: String) -> String {
    invoice
}
