//! The hot requests that toolgate's own loops serve (on a stateless JSON server, and over stdio) are
//! answered exactly as rmcp's own path answers them, run on the task that read them, and leave
//! everything else to rmcp.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolgate::http::{AuthFuture, Authenticator, BearerTokens, HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::mcp::rmcp::{Peer, RoleServer};
use toolgate::param::CancellationToken;
use toolgate::policy::hooks::{Hook, Lookup};
use toolgate::prelude::*;
use tower_service::Service;

/// Add two integers.
#[tool(public, read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Logs twice, then answers.
#[tool(public, read_only)]
async fn chatty(log: Log) -> &'static str {
    log.info("one");
    log.warning("two");
    "said"
}

/// The task the call runs on.
#[tool(public, read_only)]
async fn whereabouts() -> String {
    tokio::task::try_id().map_or_else(String::new, |id| id.to_string())
}

/// The task the call runs on, for a tool that may log.
#[tool(public, read_only)]
async fn whereabouts_logged(log: Log) -> String {
    log.info("where");
    tokio::task::try_id().map_or_else(String::new, |id| id.to_string())
}

/// An order with text that JSON escapes.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Order {
    number: String,
    note: String,
    total: f64,
}

/// An order, as structured content: its JSON text is both a text block and `structuredContent`.
#[tool(public, read_only)]
async fn order() -> Order {
    Order {
        number: "RO-1".into(),
        note: "\"fragile\"\n\\ handle\twith care \u{1} é ✓".into(),
        total: 19.5,
    }
}

/// Text and an image, then an error: content blocks of every kind.
#[tool(public, read_only)]
async fn picture(fail: bool) -> Result<Vec<Content>, ToolError> {
    if fail {
        return Err(ToolError::new("no \"picture\"\n today"));
    }
    Ok(vec![
        Content::text("line one\nline \"two\""),
        Content::image([137, 80, 78, 71], "image/png"),
    ])
}

/// Forgets something: a write, which rmcp's path serves.
#[tool(public)]
async fn forget(what: String) -> String {
    format!("forgot {what}")
}

/// Waits until cancelled.
#[tool(public, read_only)]
async fn wait(cancellation: Cancellation) -> &'static str {
    cancellation.cancelled().await;
    "cancelled"
}

/// The client's name, as an injectable of the application's own reads it from the call's extensions.
struct ClientName(String);

impl toolgate::param::Param for ClientName {
    const KIND: toolgate::param::ParamKind = toolgate::param::ParamKind::Injected;

    fn extract(
        parts: &mut toolgate::param::CallParts<'_>,
        _: &'static toolgate::param::ParamSpec,
    ) -> Result<Self, ToolError> {
        let peer = parts.extension::<Peer<RoleServer>>();
        let info = peer.and_then(|p| p.peer_info());
        Ok(ClientName(
            info.map_or_else(String::new, |i| i.client_info.name.clone()),
        ))
    }
}

/// Who is asking: a read whose injectable uses what the transport attaches.
#[tool(public, read_only)]
async fn client_name(name: ClientName) -> String {
    name.0
}

/// The same through an `Extension`.
#[tool(public, read_only)]
async fn client_name_too(peer: toolgate::Extension<Peer<RoleServer>>) -> String {
    peer.peer_info()
        .map_or_else(String::new, |i| i.client_info.name.clone())
}

/// Who calls, as the call's caller and as the HTTP request it came with show it.
#[tool(public, read_only)]
async fn whoami(caller: Caller, request: toolgate::Extension<http::request::Parts>) -> String {
    let in_request = request
        .extensions
        .get::<Caller>()
        .map_or("none", Caller::id);
    let probe = request.headers["x-probe"].to_str().unwrap_or_default();
    format!("{} {in_request} {probe}", caller.id())
}

fn server() -> McpServer {
    server_of(Registry::builder().build().unwrap())
}

fn server_of(registry: Registry) -> McpServer {
    McpServer::new(registry).name("direct")
}

/// `server` over HTTP, stateless and answering with JSON: where the fast lane takes every hot request.
fn http(server: McpServer) -> HttpServer {
    HttpServer::new(server).options(HttpOptions::default().stateless(true).json_response(true))
}

