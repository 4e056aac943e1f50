//! The span each call runs in: named after the tool, with the caller, the session, the outcome and the
//! duration, and the W3C trace context the call carries as its parent.

use std::time::Instant;

use tracing::field::Empty;
use tracing::{Instrument, Level, Span};

use crate::caller::Caller;
use crate::catalog::{Snapshot, ToolId};
use crate::output::Outcome;

use super::flight::Launched;
use super::request::Meta;

/// The span of a call of the tool `name` resolved to and when it began, unless no subscriber wants
/// `toolgate::call` spans: then `None`, at the cost of one check.
#[inline(always)]
pub(super) fn call_span(
    snapshot: &Snapshot,
    name: &str,
    resolved: Option<ToolId>,
    caller: &Caller,
    meta: &Meta,
) -> Option<(Span, Instant)> {
    if !tracing::enabled!(target: "toolgate::call", Level::INFO) {
        return None;
    }
    let tool = match resolved {
        Some(i) => std::borrow::Cow::Borrowed(&*snapshot.tool(i).tool.name),
        // A name no tool has is the client's choice: bounded and escaped in every log line.
        None => crate::text::capped(name),
    };
    span_of(&crate::text::shown(&tool), caller, meta).map(|span| (span, Instant::now()))
}

#[cold]
#[inline(never)]
fn span_of(tool: &str, caller: &Caller, meta: &Meta) -> Option<Span> {
    let session = meta.session_id.as_deref();
    let traceparent = meta.traceparent.as_deref();
    let span = tracing::info_span!(
        target: "toolgate::call",
        "tool_call",
        otel.name = tool,
        otel.kind = "server",
        otel.status_code = Empty,
        tool,
        caller = caller.id(),
        on_behalf_of = Empty,
        session,
        traceparent,
        outcome = Empty,
        duration_us = Empty,
        session_log = Empty,
        telemetry = Empty,
    );
    if span.is_disabled() {
        return None;
    }
    if let Some(parent) = caller.on_behalf_of() {
        span.record("on_behalf_of", parent.chain_label());
    }
    #[cfg(feature = "opentelemetry")]
    if let Some(traceparent) = traceparent {
        remote_parent(&span, traceparent, meta.tracestate.as_deref());
    }
    Some(span)
}

/// `launched` with its future running in `span`, so that what the tool logs and traces is inside it.
pub(super) fn instrumented(launched: Launched, span: &Span) -> Launched {
    match launched {
        Launched::Run {
            future,
            timeout,
            token,
            external,
        } => Launched::Run {
            future: Box::pin(future.instrument(span.clone())),
            timeout,
            token,
            external,
        },
        Launched::Preview { future, arguments } => Launched::Preview {
            future: Box::pin(future.instrument(span.clone())),
            arguments,
        },
        done @ (Launched::Done(_) | Launched::Finished(_)) => done,
    }
}

/// Records what came of the call on its span.
pub(super) fn record((span, started): &(Span, Instant), outcome: &Outcome) {
    let elapsed = started.elapsed();
    span.record("outcome", outcome.label());
    // Signed: OpenTelemetry has no unsigned integers, and would export a `u64` as text.
    span.record(
        "duration_us",
        i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX),
    );
    let failed = match outcome {
        Outcome::Done(result) => {
            if let Some(line) = &result.session_log {
                span.record("session_log", line.as_str());
            }
            if !result.telemetry.is_empty() {
                let telemetry = serde_json::Value::Object(result.telemetry.clone().into_map());
                span.record("telemetry", telemetry.to_string());
            }
            result.is_error
        }
        Outcome::Failed(_) | Outcome::Denied(_) => true,
        _ => false,
    };
    span.record("otel.status_code", if failed { "ERROR" } else { "OK" });
}

/// Makes the call's W3C trace context the OpenTelemetry parent of `span`. A malformed `traceparent` is
/// no parent: the span starts a trace of its own.
#[cfg(feature = "opentelemetry")]
fn remote_parent(span: &Span, traceparent: &str, tracestate: Option<&str>) {
    use opentelemetry::propagation::{Extractor, TextMapPropagator};
    use opentelemetry::trace::TraceContextExt;
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The two W3C headers, as the propagator reads them.
    struct W3c<'a>(&'a str, Option<&'a str>);

    impl Extractor for W3c<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            match key {
                "traceparent" => Some(self.0),
                "tracestate" => self.1,
                _ => None,
            }
        }

        fn keys(&self) -> Vec<&str> {
            vec!["traceparent", "tracestate"]
        }
    }

    let context = TraceContextPropagator::new().extract(&W3c(traceparent, tracestate));
    if context.span().span_context().is_valid() && span.set_parent(context).is_err() {
        tracing::debug!(target: "toolgate", "no OpenTelemetry layer is installed; the trace context is not linked");
    }
}
