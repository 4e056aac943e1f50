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
    let id = context["client_id"].as_str();
    let secret = match (
        context["client_secret"].as_str(),
        context["private_key_pem"].as_str(),
    ) {
        (Some(secret), _) => Some(ClientSecret::value(secret)),
        (None, Some(key)) => {
            let algorithm = context["signing_algorithm"].as_str().unwrap_or("ES256");
            Some(ClientSecret::value(key).private_key(algorithm))
        }
        (None, None) => None,
    };
    // ANCHOR: client
    let sign_in = match (id, secret) {
        (Some(id), Some(secret)) if scenario.starts_with("auth/client-credentials") => {
            SignIn::client_credentials(id, secret)
        }
        (Some(id), Some(secret)) if context["idp_id_token"].is_string() => {
            let id_token = context["idp_id_token"].as_str().unwrap_or_default();
            SignIn::enterprise(
                context["idp_token_endpoint"].as_str().unwrap_or_default(),
                context["idp_client_id"].as_str().unwrap_or_default(),
                ClientSecret::value(id_token),
            )
            .client(id, Some(secret))
        }
        (Some(id), None) if context["valid_jwt"].is_string() => {
            let workload = context["valid_jwt"].as_str().unwrap_or_default();
            SignIn::jwt_bearer(id, ClientSecret::value(workload))
        }
        (Some(id), secret) => SignIn::unattended(REDIRECT_URI).client(id, secret),
        (None, _) => SignIn::unattended(REDIRECT_URI).metadata_document(CLIENT_METADATA),
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
    let mut failures = Vec::new();
    for (name, arguments) in asked(&scenario, &context, &registry) {
        let result = (registry.call(&Caller::anonymous(), &name, arguments).await).into_result();
        match result.is_error {
            true => failures.push(result.text_for_model()),
            false => println!("{}", result.text_for_model()),
        }
    }
    match failures.is_empty() {
        true => Ok(()),
        false => Err(failures.join("\n").into()),
    }
}

/// The calls the scenario asks for, by the names the registry serves them under: those its context
/// lists, the echo of a tool's schema as the client received it, the suite's `add_numbers`, or an
/// authorization scenario's first tool.
fn asked(scenario: &str, context: &Value, registry: &Registry) -> Vec<(String, Value)> {
    let served = |name: &str| format!("conformance_{name}");
    if let Some(calls) = context["toolCalls"].as_array() {
        return calls
            .iter()
            .filter_map(|call| Some((served(call["name"].as_str()?), call["arguments"].clone())))
            .collect();
    }
    if let Some(tool) = registry.get(&served("json_schema_2020_12_tool")) {
        return vec![(
            served("json_schema_echo"),
            json!({"schema": tool.input_schema()}),
        )];
    }
    if let Some(tool) = registry.get(&served("valid_tool")) {
        return vec![(served("valid_tool"), filled(tool.input_schema()))];
    }
    if registry.get(&served("add_numbers")).is_some() {
        return vec![(served("add_numbers"), json!({"a": 5, "b": 3}))];
    }
    let listed = registry.list(&Caller::anonymous());
    match listed
        .iter()
        .find(|tool| tool.name().starts_with("conformance_"))
    {
        Some(tool) if scenario.starts_with("auth/") => vec![(tool.name().to_owned(), json!({}))],
        _ => Vec::new(),
    }
}

/// Arguments for a tool of `schema`: each required string, number or flag given a value.
fn filled(schema: &Value) -> Value {
    let required = schema["required"].as_array().into_iter().flatten();
    let arguments = required.filter_map(Value::as_str).map(|name| {
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer" | "number") => json!(1),
            Some("boolean") => json!(true),
            _ => json!("value"),
        };
        (name.to_owned(), value)
    });
    Value::Object(arguments.collect())
}
