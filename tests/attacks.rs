//! A hostile client's attacks from the outside review, each over the transport where it happened: a
//! session taken over by another caller, questions that starve the call slots, ceilings keyed by a header
//! the client chooses, refusals that reveal a tool, approval prompts that lie, connections that never
//! leave, TTLs that overflow and clocks that disagree.
//!
//! The HTTP tests speak raw JSON-RPC with `reqwest`, as an attacker would; none measures time, and the
//! deadlines only stop a test that would otherwise hang.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolgate::confirm::{Claim, Claimed, ConfirmationStore, Decision, MemoryStore};
use toolgate::http::{BearerTokens, HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::prelude::*;
use toolgate::store::{AuditQuery, RecordStore};
use toolgate::{Ask, ErrorKind};

/// Who was paid how often, by payee: each test pays its own payees.
static PAID: Mutex<Option<HashMap<String, usize>>> = Mutex::new(None);

fn paid(to: &str) -> usize {
    PAID.lock()
        .unwrap()
        .as_ref()
        .and_then(|paid| paid.get(to).copied())
        .unwrap_or(0)
}

/// Send 9999 EUR. Changes data.
#[tool(ability = "payments.send", preview = preview_pay)]
async fn pay(to: String) -> String {
    *PAID
        .lock()
        .unwrap()
        .get_or_insert_with(HashMap::new)
        .entry(to.clone())
        .or_default() += 1;
    format!("Paid {to}.")
}

async fn preview_pay(to: String) -> Preview {
    Preview::new(format!("Send 9999 EUR to {to}"))
}

/// Send 10 EUR, once per conversation.
#[tool(ability = "payments.send", preview = preview_tip, max_runs = 1)]
async fn tip(to: String) -> String {
    format!("Tipped {to}.")
}

async fn preview_tip(to: String) -> Preview {
    Preview::new(format!("Send 10 EUR to {to}"))
}

/// Count a visit, twice per conversation at most.
#[tool(public, read_only, max_runs = 2)]
async fn visit() -> &'static str {
    "visited"
}

/// Ask for a name, once per conversation.
#[tool(public, read_only, max_runs = 1)]
async fn greet(ask: Ask) -> Result<String, ToolError> {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Name {
        name: String,
    }
    match ask.elicit::<Name>("name", "Your name?")? {
        toolgate::Elicited::Accepted(Name { name }) => Ok(format!("Hello, {name}.")),
        _ => Ok("Hello.".to_owned()),
    }
}

/// Open the vault.
#[tool(ability = "vault.open", read_only)]
async fn vault() -> &'static str {
    "gold"
}

/// Echo a word.
#[tool(public, read_only)]
async fn echo(word: String) -> String {
    word
}

fn alice() -> Caller {
    Caller::new("alice")
        .with_role("Manager")
        .with_abilities(["payments.send"])
}

fn eve() -> Caller {
    Caller::new("eve").with_role("Viewer")
}

/// A server on a loopback port, with tokens for alice and eve.
struct Served {
    url: String,
    address: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Served {
    async fn start(registry: Registry, options: HttpOptions) -> Served {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let tokens = BearerTokens::new()
            .token("alice-token", alice())
            .token("eve-token", eve());
        let server = HttpServer::new(McpServer::new(registry))
            .authenticator(tokens)
            .options(options);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async { stopped.await.unwrap_or(()) };
            server.serve_listener(listener, shutdown).await.unwrap();
        });
        Served {
            url: format!("http://{address}/mcp"),
            address,
            stop: Some(stop),
            task: Some(task),
        }
    }

    async fn stop(mut self) {
        self.stop.take().unwrap().send(()).unwrap();
        self.task.take().unwrap().await.unwrap();
    }
}

/// A raw JSON-RPC client of one caller.
struct Raw {
    http: reqwest::Client,
    url: String,
    token: &'static str,
}

const LEGACY: &str = "2025-06-18";

impl Raw {
    fn new(served: &Served, token: &'static str) -> Raw {
        Raw {
            http: reqwest::Client::new(),
            url: served.url.clone(),
            token,
        }
    }

    fn request(&self, method: reqwest::Method, session: Option<&str>) -> reqwest::RequestBuilder {
        self.speaking(LEGACY, method, session)
    }

