//! The shop signs people in (`--oauth-issuer`): with the real `oidc-provider` as its authorization server,
//! a client without a token is told where to sign in, and the official Python `mcp` SDK, holding the
//! access tokens the provider issued, uses the shop as a viewer and as a manager, its scopes deciding
//! which.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../../../tests/support/oidc_provider.rs"]
#[allow(dead_code)] // shared with the OAuth tests, which use all of it
mod oidc_provider;
#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the browser and client tests
mod real_clients;

use std::path::Path;
use std::process::Command;

use oidc_provider::Provider;
use real_clients::{Served, installed, report};
use serde_json::Value;

const SHOP: &str = env!("CARGO_BIN_EXE_example-shop");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_at_the_issuer_and_their_scopes_decide_what_they_may_do() {
    let Some(dir) = installed(&["py/bin/python"]) else {
        return;
    };
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let shop = Served::start_with(SHOP, &["--oauth-issuer", &provider.issuer]);

    // Without a token: a challenge that says where the metadata is, and the metadata names the issuer.
    let refused = reqwest::Client::new()
        .post(&shop.url)
        .header("accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
    let metadata_url = format!(
        "{}/.well-known/oauth-protected-resource/mcp",
        shop.url.trim_end_matches("/mcp")
    );
    assert!(challenge.contains(&metadata_url), "{challenge}");
    let metadata: Value = reqwest::get(&metadata_url)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(metadata["resource"], shop.url.as_str());
    assert_eq!(
        metadata["authorization_servers"][0],
        provider.issuer.as_str()
    );

    // A viewer's write is refused at the HTTP layer, naming the scope that grants it, and runs nothing:
    // a 2026-07-28 request, whose headers name the tool, needs no session first.
    let viewer = provider.token(&shop.url, "orders:read").await;
    let write = reqwest::Client::new()
        .post(&shop.url)
        .bearer_auth(&viewer)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "confirm_order")
        .json(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "confirm_order", "arguments": {"number": "RO-00003"}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(write.status(), 403);
    let challenge = write.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"orders:write\""),
        "{challenge}"
    );

    // With the provider's tokens for the shop, a real client: each scope grants its role's tools.
    for (scope, role) in [
        ("orders:read", "viewer"),
        ("orders:read orders:write", "manager"),
    ] {
        let token = provider.token(&shop.url, scope).await;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_client.py");
        let output = Command::new(dir.join("py/bin/python"))
            .arg(script)
            .args(["auto", "http", &shop.url, &token, role])
            .output()
            .expect("python runs");
        let what = format!("python, signed in as a {role}");
        assert!(output.status.success(), "{}", report(&what, &output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("15 passed, 0 failed"),
            "{}",
            report(&what, &output)
        );
    }
}

/// A host signs a person in from nothing, as Claude or VS Code do: the official Python SDK's
/// `OAuthClientProvider` follows the shop's 401 to its metadata and the provider's, registers itself,
/// sends the person through the provider's login and consent pages (played headlessly) with PKCE, and
/// calls as a viewer; a write answers 403 insufficient_scope, the person signs in again with the
/// manager's scope and the write is previewed; an expired token is refreshed without a sign-in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_signs_a_person_in_steps_up_for_a_write_and_refreshes() {
    let Some(dir) = installed(&["py/bin/python"]) else {
        return;
    };
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    // Access tokens that live four seconds, so that the client's last call refreshes.
    provider.tokens(serde_json::json!({"ttl": 4})).await;
    let shop = Served::start_with(SHOP, &["--oauth-issuer", &provider.issuer]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_oauth.py");
    let output = Command::new(dir.join("py/bin/python"))
        .arg(script)
        .args([&shop.url, "rita", "5"])
        .output()
        .expect("python runs");
    let what = "python, signing in with OAuthClientProvider";
    assert!(output.status.success(), "{}", report(what, &output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("7 passed, 0 failed"),
        "{}",
        report(what, &output)
    );
    assert_eq!(
        provider.count("authorizations").await,
        2,
        "a sign-in, and one more for the write's scope"
    );
    assert!(provider.count("refreshes").await >= 1);
}
