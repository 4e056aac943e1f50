//! Run with `cargo run -p example-shop`.
//!
//! Serves the shop's tools over MCP: Streamable HTTP on 127.0.0.1:8080 by default, `--http ADDR` for another
//! address, `--stdio` for a desktop client, `--demo` to call them in-process instead. `--db PATH` keeps the
//! SQLite database in a file (default: a fresh in-memory one, seeded with 30 orders). `--store LOCATION` keeps
//! toolgate's records, confirmations and audit elsewhere: another SQLite file, or a `postgres://` URL shared
//! by replicas (default: the `--db` database). `--config PATH` applies
//! an operator's TOML or JSON file (see `deploy/shop.toml`). `--sync` syncs the tools into the records on
//! start, for development. `toolgate ...` runs an operator's command on the records instead of serving:
//! `cargo run -p example-shop -- --db shop.db toolgate tools disable ship_order`.

use example_shop::agent::{self, Scripted};
use example_shop::{Db, manager, registry, server, viewer};
use serde_json::json;
use toolgate::output::Pending;
use toolgate::registry::Config;
use toolgate::store::Database;
use toolgate::{Caller, Outcome, Registry};

enum Mode {
    Http(String),
    Stdio,
    Demo,
    Agent,
    /// An operator's command line, after `toolgate`.
    Operator(Vec<String>),
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    // ANCHOR: logs
    // Logs go to standard error (standard output carries the protocol over stdio); `RUST_LOG` filters them.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,toolgate=info".into()),
        )
        .init();
    // ANCHOR_END: logs
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("example-shop: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let Options {
        mode,
        db,
        store,
        config,
        sync,
    } = parse(std::env::args().skip(1))?;
    let config = match config {
        Some(path) => Config::load(path)?,
        None => Config::default(),
    };
    let store = Database::open(store.as_deref().unwrap_or(&db)).await?;
    let registry = registry(Db::open(&db)?, &store, config).await?;
    if sync {
        eprint!("{}", registry.sync("example-shop --sync").await?);
    }
    // ANCHOR: watch
    // A change an operator makes (here, or in another process on the same database) is served within
    // 250 ms; on PostgreSQL, as soon as its NOTIFY arrives.
    tokio::spawn(registry.watch(std::time::Duration::from_millis(250)));
    // ANCHOR_END: watch
    match mode {
        Mode::Operator(args) => {
            let args = std::iter::once("toolgate".to_owned()).chain(args);
            let (code, out) = toolgate::operator::run(&registry, args).await;
            print!("{out}");
            if code != toolgate::operator::OK {
                std::process::exit(code);
            }
        }
        Mode::Stdio => server(registry).serve_stdio().await?,
        Mode::Demo => demo(&registry).await,
        Mode::Agent => agent(&registry).await.map_err(|e| e.to_string())?,
        // ANCHOR: serve
        Mode::Http(address) => {
            let listener = tokio::net::TcpListener::bind(&address).await?;
            let url = format!("http://{}/mcp", listener.local_addr()?);
            println!("example-shop serves MCP at {url}");
            println!(
                "  bearer tokens: viewer-token (Viewer: orders.view), manager-token (Manager: orders.*),"
            );
            println!("                 bot-token (the support bot: profile `support`)");
            println!(
                "  admin API: {}/admin/tools, bearer token admin-token",
                url.trim_end_matches("/mcp")
            );
            println!(
                "  MCP Inspector: npx @modelcontextprotocol/inspector, transport Streamable HTTP, URL {url},"
            );
            println!("                 header Authorization: Bearer manager-token");
            println!("  desktop clients (stdio): command `cargo run -p example-shop -- --stdio`");
            println!("Ctrl-C stops it; calls in flight finish first.");
            let shutdown = async {
                let _ = tokio::signal::ctrl_c().await;
            };
            server(registry).serve_listener(listener, shutdown).await?;
        } // ANCHOR_END: serve
    }
    Ok(())
}

struct Options {
    mode: Mode,
    db: String,
    store: Option<String>,
    config: Option<String>,
    sync: bool,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        mode: Mode::Http("127.0.0.1:8080".to_owned()),
        db: ":memory:".to_owned(),
        store: None,
        config: None,
        sync: false,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stdio" => options.mode = Mode::Stdio,
            "--demo" => options.mode = Mode::Demo,
            "--agent" => options.mode = Mode::Agent,
            "--http" => {
                options.mode = Mode::Http(
                    args.next()
                        .ok_or("--http needs an address, e.g. 127.0.0.1:8080")?,
                )
            }
            "--db" => options.db = args.next().ok_or("--db needs a path")?,
            "--store" => {
                options.store = Some(
                    args.next()
                        .ok_or("--store needs a path or a postgres:// URL")?,
                )
            }
            "--config" => options.config = Some(args.next().ok_or("--config needs a path")?),
            "--sync" => options.sync = true,
            "toolgate" => {
                options.mode = Mode::Operator(args.collect());
                break;
            }
            other => {
                return Err(format!(
                    "unknown argument `{other}`; use --http ADDR, --stdio, --demo, --agent, --db PATH, --store LOCATION, --config PATH, \
                     --sync, or toolgate COMMAND"
                ));
            }
        }
    }
    Ok(options)
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
