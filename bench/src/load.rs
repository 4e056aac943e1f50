//! The load generator: keep-alive HTTP/1 connections posting `tools/call`, or newline-delimited JSON-RPC
//! over a child's stdin with a fixed number of requests in flight. One second of warm-up, then a measured
//! window; every answer is checked to contain the sum.

use std::error::Error;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use crate::servers::Kind;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

const WARM_UP: Duration = Duration::from_secs(1);

fn call(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":40}}}}}}"#
    )
}

/// What one server did under load: calls per second, and its peak resident memory.
pub(crate) struct Measured {
    pub(crate) rate: f64,
    /// `VmHWM` of the server process, in MiB; 0 where `/proc` does not say.
    pub(crate) peak_mib: f64,
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

/// How `kind` serves over `transport` with `in_flight` requests outstanding.
pub(crate) async fn run(
    transport: &str,
    kind: Kind,
    in_flight: usize,
    measure: Duration,
) -> Result<Measured> {
    let mut child = Command::new(std::env::current_exe()?)
        .args(["--serve", transport, kind.name()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let start = Instant::now();
    let (warm, end) = (start + WARM_UP, start + WARM_UP + measure);
    let calls = match transport {
        "http" => http(&mut child, in_flight, warm, end).await?,
        _ => stdio(&mut child, in_flight, warm, end).await?,
    };
    let peak_mib = child.id().map_or(0.0, peak_mib);
    child.kill().await?;
    Ok(Measured {
        rate: calls as f64 / measure.as_secs_f64(),
        peak_mib,
    })
}

async fn http(child: &mut Child, in_flight: usize, warm: Instant, end: Instant) -> Result<u64> {
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let first = lines
        .next_line()
        .await?
        .ok_or("the server printed nothing")?;
    let port: u16 = first.trim_start_matches("PORT ").parse()?;
    let workers: Vec<_> = (0..in_flight)
        .map(|_| tokio::spawn(http_worker(port, warm, end)))
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total)
}

async fn http_worker(port: u16, warm: Instant, end: Instant) -> Result<u64> {
    let stream = TcpStream::connect(("127.0.0.1", port)).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let (mut counted, mut id) = (0, 0);
    loop {
        let now = Instant::now();
        if now >= end {
            return Ok(counted);
        }
        id += 1;
        let request = Request::post("/mcp")
            .header("host", format!("127.0.0.1:{port}"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(Full::new(Bytes::from(call(id))))?;
        let response = sender.send_request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() || !body.windows(2).any(|w| w == b"42") {
            return Err(format!(
                "unexpected answer {status}: {}",
                String::from_utf8_lossy(&body)
            )
            .into());
        }
        if now >= warm {
            counted += 1;
        }
    }
}

async fn stdio(child: &mut Child, in_flight: usize, warm: Instant, end: Instant) -> Result<u64> {
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let mut output = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bench","version":"0"}}}"#;
    input
        .write_all(format!("{initialize}\n").as_bytes())
        .await?;
    output.next_line().await?.ok_or("no initialize answer")?;
    input
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await?;

    let slots = Arc::new(Semaphore::new(in_flight));
    let writer_slots = Arc::clone(&slots);
    let writer = tokio::spawn(async move {
        let mut id = 0;
        while let Ok(permit) = writer_slots.acquire().await {
            permit.forget();
            id += 1;
            if input
                .write_all(format!("{}\n", call(id)).as_bytes())
                .await
                .is_err()
                || input.flush().await.is_err()
            {
                return;
            }
        }
    });
    let mut counted = 0;
    while let Some(line) = output.next_line().await? {
        if !line.contains("\"result\"") {
            continue;
        }
        if !line.contains("42") {
            return Err(format!("unexpected answer: {line}").into());
        }
        let now = Instant::now();
        if now >= end {
            break;
        }
        if now >= warm {
            counted += 1;
        }
        slots.add_permits(1);
    }
    slots.close();
    writer.abort();
    Ok(counted)
}
