//! Run with `cargo run -p example-shop`.
//!
//! The shop's tools called in-process, as an app's own agent loop would: listing per caller, a search, a
//! denied write, and a write that runs once a person approves its preview.

use example_shop::{Db, manager, registry, viewer};
use serde_json::json;
use toolgate::{Caller, Outcome, Registry};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| ":memory:".to_owned());
    let registry = registry(Db::open(&path)?)?;
    let (vera, max) = (viewer(), manager());

    for caller in [&vera, &max] {
        let names: Vec<&str> = registry.list(caller).iter().map(|t| t.name()).collect();
        println!(
            "{} ({}) sees: {}",
            caller.id(),
            caller.role().unwrap_or("-"),
            names.join(", ")
        );
    }

    // ANCHOR: calls
    show(
        &registry,
        &vera,
        "search_orders",
        json!({ "query": "Lovelace", "limit": 2 }),
    )
    .await;
    show(
        &registry,
        &vera,
        "confirm_order",
        json!({ "number": "RO-00003" }),
    )
    .await;
    show(
        &registry,
        &max,
        "confirm_order",
        json!({ "number": "RO-00003" }),
    )
    .await;

    let outcome = registry
        .call(&max, "confirm_order", json!({ "number": "RO-00003" }))
        .await;
    if let Outcome::NeedsConfirmation(pending) = outcome {
        println!("\n> a person approves: {}", pending.preview().text());
        let done = registry.confirm(&max, pending.confirmation()).await;
        println!("< {}", done.into_result().text_for_model());
        let again = registry.confirm(&max, pending.confirmation()).await;
        println!(
            "> the same approval again\n< {}",
            again.into_result().text_for_model()
        );
    }
    // ANCHOR_END: calls
    show(
        &registry,
        &max,
        "order_details",
        json!({ "number": "RO-3" }),
    )
    .await;
    Ok(())
}

async fn show(registry: &Registry, caller: &Caller, tool: &str, arguments: serde_json::Value) {
    println!("\n> {} calls {tool} {arguments}", caller.id());
    match registry.call(caller, tool, arguments).await {
        Outcome::NeedsConfirmation(pending) => {
            println!("< needs approval: {}", pending.preview().text())
        }
        outcome => println!("< {}", outcome.into_result().text_for_model()),
    }
}
