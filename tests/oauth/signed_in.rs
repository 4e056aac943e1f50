//! The server the OAuth tests sign in to: the tests' tools over real HTTP behind a `TokenVerifier` that
//! accepts the tokens of `oidc-provider`, and a client's calls.

use std::sync::Mutex;

use serde_json::{Value, json};
use toolgate::http::{HttpOptions, HttpServer, ProtectedResource, TokenVerifier};
use toolgate::mcp::McpServer;
use toolgate::registry::ScopeMap;
use toolgate::{Registry, RegistryBuilder, tool};

use crate::oidc_provider::Provider;

/// The orders `ship_order` shipped.
static SHIPPED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Whether `order` was shipped.
pub(crate) fn shipped(order: u32) -> bool {
    SHIPPED.lock().unwrap().contains(&order)
}

/// Lists the open orders.
#[tool(ability = "orders.view", read_only)]
async fn open_orders() -> &'static str {
    "3 open orders"
}

/// When the shop is open.
#[tool(public, read_only)]
async fn store_hours() -> &'static str {
    "9 to 5"
}

/// Ships an order.
#[tool(ability = "orders.manage")]
async fn ship_order(order: u32) -> String {
    SHIPPED.lock().unwrap().push(order);
    format!("shipped {order}")
}

/// A listener on a free loopback port, and the resource URL of its MCP endpoint.
async fn listen() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    (listener, url)
}

// ANCHOR: verifier
/// The tests' registry: viewers read orders, managers ship them.
pub(crate) fn registry() -> RegistryBuilder {
    Registry::builder().scope_map(
        ScopeMap::new()
            .scope("orders:read", ["orders.view"])
            .scope("orders:write", ["orders.view", "orders.manage"]),
    )
}

/// The verifier of the tests, which reads its roles from the `roles` claim.
fn verifier(resource: &ProtectedResource) -> TokenVerifier {
    TokenVerifier::new(resource).unwrap().role_claim("roles")
}
// ANCHOR_END: verifier

/// Serves `registry`'s tools through `listener`, signed in by `verifier`.
fn serve(
    listener: tokio::net::TcpListener,
    registry: Registry,
    resource: ProtectedResource,
    verifier: TokenVerifier,
) {
    let server = HttpServer::new(McpServer::new(registry))
        .protected_resource(resource)
        .authenticator(verifier)
        .options(HttpOptions::default().stateless(true).json_response(true));
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
}

/// A started provider and a server that accepts its tokens through the tests' verifier as `configure`
/// makes it; `None` when the provider is not installed.
pub(crate) async fn signed_in_server(
    configure: impl FnOnce(TokenVerifier) -> TokenVerifier,
) -> Option<(Provider, String)> {
    signed_in_registry(registry().build().unwrap(), configure).await
}

/// As [`signed_in_server`], serving `registry`.
pub(crate) async fn signed_in_registry(
    registry: Registry,
    configure: impl FnOnce(TokenVerifier) -> TokenVerifier,
) -> Option<(Provider, String)> {
    let (listener, url) = listen().await;
    let provider = Provider::start(&url)?;
    let resource = ProtectedResource::new(url.clone())
        .unwrap()
        .authorization_server(provider.issuer.clone());
    let verifier = configure(verifier(&resource));
    serve(listener, registry, resource, verifier);
    Some((provider, url))
}

/// What a `tools/call` of `tool` with `token` answered: the status, the challenge, the body.
pub(crate) async fn call(
    url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
) -> (u16, String, Value) {
    let params = json!({ "name": tool, "arguments": arguments });
    rpc(url, token, "tools/call", params).await
}

/// What a request of `method` with `params`, sent with `token`, answered: the status, the challenge,
/// the body.
pub(crate) async fn rpc(
    url: &str,
    token: &str,
    method: &str,
    params: Value,
) -> (u16, String, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, challenge, body)
}

/// The text of a call's result, or its error's message.
pub(crate) fn said(body: &Value) -> String {
    let result = &body["result"];
    match result["content"][0]["text"].as_str() {
        Some(text) => text.to_owned(),
        None => body.to_string(),
    }
}
