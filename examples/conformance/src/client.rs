//! `example-conformance client URL`: toolgate's remote-server client under the conformance suite's client
//! scenarios. The suite starts a server at `URL` and names the scenario in `MCP_CONFORMANCE_SCENARIO`,
//! with what the client needs to know in `MCP_CONFORMANCE_CONTEXT` (a client's credentials); the client
//! is the one the gateway uses: a `RemoteServer` in a registry, listed, and its tools called as a
//! caller calls them.

use serde_json::{Value, json};
use toolgate::remote::{ClientSecret, Health, RemoteServer};
use toolgate::{Caller, Registry};

/// Connects to the scenario's server at `url` as the gateway would, lists its tools and calls the one
/// the scenario asks for.
///
/// # Errors
/// When the server cannot be reached or signed in to, or a call fails.
pub(crate) async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    // ANCHOR: client
    let mut server = RemoteServer::http("conformance", url).public().trusted();
    if let (Some(id), Some(secret)) = (
        context["client_id"].as_str(),
        context["client_secret"].as_str(),
    ) {
        server = server.client_credentials(id, ClientSecret::value(secret), Vec::<String>::new());
    }
    let registry = Registry::builder().remote(server).build()?;
    registry.refresh_servers().await?;
    // ANCHOR_END: client
    let status = registry.servers().remove(0);
    if status.health == Health::Offline {
        return Err(format!(
            "the server is {}: {}",
            status.health.as_str(),
            status.last_error.unwrap_or_default()
        )
        .into());
    }
    if registry.get("conformance_add_numbers").is_some() {
        let result = registry
            .call(
                &Caller::anonymous(),
                "conformance_add_numbers",
                json!({"a": 5, "b": 3}),
            )
            .await
            .into_result();
        if result.is_error {
            return Err(result.text_for_model().into());
        }
        println!("{}", result.text_for_model());
    }
    Ok(())
}
