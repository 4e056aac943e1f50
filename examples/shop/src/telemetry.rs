//! Logs to standard error, and each tool call's span to an OTLP endpoint when one is configured.

use std::error::Error;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// The exporter of the calls' spans, if any: dropping it sends what is still buffered.
#[derive(Debug)]
pub struct Telemetry(Option<SdkTracerProvider>);

// ANCHOR: otlp
/// Installs the logs (filtered by `RUST_LOG`) and, with an `otlp` base URL, a tracer that exports every
/// `toolgate::call` span to `<otlp>/v1/traces` as OTLP over HTTP with JSON.
///
/// # Errors
/// When the exporter cannot be built.
pub fn init(otlp: Option<&str>) -> Result<Telemetry, Box<dyn Error>> {
    // Logs go to standard error (standard output carries the protocol over stdio).
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn,toolgate=info".into());
    let logs = fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let provider = match otlp {
        None => None,
        Some(base) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpJson)
                .with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')))
                .build()?;
            let resource = Resource::builder()
                .with_service_name("example-shop")
                .build();
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(resource)
                .build();
            Some(provider)
        }
    };
    let calls = provider.as_ref().map(|provider| {
        let spans = Targets::new().with_target("toolgate::call", tracing::Level::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("example-shop"))
            .with_filter(spans)
    });
    tracing_subscriber::registry().with(logs).with(calls).init();
    Ok(Telemetry(provider))
}
// ANCHOR_END: otlp

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("example-shop: the last spans were not exported: {error}");
        }
    }
}
