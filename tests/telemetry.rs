//! Every call traced: a span per call, named after the tool, whose OpenTelemetry parent is the W3C trace
//! context the call carries (in-process, in MCP `_meta`, or in the HTTP headers), with the caller, the
//! session, the outcome, the duration, and the result's session log line and telemetry.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use opentelemetry::trace::{SpanId, SpanKind, TraceId, TracerProvider as _};
use opentelemetry::{KeyValue, Value as Attribute};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use toolgate::http::{HttpOptions, HttpServer};
use toolgate::mcp::McpServer;
use toolgate::prelude::*;
use toolgate::{Delegation, ToolResult};
use tracing_subscriber::layer::SubscriberExt;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// Count the lamps in stock, with a line for people and telemetry.
#[tool(public, read_only)]
async fn count_lamps() -> ToolResult {
    ToolResult::text("12 lamps")
        .with_session_log("count_lamps: 12 in stock")
        .with_telemetry("lamps", json!(12))
}

/// Count the lamps in the shed, in a span of its own. Its body has no `.await`, so it runs in place.
#[tool(public, read_only)]
async fn count_shed_lamps() -> u32 {
    tracing::info_span!("counting").in_scope(|| 3)
}

// ANCHOR: exporter
/// Spans exported to memory while the guard lives, on this thread.
struct Traced {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

impl Traced {
    fn start() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("toolgate-tests"));
        let guard = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));
        Traced {
            exporter,
            provider,
            _guard: guard,
        }
    }
    // ANCHOR_END: exporter

    /// The one finished span named `name`.
    fn span(&self, name: &str) -> SpanData {
        self.provider.force_flush().unwrap();
        let spans = self.exporter.get_finished_spans().unwrap();
        let mut named: Vec<SpanData> = spans.into_iter().filter(|s| s.name == name).collect();
        assert_eq!(named.len(), 1, "one span named {name}");
        self.exporter.reset();
        named.remove(0)
    }
}

fn attribute(span: &SpanData, key: &str) -> Option<Attribute> {
    span.attributes
        .iter()
        .find(|KeyValue { key: k, .. }| k.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|v| v.as_str().into_owned())
}

fn traceparent() -> String {
    format!("00-{TRACE}-{PARENT}-01")
}

#[tokio::test]
async fn a_call_is_a_span_under_the_trace_context_it_carries() {
    let traced = Traced::start();
    let registry = Registry::builder().build().unwrap();
    // ANCHOR: traced
    let call = Call::new("count_lamps", json!({}))
        .trace(traceparent(), Some("vendor=lamps".into()))
        .session("s-1");
    registry.run(&Caller::new("ada"), call).await;
    let span = traced.span("count_lamps");
    assert_eq!(
        span.span_context.trace_id(),
        TraceId::from_hex(TRACE).unwrap()
    );
    assert_eq!(span.parent_span_id, SpanId::from_hex(PARENT).unwrap());
    assert!(span.parent_span_is_remote);
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.span_context.trace_state().header(), "vendor=lamps");
    for (key, value) in [
        ("tool", "count_lamps"),
        ("caller", "ada"),
        ("session", "s-1"),
        ("outcome", "done"),
        ("session_log", "count_lamps: 12 in stock"),
        ("telemetry", r#"{"lamps":12}"#),
    ] {
        assert_eq!(text(&span, key).as_deref(), Some(value), "{key}");
    }
    // ANCHOR_END: traced
    assert!(matches!(
        attribute(&span, "duration_us"),
        Some(Attribute::I64(_))
    ));

    let helper = Caller::new("ada").delegate(Delegation::to("fetcher"));
    registry.call(&helper, "count_lamps", json!({})).await;
    let span = traced.span("count_lamps");
    assert_eq!(
        span.parent_span_id,
        SpanId::INVALID,
        "without a trace context it starts a trace"
    );
    assert_eq!(text(&span, "on_behalf_of").as_deref(), Some("ada"));

    let broken = Call::new("count_lamps", json!({})).trace("00-not-a-trace-01", None);
    registry.run(&Caller::new("ada"), broken).await;
    assert_eq!(traced.span("count_lamps").parent_span_id, SpanId::INVALID);

    registry
        .call(&Caller::new("ada"), "no_such_tool", json!({}))
        .await;
    let unknown = traced.span("no_such_tool");
    assert_eq!(text(&unknown, "outcome").as_deref(), Some("unknown_tool"));
    assert_eq!(unknown.status, opentelemetry::trace::Status::error(""));
}

/// A tool whose body has no `.await` runs in place only when no span wants it: traced, it runs inside
/// its call's span like any other.
#[tokio::test]
async fn a_tool_without_await_runs_inside_its_call_span() {
    let traced = Traced::start();
    let registry = Registry::builder().build().unwrap();
    let outcome = registry
        .call(&Caller::new("ada"), "count_shed_lamps", json!({}))
        .await;
    assert_eq!(outcome.into_result().structured.as_deref(), Some(&json!(3)));
    traced.provider.force_flush().unwrap();
    let spans = traced.exporter.get_finished_spans().unwrap();
    let named = |name: &str| spans.iter().find(|s| s.name == name).unwrap();
    assert_eq!(
        named("counting").parent_span_id,
        named("count_shed_lamps").span_context.span_id()
    );
}

/// Posts one JSON-RPC message to a stateless JSON server and returns its result.
async fn post(url: &str, headers: &[(&str, String)], body: serde_json::Value) -> serde_json::Value {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request.send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn over_http_the_trace_context_comes_from_meta_or_the_headers() {
    let traced = Traced::start();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    let server = HttpServer::new(McpServer::new(Registry::builder().build().unwrap()))
        .options(HttpOptions::default().stateless(true).json_response(true));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        server
            .serve_listener(listener, async { stopped.await.unwrap_or(()) })
            .await
            .unwrap();
    });
    let call = |meta: serde_json::Value| {
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": { "name": "count_lamps", "arguments": {}, "_meta": meta } })
    };
    let headers = [("traceparent", traceparent())];
    let answer = post(&url, &headers, call(json!({}))).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let span = traced.span("count_lamps");
    assert_eq!(
        span.parent_span_id,
        SpanId::from_hex(PARENT).unwrap(),
        "from the header"
    );

    let other = "b7ad6b7169203331";
    let meta = json!({ "traceparent": format!("00-{TRACE}-{other}-01") });
    post(&url, &headers, call(meta)).await;
    let span = traced.span("count_lamps");
    assert_eq!(
        span.parent_span_id,
        SpanId::from_hex(other).unwrap(),
        "`_meta` wins over the header"
    );
    assert_eq!(text(&span, "caller").as_deref(), Some("anonymous"));
    stop.send(()).unwrap();
    serving.await.unwrap();
}
