//! Names a client chooses (A-B1, A-W8, A-W4's chain): one identifier type at every door, one escaping in
//! everything the operator reads, and the audit's rows bounded and kept for a retention.

use toolgate::http::{AuthFuture, Authenticator, Refusal};

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_named_to_forge_a_line_or_to_fill_memory_is_refused_at_the_door() {
    let (db, _) = database("names").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default()).await;
    let forged = "vera@shop.example         call     order_details            done                 r3\n\
                  2026-12-06T23:00:00.000Z  max@shop.example         approve  ship_order               done \
                  r3\n\u{1b}[2K\u{1b}[1A\u{1b}[2K\r";
    let huge = format!("max@shop.example\n\u{1b}{}", "x".repeat(60_000));
    let cases = [
        (json!({ "to": forged, "expires_in_secs": 60 }), "bytes long"),
        (
            json!({ "to": "max\n@shop.example", "expires_in_secs": 60 }),
            "control character U+000A",
        ),
        (json!({ "to": huge, "expires_in_secs": 60 }), "bytes long"),
        (
            json!({ "to": "vera\u{202e}elpmaxe.pohs@xam", "expires_in_secs": 60 }),
            "U+202E",
        ),
        (
            json!({ "to": "helper", "role": "Op\u{1b}[31m", "expires_in_secs": 60 }),
            "U+001B",
        ),
        (
            json!({ "to": "helper < vera@shop.example", "expires_in_secs": 60 }),
            "has a `<`",
        ),
        (
            json!({ "to": "helper", "profile": "\u{200b}", "expires_in_secs": 60 }),
            "U+200B",
        ),
    ];
    for (asked, why) in cases {
        let (status, body) = post(&url, "/delegations", "viewer-token", &asked).await;
        assert_eq!(status, 400, "{asked}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{message}");
        assert!(
            message.len() < 600,
            "the refusal echoes what it refused: {} bytes",
            message.len()
        );
        assert!(
            !message.contains('\n') && !message.contains('\u{1b}'),
            "{message}"
        );
    }
    assert_eq!(
        audit_rows(&db).await,
        0,
        "nothing was delegated, so nothing ran"
    );
}

/// How many rows the audit trail has.
async fn audit_rows(db: &Database) -> usize {
    use toolgate::store::{AuditQuery, RecordStore};
    db.audit_trail(&AuditQuery::newest(1000))
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_commands_print_a_sub_agent_with_its_chain_and_every_character_shown() {
    let (db, _) = database("chain").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    // A viewer may name a sub-agent after a person: the chain shows whom it acts for.
    let token = delegate(&url, "viewer-token", "max@shop.example", json!({})).await;
    let (text, error) = result_text(&call(&url, &token, "hello", json!({})).await);
    assert_eq!((text.as_str(), error), ("hello", false));
    let (text, _) = result_text(&call(&url, "manager-token", "hello", json!({})).await);
    assert_eq!(text, "hello");
    // An application's own caller whose id came from elsewhere, with a newline and escapes in it.
    let planted = Caller::new(
        "eve\n2026-12-06T23:00:00.000Z  max@shop.example  approve  ship_order  done\u{1b}[2K",
    );
    registry.call(&planted, "hello", json!({})).await;

    let (code, tail) =
        toolgate::operator::run(&registry, ["toolgate", "audit", "tail", "-n", "10"]).await;
    assert_eq!(code, 0, "{tail}");
    assert_eq!(
        tail.lines().count(),
        3,
        "one line per row, however the names were made:\n{tail}"
    );
    assert!(!tail.contains('\u{1b}'), "{tail:?}");
    assert!(tail.contains("eve\\u{a}2026-12-06"), "{tail}");
    let sub_agent = tail
        .lines()
        .find(|l| l.contains("< vera@shop.example"))
        .unwrap();
    assert!(
        sub_agent.contains("max@shop.example < vera@shop.example"),
        "{sub_agent}"
    );

    let (_, by_max) = toolgate::operator::run(
        &registry,
        ["toolgate", "audit", "query", "--caller", "max@shop.example"],
    )
    .await;
    assert_eq!(by_max.lines().count(), 1, "only max's own call:\n{by_max}");
    assert!(!by_max.contains("vera"), "{by_max}");
    let (_, by_vera) = toolgate::operator::run(
        &registry,
        [
            "toolgate",
            "audit",
            "query",
            "--caller",
            "vera@shop.example",
        ],
    )
    .await;
    assert!(
        by_vera.contains("max@shop.example < vera@shop.example"),
        "{by_vera}"
    );

    let (_, json) =
        toolgate::operator::run(&registry, ["toolgate", "--json", "audit", "tail"]).await;
    assert!(
        !json.trim_end().contains('\n') && !json.contains('\u{1b}'),
        "{json}"
    );
    let rows: Value = serde_json::from_str(&json).unwrap();
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .any(|r| r["caller"].as_str().unwrap().contains('\u{1b}')),
        "the JSON keeps the name"
    );
}