    fn speaking(
        &self,
        version: &str,
        method: reqwest::Method,
        session: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let mut request = self
            .http
            .request(method, &self.url)
            .bearer_auth(self.token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request
    }

    async fn post(&self, session: Option<&str>, body: &Value) -> reqwest::Response {
        self.request(reqwest::Method::POST, session)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap()
    }

    /// Opens a session declaring `capabilities`, and says it is initialized.
    async fn open(&self, capabilities: Value) -> String {
        let initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": LEGACY, "capabilities": capabilities,
                        "clientInfo": { "name": "raw", "version": "0" } }
        });
        let response = self.post(None, &initialize).await;
        assert_eq!(response.status(), 200, "initialize");
        let session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        assert_eq!(self.post(Some(&session), &initialized).await.status(), 202);
        session
    }
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments } })
}

/// The JSON-RPC messages of an SSE response, one at a time.
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    fn new(response: reqwest::Response) -> Events {
        Events {
            response,
            buffer: String::new(),
        }
    }

    /// The next message, or `None` when the stream ends.
    async fn next(&mut self) -> Option<Value> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: String = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data).unwrap());
                }
            }
            let chunk = self.response.chunk().await.unwrap()?;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }

    /// The next message, failing the test if none comes within `deadline`.
    async fn expect(&mut self, deadline: Duration, what: &str) -> Value {
        tokio::time::timeout(deadline, self.next())
            .await
            .unwrap_or_else(|_| panic!("no {what} arrived"))
            .unwrap_or_else(|| panic!("the stream ended before the {what}"))
    }
}

/// Longer than anything here takes on a loaded machine; it only stops a test that would hang.
const DEADLINE: Duration = Duration::from_secs(30);

