//! The load generator: keep-alive HTTP/1 connections posting requests (each opening its own session on a
//! stateful server), or newline-delimited JSON-RPC over a child's stdin with a fixed number of requests in
//! flight. One second of warm-up, then a measured window; every answer is checked to hold what it should.

use std::error::Error;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use crate::servers::{self, Kind, Transport};

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

const WARM_UP: Duration = Duration::from_secs(1);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// What each request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `tools/call` of `add(2, 40)`.
    Call,
    /// `tools/list` of a server with this many extra tools.
    List(usize),
}

impl Workload {
    fn request(self, id: u64) -> String {
        match self {
            Workload::Call => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":40}}}}}}"#
            ),
            Workload::List(_) => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#),
        }
    }

    /// What every answer must contain: the sum, or the last extra tool's name.
    fn expected(self) -> String {
        match self {
            Workload::Call => "42".to_owned(),
            Workload::List(tools) => format!("\"{}\"", servers::listed_name(tools - 1)),
        }
    }

    fn tools(self) -> usize {
        match self {
            Workload::Call => 0,
            Workload::List(tools) => tools,
        }
    }
}

/// What one server did under load: calls per second, and its peak resident memory.
pub(crate) struct Measured {
    pub(crate) rate: f64,
    /// `VmHWM` of the server process, in MiB; 0 where `/proc` does not say.
    pub(crate) peak_mib: f64,
}

impl Measured {
    /// The run with the median rate (the upper one of an even count), with the highest peak memory of
    /// all; `None` for no runs.
    pub(crate) fn median(mut runs: Vec<Measured>) -> Option<Measured> {
        let peak_mib = runs.iter().map(|r| r.peak_mib).fold(0.0, f64::max);
        runs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let middle = runs.len() / 2;
        let rate = runs.get(middle)?.rate;
        Some(Measured { rate, peak_mib })
    }
}

/// The peak resident set of process `pid` so far, in MiB (Linux's `VmHWM`).
fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        });
    kib.unwrap_or(0.0) / 1024.0
}

/// The child process serving `kind` over `transport`.
fn spawn(kind: Kind, transport: Transport, tools: usize) -> Result<Child> {
    let mut command = match kind {
        Kind::Typescript => {
            let (node, dir) =
                servers::typescript_sdk().ok_or("the TypeScript SDK is not installed")?;
            let mut command = Command::new(node);
            command.current_dir(dir).arg("typescript.mjs");
            let mode = match transport {
                Transport::Stdio => vec!["stdio", "-"],
                _ => vec!["http", transport.name()],
            };
            command.args(mode).arg(tools.to_string());
            command
        }
        _ => {
            let mut command = Command::new(std::env::current_exe()?);
            command.args(["--serve", transport.name(), kind.name(), &tools.to_string()]);
            command
        }
    };
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    Ok(child)
}

/// How `kind` serves `workload` over `transport` with `in_flight` requests outstanding.
pub(crate) async fn run(
    kind: Kind,
    transport: Transport,
    workload: Workload,
    in_flight: usize,
    measure: Duration,
) -> Result<Measured> {
    let mut child = spawn(kind, transport, workload.tools())?;
    let start = Instant::now();
    let window = Window {
        warm: start + WARM_UP,
        end: start + WARM_UP + measure,
    };
    let calls = match transport {
        Transport::Stdio => stdio(&mut child, workload, in_flight, window).await?,
        _ => http(&mut child, transport, workload, in_flight, window).await?,
    };
    let peak_mib = child.id().map_or(0.0, peak_mib);
    child.kill().await?;
    Ok(Measured {
        rate: calls as f64 / measure.as_secs_f64(),
        peak_mib,
    })
}

/// When counting starts, and when the run ends.
#[derive(Clone, Copy)]
struct Window {
    warm: Instant,
    end: Instant,
}

async fn http(
    child: &mut Child,
    transport: Transport,
    workload: Workload,
    in_flight: usize,
    window: Window,
) -> Result<u64> {
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let first = lines
        .next_line()
        .await?
        .ok_or("the server printed nothing")?;
    let port: u16 = first.trim_start_matches("PORT ").parse()?;
    let stateful = transport == Transport::Stateful;
    let workers: Vec<_> = (0..in_flight)
        .map(|_| tokio::spawn(http_worker(port, stateful, workload, window)))
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total)
}

/// One keep-alive connection posting `body`, with the session header once there is a session; the
/// response's session id and body.
async fn post(
    sender: &mut SendRequest<Full<Bytes>>,
    port: u16,
    session: Option<&str>,
    body: String,
) -> Result<(Option<String>, Bytes)> {
    let mut request = Request::post("/mcp")
        .header("host", format!("127.0.0.1:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = sender
        .send_request(request.body(Full::new(Bytes::from(body)))?)
        .await?;
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        let body = String::from_utf8_lossy(&body);
        return Err(format!("unexpected answer {status}: {body}").into());
    }
    Ok((session, body))
}

async fn http_worker(port: u16, stateful: bool, workload: Workload, window: Window) -> Result<u64> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let mut session = None;
    if stateful {
        session = post(&mut sender, port, None, INITIALIZE.to_owned())
            .await?
            .0;
        let session = session.as_deref();
        post(&mut sender, port, session, INITIALIZED.to_owned()).await?;
    }
    let expected = workload.expected();
    let (mut counted, mut id) = (0, 0);
    loop {
        let now = Instant::now();
        if now >= window.end {
            return Ok(counted);
        }
        id += 1;
        let request = workload.request(id);
        let (_, body) = post(&mut sender, port, session.as_deref(), request).await?;
        if !contains(&body, expected.as_bytes()) {
            let body = String::from_utf8_lossy(&body);
            return Err(format!("unexpected answer: {body}").into());
        }
        if now >= window.warm {
            counted += 1;
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn stdio(
    child: &mut Child,
    workload: Workload,
    in_flight: usize,
    window: Window,
) -> Result<u64> {
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let mut output = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    input
        .write_all(format!("{INITIALIZE}\n").as_bytes())
        .await?;
    output.next_line().await?.ok_or("no initialize answer")?;
    input
        .write_all(format!("{INITIALIZED}\n").as_bytes())
        .await?;

    let slots = Arc::new(Semaphore::new(in_flight));
    let writer_slots = Arc::clone(&slots);
    let writer = tokio::spawn(async move {
        let mut id = 0;
        while let Ok(permit) = writer_slots.acquire().await {
            permit.forget();
            id += 1;
            let line = format!("{}\n", workload.request(id));
            if input.write_all(line.as_bytes()).await.is_err() || input.flush().await.is_err() {
                return;
            }
        }
    });
    let expected = workload.expected();
    let mut counted = 0;
    while let Some(line) = output.next_line().await? {
        if !line.contains("\"result\"") {
            continue;
        }
        if !line.contains(&expected) {
            return Err(format!("unexpected answer: {line}").into());
        }
        let now = Instant::now();
        if now >= window.end {
            break;
        }
        if now >= window.warm {
            counted += 1;
        }
        slots.add_permits(1);
    }
    slots.close();
    writer.abort();
    Ok(counted)
}
