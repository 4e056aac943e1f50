//! The shop's tools: an overview, search, details, and two writes that a person approves first.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate::output::{Chart, ChartKind};
use toolgate::prelude::*;

use crate::db::{Db, Order, Status, Summary};

/// Where a person opens an order in the back office.
fn order_url(number: &str) -> String {
    format!("https://shop.example/admin/orders/{number}")
}

// ANCHOR: overview
/// What the shop looks like right now: orders by status and total revenue. Start here for broad questions.
#[tool(ability = "orders.view", read_only, category = "orders")]
pub async fn shop_overview(db: State<Db>) -> Result<Summary, ToolError> {
    Ok(db.summary()?)
}
// ANCHOR_END: overview

/// One row of a search: enough to pick an order.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrderRow {
    /// The order number.
    pub number: String,
    /// The customer's name.
    pub customer: String,
    /// Where the order is.
    pub status: Status,
    /// Total in euros.
    pub total_eur: f64,
}

// ANCHOR: search
/// Find orders by number or customer. Returns compact rows, each with a url, newest first.
#[tool(ability = "orders.view", read_only, category = "orders")]
pub async fn search_orders(
    db: State<Db>,
    /// Part of an order number or a customer's name.
    #[arg(length(max = 100))]
    query: Option<String>,
    /// Only orders in this status.
    status: Option<Status>,
    limit: Limit,
) -> Result<Page<OrderRow>, ToolError> {
    let (total, orders) = db.search(query.as_deref(), status, limit.as_usize())?;
    let rows = orders.into_iter().map(|o| OrderRow {
        number: o.number,
        customer: o.customer,
        status: o.status,
        total_eur: o.total_eur,
    });
    Ok(Page::new(total, rows, |row| order_url(&row.number)))
}
// ANCHOR_END: search

/// Every order as CSV, for a spreadsheet. It reads the whole table, so it runs at most 3 times per
/// conversation.
#[tool(ability = "orders.view", read_only, max_runs = 3, category = "orders")]
pub async fn export_orders(db: State<Db>) -> Result<String, ToolError> {
    let (_, orders) = db.search(None, None, usize::MAX)?;
    let mut csv = String::from("number,customer,status,total_eur,carrier\n");
    for order in orders {
        let status = serde_json::to_value(order.status).unwrap_or_default();
        csv.push_str(&format!(
            "{},{},{},{:.2},{}\n",
            order.number,
            order.customer,
            status.as_str().unwrap_or_default(),
            order.total_eur,
            order.carrier.unwrap_or_default()
        ));
    }
    Ok(csv)
}

// ANCHOR: deferred
/// One customer's orders, summed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CustomerTotal {
    /// The customer's name.
    pub customer: String,
    /// How many orders they placed.
    pub orders: usize,
    /// What they spent in euros, over every order.
    pub spent_eur: f64,
}

/// Each customer's order count and total spend, biggest spenders first: for account reviews. Rarely
/// needed, so it is not loaded up front; `tool_search` finds it. It reads every order, so a client that
/// can poll gets a task.
#[tool(
    ability = "orders.view",
    read_only,
    category = "customers",
    defer,
    task
)]
pub async fn customer_totals(db: State<Db>) -> Result<Vec<CustomerTotal>, ToolError> {
    let (_, orders) = db.search(None, None, usize::MAX)?;
    let mut totals: Vec<CustomerTotal> = Vec::new();
    for order in orders {
        match totals.iter_mut().find(|t| t.customer == order.customer) {
            Some(total) => {
                total.orders += 1;
                total.spent_eur += order.total_eur;
            }
            None => totals.push(CustomerTotal {
                customer: order.customer,
                orders: 1,
                spent_eur: order.total_eur,
            }),
        }
    }
    for total in &mut totals {
        total.spent_eur = (total.spent_eur * 100.0).round() / 100.0;
    }
    totals.sort_by(|a, b| b.spent_eur.total_cmp(&a.spent_eur));
    Ok(totals)
}
// ANCHOR_END: deferred

// ANCHOR: chart
/// Orders per day, as a line chart and their sum.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OrdersPerDay {
    /// One point per day that has orders, oldest first.
    pub chart: Chart,
    /// How many orders in all.
    pub total: u64,
}

/// How many orders were placed each day, as a line chart: for questions about trends over time.
#[tool(ability = "orders.view", read_only, category = "orders")]
pub async fn orders_per_day(db: State<Db>) -> Result<OrdersPerDay, ToolError> {
    let days = db.orders_per_day()?;
    let chart = Chart::new(ChartKind::Line, "Orders per day")
        .labels(days.iter().map(|(day, _)| day.as_str()))
        .dataset("Orders", days.iter().map(|(_, n)| *n as f64));
    let total = days.iter().map(|(_, n)| n).sum();
    Ok(OrdersPerDay { chart, total })
}
// ANCHOR_END: chart