/// Status and body of a response, to compare refusals.
async fn answer(response: reqwest::Response) -> (u16, String) {
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Alice opens a session that declares elicitation and calls `pay` for `to`; returns the session, its
/// call's stream, and the approval question the server sent on it.
async fn alice_asked(alice: &Raw, to: &str) -> (String, Events, Value) {
    let session = alice.open(json!({ "elicitation": {} })).await;
    let call = call(5, "pay", json!({ "to": to }));
    let mut stream = Events::new(alice.post(Some(&session), &call).await);
    let question = stream.expect(DEADLINE, "approval question").await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    (session, stream, question)
}

#[tokio::test]
async fn a_session_answers_only_the_caller_who_opened_it() {
    let served = Served::start(Registry::builder().build().unwrap(), HttpOptions::default()).await;
    let (alice, eve) = (
        Raw::new(&served, "alice-token"),
        Raw::new(&served, "eve-token"),
    );
    let (session, mut stream, question) = alice_asked(&alice, "NL-1").await;
    let approve = json!({ "jsonrpc": "2.0", "id": question["id"],
                          "result": { "action": "accept", "content": { "approve": true } } });

    // ANCHOR: session
    let unknown = answer(eve.post(Some("no-such-session"), &approve).await).await;
    assert_eq!(unknown, (404, "Not Found: Session not found".to_owned()));
    let eves_approval = answer(eve.post(Some(&session), &approve).await).await;
    assert_eq!(
        eves_approval, unknown,
        "another caller's answer is refused as for an unknown session"
    );
    let eves_call = eve
        .post(Some(&session), &call(6, "echo", json!({ "word": "hi" })))
        .await;
    assert_eq!(answer(eves_call).await, unknown, "nor may she call on it");
    let resume = eve
        .request(reqwest::Method::GET, Some(&session))
        .header("accept", "text/event-stream")
        .header("last-event-id", "0");
    assert_eq!(
        answer(resume.send().await.unwrap()).await,
        unknown,
        "nor read its stream"
    );
    let delete = eve.request(reqwest::Method::DELETE, Some(&session));
    assert_eq!(
        answer(delete.send().await.unwrap()).await,
        unknown,
        "nor end it"
    );
    assert_eq!(paid("NL-1"), 0, "eve's approval ran nothing");
    // ANCHOR_END: session

    let decline =
        json!({ "jsonrpc": "2.0", "id": question["id"], "result": { "action": "decline" } });
    assert_eq!(alice.post(Some(&session), &decline).await.status(), 202);
    let result = stream.expect(DEADLINE, "declined result").await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert_eq!(paid("NL-1"), 0);
    let delete = alice.request(reqwest::Method::DELETE, Some(&session));
    assert_eq!(
        delete.send().await.unwrap().status(),
        202,
        "alice ends her own session"
    );
    let after = alice
        .post(Some(&session), &call(7, "echo", json!({ "word": "hi" })))
        .await;
    assert_eq!(answer(after).await, unknown, "an ended session is unknown");
    served.stop().await;
}

#[tokio::test]
async fn a_question_holds_no_call_slot_and_times_out() {
    let registry = Registry::builder()
        .confirmation_ttl(Duration::from_secs(1))
        .max_concurrent_calls(1)
        .build()
        .unwrap();
    let served = Served::start(registry, HttpOptions::default()).await;
    let (alice, eve) = (
        Raw::new(&served, "alice-token"),
        Raw::new(&served, "eve-token"),
    );
    let (_, mut stream, _) = alice_asked(&alice, "NL-2").await;

    // Alice never answers. The one call slot is free for eve meanwhile.
    let eves = eve.open(json!({})).await;
    let echoed = tokio::time::timeout(
        DEADLINE,
        eve.post(Some(&eves), &call(1, "echo", json!({ "word": "through" }))),
    )
    .await
    .expect("eve's call waited for alice's unanswered question");
    let mut echoed = Events::new(echoed);
    let echoed = echoed.expect(DEADLINE, "echo result").await;
    assert_eq!(echoed["result"]["content"][0]["text"], "through");

    let unanswered = stream
        .expect(DEADLINE, "error for the unanswered question")
        .await;
    assert_eq!(
        unanswered["error"]["message"],
        "The client did not answer `approval` within 1 s; nothing was changed.",
        "{unanswered}"
    );
    assert_eq!(paid("NL-2"), 0);
    served.stop().await;
}

#[tokio::test]
async fn a_stateless_server_never_asks_during_a_call() {
    let options = HttpOptions::default().stateless(true).json_response(true);
    let served = Served::start(Registry::builder().build().unwrap(), options).await;
    let alice = Raw::new(&served, "alice-token");
    let mut request = call(1, "pay", json!({ "to": "NL-3" }));
    request["params"]["_meta"] =
        json!({ "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} } });
    let reply = tokio::time::timeout(DEADLINE, alice.post(Some("made-up-session"), &request))
        .await
        .expect("the server asked a question no one can answer");
    let reply: Value = reply.json().await.unwrap();
    let confirmation = &reply["result"]["_meta"]["io.toolgate/confirmation"];
    assert!(
        confirmation.is_string(),
        "the preview and its confirmation come back instead: {reply}"
    );
    assert_eq!(paid("NL-3"), 0);
    served.stop().await;
}

#[tokio::test]
async fn stateless_ceilings_count_per_caller_whatever_session_header_is_sent() {
    let options = HttpOptions::default().stateless(true).json_response(true);
    let served = Served::start(Registry::builder().build().unwrap(), options).await;
    let (alice, eve) = (
        Raw::new(&served, "alice-token"),
        Raw::new(&served, "eve-token"),
    );
    let texts = async |raw: &Raw, sessions: &[&str]| {
        let mut texts = Vec::new();
        for (id, session) in sessions.iter().enumerate() {
            let reply = raw
                .post(Some(session), &call(id as u64, "visit", json!({})))
                .await;
            let reply: Value = reply.json().await.unwrap();
            texts.push(
                reply["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        texts
    };
    let limit = "[ERROR] `visit` may run at most 2 times per conversation and has reached that limit. \
                 Answer with what you have.";
    assert_eq!(
        texts(&eve, &["s-1", "s-2", "s-3", "caller:alice"]).await,
        ["visited", "visited", limit, limit],
        "a new header per call does not void the ceiling"
    );
    assert_eq!(
        texts(&alice, &["caller:alice", "s-1", "s-9"]).await,
        ["visited", "visited", limit],
        "eve's calls under alice's header did not count for alice"
    );
    served.stop().await;
}

#[tokio::test]
async fn in_process_ceilings_never_mix_callers_whatever_session_they_name() {
    let registry = Registry::builder().build().unwrap();
    let bob = Caller::new("bob");
    for _ in 0..2 {
        let call = Call::new("visit", json!({})).session("caller:alice");
        assert!(registry.run(&bob, call).await.error().is_none());
    }
    let alices = registry.call(&alice(), "visit", json!({})).await;
    assert!(
        alices.error().is_none(),
        "bob used up his own count, not alice's: {alices:?}"
    );
}

#[tokio::test]
async fn sessions_per_caller_are_bounded_and_freed_when_they_end() {
    let options = HttpOptions::default().sessions_per_caller(2);
    let served = Served::start(Registry::builder().build().unwrap(), options).await;
    let (alice, eve) = (
        Raw::new(&served, "alice-token"),
        Raw::new(&served, "eve-token"),
    );
    let first = eve.open(json!({})).await;
    eve.open(json!({})).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": LEGACY, "capabilities": {},
                    "clientInfo": { "name": "raw", "version": "0" } }
    });
    let third = eve.post(None, &initialize).await;
    assert_eq!(third.status(), 429, "a third session for eve is refused");
    assert!(third.headers().get("mcp-session-id").is_none());
    alice.open(json!({})).await;
    let delete = eve.request(reqwest::Method::DELETE, Some(&first));
    assert_eq!(delete.send().await.unwrap().status(), 202);
    eve.open(json!({})).await;
    served.stop().await;
}

#[tokio::test]
async fn a_run_is_counted_when_the_body_runs_not_for_previews_replays_or_declines() {
    let registry = Registry::builder().build().unwrap();
    let ada = alice();
    let preview = async |session: &str| {
        let call = Call::new("tip", json!({ "to": "Bo" })).session(session.to_owned());
        registry.run(&ada, call).await
    };
    let Outcome::NeedsConfirmation(pending) = preview("one").await else {
        panic!("expected a preview")
    };
    let confirm = async |token: &str| {
        let call = Call::new("tip", json!({ "to": "Bo" }))
            .session("one")
            .confirmation(token.to_owned());
        registry
            .run(&ada, call)
            .await
            .into_result()
            .text_for_model()
    };
    assert_eq!(
        confirm(pending.confirmation()).await,
        "Tipped Bo.",
        "the preview did not use the one run"
    );
    assert_eq!(
        confirm(pending.confirmation()).await,
        "Tipped Bo.",
        "a replay returns the first result"
    );
    let again = preview("one").await;
    assert_eq!(again.error().unwrap().kind(), ErrorKind::LimitReached);

    let Outcome::NeedsConfirmation(declined) = preview("two").await else {
        panic!("expected a preview")
    };
    let decline = Call::new("tip", json!({ "to": "Bo" }))
        .session("two")
        .resume(
            Some(declined.confirmation()),
            [(
                toolgate::output::APPROVAL_KEY.to_owned(),
                json!({ "action": "decline" }),
            )]
            .into_iter()
            .collect(),
        );
    let declined = registry.run(&ada, decline).await;
    assert!(matches!(declined, Outcome::Declined), "{declined:?}");
    assert!(
        matches!(preview("two").await, Outcome::NeedsConfirmation(_)),
        "a decline used no run"
    );

    let Outcome::InputRequired(asked) = registry.call(&ada, "greet", json!({})).await else {
        panic!("expected a question")
    };
    let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
    let resume = Call::new("greet", json!({})).resume(
        Some(asked.state()),
        [("name".to_owned(), answer)].into_iter().collect(),
    );
    assert_eq!(
        registry
            .run(&ada, resume)
            .await
            .into_result()
            .text_for_model(),
        "Hello, Ada.",
        "the round that only asked used no run"
    );
}

#[tokio::test]
async fn a_tool_the_caller_may_not_run_is_answered_as_an_unknown_one() {
    let trail = toolgate::sqlite::SqliteStore::in_memory().unwrap();
    let registry = Registry::builder()
        .disable("echo")
        .read_only(true)
        .audit(trail.audit())
        .build()
        .unwrap();
    let refusal = async |caller: &Caller, name: &str| {
        let outcome = registry.call(caller, name, json!({})).await;
        let error = outcome.error().unwrap().clone();
        (error.kind(), error.message().replace(name, "NAME"))
    };
    let unknown = refusal(&eve(), "no_such_tool").await;
    assert_eq!(unknown.0, ErrorKind::UnknownTool);
    assert_eq!(refusal(&eve(), "vault").await, unknown, "not granted");
    assert_eq!(
        refusal(&eve(), "pay").await,
        unknown,
        "not granted, and a write in read-only mode"
    );
    assert_eq!(
        refusal(&alice(), "pay").await.0,
        ErrorKind::Unavailable,
        "a caller who may run the tool is told why it cannot run now"
    );
    assert_eq!(
        refusal(&alice(), "echo").await.1,
        "This tool is switched off."
    );
    let audited: Vec<_> = trail
        .audit_trail(&AuditQuery::newest(10))
        .await
        .unwrap()
        .into_iter()
        .rev()
        .map(|r| r.outcome)
        .collect();
    assert_eq!(
        audited,
        [
            "unknown_tool",
            "denied",
            "denied",
            "unavailable",
            "unavailable"
        ],
        "the operator's audit has the denials the callers were not told of"
    );

    let explained = Registry::builder().explain_denials(true).build().unwrap();
    let outcome = explained.call(&eve(), "vault", json!({})).await;
    assert_eq!(outcome.error().unwrap().kind(), ErrorKind::Denied);
    assert_eq!(
        outcome.error().unwrap().message(),
        "Your role (Viewer) is not allowed to do this."
    );
}

#[tokio::test]
async fn over_mcp_a_hidden_tool_gets_the_unknown_tools_error() {
    let options = HttpOptions::default().stateless(true).json_response(true);
    let served = Served::start(Registry::builder().build().unwrap(), options).await;
    let eve = Raw::new(&served, "eve-token");
    let error = async |name: &str| {
        let reply: Value = eve
            .post(None, &call(1, name, json!({})))
            .await
            .json()
            .await
            .unwrap();
        let error = &reply["error"];
        (
            error["code"].clone(),
            error["message"].as_str().unwrap().replace(name, "NAME"),
        )
    };
    let unknown = error("no_such_tool").await;
    assert_eq!(unknown.0, -32602);
    assert_eq!(error("vault").await, unknown);
    served.stop().await;
}

/// Every string in `value` that contains `needle`.
fn strings_with(value: &Value, needle: &str, found: &mut Vec<String>) {
    match value {
        Value::String(s) if s.contains(needle) => found.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings_with(v, needle, found)),
        Value::Object(map) => map.values().for_each(|v| strings_with(v, needle, found)),
        _ => {}
    }
}

/// The payee of a lying prompt: a right-to-left override, new lines, a terminal's erase-line and a
/// zero-width space.
const SPOOF: &str = "\u{202e}10LN\n\nAmount: 1 EUR (verified)\u{1b}[2K\u{200b}";
const SHOWN: &str =
    r"Send 9999 EUR to \u{202e}10LN\u{a}\u{a}Amount: 1 EUR (verified)\u{1b}[2K\u{200b}";

fn assert_shown(value: &Value) {
    let mut found = Vec::new();
    strings_with(value, "Send 9999 EUR", &mut found);
    assert!(!found.is_empty(), "no preview text in {value}");
    for text in found {
        assert!(
            text.contains(SHOWN),
            "the prompt hides characters: {text:?}"
        );
    }
}

#[tokio::test]
async fn approval_prompts_show_every_hidden_character_in_every_channel() {
    let registry = Registry::builder().build().unwrap();
    let Outcome::NeedsConfirmation(pending) =
        registry.call(&alice(), "pay", json!({ "to": SPOOF })).await
    else {
        panic!("expected a preview")
    };
    assert_eq!(pending.preview().text(), SHOWN, "in-process");
    assert_shown(&pending.approval_request());

    let options = HttpOptions::default().stateless(true).json_response(true);
    let stateless = Served::start(registry.clone(), options).await;
    let raw = Raw::new(&stateless, "alice-token");
    let fallback: Value = raw
        .post(None, &call(1, "pay", json!({ "to": SPOOF })))
        .await
        .json()
        .await
        .unwrap();
    assert_shown(&fallback["result"]["_meta"]["io.toolgate/preview"]);
    assert_shown(&fallback["result"]["content"]);

    let mut mrtr = call(2, "pay", json!({ "to": SPOOF }));
    mrtr["params"]["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} }
    });
    let input_required: Value = raw
        .speaking("2026-07-28", reqwest::Method::POST, None)
        .header("content-type", "application/json")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "pay")
        .body(mrtr.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        input_required["result"]["inputRequests"].is_object(),
        "{input_required}"
    );
    assert_shown(&input_required["result"]["inputRequests"]);
    stateless.stop().await;

    let stateful = Served::start(registry, HttpOptions::default()).await;
    let raw = Raw::new(&stateful, "alice-token");
    let (session, mut stream, question) = alice_asked(&raw, SPOOF).await;
    assert_shown(&question["params"]);
    let decline =
        json!({ "jsonrpc": "2.0", "id": question["id"], "result": { "action": "decline" } });
    assert_eq!(raw.post(Some(&session), &decline).await.status(), 202);
    let declined = stream.expect(DEADLINE, "declined result").await;
    assert_eq!(declined["result"]["isError"], true, "{declined}");
    assert_eq!(paid(SPOOF), 0);
    stateful.stop().await;
}

