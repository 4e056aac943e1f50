//! The load generator, in the manner of `wrk -t1`: one thread drives every connection. Over HTTP each
//! connection is a raw keep-alive HTTP/1.1 socket that writes a request with a fresh id, reads its
//! answer (by its length, or chunk by chunk for an SSE stream) and checks it; on a stateful server each
//! connection opens a session of its own first. Over stdio, newline-delimited JSON-RPC goes to the
//! child's stdin with a fixed number of requests in flight. Either for one second of warm-up and then a
//! measured window, or for a fixed number of calls (the memory rows).

use crate::result::Result;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use crate::servers::{self, Kind, Transport};

const WARM_UP: Duration = Duration::from_secs(1);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-bench","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// What each request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    /// `tools/call` of `add(2, 40)`.
    Add,
    /// `tools/call` of the shop's `search_orders`: a query of its SQLite database.
    Search,
    /// `tools/list`.
    List,
    /// `tools/call` of `add(2, 40)` as a 2026-07-28 client sends it: its `_meta` says what the client is
    /// and can do, and its headers name the method and the tool.
    AddNegotiating,
    /// `tools/call` of a gateway's `add` of its remote server.
    AddThroughGateway,
}

impl Workload {
    fn request(self, id: u64) -> String {
        match self {
            Workload::Add => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":40}}}}}}"#
            ),
            Workload::Search => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search_orders","arguments":{{"query":"Lovelace","limit":3}}}}}}"#
            ),
            Workload::List => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#),
            Workload::AddThroughGateway => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}_add","arguments":{{"a":2,"b":40}}}}}}"#,
                crate::gateway::LABEL
            ),
            Workload::AddNegotiating => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":40}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"mcp-bench","version":"0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
            ),
        }
    }

    /// The protocol headers of its HTTP requests.
    fn headers(self) -> &'static str {
        match self {
            Workload::AddNegotiating => {
                "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: add\r\n"
            }
            _ => "MCP-Protocol-Version: 2025-11-25\r\n",
        }
    }

    /// Whether the TypeScript SDK serves it: it predates 2026-07-28.
    pub(crate) fn typescript_serves(self) -> bool {
        self != Workload::AddNegotiating
    }

    /// Whether its client opens a session with `initialize` first: a 2026-07-28 client sends none, and
    /// over stdio its first request opens the session.
    fn initializes(self) -> bool {
        self != Workload::AddNegotiating
    }

    /// What every answer to it must contain, on a server with `tools` extra tools: the sum, a row the
    /// query finds, or the last extra tool's name.
    fn expected(self, tools: usize) -> String {
        match self {
            Workload::Add | Workload::AddNegotiating | Workload::AddThroughGateway => {
                r#""text":"42""#.to_owned()
            }
            Workload::Search => "RO-00030".to_owned(),
            Workload::List => format!("\"{}\"", servers::listed_name(tools.saturating_sub(1))),
        }
    }
}

/// One measurement: a server, a transport, what is asked, on how many extra tools, how many at once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Load {
    pub(crate) transport: Transport,
    pub(crate) workload: Workload,
    /// Tools the server has beside `add` and the shop's.
    pub(crate) tools: usize,
    pub(crate) in_flight: usize,
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Until {
    /// One second of warm-up, then this long counted.
    Elapsed(Duration),
    /// This many answered requests, all counted.
    Answered(u64),
}

/// What one server did under load.
pub(crate) struct Measured {
    /// Answers per second.
    pub(crate) rate: f64,
    /// `VmHWM` of the server process at the end, in MiB; 0 where `/proc` does not say.
    pub(crate) peak_mib: f64,
    /// `VmRSS` of the server process at the end, in MiB.
    pub(crate) rss_mib: f64,
    /// `RssAnon` of the server process at the end, in MiB: its own memory (heap and stacks), without the
    /// pages of code and data it maps from its binary, which every process of that binary shares.
    pub(crate) private_mib: f64,
}

impl Measured {
    /// The run with the median rate (the upper one of an even count), with the highest peak memory of
    /// all; `None` for no runs.
    pub(crate) fn median(mut runs: Vec<Measured>) -> Option<Measured> {
        let peak_mib = runs.iter().map(|r| r.peak_mib).fold(0.0, f64::max);
        let rss_mib = runs.iter().map(|r| r.rss_mib).fold(0.0, f64::max);
        let private_mib = runs.iter().map(|r| r.private_mib).fold(0.0, f64::max);
        runs.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        let rate = runs.get(runs.len() / 2)?.rate;
        Some(Measured {
            rate,
            peak_mib,
            rss_mib,
            private_mib,
        })
    }
}

