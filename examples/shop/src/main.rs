//! Run with `cargo run -p example-shop`.
//!
//! Serves the shop's tools over MCP: Streamable HTTP on 127.0.0.1:8080 by default, `--http ADDR` for another
//! address (`--stateless` behind a load balancer), `--stdio` for a desktop client, `--demo` to call them
//! in-process instead. `--db PATH` keeps the SQLite database in a file (default: a fresh in-memory one,
//! seeded with 30 orders). `--store LOCATION` keeps toolgate's records, confirmations, ceilings and audit
//! elsewhere: another SQLite file, or a `postgres://` URL shared by replicas (default: the `--db`
//! database). `--config PATH` applies an operator's TOML or JSON file (see `deploy/shop.toml`). `--sync`
//! syncs the tools into the records on start, for development. Each option can come from the environment
//! instead (`SHOP_HTTP`, `SHOP_STATELESS`, `SHOP_DB`, `SHOP_STORE`, `SHOP_CONFIG`; see
//! `deploy/replica.env`). `toolgate ...` runs an operator's command on the records instead of serving:
//! `cargo run -p example-shop -- --db shop.db toolgate tools disable ship_order`. `--oauth-issuer URL` signs
//! people in at an OAuth authorization server instead of the demo's static tokens (`--public-url` the
//! MCP endpoint's address as clients reach it, behind a proxy; `--config deploy/signed-in.toml` what
//! their scopes grant).

use example_shop::agent::{self, Scripted};
use example_shop::{Db, http_server, manager, registry, server, signed_in_http_server, viewer};
use serde_json::json;
use toolgate::http::HttpOptions;
use toolgate::output::Pending;
use toolgate::registry::Config;
use toolgate::store::Database;
use toolgate::{Caller, Outcome, Registry};