#[tokio::test]
async fn a_body_whose_pauses_each_stay_under_the_idle_timeout_is_read_whole() {
    let options = HttpOptions::default()
        .stateless(true)
        .idle_timeout(Duration::from_secs(2));
    let served = Served::start(Registry::builder().build().unwrap(), options).await;
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer eve-token\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        ping.len()
    );
    let mut client = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    client.write_all(head.as_bytes()).await.unwrap();
    // Four pieces, 2.8 s of pauses in all: more than the timeout, though no one pause is.
    for piece in ping.chunks(ping.len().div_ceil(4)) {
        tokio::time::sleep(Duration::from_millis(700)).await;
        client.write_all(piece).await.unwrap();
    }
    let reply = until_closed(&mut client).await;
    assert!(
        reply.starts_with("HTTP/1.1 200") && reply.contains(r#""id":1,"result":{}"#),
        "{reply}"
    );
    served.stop().await;
}

/// Reads until the server closes the connection, returning what it sent.
async fn until_closed(stream: &mut tokio::net::TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(DEADLINE, stream.read_to_end(&mut received))
        .await
        .expect("the server kept the connection open")
        .ok();
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn silent_stalled_and_surplus_connections_are_closed_or_kept_waiting() {
    let options = HttpOptions::default()
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(300))
        .max_connections(2);
    let served = Served::start(Registry::builder().build().unwrap(), options).await;

    let mut silent = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    silent
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    assert_eq!(
        until_closed(&mut silent).await,
        "",
        "headers never finished"
    );

    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer eve-token\r\n\
                Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                Content-Length: 100\r\n\r\n{\"jsonrpc\":";
    // The direct path reads the first body; rmcp reads the second, a page's (an allowed `Origin`).
    let from_page = head.replace("\r\n\r\n", "\r\nOrigin: http://localhost:5173\r\n\r\n");
    for head in [head, &from_page] {
        let mut stalled = tokio::net::TcpStream::connect(served.address)
            .await
            .unwrap();
        stalled.write_all(head.as_bytes()).await.unwrap();
        let reply = until_closed(&mut stalled).await;
        assert!(
            reply.starts_with("HTTP/1.1 408")
                && reply.ends_with(
                    "the request body paused for longer than 300 ms; send it without pauses"
                ),
            "a body that stopped is refused: {reply}"
        );
    }

    let first = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    let second = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    let mut third = tokio::net::TcpStream::connect(served.address)
        .await
        .unwrap();
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer eve-token\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{ping}",
        ping.len()
    );
    third.write_all(request.as_bytes()).await.unwrap();
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(100), third.read(&mut byte)).await;
    assert!(
        early.is_err(),
        "a third connection waits while two are open"
    );
    drop((first, second));
    let reply = until_closed(&mut third).await;
    assert!(
        format!("{}{reply}", byte[0] as char).contains("HTTP/1.1"),
        "and is served once one closes: {reply}"
    );
    served.stop().await;
}