/// A POST of `body`: with its length, which the direct path takes, or without (chunked, as a streaming
/// client sends it), which it leaves to rmcp.
fn post(body: impl AsRef<[u8]>, with_length: bool, extra: &[(&str, &str)]) -> http::Request<Body> {
    let body = body.as_ref();
    let host = extra
        .iter()
        .find(|(name, _)| *name == "host")
        .map_or("127.0.0.1:8080", |(_, host)| *host);
    let mut request = http::Request::post("/mcp")
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if !extra
        .iter()
        .any(|(name, _)| *name == "mcp-protocol-version")
    {
        request = request.header("mcp-protocol-version", "2025-11-25");
    }
    if with_length {
        request = request.header("content-length", body.len());
    }
    for (name, value) in extra.iter().filter(|(name, _)| *name != "host") {
        request = request.header(*name, *value);
    }
    request.body(Body::from(body.to_vec())).unwrap()
}

/// Status, content type, and the messages of the body (one JSON body, or the data of each SSE event).
async fn answer(response: http::Response<Body>) -> (u16, String, Vec<Value>) {
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let messages = if kind.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    } else {
        serde_json::from_str(&text).map_or_else(|_| vec![Value::String(text)], |v| vec![v])
    };
    (status, kind, messages)
}

/// The hot requests, right and wrong, that both paths must answer alike.
fn hot_requests() -> Vec<String> {
    vec![
        call(7, "add", json!({"a": 2, "b": 40})).to_string(),
        call(7, "add", json!({"a": "two", "b": 40})).to_string(),
        call(7, "order", json!({})).to_string(),
        call(7, "picture", json!({"fail": false})).to_string(),
        call(7, "picture", json!({"fail": true})).to_string(),
        call(7, "no_such_tool", json!({})).to_string(),
        call(7, "forget", json!({"what": "keys"})).to_string(),
        json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"cursor": "zz"}})
            .to_string(),
        json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}).to_string(),
    ]
}

#[tokio::test]
async fn over_http_every_request_is_answered_as_rmcp_answers_it() {
    let mut router = http(server()).router(CancellationToken::new());
    let chatty = call(7, "chatty", json!({})).to_string();
    let mut bodies: Vec<Vec<u8>> = hot_requests().into_iter().map(String::into_bytes).collect();
    bodies.extend([
        chatty.clone().into_bytes(),
        json!({"jsonrpc": "1.0", "id": 9, "method": "ping"})
            .to_string()
            .into_bytes(),
        // What a 2026-07-28 client says of itself, in a request without a version of its own.
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add",
            "arguments": {"a": 2, "b": 40},
            "_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string()
        .into_bytes(),
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#.to_vec(),
        // Not UTF-8: a Latin-1 byte in a string.
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":40,\"c\":\"\xe9\"}}}".to_vec(),
    ]);
    let headers: [&[(&str, &str)]; 4] = [
        &[],
        &[("mcp-protocol-version", "2025-06-18")],
        &[("host", "attacker.example")],
        &[("origin", "https://attacker.example")],
    ];
    for body in &bodies {
        for extra in headers {
            let direct = answer(router.call(post(body, true, extra)).await.unwrap()).await;
            let rmcp = answer(router.call(post(body, false, extra)).await.unwrap()).await;
            let body = String::from_utf8_lossy(body);
            assert_eq!(direct, rmcp, "{body} with {extra:?}");
        }
    }
    // The answers are the ones a client expects, not merely equal.
    let (status, kind, messages) =
        answer(router.call(post(&bodies[0], true, &[])).await.unwrap()).await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    assert_eq!(messages[0]["result"]["content"][0]["text"], "42");
    // A structured result is one JSON text, in the text block and as `structuredContent`.
    let order = call(7, "order", json!({})).to_string();
    let (_, _, messages) = answer(router.call(post(&order, true, &[])).await.unwrap()).await;
    let result = &messages[0]["result"];
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["note"], "\"fragile\"\n\\ handle\twith care \u{1} é ✓");
    assert_eq!(result["structuredContent"], text);
    // A call that logs is answered with its log messages first, as an SSE stream.
    let (_, kind, messages) = answer(router.call(post(&chatty, true, &[])).await.unwrap()).await;
    assert_eq!(kind, "text/event-stream");
    assert_eq!(
        methods(&messages),
        ["notifications/message", "notifications/message", "answer"]
    );
    assert_eq!(messages[2]["result"]["content"][0]["text"], "said");
    let (status, _, _) = answer(
        router
            .call(post(&bodies[0], true, headers[2]))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        status, 403,
        "a foreign host is refused on the direct path too"
    );
}

/// The method of each message, `answer` for the answer.
fn methods(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .map(|m| m["method"].as_str().unwrap_or("answer"))
        .collect()
}

