//! A 2026-07-28 MCP client over Streamable HTTP that declares the tasks extension (and forms, for a write's
//! approval), or not.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

/// The client's handler: what it declares.
#[derive(Clone)]
pub(crate) struct Poller {
    tasks: bool,
}

impl rmcp::ClientHandler for Poller {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let capabilities = if self.tasks {
            rmcp::model::ClientCapabilities::builder()
                .enable_tasks()
                .enable_elicitation()
                .build()
        } else {
            rmcp::model::ClientCapabilities::default()
        };
        rmcp::model::ClientConfig::new(
            capabilities,
            rmcp::model::Implementation::new("toolgate-tests", "0"),
        )
    }
}

pub(crate) type Client = rmcp::service::RunningService<rmcp::RoleClient, Poller>;

/// A client of the MCP endpoint `url` as the caller of `token`, declaring tasks or not: a write's approval
/// comes back in the result, to be answered in the next round.
pub(crate) async fn connect(url: &str, token: &str, tasks: bool) -> Client {
    use rmcp::ClientServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    let lifecycle = rmcp::ClientLifecycleMode::Auto {
        preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    Poller { tasks }
        .serve_with_lifecycle(
            StreamableHttpClientTransport::from_config(config),
            lifecycle,
        )
        .await
        .unwrap()
}

/// The parameters of a `tools/call` of `name` with `arguments`.
pub(crate) fn call(name: &str, arguments: serde_json::Value) -> rmcp::model::CallToolRequestParams {
    let mut params = rmcp::model::CallToolRequestParams::new(name.to_owned());
    params.arguments = arguments.as_object().cloned();
    params
}