#[test]
fn absurd_confirmation_ttls_are_refused_at_build() {
    for ttl in [
        Duration::MAX,
        Duration::ZERO,
        Duration::from_secs(8 * 24 * 3600),
    ] {
        let error = Registry::builder()
            .confirmation_ttl(ttl)
            .build()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "`confirmation_ttl` must be more than zero and at most 7 days"
        );
    }
    let week = Registry::builder().confirmation_ttl(Duration::from_secs(7 * 24 * 3600));
    assert!(week.build().is_ok());
}

#[tokio::test]
async fn the_longest_ttl_seals_confirmations_that_open() {
    let registry = Registry::builder()
        .confirmation_ttl(Duration::from_secs(7 * 24 * 3600))
        .build()
        .unwrap();
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&alice(), "pay", json!({ "to": "NL-8" }))
        .await
    else {
        panic!("expected a preview")
    };
    let done = registry.confirm(&alice(), pending.confirmation()).await;
    assert_eq!(done.into_result().text_for_model(), "Paid NL-8.");
}

/// A confirmation used on a replica whose clock runs behind the store's: by the store's clock it has
/// expired a minute ago, yet the replica still took it.
async fn used_after_its_expiry_stays_used(store: &dyn ConfirmationStore) {
    let expired = SystemTime::now() - Duration::from_secs(60);
    let approve = Claim::new(Decision::Approve, expired);
    assert_eq!(
        store.claim("c-late", approve).await.unwrap(),
        Claimed::First
    );
    store.claim("c-other", approve).await.unwrap();
    assert_eq!(
        store.claim("c-late", approve).await.unwrap(),
        Claimed::Approved { outcome: None },
        "the record outlives the expiry, so the confirmation cannot act twice"
    );
}

