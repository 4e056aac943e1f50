//! `example-conformance client URL`: toolgate's remote-server client under the conformance suite's client
//! scenarios. The suite starts a server at `URL` and names the scenario in `MCP_CONFORMANCE_SCENARIO`,
//! with what the client needs to know in `MCP_CONFORMANCE_CONTEXT` (a client's credentials); the client
//! is the one the gateway uses: a `RemoteServer` in a registry, signing in as the server asks, listed,
//! and its tools called as a caller calls them.

use serde_json::{Value, json};
use toolgate::remote::{ClientSecret, Health, RemoteServer, SignIn};
use toolgate::{Caller, Registry};

/// Where the sign-in comes back to. The suite's authorization servers approve at once and redirect
/// here; the client reads the code from the redirect and never listens on it.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The client ID metadata document the suite's authorization servers expect a client to name.
const CLIENT_METADATA: &str = "https://conformance-test.local/client-metadata.json";

/// Connects to the scenario's server at `url` as the gateway would, lists its tools and calls the one
/// the scenario asks for.
///
/// # Errors
/// When the server cannot be reached or signed in to, or a call fails.
pub(crate) async fn run(url: &str) -> Result<(), Box<dyn std::error::Error>> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let (id, secret) = (context["client_id"].as_str(), context["client_secret"].as_str());
    // ANCHOR: client
    let sign_in = match id {
        Some(id) if scenario.starts_with("auth/client-credentials") => {
            SignIn::client_credentials(id, ClientSecret::value(secret.unwrap_or_default()))
        }
        Some(id) => SignIn::unattended(REDIRECT_URI).client(id, secret.map(ClientSecret::value)),
        None => SignIn::unattended(REDIRECT_URI).metadata_document(CLIENT_METADATA),
    };
    let server = RemoteServer::http("conformance", url)
        .public()
        .trusted()
        .sign_in(sign_in.step_up());
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
    let (name, arguments) = match registry.get("conformance_add_numbers") {
        Some(_) => ("conformance_add_numbers".to_owned(), json!({"a": 5, "b": 3})),
        None => {
            let listed = registry.list(&Caller::anonymous());
            match listed.iter().find(|tool| tool.name().starts_with("conformance_")) {
                Some(tool) if scenario.starts_with("auth/") => (tool.name().to_owned(), json!({})),
                _ => return Ok(()),
            }
        }
    };
    let result = (registry.call(&Caller::anonymous(), &name, arguments).await).into_result();
    if result.is_error {
        return Err(result.text_for_model().into());
    }
    println!("{}", result.text_for_model());
    Ok(())
}