/// Takes a caller's id from a header the client sends, as an application that trusts its proxy might.
struct FromHeader;

impl Authenticator for FromHeader {
    fn authenticate<'a>(&'a self, request: &'a http::request::Parts) -> AuthFuture<'a> {
        Box::pin(async move {
            let header = request
                .headers
                .get("authorization")
                .ok_or(Refusal::Missing)?;
            let token = header.to_str().ok().and_then(|h| h.strip_prefix("Bearer "));
            let id = match token.ok_or(Refusal::Invalid("not a bearer token".into()))? {
                "long" => "x".repeat(500),
                "bidi" => "vera\u{202e}elpmaxe".to_owned(),
                "chained" => "max < vera".to_owned(),
                other => other.to_owned(),
            };
            Ok(Caller::new(id).with_abilities(["orders.view"]))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_an_authenticator_makes_of_a_name_no_door_accepts_gets_401() {
    let registry = Registry::builder().compiled_tools(TOOLS).build().unwrap();
    let server = HttpServer::new(McpServer::new(registry))
        .authenticator(FromHeader)
        .options(stateless());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    for token in ["long", "bidi", "chained"] {
        let response = reqwest::Client::new()
            .post(format!("{url}/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{token}");
        let reason = response.text().await.unwrap();
        assert!(reason.contains("does not accept"), "{reason}");
    }
    let (text, _) = result_text(&call(&url, "ada@shop.example", "hello", json!({})).await);
    assert_eq!(text, "hello", "an ordinary name passes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_name_of_a_megabyte_is_kept_to_128_characters_and_a_digest() {
    let (db, path) = database("long_names").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    let name = "n".repeat(1 << 20);
    for _ in 0..3 {
        let answer = call(&url, "viewer-token", &name, json!({})).await;
        let text = answer.to_string();
        assert!(
            text.len() < 1_000,
            "the answer echoes the name: {} bytes",
            text.len()
        );
        assert!(text.contains("Unknown tool"), "{text}");
    }
    let (code, tail) = toolgate::operator::run(&registry, ["toolgate", "audit", "tail"]).await;
    assert_eq!(code, 0);
    assert_eq!(tail.lines().count(), 3, "{tail}");
    let longest = sqlite_count(&path, "SELECT max(length(tool)) FROM toolgate_audit");
    assert!((129..=150).contains(&longest), "{longest}");
    let kept = sqlite_count(&path, "SELECT count(DISTINCT tool) FROM toolgate_audit");
    assert_eq!(kept, 1, "the same name, the same digest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_forgets_calls_past_its_retention_and_at_the_operators_command() {
    let (db, path) = database("retention").await;
    let gateway = registry(&db, Registry::builder()).await;
    for _ in 0..4 {
        gateway.call(&vera(), "hello", json!({})).await;
    }
    let (code, out) =
        toolgate::operator::run(&gateway, ["toolgate", "audit", "prune", "--before", "1d"]).await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("Forgot 0 audit rows of calls before "),
        "{out}"
    );
    let (code, out) = toolgate::operator::run(
        &gateway,
        [
            "toolgate",
            "audit",
            "prune",
            "--before",
            "2999-01-01T00:00:00Z",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("Forgot 4 audit rows"), "{out}");
    assert_eq!(
        sqlite_count(&path, "SELECT count(*) FROM toolgate_audit"),
        0
    );
    let (_, empty) = toolgate::operator::run(&gateway, ["toolgate", "audit", "tail"]).await;
    assert_eq!(empty, "No calls recorded.\n");

    // A registry with a retention forgets by itself, as it watches its records.
    let (db, path) = database("retention_watch").await;
    let retention = Registry::builder().audit_retention(Some(Duration::from_millis(1)));
    let watched = registry(&db, retention).await;
    for _ in 0..3 {
        watched.call(&vera(), "hello", json!({})).await;
    }
    assert_eq!(audit_rows(&db).await, 3);
    tokio::time::sleep(Duration::from_millis(5)).await;
    tokio::spawn(watched.watch(Duration::from_millis(50)));
    for _ in 0..600 {
        if sqlite_count(&path, "SELECT count(*) FROM toolgate_audit") == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the rows past the retention were never forgotten");
}