/// An approved run that ended its hold without a result (its process died) is taken over by exactly one
/// of the approvals racing for it; a finished run, a declined one or a run still held never is.
async fn an_abandoned_run_is_resumed_once(store: &dyn ConfirmationStore) {
    let expires = SystemTime::now() + Duration::from_secs(600);
    let approve = Claim::new(Decision::Approve, expires);
    let mut lapsed = approve;
    lapsed.held_until = SystemTime::now() - Duration::from_secs(1);
    assert_eq!(store.claim("held", approve).await.unwrap(), Claimed::First);
    assert_eq!(
        store.claim("held", approve).await.unwrap(),
        Claimed::Approved { outcome: None },
        "a run still held is running: nobody takes it over"
    );
    assert_eq!(store.claim("dead", lapsed).await.unwrap(), Claimed::First);
    let race = tokio::join!(
        store.claim("dead", approve),
        store.claim("dead", approve),
        store.claim("dead", approve),
        store.claim("dead", approve)
    );
    let race = [race.0, race.1, race.2, race.3];
    let resumed = race
        .iter()
        .filter(|c| matches!(c, Ok(Claimed::Resumed)))
        .count();
    assert_eq!(resumed, 1, "exactly one approval resumes it: {race:?}");
    assert_eq!(
        store
            .claim("dead", Claim::new(Decision::Decline, expires))
            .await
            .unwrap(),
        Claimed::Approved { outcome: None },
        "an approved write cannot be declined, abandoned or not"
    );
    store.claim("done", lapsed).await.unwrap();
    store.finish("done", "{}".to_owned()).await.unwrap();
    assert_eq!(
        store.claim("done", approve).await.unwrap(),
        Claimed::Approved {
            outcome: Some("{}".to_owned())
        },
        "a run that recorded its result is never run again"
    );
}

#[tokio::test]
async fn stores_resume_an_abandoned_run_once() {
    an_abandoned_run_is_resumed_once(&MemoryStore::new()).await;
    let sqlite = toolgate::sqlite::SqliteStore::in_memory().unwrap();
    an_abandoned_run_is_resumed_once(&sqlite).await;
}

#[tokio::test]
async fn stores_keep_used_confirmations_past_their_expiry() {
    used_after_its_expiry_stays_used(&MemoryStore::new()).await;
    let sqlite = toolgate::sqlite::SqliteStore::in_memory().unwrap();
    used_after_its_expiry_stays_used(&sqlite).await;
}