/// The shop's back office as an MCP server.
#[derive(clap::Parser)]
#[command(name = "example-shop", version)]
struct Options {
    /// Serve Streamable HTTP at this address.
    #[arg(
        long,
        env = "SHOP_HTTP",
        default_value = "127.0.0.1:8080",
        value_name = "ADDR"
    )]
    http: String,
    /// Answer every HTTP client without a session, as replicas behind a load balancer must.
    #[arg(long, env = "SHOP_STATELESS")]
    stateless: bool,
    /// A `Host` name HTTP requests may carry besides the loopback ones: the public name a proxy forwards.
    #[arg(
        long = "allowed-host",
        env = "SHOP_ALLOWED_HOSTS",
        value_delimiter = ',',
        value_name = "NAME"
    )]
    allowed_hosts: Vec<String>,
    /// Sign people in at this OAuth authorization server (its issuer URL) instead of accepting the demo's
    /// static tokens; what their scopes grant is in `--config` (see `deploy/signed-in.toml`: `orders:read`
    /// a viewer's abilities, `orders:write` a manager's, `shop:admin` the admin API).
    #[arg(long, env = "SHOP_OAUTH_ISSUER", value_name = "URL")]
    oauth_issuer: Option<String>,
    /// The MCP endpoint's address as clients reach it, which tokens must name (default: the address
    /// served, with `/mcp`).
    #[arg(
        long,
        env = "SHOP_PUBLIC_URL",
        value_name = "URL",
        requires = "oauth_issuer"
    )]
    public_url: Option<String>,
    /// Serve a desktop client over stdio instead.
    #[arg(long, conflicts_with_all = ["demo", "agent"])]
    stdio: bool,
    /// Call the tools in-process instead of serving them.
    #[arg(long, conflicts_with = "agent")]
    demo: bool,
    /// Run the shop's own agent loop with a scripted model.
    #[arg(long)]
    agent: bool,
    /// The shop's SQLite database (`:memory:` is a fresh one, seeded with 30 orders).
    #[arg(long, env = "SHOP_DB", default_value = ":memory:", value_name = "PATH")]
    db: String,
    /// Where toolgate keeps its records, confirmations, ceilings and audit: a SQLite file or a
    /// `postgres://` URL shared by replicas (default: the `--db` database).
    #[arg(long, env = "SHOP_STORE", value_name = "LOCATION")]
    store: Option<String>,
    /// An operator's TOML or JSON file.
    #[arg(long, env = "SHOP_CONFIG", value_name = "PATH")]
    config: Option<String>,
    /// Sync the tools into the records on start, for development.
    #[arg(long)]
    sync: bool,
    /// Export each tool call's span to this OTLP/HTTP endpoint (its base URL; spans go to `/v1/traces`).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    otlp: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Run an operator's command on the records instead of serving, e.g. `toolgate tools disable ship_order`.
    #[command(disable_help_flag = true)]
    Toolgate {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let options = <Options as clap::Parser>::parse();
    let telemetry = match example_shop::telemetry::init(options.otlp.as_deref()) {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("example-shop: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let ran = run(options).await;
    drop(telemetry);
    match ran {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("example-shop: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let Options {
        db, store, config, ..
    } = &options;
    let config = match config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let operating = matches!(options.command, Some(Command::Toolgate { .. }));
    let opened = async {
        let store = Database::open(store.as_deref().unwrap_or(db)).await?;
        let registry = registry(Db::open(db)?, &store, config).await?;
        Ok::<_, Box<dyn std::error::Error>>((store, registry))
    };
    let (store, registry) = match opened.await {
        Ok(opened) => opened,
        // An operator's command says that its database cannot be used, as every command does.
        Err(error) if operating => {
            eprintln!("example-shop: the database cannot be used: {error}");
            std::process::exit(toolgate::operator::UNAVAILABLE);
        }
        Err(error) => return Err(error),
    };
    if options.sync {
        eprint!("{}", registry.sync("example-shop --sync").await?);
    }
    // ANCHOR: watch
    // A change an operator makes (here, or in another process on the same database) is served within
    // 250 ms; on PostgreSQL, as soon as its NOTIFY arrives.
    tokio::spawn(registry.watch(std::time::Duration::from_millis(250)));
    // ANCHOR_END: watch
    match options {
        Options {
            command: Some(Command::Toolgate { args }),
            ..
        } => {
            let args = std::iter::once("toolgate".to_owned()).chain(args);
            let (code, out) = toolgate::operator::run(&registry, args).await;
            print!("{out}");
            if code != toolgate::operator::OK {
                std::process::exit(code);
            }
        }
        Options { stdio: true, .. } => server(registry).serve_stdio().await?,
        Options { demo: true, .. } => demo(&registry).await,
        Options { agent: true, .. } => agent(&registry).await.map_err(|e| e.to_string())?,
        // ANCHOR: serve
        Options {
            http,
            stateless,
            allowed_hosts,
            oauth_issuer,
            public_url,
            ..
        } => {
            let listener = tokio::net::TcpListener::bind(&http).await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            println!("example-shop serves MCP at {url}");
            let served = match &oauth_issuer {
                None => {
                    print_static_tokens(&url);
                    http_server(server(registry))
                }
                Some(issuer) => {
                    let public_url = public_url.as_deref().unwrap_or(&url);
                    println!("  people sign in at {issuer}, for {public_url}");
                    println!(
                        "  what their scopes grant: `[grants]` in --config, and `toolgate grants`"
                    );
                    signed_in_http_server(server(registry), issuer, public_url)?
                }
            };
            println!("Ctrl-C stops it; calls in flight finish first.");
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            let mut options = HttpOptions::default()
                .stateless(stateless)
                .json_response(stateless);
            if !allowed_hosts.is_empty() {
                let loopback = ["localhost", "127.0.0.1", "::1"].map(String::from);
                options = options.allowed_hosts(loopback.into_iter().chain(allowed_hosts));
            }
            served
                .options(options)
                .serve_listener(listener, shutdown)
                .await?;
        } // ANCHOR_END: serve
    }
    // The audit's last rows, written before the process ends.
    if !store.audit().flush(std::time::Duration::from_secs(5)).await {
        eprintln!("example-shop: some audit rows could not be written: the database is away");
    }
    Ok(())
}

/// What the demo's static tokens are, and how to connect with one.
fn print_static_tokens(url: &str) {
    println!(
        "  bearer tokens: viewer-token (Viewer: orders.view), manager-token (Manager: orders.*),"
    );
    println!("                 bot-token (the support bot: profile `support`)");
    println!(
        "  admin page: {}/admin (admin API below it), token admin-token",
        url.trim_end_matches("/mcp")
    );
    println!(
        "  MCP Inspector: npx @modelcontextprotocol/inspector, transport Streamable HTTP, URL {url},"
    );
    println!("                 header Authorization: Bearer manager-token");
    println!("  desktop clients (stdio): command `cargo run -p example-shop -- --stdio`");
}

/// The tools called in-process, as an app's own agent loop would.
async fn demo(registry: &Registry) {
    let (vera, max) = (viewer(), manager());
    for caller in [&vera, &max] {
        let names: Vec<String> = registry
            .list(caller)
            .iter()
            .map(|t| t.name().to_owned())
            .collect();
        println!(
            "{} ({}) sees: {}",
            caller.id(),
            caller.role().unwrap_or("-"),
            names.join(", ")
        );
    }

    // ANCHOR: calls
    show(
        registry,
        &vera,
        "search_orders",
        json!({ "query": "Lovelace", "limit": 2 }),
    )
    .await;
    show(
        registry,
        &vera,
        "confirm_order",
        json!({ "number": "RO-00003" }),
    )
    .await;
    show(
        registry,
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
    show(registry, &max, "order_details", json!({ "number": "RO-3" })).await;
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

/// The agent loop with a scripted model: what a model API would reply, one turn at a time.
async fn agent(registry: &Registry) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // ANCHOR: agent
    let mut model = Scripted::new([
        Scripted::call(
            "call_1",
            "search_orders",
            json!({ "query": "Katherine Johnson", "status": "pending" }),
        ),
        Scripted::call("call_2", "confirm_order", json!({ "number": "RO-00003" })),
        Scripted::answer("Order RO-00003 for Katherine Johnson (56.57 EUR) is confirmed."),
    ]);
    // The app's approval dialog; here the person says yes to every preview.
    let mut approved = Vec::new();
    let approve = |pending: &Pending| {
        approved.push(pending.preview().text().to_owned());
        true
    };
    let task = "Confirm Katherine Johnson's oldest pending order.";
    let finished = agent::run(registry, &manager(), &mut model, approve, task, 8).await?;
    // ANCHOR_END: agent
    for message in &finished.messages {
        let role = message["role"].as_str().unwrap_or("-");
        match message["tool_calls"].as_array() {
            Some(calls) => {
                for call in calls {
                    let function = &call["function"];
                    let name = function["name"].as_str().unwrap_or("-");
                    let arguments = function["arguments"].as_str().unwrap_or("-");
                    println!("{role}: calls {name} {arguments}");
                }
            }
            None => println!(
                "{role}: {}",
                clip(message["content"].as_str().unwrap_or(""))
            ),
        }
    }
    for preview in approved {
        println!("(a person approved: {preview})");
    }
    Ok(())
}

/// The first 110 characters of `text`, for a transcript that fits a terminal.
fn clip(text: &str) -> String {
    match text.char_indices().nth(110) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}
