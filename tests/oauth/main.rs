//! toolgate as an OAuth 2.1 protected resource over real HTTP: its metadata at both well-known paths,
//! readable from any origin, naming the public URL a proxy serves it under; and every refusal's challenge
//! saying what the client should do next, with where that metadata is.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

mod audited;
mod grants;
mod introspection;
mod jwt;
#[path = "../support/oidc_provider.rs"]
#[allow(dead_code)] // shared with the gateway's tests, which sign a person in through it
mod oidc_provider;
#[path = "../support/real_clients.rs"]
#[allow(dead_code, unreachable_pub)]
mod real_clients;
mod signed_in;
mod step_up;

use http::request::Parts;
use serde_json::{Value, json};
use toolgate::http::{
    AuthFuture, Authenticator, BearerTokens, HttpOptions, HttpServer, ProtectedResource, Refusal,
};
use toolgate::mcp::McpServer;
use toolgate::{Caller, Registry};

/// The public URL a proxy serves the test's server under, which differs from the address it listens on.
const PUBLIC: &str = "https://tools.example.com/mcp";
const METADATA: &str = "https://tools.example.com/.well-known/oauth-protected-resource/mcp";

// ANCHOR: refusals
/// Lets `reader-token` through, refuses `writer-wanted` for lack of two scopes, and knows no other token.
struct Scoped;

impl Authenticator for Scoped {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
        let header = request
            .headers
            .get("authorization")
            .map(|h| h.to_str().unwrap_or_default());
        let verdict = match header {
            None => Err(Refusal::Missing),
            Some("Bearer reader-token") => Ok(Caller::new("rita").with_abilities(["orders.view"])),
            Some("Bearer writer-wanted") => Err(Refusal::InsufficientScope(vec![
                "orders:read".into(),
                "orders:write".into(),
            ])),
            Some(_) => Err(Refusal::Invalid("the token has expired".into())),
        };
        Box::pin(std::future::ready(verdict))
    }
}
// ANCHOR_END: refusals

/// `server` on a loopback port, stateless; its base URL.
async fn serve(server: HttpServer) -> String {
    let server = server.options(HttpOptions::default().stateless(true).json_response(true));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    url
}

// ANCHOR: resource
fn resource() -> ProtectedResource {
    ProtectedResource::new(PUBLIC)
        .unwrap()
        .authorization_server("https://login.example.com")
        .scopes(["orders:read", "orders:write"])
        .name("Shop back office")
}
// ANCHOR_END: resource

fn mcp() -> McpServer {
    McpServer::new(Registry::builder().build().unwrap())
}

/// Serves the protected resource, its tokens checked by `Scoped`; its base URL.
async fn serve_protected() -> String {
    serve(
        HttpServer::new(mcp())
            .authenticator(Scoped)
            .protected_resource(resource()),
    )
    .await
}

/// A ping to `/mcp` with `token`; the status and the challenge.
async fn ping(url: &str, token: Option<&str>) -> (u16, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metadata_names_the_public_url_at_both_well_known_paths_for_any_origin() {
    let url = serve_protected().await;
    let client = reqwest::Client::new();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = client
            .get(format!("{url}{path}"))
            .header("origin", "https://claude.ai")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(
            response.headers()["access-control-allow-origin"],
            "*",
            "{path}"
        );
        let text = response.text().await.unwrap();
        assert_eq!(
            text,
            r#"{"authorization_servers":["https://login.example.com"],"bearer_methods_supported":["header"],"resource":"https://tools.example.com/mcp","resource_name":"Shop back office","scopes_supported":["orders:read","orders:write"]}"#,
            "as the book shows it"
        );
        let metadata: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            metadata,
            json!({
                "resource": PUBLIC,
                "authorization_servers": ["https://login.example.com"],
                "scopes_supported": ["orders:read", "orders:write"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Shop back office",
            }),
            "{path}"
        );
    }
    let preflight = client
        .request(
            reqwest::Method::OPTIONS,
            format!("{url}/.well-known/oauth-protected-resource/mcp"),
        )
        .header("origin", "https://claude.ai")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_says_what_to_do_next_and_where_the_metadata_is() {
    let url = serve_protected().await;
    assert_eq!(
        ping(&url, None).await,
        (
            401,
            Some(format!("Bearer resource_metadata=\"{METADATA}\""))
        )
    );
    assert_eq!(
        ping(&url, Some("stale-token")).await,
        (
            401,
            Some(format!(
                "Bearer error=\"invalid_token\", error_description=\"the token has expired\", \
                 resource_metadata=\"{METADATA}\""
            ))
        )
    );
    assert_eq!(
        ping(&url, Some("writer-wanted")).await,
        (
            403,
            Some(format!(
                "Bearer error=\"insufficient_scope\", scope=\"orders:read orders:write\", \
                 resource_metadata=\"{METADATA}\""
            ))
        )
    );
    assert_eq!(ping(&url, Some("reader-token")).await, (200, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_of_static_tokens_alone_serves_no_metadata_and_names_none() {
    let tokens = BearerTokens::new().token("viewer-token", Caller::new("vera"));
    let url = serve(HttpServer::new(mcp()).authenticator(tokens)).await;
    let response = reqwest::get(format!("{url}/.well-known/oauth-protected-resource/mcp"))
        .await
        .unwrap();
    assert_eq!(
        response.status(),
        404,
        "a client would start a sign-in that cannot succeed"
    );
    assert_eq!(ping(&url, None).await, (401, Some("Bearer".to_owned())));
    let (status, challenge) = ping(&url, Some("guessed")).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge.unwrap(),
        "Bearer error=\"invalid_token\", error_description=\"the token is not one this server accepts\""
    );
    assert_eq!(ping(&url, Some("viewer-token")).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_at_an_allowed_origin_reads_the_challenge_and_one_elsewhere_reads_nothing() {
    let url = serve_protected().await;
    let client = reqwest::Client::new();
    let local = "http://localhost:6274"; // the Inspector's page: a loopback origin, allowed by default
    let preflight = client
        .request(reqwest::Method::OPTIONS, format!("{url}/mcp"))
        .header("origin", local)
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type, mcp-param-region",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status(), 204, "answered before authentication");
    assert_eq!(preflight.headers()["access-control-allow-origin"], local);
    assert_eq!(
        preflight.headers()["access-control-allow-headers"],
        "authorization, content-type, mcp-param-region"
    );
    let challenged = client
        .post(format!("{url}/mcp"))
        .header("origin", local)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }))
        .send()
        .await
        .unwrap();
    assert_eq!(challenged.status(), 401);
    assert_eq!(challenged.headers()["access-control-allow-origin"], local);
    assert!(
        challenged.headers()["access-control-expose-headers"]
            .to_str()
            .unwrap()
            .contains("www-authenticate"),
        "the browser may read where to sign in"
    );
    for method in [reqwest::Method::OPTIONS, reqwest::Method::POST] {
        let foreign = client
            .request(method.clone(), format!("{url}/mcp"))
            .header("origin", "https://attacker.example")
            .header("access-control-request-method", "POST")
            .send()
            .await
            .unwrap();
        assert!(
            foreign
                .headers()
                .get("access-control-allow-origin")
                .is_none(),
            "{method}: {:?}",
            foreign.headers()
        );
    }
}
