//! Run with `cargo run -p example-conformance -- 127.0.0.1:3001`.
//!
//! The fixture server of the official MCP conformance suite (`@modelcontextprotocol/conformance`): its tools
//! are plain `#[tool]` functions served by toolgate, its prompts and resources come from a plain rmcp handler
//! composed with them. It serves Streamable HTTP at `/mcp`, as anyone on loopback (no authentication).

mod extras;
mod tools;

use toolgate::Registry;
use toolgate::mcp::McpServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:3001".to_owned());
    // ANCHOR: compose
    let registry = Registry::builder()
        .tool(tools::json_schema_2020_12_tool())
        .tool(tools::header_tool())
        .build()?;
    let server = McpServer::new(registry)
        .name("example-conformance")
        .version(env!("CARGO_PKG_VERSION"))
        .with_handler(extras::Extras::default());
    // ANCHOR_END: compose
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!(
        "example-conformance serves MCP at http://{}/mcp",
        listener.local_addr()?
    );
    server
        .serve_listener(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
