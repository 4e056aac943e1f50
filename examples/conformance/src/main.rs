//! Run with `cargo run -p example-conformance` (HTTP on 127.0.0.1:3001; `--http ADDR` for another address,
//! `--stdio` to serve stdio).
//!
//! The fixture server of the official MCP conformance suite (`@modelcontextprotocol/conformance`): its tools
//! are plain `#[tool]` functions served by toolgate, its prompts and resources come from a plain rmcp handler
//! composed with them. It serves Streamable HTTP at `/mcp`, as anyone on loopback (no authentication).
//! `example-conformance client URL` is toolgate's client for the suite's client scenarios instead.

mod client;
mod extras;
mod questions;
mod tasks;
mod tools;

use toolgate::Registry;
use toolgate::http::HttpServer;
use toolgate::mcp::McpServer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [command, url] = args.as_slice()
        && command == "client"
    {
        return client::run(url).await;
    }
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
    let address = match args.as_slice() {
        [] => "127.0.0.1:3001",
        [flag] if flag == "--stdio" => return Ok(server.serve_stdio().await?),
        [flag, address] if flag == "--http" => address.as_str(),
        _ => {
            return Err(
                "usage: example-conformance [--http ADDR | --stdio] | example-conformance client URL"
                    .into(),
            );
        }
    };
    let listener = tokio::net::TcpListener::bind(address).await?;
    println!(
        "example-conformance serves MCP at http://{}/mcp",
        listener.local_addr()?
    );
    HttpServer::new(server)
        .serve_listener(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
