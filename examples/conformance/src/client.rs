//! `example-conformance client URL`: toolgate's remote-server client under the conformance suite's client
//! scenarios. The suite starts a server at `URL` and names the scenario in `MCP_CONFORMANCE_SCENARIO`,
//! with what the client needs to know in `MCP_CONFORMANCE_CONTEXT` (a client's credentials); the client
//! is the one the gateway uses: a `RemoteServer` in a registry, signing in as the server asks, listed,
//! and its tools called as a caller calls them.

use serde_json::{Value, json};
use toolgate::output::Outcome;
use toolgate::remote::{ClientSecret, Health, RemoteServer, SignIn};
use toolgate::{Call, Caller, Registry, ToolError, ToolResult};

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
        let result = answered(&registry, &name, &arguments).await;
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

/// The most rounds of questions one call is answered for.
const MAX_ROUNDS: usize = 4;

/// What the call of `name` with `arguments` gives once each question the remote server asks through it
/// (an elicitation) is answered by accepting the defaults its form proposes, as a person who changes
/// nothing would.
async fn answered(registry: &Registry, name: &str, arguments: &Value) -> ToolResult {
    let mut call = Call::new(name, arguments.clone());
    for _ in 0..MAX_ROUNDS {
        let asked = match registry.run(&Caller::anonymous(), call).await {
            Outcome::InputRequired(asked) => asked,
            outcome => return outcome.into_result(),
        };
        let answers = asked
            .requests()
            .iter()
            .map(|(key, request)| (key.clone(), defaults(&request["params"]["requestedSchema"])))
            .collect();
        call = Call::new(name, arguments.clone()).resume(Some(asked.state()), answers);
    }
    let error = ToolError::new(format!(
        "`{name}` asked more than {MAX_ROUNDS} rounds of questions"
    ));
    ToolResult::error(&error)
}

/// An elicitation's answer: accepted, with the default of each field of its form that has one.
fn defaults(form: &Value) -> Value {
    let fields = form["properties"].as_object().into_iter().flatten();
    let content: serde_json::Map<String, Value> = fields
        .filter_map(|(field, schema)| Some((field.clone(), schema.get("default")?.clone())))
        .collect();
    json!({ "action": "accept", "content": content })
}

/// The calls the scenario asks for, by the names the registry serves them under: those its context
/// lists, the echo of a tool's schema as the client received it, the suite's `add_numbers`, every tool
/// of a scenario that asks questions, or an authorization scenario's first tool.
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
    let remote = listed
        .iter()
        .filter(|tool| tool.name().starts_with("conformance_"));
    match scenario {
        "sep-2322-client-request-state" | "elicitation-sep1034-client-defaults" | "sse-retry" => {
            remote
                .map(|tool| (tool.name().to_owned(), filled(tool.input_schema())))
                .collect()
        }
        auth if auth.starts_with("auth/") => remote
            .take(1)
            .map(|tool| (tool.name().to_owned(), json!({})))
            .collect(),
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
