//! Run with `cargo run -p example-gateway` (from the repository's root, with `npx` and Python's `mcp` at
//! hand).
//!
//! A gateway with approvals: the shop's tools, in process, and the remote MCP servers of
//! `examples/gateway/gateway.toml` (`--config PATH` for another file), served together over Streamable
//! HTTP at 127.0.0.1:8090 (`--http ADDR`) under one policy: the shop's bearer tokens and abilities,
//! previews for writes (the remote ones too), one audit trail. `toolgate ...` runs an operator's command
//! instead, `toolgate servers list` among them.

use example_shop::{Db, http_server, registry, server};
use toolgate::registry::Config;
use toolgate::store::Database;

/// The shop and remote MCP servers behind one policy.
#[derive(clap::Parser)]
#[command(name = "example-gateway", version)]
struct Options {
    /// Serve Streamable HTTP at this address.
    #[arg(long, default_value = "127.0.0.1:8090", value_name = "ADDR")]
    http: String,
    /// The operator's file with the remote servers.
    #[arg(
        long,
        default_value = "examples/gateway/gateway.toml",
        value_name = "PATH"
    )]
    config: String,
    /// Where toolgate keeps its records and audit: a SQLite file or a `postgres://` URL.
    #[arg(long, default_value = ":memory:", value_name = "LOCATION")]
    store: String,
    /// An operator's command on the records instead of serving, e.g. `toolgate servers list`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    toolgate: Vec<String>,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| "toolgate::remote=info".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match run(<Options as clap::Parser>::parse()).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("example-gateway: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<std::process::ExitCode, Box<dyn std::error::Error>> {
    // ANCHOR: gateway
    let config = Config::load(&options.config)?;
    let store = Database::open(&options.store).await?;
    let registry = registry(Db::open(":memory:")?, &store, config).await?;
    // Lists every server's tools, checks their health and reconnects them, and takes up the operator's
    // changes.
    tokio::spawn(registry.watch(std::time::Duration::from_millis(250)));
    // ANCHOR_END: gateway
    if let Some(first) = options.toolgate.first() {
        if first != "toolgate" {
            return Err(format!(
                "unknown command `{first}`; operator commands start with `toolgate`"
            )
            .into());
        }
        let (code, out) = toolgate::operator::run(&registry, &options.toolgate).await;
        print!("{out}");
        return Ok(std::process::ExitCode::from(
            u8::try_from(code).unwrap_or(1),
        ));
    }
    let listener = tokio::net::TcpListener::bind(&options.http).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("example-gateway serves MCP at {url}");
    println!("  the shop's tools, and those of: {}", servers(&registry));
    println!(
        "  bearer tokens: viewer-token (orders.view), manager-token (orders.*), admin-token (admin API)"
    );
    println!(
        "  MCP Inspector: npx @modelcontextprotocol/inspector, transport Streamable HTTP, URL {url},"
    );
    println!("                 header Authorization: Bearer manager-token");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    http_server(server(registry).name("example-gateway"))
        .serve_listener(listener, shutdown)
        .await?;
    Ok(std::process::ExitCode::SUCCESS)
}

fn servers(registry: &toolgate::Registry) -> String {
    let labels: Vec<String> = registry.servers().into_iter().map(|s| s.label).collect();
    labels.join(", ")
}