/// `body` as a 2026-07-28 client sends it: its `_meta` says what the client is and can do.
fn negotiating(body: &str) -> String {
    let mut request: Value = serde_json::from_str(body).unwrap();
    request["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    request.to_string()
}

/// Request headers, by name.
type Headers = Vec<(&'static str, String)>;

/// `headers` as [`post`] takes them.
fn pairs(headers: &Headers) -> Vec<(&str, &str)> {
    headers.iter().map(|(n, v)| (*n, v.as_str())).collect()
}

/// Sets every value of header `name` to what `value` makes of it.
fn set(headers: &mut Headers, name: &str, value: impl Fn(&str) -> String) {
    for (_, v) in headers.iter_mut().filter(|(n, _)| *n == name) {
        *v = value(v);
    }
}

/// The headers a 2026-07-28 client sends with `body`: the version, and the method and tool it names.
fn negotiating_headers(body: &str) -> Headers {
    let request: Value = serde_json::from_str(body).unwrap();
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", request["method"].as_str().unwrap().to_owned()),
    ];
    if let Some(name) = request["params"]["name"].as_str() {
        headers.push(("mcp-name", name.to_owned()));
    }
    headers
}

#[tokio::test]
async fn over_http_requests_of_2026_07_28_are_answered_as_rmcp_answers_them() {
    let stateless = http(server()).router(CancellationToken::new());
    let stateful = HttpServer::new(server())
        .options(HttpOptions::default())
        .router(CancellationToken::new());
    let mut bodies: Vec<String> = hot_requests().iter().map(|b| negotiating(b)).collect();
    bodies.push(negotiating(&call(7, "chatty", json!({})).to_string()));
    // A name that reads as an encoded header value, which rmcp decodes before comparing.
    bodies.push(negotiating(
        &call(7, "=?base64?YWRk?=", json!({})).to_string(),
    ));
    // A `_meta` that lacks what the version requires, or names another version.
    let mut incomplete: Value = serde_json::from_str(&bodies[0]).unwrap();
    incomplete["params"]["_meta"]
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    bodies.push(incomplete.to_string());
    // A `_meta` with more than the client's context, or with parts of it that do not read.
    let meta_variants = [
        json!({"io.modelcontextprotocol/logLevel": "debug", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor/key": [1]}),
        json!({"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "roots": {"listChanged": true}}}),
        json!({"io.modelcontextprotocol/clientCapabilities": 5}),
        json!({"io.modelcontextprotocol/clientInfo": 5}),
        json!({"io.modelcontextprotocol/protocolVersion": 20260728}),
    ];
    for extra in meta_variants {
        let mut varied: Value = serde_json::from_str(&bodies[0]).unwrap();
        let meta = varied["params"]["_meta"].as_object_mut().unwrap();
        meta.extend(extra.as_object().unwrap().clone());
        bodies.push(varied.to_string());
    }
    // A call that logs, from a client that asks for its log messages.
    let mut logged: Value =
        serde_json::from_str(&negotiating(&call(7, "chatty", json!({})).to_string())).unwrap();
    logged["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = json!("debug");
    let logged = logged.to_string();
    bodies.push(logged.clone());
    bodies.push(bodies[0].replace(
        r#""io.modelcontextprotocol/protocolVersion":"2026-07-28""#,
        r#""io.modelcontextprotocol/protocolVersion":"2025-11-25""#,
    ));
    // What a client may get wrong in the SEP-2243 headers, each against the body.
    let variants: [fn(&mut Headers); 7] = [
        |_| {},
        |h| h.retain(|(n, _)| *n != "mcp-method"),
        |h| h.push(("mcp-method", "tools/call".to_owned())),
        |h| set(h, "mcp-method", |_| "tools/other".to_owned()),
        |h| h.retain(|(n, _)| *n != "mcp-name"),
        |h| {
            set(h, "mcp-name", |v| {
                format!("=?base64?{}?=", BASE64.encode(v))
            })
        },
        |h| set(h, "mcp-protocol-version", |_| "2025-11-25".to_owned()),
    ];
    for mut router in [stateless, stateful] {
        for body in &bodies {
            for variant in variants {
                let mut headers = negotiating_headers(body);
                variant(&mut headers);
                let extra = pairs(&headers);
                let direct = answer(router.call(post(body, true, &extra)).await.unwrap()).await;
                let rmcp = answer(router.call(post(body, false, &extra)).await.unwrap()).await;
                assert_eq!(direct, rmcp, "{body} with {extra:?}");
            }
        }
    }
    // The answers are the ones a 2026-07-28 client expects, not merely equal.
    let mut router = http(server()).router(CancellationToken::new());
    let ask = |body: &str| post(body, true, &pairs(&negotiating_headers(body)));
    let (status, kind, messages) = answer(router.call(ask(&bodies[0])).await.unwrap()).await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    assert_eq!(messages[0]["result"]["resultType"], "complete");
    assert_eq!(messages[0]["result"]["content"][0]["text"], "42");
    let list = bodies.iter().find(|b| b.contains("tools/list")).unwrap();
    let (_, _, messages) = answer(router.call(ask(list)).await.unwrap()).await;
    let names: Vec<&str> = messages[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"add"), "{names:?}");
    let (_, _, messages) = answer(router.call(ask(&logged)).await.unwrap()).await;
    assert_eq!(
        methods(&messages),
        ["notifications/message", "notifications/message", "answer"]
    );
    let ping = bodies.iter().find(|b| b.contains(r#""ping""#)).unwrap();
    let (status, _, messages) = answer(router.call(ask(ping)).await.unwrap()).await;
    assert_eq!(status, 404, "2026-07-28 has no ping");
    assert_eq!(messages[0]["error"]["code"], -32601);
    let (status, _, _) = answer(router.call(ask(&bodies[bodies.len() - 1])).await.unwrap()).await;
    assert_eq!(
        status, 400,
        "a `_meta` naming another version than the header is refused"
    );
}

#[tokio::test]
async fn over_http_a_2026_07_28_call_whose_tool_asks_for_param_headers_is_checked_by_rmcp() {
    let schema = json!({"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}
    }});
    let regional =
        toolgate::DynamicTool::new("regional", "Reads a region.", schema, |_, _| async {
            "read"
        })
        .public()
        .read_only();
    let registry = Registry::builder().tool(regional).build().unwrap();
    let mut router = http(McpServer::new(registry)).router(CancellationToken::new());
    let body = negotiating(&call(7, "regional", json!({"region": "eu"})).to_string());
    for region in [None, Some("eu"), Some("us")] {
        let mut headers = negotiating_headers(&body);
        headers.extend(region.map(|r| ("mcp-param-region", r.to_owned())));
        let extra = pairs(&headers);
        let direct = answer(router.call(post(&body, true, &extra)).await.unwrap()).await;
        let rmcp = answer(router.call(post(&body, false, &extra)).await.unwrap()).await;
        assert_eq!(direct, rmcp, "{region:?}");
        assert_eq!(
            direct.0 == 200,
            region == Some("eu"),
            "{region:?}: {direct:?}"
        );
    }
}

#[tokio::test]
async fn over_http_a_read_runs_on_the_task_that_read_its_request() {
    let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whereabouts"}})
        .to_string();
    let negotiating = negotiating(&legacy);
    let headers = negotiating_headers(&negotiating);
    let servers = [
        (http(server()), legacy, Headers::new()),
        (http(server()), negotiating.clone(), headers.clone()),
        (
            HttpServer::new(server()).options(HttpOptions::default()),
            negotiating,
            headers,
        ),
    ];
    for (server, body, headers) in servers {
        let mut router = server.router(CancellationToken::new());
        let ran_on = |messages: &[Value]| messages[0]["result"]["content"][0]["text"].clone();
        // The request is served inside a task of the test's, as hyper serves it inside a connection's.
        let served = tokio::spawn(async move {
            let here = tokio::task::id().to_string();
            let extra = pairs(&headers);
            let (_, _, direct) =
                answer(router.call(post(&body, true, &extra)).await.unwrap()).await;
            let (_, _, rmcp) = answer(router.call(post(&body, false, &extra)).await.unwrap()).await;
            (here, ran_on(&direct), ran_on(&rmcp))
        });
        let (here, direct, rmcp) = served.await.unwrap();
        assert_eq!(direct, here.as_str());
        assert_ne!(rmcp, here.as_str(), "rmcp runs it on a task of its own");
    }
}

/// A client of `server` over an in-memory pipe: its lines, and where to write its own.
struct Pipe {
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    serving: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Pipe {
    /// A pipe to `server` on which nothing is sent yet.
    fn connect(server: McpServer) -> Pipe {
        let (client, server_io) = tokio::io::duplex(1 << 20);
        let (input, output) = tokio::io::split(server_io);
        let serving = tokio::spawn(server.serve_io(input, output));
        let (reader, writer) = tokio::io::split(client);
        Pipe {
            lines: BufReader::new(reader).lines(),
            writer,
            serving,
        }
    }

    /// A pipe to `server` whose session `initialize` opened on 2025-11-25.
    async fn open(server: McpServer) -> Pipe {
        let mut pipe = Pipe::connect(server);
        pipe.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}))
            .await;
        assert!(pipe.next().await["result"]["serverInfo"].is_object());
        pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        pipe
    }

    /// Whether a 2026-07-28 call of `tool`, which answers with its task, ran on the task serving the pipe
    /// (the loop) rather than on one of rmcp's.
    async fn runs_on_the_loop(&mut self, id: u64, tool: &str) -> bool {
        self.send_raw(&negotiating(&call(id, tool, json!({})).to_string()))
            .await;
        let ran_on = self.next().await["result"]["content"][0]["text"].clone();
        ran_on == self.serving.id().to_string().as_str()
    }

    async fn send(&mut self, message: &Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn send_raw(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("the server still writes");
        serde_json::from_str(&line).unwrap()
    }
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

#[tokio::test]
async fn over_stdio_a_burst_of_calls_gets_every_answer_once() {
    let mut pipe = Pipe::open(server()).await;
    let mut burst = String::new();
    for id in 1..=200 {
        burst.push_str(&call(id, "add", json!({"a": id, "b": 1})).to_string());
        burst.push('\n');
    }
    pipe.writer.write_all(burst.as_bytes()).await.unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 1..=200 {
        let answer = pipe.next().await;
        let id = answer["id"].as_u64().unwrap();
        assert_eq!(answer["result"]["content"][0]["text"], (id + 1).to_string());
        assert!(seen.insert(id), "answered twice: {id}");
    }
}

#[tokio::test]
async fn over_stdio_notes_come_before_their_answer_and_other_requests_reach_rmcp() {
    let mut pipe = Pipe::open(server()).await;
    pipe.send(&call(1, "chatty", json!({}))).await;
    let notes = [pipe.next().await, pipe.next().await];
    assert_eq!(
        notes.map(|n| n["params"]["data"].clone()),
        [json!("one"), json!("two")]
    );
    assert_eq!(pipe.next().await["result"]["content"][0]["text"], "said");
    // The session's log level, set through rmcp, holds for the calls served here too.
    pipe.send(&json!({"jsonrpc": "2.0", "id": 10, "method": "logging/setLevel", "params": {"level": "warning"}}))
        .await;
    assert_eq!(pipe.next().await["id"], 10);
    pipe.send(&call(11, "chatty", json!({}))).await;
    assert_eq!(pipe.next().await["params"]["data"], "two");
    assert_eq!(pipe.next().await["id"], 11);
    // A write, a method the direct loop does not serve, and malformed lines: all rmcp's.
    pipe.send(&call(2, "forget", json!({"what": "keys"}))).await;
    assert_eq!(
        pipe.next().await["result"]["content"][0]["text"],
        "forgot keys"
    );
    pipe.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "resources/list"}))
        .await;
    assert_eq!(pipe.next().await["id"], 3);
    pipe.send_raw(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"#)
        .await;
    pipe.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}))
        .await;
    assert_eq!(
        pipe.next().await,
        json!({"jsonrpc": "2.0", "id": 5, "result": {}})
    );
}

#[tokio::test]
async fn over_stdio_a_tool_gets_what_the_transport_attaches_when_it_takes_it() {
    let mut pipe = Pipe::open(server()).await;
    for (id, tool) in [(1, "client_name"), (2, "client_name_too")] {
        pipe.send(&call(id, tool, json!({}))).await;
        let answer = pipe.next().await;
        assert_eq!(
            answer["result"]["content"][0]["text"], "t",
            "{tool}: {answer}"
        );
    }
}

#[tokio::test]
async fn over_stdio_a_2026_07_28_session_is_answered_as_rmcp_answers_it() {
    let opener = negotiating(&call(0, "add", json!({"a": 1, "b": 1})).to_string());
    let bodies: Vec<String> = hot_requests()
        .iter()
        .filter(|b| !b.contains(r#""ping""#))
        .map(|b| negotiating(b))
        .collect();
    for body in &bodies {
        let request: Value = serde_json::from_str(body).unwrap();
        // rmcp answers the request that opens the session; the loop, the requests after it.
        let mut first = Pipe::connect(server());
        first.send(&request).await;
        let by_rmcp = first.next().await;
        let mut later = Pipe::connect(server());
        later.send_raw(&opener).await;
        assert_eq!(later.next().await["result"]["content"][0]["text"], "2");
        later.send(&request).await;
        assert_eq!(later.next().await, by_rmcp, "{body}");
    }
    let mut pipe = Pipe::connect(server());
    pipe.send_raw(&opener).await;
    pipe.next().await;
    assert!(pipe.runs_on_the_loop(1, "whereabouts").await);
    // A call that may reach the client is rmcp's, which judges it by the version its request names.
    assert!(!pipe.runs_on_the_loop(4, "whereabouts_logged").await);
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}).to_string();
    pipe.send_raw(&negotiating(&ping)).await;
    assert_eq!(
        pipe.next().await["error"]["code"],
        -32601,
        "2026-07-28 has no ping"
    );
    // A request without the `_meta` the session's version requires is rmcp's to refuse.
    pipe.send(&call(3, "add", json!({"a": 2, "b": 40}))).await;
    assert_eq!(pipe.next().await["error"]["code"], -32602);
}

#[tokio::test]
async fn over_stdio_a_call_is_cancelled_and_the_loop_ends_with_its_client() {
    let mut pipe = Pipe::open(server()).await;
    pipe.send(&call(1, "wait", json!({}))).await;
    pipe.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    )
    .await;
    let cancelled = pipe.next().await;
    assert_eq!(cancelled["id"], 1);
    assert_eq!(
        cancelled["result"]["_meta"]["io.toolgate/error"]["kind"],
        "cancelled"
    );
    // A call still running when the client closes its end does not keep the server alive.
    pipe.send(&call(2, "wait", json!({}))).await;
    pipe.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
        .await;
    assert_eq!(pipe.next().await["id"], 3);
    pipe.writer.shutdown().await.unwrap();
    let serving = pipe.serving;
    let ended = tokio::time::timeout(Duration::from_secs(10), serving).await;
    ended.expect("the server ends").unwrap().unwrap();
}