/// The full record of one order.
#[tool(ability = "orders.view", read_only, category = "orders")]
pub async fn order_details(
    db: State<Db>,
    /// The order number, e.g. `RO-00012`.
    #[arg(pattern = "^RO-[0-9]{5}$")]
    number: String,
) -> Result<Order, ToolError> {
    db.order(&number)?
        .ok_or_else(|| ToolError::new(format!("There is no order {number}.")))
}

// ANCHOR: confirm
/// Confirm a pending order. Changes data: a person approves a preview first.
#[tool(ability = "orders.manage", preview = preview_confirm, category = "orders", idempotent)]
pub async fn confirm_order(
    db: State<Db>,
    /// The order number, e.g. `RO-00012`.
    #[arg(pattern = "^RO-[0-9]{5}$")]
    number: String,
) -> Result<Order, ToolError> {
    let order = pending(&db, &number)?;
    if !db.advance(&order.number, Status::Pending, Status::Confirmed, None)? {
        return Err(ToolError::new(format!(
            "Order {number} changed meanwhile; look it up again."
        )));
    }
    Ok(Order {
        status: Status::Confirmed,
        ..order
    })
}

/// What `confirm_order` would do, for a person to approve. Reads only.
async fn preview_confirm(db: State<Db>, number: String) -> Result<Preview, ToolError> {
    let order = pending(&db, &number)?;
    Ok(Preview::new(format!(
        "Confirm order {} for {} ({:.2} EUR).",
        order.number, order.customer, order.total_eur
    ))
    .with_data(serde_json::json!({ "order": order.number, "total_eur": order.total_eur })))
}
// ANCHOR_END: confirm

/// The order, if it exists and is pending; otherwise a sentence the model can relay.
fn pending(db: &Db, number: &str) -> Result<Order, ToolError> {
    let order = db
        .order(number)?
        .ok_or_else(|| ToolError::new(format!("There is no order {number}.")))?;
    match order.status {
        Status::Pending => Ok(order),
        other => Err(ToolError::new(format!(
            "Order {number} is {}, not pending; only pending orders can be confirmed.",
            serde_json::to_value(other)
                .unwrap_or_default()
                .as_str()
                .unwrap_or("changed")
        ))),
    }
}

/// How `ship_order` books a parcel, as an operator sets it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct Shipping {
    /// How long booking the parcel with the carrier takes, in milliseconds: the demo's stand-in for a
    /// carrier's API, which answers in its own time (default 0).
    #[serde(default)]
    #[schemars(range(max = 60000))]
    pub booking_ms: u64,
}

/// Ship a confirmed order with a carrier. Changes data: a person approves a preview first.
#[tool(ability = "orders.ship", preview = preview_ship, category = "orders")]
pub async fn ship_order(
    db: State<Db>,
    shipping: Settings<Shipping>,
    /// The order number, e.g. `RO-00012`.
    #[arg(pattern = "^RO-[0-9]{5}$")]
    number: String,
    /// Who carries the parcel.
    #[arg(one_of = ["DHL", "UPS", "DPD"], default = "DHL")]
    carrier: String,
) -> Result<Order, ToolError> {
    let order = confirmed(&db, &number)?;
    // The parcel is booked first; the order moves only once the carrier has it.
    tokio::time::sleep(Duration::from_millis(shipping.0.booking_ms)).await;
    if !db.advance(&number, Status::Confirmed, Status::Shipped, Some(&carrier))? {
        return Err(ToolError::new(format!(
            "Order {number} changed meanwhile; look it up again."
        )));
    }
    Ok(Order {
        status: Status::Shipped,
        carrier: Some(carrier),
        ..order
    })
}

/// What `ship_order` would do. Reads only.
async fn preview_ship(
    db: State<Db>,
    _shipping: Settings<Shipping>,
    number: String,
    carrier: String,
) -> Result<Preview, ToolError> {
    let order = confirmed(&db, &number)?;
    Ok(Preview::new(format!(
        "Ship order {} to {} with {carrier}.",
        order.number, order.customer
    )))
}

fn confirmed(db: &Db, number: &str) -> Result<Order, ToolError> {
    let order = db
        .order(number)?
        .ok_or_else(|| ToolError::new(format!("There is no order {number}.")))?;
    if order.status == Status::Confirmed {
        Ok(order)
    } else {
        Err(ToolError::new(format!(
            "Order {number} is not confirmed yet; confirm it before shipping."
        )))
    }
}
