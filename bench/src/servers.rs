//! The three servers compared, each serving one tool `add(a, b)` over Streamable HTTP (stateless, JSON
//! responses) or stdio: toolgate, rmcp's own macros, and a bare responder that answers every request with a
//! canned result (the ceiling: no MCP work at all).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpListener;
use toolgate::Registry;
use toolgate::mcp::{HttpOptions, McpServer};

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
    pub(crate) fn new() -> Self {
        Calculator {
            tool_router: Self::tool_router(),
        }
    }

    /// Add two integers.
    #[tool(annotations(read_only_hint = true))]
    async fn add(&self, Parameters(AddParams { a, b }): Parameters<AddParams>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler(router = self.tool_router, name = "bench", version = "0")]
impl ServerHandler for Calculator {}

/// Which server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Toolgate,
    Rmcp,
    Bare,
}

impl Kind {
    pub(crate) const ALL: [Kind; 3] = [Kind::Bare, Kind::Rmcp, Kind::Toolgate];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Toolgate => "toolgate",
            Kind::Rmcp => "rmcp",
            Kind::Bare => "bare",
        }
    }

    pub(crate) fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

fn toolgate_server() -> McpServer {
    let registry = Registry::builder()
        .build()
        .expect("the bench tool is consistent");
    McpServer::new(registry)
        .name("bench")
        .http_options(HttpOptions::default().stateless(true).json_response(true))
}

/// A canned answer to any request: the same id, a result with the text `42`.
fn canned(id: &serde_json::Value) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"42"}}],"isError":false}}}}"#
    )
}

/// Serves HTTP on a free loopback port, printing `PORT <n>` first.
pub(crate) async fn serve_http(kind: Kind) -> std::io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("PORT {}", listener.local_addr()?.port());
    if kind == Kind::Toolgate {
        return toolgate_server()
            .serve_listener(listener, std::future::pending())
            .await;
    }
    let rmcp_service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(Calculator::new()),
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    ));
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        let io = TokioIo::new(stream);
        let rmcp_service = rmcp_service.clone();
        tokio::spawn(async move {
            let served = match kind {
                Kind::Bare => {
                    http1::Builder::new()
                        .serve_connection(io, service_fn(bare))
                        .await
                }
                _ => {
                    http1::Builder::new()
                        .serve_connection(io, rmcp_service)
                        .await
                }
            };
            drop(served);
        });
    }
}

async fn bare(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    use http_body_util::BodyExt;
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let id = serde_json::from_slice::<serde_json::Value>(&body)
        .map(|v| v["id"].clone())
        .unwrap_or_default();
    let response = Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(canned(&id))))
        .unwrap_or_default();
    Ok(response)
}

/// Serves one client over stdin and stdout.
pub(crate) async fn serve_stdio(kind: Kind) -> std::io::Result<()> {
    match kind {
        Kind::Toolgate => toolgate_server().serve_stdio().await,
        Kind::Rmcp => {
            let running = Calculator::new()
                .serve(rmcp::transport::stdio())
                .await
                .map_err(std::io::Error::other)?;
            running.waiting().await.map_err(std::io::Error::other)?;
            Ok(())
        }
        Kind::Bare => {
            // The ceiling: reads and writes on the reactor (non-blocking pipes, no blocking-pool hop), and
            // answers flushed only when no further request is already buffered.
            let (stdin, stdout) = rmcp::transport::stdio_pipes();
            let mut lines = BufReader::new(stdin);
            let mut out = BufWriter::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                if lines.read_line(&mut line).await? == 0 {
                    return out.flush().await;
                }
                let message: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                if message.get("id").is_some() {
                    out.write_all(canned(&message["id"]).as_bytes()).await?;
                    out.write_all(b"\n").await?;
                }
                if lines.buffer().is_empty() {
                    out.flush().await?;
                }
            }
        }
    }
}