/// A field of `/proc/<pid>/status` in MiB (`VmHWM`, `VmRSS`, `RssAnon`).
fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        });
    kib.unwrap_or(0.0) / 1024.0
}

/// The child process serving `kind` over `load`'s transport.
fn spawn(kind: &Kind, load: Load) -> Result<Child> {
    let (program, args, dir) = servers::command(kind, load.transport, load.tools)?;
    let mut command = Command::new(program);
    command.args(args);
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    Ok(child)
}

/// How `kind` serves `load` until `until`.
pub(crate) async fn run(kind: &Kind, load: Load, until: Until) -> Result<Measured> {
    let mut child = spawn(kind, load)?;
    let expected = load.workload.expected(load.tools);
    let (plan, started) = Plan::new(until);
    let plan = Arc::new(plan);
    let answered = match load.transport {
        Transport::Stdio => stdio(&mut child, load, &expected, &plan).await?,
        _ => http(&mut child, load, &expected, &plan).await?,
    };
    let seconds = match until {
        Until::Elapsed(window) => window.as_secs_f64(),
        Until::Answered(_) => started.elapsed().as_secs_f64(),
    };
    let pid = child.id().unwrap_or_default();
    let measured = Measured {
        rate: answered as f64 / seconds,
        peak_mib: status_mib(pid, "VmHWM"),
        rss_mib: status_mib(pid, "VmRSS"),
        private_mib: status_mib(pid, "RssAnon"),
    };
    child.kill().await?;
    Ok(measured)
}

/// When requests stop, and which answers count.
struct Plan {
    warm: Instant,
    end: Instant,
    /// Requests still to send, when the run is a number of them.
    left: Option<AtomicU64>,
}

impl Plan {
    fn new(until: Until) -> (Plan, Instant) {
        let now = Instant::now();
        let plan = match until {
            Until::Elapsed(window) => Plan {
                warm: now + WARM_UP,
                end: now + WARM_UP + window,
                left: None,
            },
            Until::Answered(calls) => Plan {
                warm: now,
                end: now + Duration::from_secs(3600),
                left: Some(AtomicU64::new(calls)),
            },
        };
        (plan, now)
    }

    /// Whether to send another request; `Some(true)` when its answer counts.
    fn next(&self) -> Option<bool> {
        if let Some(left) = &self.left {
            let took =
                left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
            return took.ok().map(|_| true);
        }
        let now = Instant::now();
        (now < self.end).then_some(now >= self.warm)
    }
}

