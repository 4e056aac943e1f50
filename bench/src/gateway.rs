//! The gateway's path: `add` called through toolgate as a gateway, a registry that serves the tools of a
//! remote MCP server under its own policy, against the same call made straight to that server. The
//! remote is toolgate itself over stateless HTTP, in the serving process on a loopback port of its own;
//! the gateway reaches it as any remote server, over Streamable HTTP.

use std::time::Duration;

use tokio::net::TcpListener;
use toolgate::Registry;
use toolgate::http::{HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::remote::RemoteServer;

use crate::result;

/// The label of the remote server: its `add` is the gateway's `calc_add`.
pub(crate) const LABEL: &str = "calc";

/// A gateway on `listener` in front of toolgate's own `remote`, serving stateless HTTP.
pub(crate) async fn serve(remote: McpServer, listener: TcpListener) -> result::Result<()> {
    let inner = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", inner.local_addr()?);
    let stateless = || HttpOptions::default().stateless(true).json_response(true);
    let remote = HttpServer::new(remote).options(stateless());
    tokio::spawn(remote.serve_listener(inner, std::future::pending()));
    let server = RemoteServer::http(LABEL, url)
        .public()
        .trusted()
        .max_concurrent(64)
        .timeout(Duration::from_secs(30));
    // The gateway serves the remote's tools alone, none of those compiled into this binary.
    let registry = Registry::builder()
        .compiled_tools(std::iter::empty::<&str>())
        .remote(server)
        .build()?;
    registry.refresh_servers().await?;
    let gateway = McpServer::new(registry)
        .name("bench-gateway")
        .default_caller(example_shop::viewer());
    println!("PORT {}", listener.local_addr()?.port());
    Ok(HttpServer::new(gateway)
        .options(stateless())
        .serve_listener(listener, std::future::pending())
        .await?)
}