#[tokio::test]
async fn over_http_the_direct_path_admits_exactly_the_hosts_rmcp_admits() {
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let lists: [&[&str]; 3] = [&["tools.example.com:8443", "[::1]"], &[" "], &[]];
    for allowed in lists {
        let options = HttpOptions::default()
            .stateless(true)
            .json_response(true)
            .allowed_hosts(allowed.iter().copied());
        let mut router = HttpServer::new(server())
            .options(options)
            .router(CancellationToken::new());
        for host in [
            "tools.example.com:8443",
            "tools.example.com:9",
            "TOOLS.example.com",
            "[::1]:80",
            "x",
        ] {
            let extra = [("host", host)];
            let direct = answer(router.call(post(&ping, true, &extra)).await.unwrap()).await;
            let rmcp = answer(router.call(post(&ping, false, &extra)).await.unwrap()).await;
            assert_eq!(direct, rmcp, "{host} with {allowed:?} allowed");
        }
    }
}

#[tokio::test]
async fn over_http_a_tool_sees_the_same_caller_and_request_on_both_paths() {
    let body = call(7, "whoami", json!({})).to_string();
    for stateless in [true, false] {
        let tokens = BearerTokens::new()
            .token("ada-token", Caller::new("ada"))
            .token("bob-token", Caller::new("bob"));
        let options = HttpOptions::default()
            .stateless(stateless)
            .json_response(stateless);
        let mut router = HttpServer::new(server())
            .authenticator(tokens)
            .options(options)
            .router(CancellationToken::new());
        for (token, expected) in [("ada-token", "ada ada p"), ("bob-token", "bob bob p")] {
            let bearer = format!("Bearer {token}");
            let mut extra = vec![("authorization", bearer.as_str()), ("x-probe", "p")];
            let id;
            if !stateless {
                let initialize =
                    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}})
                    .to_string();
                let opened = router.call(post(&initialize, true, &extra)).await.unwrap();
                id = opened.headers()["mcp-session-id"]
                    .to_str()
                    .unwrap()
                    .to_owned();
                extra.push(("mcp-session-id", id.as_str()));
                let initialized =
                    json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
                router.call(post(&initialized, true, &extra)).await.unwrap();
            }
            let direct = answer(router.call(post(&body, true, &extra)).await.unwrap()).await;
            let rmcp = answer(router.call(post(&body, false, &extra)).await.unwrap()).await;
            assert_eq!(direct, rmcp, "{token}, stateless: {stateless}");
            assert_eq!(direct.2[0]["result"]["content"][0]["text"], expected);
        }
    }
}