async fn http(child: &mut Child, load: Load, expected: &str, plan: &Arc<Plan>) -> Result<u64> {
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let first = lines
        .next_line()
        .await?
        .ok_or("the server printed nothing")?;
    let mut printed = first.trim_start_matches("PORT ").split(' ');
    let port: u16 = printed.next().unwrap_or_default().parse()?;
    let token = printed.next().filter(|token| !token.is_empty());
    let authorization = token.map(|token| format!("Authorization: Bearer {token}\r\n"));
    let stateful = load.transport == Transport::Stateful;
    let workers: Vec<_> = (0..load.in_flight as u64)
        .map(|n| {
            let (expected, plan) = (expected.to_owned(), Arc::clone(plan));
            let authorization = authorization.clone().unwrap_or_default();
            tokio::spawn(async move {
                let mut connection = Connection::open(port, authorization).await?;
                connection
                    .work(n, stateful, load.workload, &expected, &plan)
                    .await
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total)
}

/// One keep-alive HTTP/1.1 connection, written and read by hand as `wrk` does.
struct Connection {
    stream: TcpStream,
    port: u16,
    /// The `Authorization` header of every request, or nothing.
    authorization: String,
    request: Vec<u8>,
    buffer: Vec<u8>,
}

/// An answer: its status, its session header, and its body (chunks joined).
struct Answer {
    status: u16,
    session: Option<String>,
    body: Vec<u8>,
}

impl Connection {
    async fn open(port: u16, authorization: String) -> Result<Connection> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream,
            port,
            authorization,
            request: Vec::with_capacity(1024),
            buffer: Vec::with_capacity(1 << 16),
        })
    }

    /// Sends requests with ids unique to connection `n` until the plan ends; the answers counted.
    async fn work(
        &mut self,
        n: u64,
        stateful: bool,
        workload: Workload,
        expected: &str,
        plan: &Plan,
    ) -> Result<u64> {
        let mut session = None;
        if stateful {
            session = self.post(None, INITIALIZE, Workload::Add).await?.session;
            self.post(session.as_deref(), INITIALIZED, Workload::Add)
                .await?;
        }
        let (mut counted, mut id) = (0, n << 32);
        while let Some(counts) = plan.next() {
            id += 1;
            let request = workload.request(id);
            let answer = self.post(session.as_deref(), &request, workload).await?;
            if !contains(&answer.body, expected.as_bytes())
                || !contains(&answer.body, b"\"result\"")
            {
                let body = String::from_utf8_lossy(&answer.body);
                return Err(format!("unexpected answer: {body}").into());
            }
            counted += u64::from(counts);
        }
        Ok(counted)
    }

    /// Posts `body` of `workload` to `/mcp` and reads the whole answer; an error for any status but 2xx.
    async fn post(
        &mut self,
        session: Option<&str>,
        body: &str,
        workload: Workload,
    ) -> Result<Answer> {
        use std::io::Write;
        self.request.clear();
        write!(
            self.request,
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{}{}",
            self.port,
            workload.headers(),
            self.authorization,
        )?;
        if let Some(session) = session {
            write!(self.request, "Mcp-Session-Id: {session}\r\n")?;
        }
        write!(self.request, "Content-Length: {}\r\n\r\n{body}", body.len())?;
        self.stream.write_all(&self.request).await?;
        let answer = self.read_answer().await?;
        if !(200..300).contains(&answer.status) {
            let body = String::from_utf8_lossy(&answer.body);
            return Err(format!("unexpected answer {}: {body}", answer.status).into());
        }
        Ok(answer)
    }

    async fn read_answer(&mut self) -> Result<Answer> {
        self.buffer.clear();
        let (status, session, length, head) = loop {
            if self.stream.read_buf(&mut self.buffer).await? == 0 {
                return Err("the server closed the connection".into());
            }
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) = response.parse(&self.buffer)? {
                let header = |name: &str| {
                    response
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .and_then(|h| std::str::from_utf8(h.value).ok())
                };
                let session = header("mcp-session-id").map(str::to_owned);
                let length: Option<usize> = header("content-length").and_then(|l| l.parse().ok());
                break (response.code.unwrap_or(0), session, length, head);
            }
        };
        let body = match length {
            Some(length) => {
                while self.buffer.len() < head + length {
                    if self.stream.read_buf(&mut self.buffer).await? == 0 {
                        return Err("the server closed the connection mid-answer".into());
                    }
                }
                self.buffer[head..head + length].to_vec()
            }
            None => loop {
                if let Some(body) = dechunk(&self.buffer[head..])? {
                    break body;
                }
                if self.stream.read_buf(&mut self.buffer).await? == 0 {
                    return Err("the server closed the connection mid-answer".into());
                }
            },
        };
        Ok(Answer {
            status,
            session,
            body,
        })
    }
}

/// The body of a chunked answer once its last chunk is in `bytes`, `None` before.
fn dechunk(mut bytes: &[u8]) -> Result<Option<Vec<u8>>> {
    let mut body = Vec::new();
    loop {
        let Some(line) = bytes.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size = std::str::from_utf8(&bytes[..line])?;
        let size = size.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16)?;
        let start = line + 2;
        if bytes.len() < start + size + 2 {
            return Ok(None);
        }
        if size == 0 {
            return Ok(Some(body));
        }
        body.extend_from_slice(&bytes[start..start + size]);
        bytes = &bytes[start + size + 2..];
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

async fn stdio(child: &mut Child, load: Load, expected: &str, plan: &Plan) -> Result<u64> {
    let mut input = child.stdin.take().ok_or("no stdin")?;
    let mut output = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    if load.workload.initializes() {
        input
            .write_all(format!("{INITIALIZE}\n").as_bytes())
            .await?;
        output.next_line().await?.ok_or("no initialize answer")?;
        input
            .write_all(format!("{INITIALIZED}\n").as_bytes())
            .await?;
    }

    // The writer keeps `in_flight` requests outstanding; each answer lets it send one more.
    let slots = Arc::new(Semaphore::new(load.in_flight));
    let writer_slots = Arc::clone(&slots);
    let workload = load.workload;
    let writer = tokio::spawn(async move {
        let mut id = 0;
        while let Ok(permit) = writer_slots.acquire().await {
            permit.forget();
            id += 1;
            let line = format!("{}\n", workload.request(id));
            if input.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let mut counted = 0;
    while let Some(line) = output.next_line().await? {
        if !line.contains("\"result\"") {
            continue;
        }
        if !line.contains(expected) {
            return Err(format!("unexpected answer: {line}").into());
        }
        let Some(counts) = plan.next() else { break };
        counted += u64::from(counts);
        slots.add_permits(1);
    }
    slots.close();
    writer.abort();
    Ok(counted)
}
