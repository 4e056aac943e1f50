//! The shop exports each tool call's span over OTLP/HTTP when `--otlp` names an endpoint: the span is
//! named after the tool and is the child of the `traceparent` the request carried.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the clients' tests, which use all of it
mod real_clients;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use real_clients::Served;
use serde_json::{Value, json};

const SHOP: &str = env!("CARGO_BIN_EXE_example-shop");
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// Receives OTLP/HTTP requests on a loopback port and hands each JSON body to the test.
fn receiver() -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (bodies, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let path = request_line
                .split(' ')
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            let _ = bodies.send((path, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            let answer =
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (url, received)
}

/// The spans named `name` in an OTLP/JSON export request, with its resource's attributes.
fn spans_named<'a>(body: &'a Value, name: &str) -> Vec<(&'a Value, &'a Value)> {
    let mut found = Vec::new();
    for resource in body["resourceSpans"].as_array().into_iter().flatten() {
        for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
            for span in scope["spans"].as_array().into_iter().flatten() {
                if span["name"] == name {
                    found.push((span, &resource["resource"]["attributes"]));
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn each_call_is_exported_as_a_span_under_the_requests_trace() {
    let (endpoint, received) = receiver();
    let mut command = Command::new(SHOP);
    command
        .args(["--otlp", &endpoint, "--stateless"])
        .env("OTEL_BSP_SCHEDULE_DELAY", "50");
    let shop = Served::spawn(command);
    let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "search_orders", "arguments": { "query": "Lovelace", "limit": 1 } } });
    let answer: Value = reqwest::Client::new()
        .post(&shop.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("authorization", "Bearer viewer-token")
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .json(&call)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let (path, body) = loop {
        let (path, body) = received
            .recv_timeout(Duration::from_secs(30))
            .expect("the shop exports its spans");
        if !spans_named(&body, "search_orders").is_empty() {
            break (path, body);
        }
    };
    assert_eq!(path, "/v1/traces");
    let (span, resource) = spans_named(&body, "search_orders")[0];
    assert_eq!(span["traceId"], TRACE, "{span}");
    assert_eq!(span["parentSpanId"], PARENT, "{span}");
    let attribute = |attributes: &Value, key: &str| {
        attributes
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["key"] == key)
            .map(|a| a["value"]["stringValue"].clone())
    };
    assert_eq!(
        attribute(&span["attributes"], "caller"),
        Some(json!("vera@shop.example"))
    );
    assert_eq!(
        attribute(&span["attributes"], "outcome"),
        Some(json!("done"))
    );
    assert_eq!(
        attribute(resource, "service.name"),
        Some(json!("example-shop"))
    );
    drop(shop);
}
