//! Run with `cargo run -p example-hello`.
//!
//! The book's first chapter: one tool, its schema, and a call.

// ANCHOR: tool
use toolgate::prelude::*;

/// Greet someone by name.
#[tool(public, read_only)]
async fn greet(
    /// Who to greet.
    name: String,
    /// How many exclamation marks to add.
    #[arg(range(min = 0, max = 5), default = 1)]
    excitement: u8,
) -> String {
    format!("Hello, {name}{}", "!".repeat(excitement.into()))
}
// ANCHOR_END: tool

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: call
    let registry = Registry::builder().build()?;
    let greet = registry.get("greet").expect("registered at link time");
    println!("{}: {}", greet.name(), greet.description());
    println!("{}", serde_json::to_string_pretty(greet.input_schema())?);

    let caller = Caller::anonymous();
    let outcome = registry
        .call(&caller, "greet", serde_json::json!({ "name": "Ada" }))
        .await;
    println!("{}", outcome.into_result().text_for_model());

    let outcome = registry
        .call(
            &caller,
            "greet",
            serde_json::json!({ "name": "Ada", "excitement": 9 }),
        )
        .await;
    println!("{}", outcome.into_result().text_for_model());
    // ANCHOR_END: call
    Ok(())
}