/// A stateful server's session opened by a client that declares `capabilities`: the router and the
/// session id.
async fn session(capabilities: Value, options: HttpOptions) -> (axum::Router, String) {
    session_of(server(), capabilities, options).await
}

async fn session_of(
    server: McpServer,
    capabilities: Value,
    options: HttpOptions,
) -> (axum::Router, String) {
    let mut router = HttpServer::new(server)
        .options(options)
        .router(CancellationToken::new());
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let response = router.call(post(&initialize, true, &[])).await.unwrap();
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let extra = [("mcp-session-id", id.as_str())];
    let (status, _, _) = answer(router.call(post(&initialized, true, &extra)).await.unwrap()).await;
    assert_eq!(status, 202);
    (router, id)
}

#[tokio::test]
async fn in_a_session_every_request_is_answered_as_rmcp_answers_it() {
    let (mut router, id) = session(json!({}), HttpOptions::default()).await;
    let extra = [("mcp-session-id", id.as_str())];
    let bodies = hot_requests();
    for body in &bodies {
        let (status, kind, direct) =
            answer(router.call(post(body, true, &extra)).await.unwrap()).await;
        let (_, _, rmcp) = answer(router.call(post(body, false, &extra)).await.unwrap()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(direct, rmcp, "{body}");
        assert_eq!(kind, "text/event-stream", "{body}");
    }
    // The session's own handler answers: what its search found, its log level, its caller.
    let (_, _, messages) = answer(router.call(post(&bodies[0], true, &extra)).await.unwrap()).await;
    assert_eq!(messages[0]["result"]["content"][0]["text"], "42");
    // Anyone else's request for the session is refused before anything runs.
    let (status, _, _) = answer(
        router
            .call(post(
                &bodies[0],
                true,
                &[("mcp-session-id", "not-a-session")],
            ))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);
}

/// Whether a call in a session opened by a client that declares `capabilities` runs on the task that
/// read its request (the direct path) rather than on a task of rmcp's.
async fn runs_where_read(capabilities: Value) -> bool {
    let (mut router, id) = session(capabilities, HttpOptions::default()).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whereabouts"}})
        .to_string();
    let served = tokio::spawn(async move {
        let extra = [("mcp-session-id", id.as_str())];
        let here = tokio::task::id().to_string();
        let (_, _, answer) = answer(router.call(post(&body, true, &extra)).await.unwrap()).await;
        (here, answer[0]["result"]["content"][0]["text"].clone())
    });
    let (here, ran_on) = served.await.unwrap();
    ran_on == here.as_str()
}

#[tokio::test]
async fn in_a_session_a_read_runs_on_the_task_that_read_its_request() {
    assert!(runs_where_read(json!({})).await);
}

#[tokio::test]
async fn a_session_whose_client_answers_requests_is_served_by_rmcp() {
    for capabilities in [
        json!({"sampling": {}}),
        json!({"elicitation": {}}),
        json!({"roots": {}}),
    ] {
        assert!(
            !runs_where_read(capabilities.clone()).await,
            "{capabilities}"
        );
    }
}

#[tokio::test]
async fn a_session_answered_only_directly_stays_open_and_an_unused_one_idles_out() {
    let idle = Duration::from_millis(600);
    let options = HttpOptions::default().session_idle_timeout(idle);
    let (mut router, busy) = session(json!({}), options.clone()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let busy_extra = [("mcp-session-id", busy.as_str())];
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let response = router.call(post(&initialize, true, &[])).await.unwrap();
    let quiet = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let until = tokio::time::Instant::now() + idle * 3;
    while tokio::time::Instant::now() < until {
        let (status, _, _) =
            answer(router.call(post(&ping, true, &busy_extra)).await.unwrap()).await;
        assert_eq!(status, 200);
        tokio::time::sleep(idle / 6).await;
    }
    let quiet_extra = [("mcp-session-id", quiet.as_str())];
    let (status, _, _) = answer(router.call(post(&ping, true, &quiet_extra)).await.unwrap()).await;
    assert_eq!(status, 404, "the session without requests was closed");
    let (status, _, _) = answer(router.call(post(&ping, false, &busy_extra)).await.unwrap()).await;
    assert_eq!(status, 200, "rmcp still serves the busy session");
}

/// Counts the lookups of tools by name.
struct CountsLookups(Arc<AtomicUsize>);

impl Hook for CountsLookups {
    fn on_resolve(&self, lookup: Lookup<'_>, _: &toolgate::Tool) -> Option<String> {
        if matches!(lookup, Lookup::Name(_)) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        None
    }
}

/// A registry that counts its lookups by name, and the count.
fn counting() -> (Registry, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    let registry = Registry::builder()
        .hook(CountsLookups(count.clone()))
        .build()
        .unwrap();
    (registry, count)
}

#[tokio::test]
async fn a_call_resolves_its_tool_once_on_every_path() {
    let add = call(1, "add", json!({"a": 1, "b": 2}));
    let write = call(2, "forget", json!({"what": "keys"}));
    let once = |count: &AtomicUsize, path: &str| {
        assert_eq!(count.swap(0, Ordering::SeqCst), 1, "{path}");
    };

    let (registry, count) = counting();
    let outcome = registry
        .call(&Caller::anonymous(), "add", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(outcome.into_result().text_for_model(), "3");
    once(&count, "in process");

    let mut pipe = Pipe::open(server_of(registry)).await;
    pipe.send(&add).await;
    assert_eq!(pipe.next().await["result"]["content"][0]["text"], "3");
    once(&count, "stdio, the direct loop");
    pipe.send(&write).await;
    assert_eq!(
        pipe.next().await["result"]["content"][0]["text"],
        "forgot keys"
    );
    once(&count, "stdio, through rmcp");

    let (registry, count) = counting();
    let mut pipe = Pipe::connect(server_of(registry));
    pipe.send_raw(&negotiating(&add.to_string())).await;
    assert_eq!(pipe.next().await["result"]["content"][0]["text"], "3");
    once(&count, "stdio, 2026-07-28, opened by rmcp");
    pipe.send_raw(&negotiating(&add.to_string())).await;
    assert_eq!(pipe.next().await["result"]["content"][0]["text"], "3");
    once(&count, "stdio, 2026-07-28, the direct loop");
    let logged = call(3, "whereabouts_logged", json!({}));
    pipe.send_raw(&negotiating(&logged.to_string())).await;
    assert!(pipe.next().await["result"]["content"][0]["text"].is_string());
    once(
        &count,
        "stdio, 2026-07-28, a call that may send, through rmcp",
    );

    let (registry, count) = counting();
    let mut router = http(server_of(registry)).router(CancellationToken::new());
    for (with_length, path) in [
        (true, "HTTP stateless, direct"),
        (false, "HTTP stateless, rmcp"),
    ] {
        let (_, _, messages) = answer(
            router
                .call(post(add.to_string(), with_length, &[]))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(messages[0]["result"]["content"][0]["text"], "3", "{path}");
        once(&count, path);
    }
    let (_, _, messages) = answer(
        router
            .call(post(write.to_string(), true, &[]))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(messages[0]["result"]["content"][0]["text"], "forgot keys");
    once(&count, "HTTP stateless, a write through rmcp");
    let body = negotiating(&add.to_string());
    let headers = negotiating_headers(&body);
    let (_, _, messages) = answer(
        router
            .call(post(&body, true, &pairs(&headers)))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(messages[0]["result"]["content"][0]["text"], "3");
    once(&count, "HTTP stateless, 2026-07-28");

    let (registry, count) = counting();
    let (mut router, id) = session_of(server_of(registry), json!({}), HttpOptions::default()).await;
    let extra = [("mcp-session-id", id.as_str())];
    for (with_length, path) in [
        (true, "HTTP session, direct"),
        (false, "HTTP session, rmcp"),
    ] {
        let (_, _, messages) = answer(
            router
                .call(post(add.to_string(), with_length, &extra))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(messages[0]["result"]["content"][0]["text"], "3", "{path}");
        once(&count, path);
    }
    let (_, _, messages) = answer(
        router
            .call(post(write.to_string(), true, &extra))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(messages[0]["result"]["content"][0]["text"], "forgot keys");
    once(&count, "HTTP session, a write through rmcp");

    // An authenticator that steps up has each call's tool looked up before it runs: still once.
    let (registry, count) = counting();
    let mut router = http(server_of(registry))
        .authenticator(LooksUp)
        .router(CancellationToken::new());
    let body = negotiating(&add.to_string());
    let headers = negotiating_headers(&body);
    for (request, path) in [
        (post(add.to_string(), true, &[]), "stepping up, direct"),
        (
            post(write.to_string(), true, &[]),
            "stepping up, a write through rmcp",
        ),
        (
            post(&body, false, &pairs(&headers)),
            "stepping up, 2026-07-28 by its header, rmcp",
        ),
    ] {
        let (status, _, messages) = answer(router.call(request).await.unwrap()).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            messages[0]["result"]["content"][0]["text"].is_string(),
            "{path}"
        );
        once(&count, path);
    }
}

/// Lets every request through as the anonymous caller, and steps up, though it never refuses: each
/// call's tool is looked up before it runs.
struct LooksUp;

impl Authenticator for LooksUp {
    fn authenticate<'a>(&'a self, _: &'a http::request::Parts) -> AuthFuture<'a> {
        Box::pin(std::future::ready(Ok(Caller::anonymous())))
    }

    fn steps_up(&self) -> bool {
        true
    }
}
