//! JWT access tokens from a real authorization server, panva's `oidc-provider`, checked by `TokenVerifier`
//! over real HTTP: a token the server issued for this resource runs what its scopes grant; every forged,
//! expired, misdirected or malformed token is refused with its reason and runs nothing; keys rotate
//! without a restart, and an issuer that is down neither lets a token through nor stops the keys already
//! fetched.

use std::time::Duration;

use serde_json::{Value, json};

use crate::signed_in::{call, said, shipped, signed_in_server};
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_the_issuer_gave_for_this_server_runs_what_its_scopes_grant() {
    let Some((provider, url)) = signed_in_server(|verifier| verifier).await else {
        return;
    };
    let viewer = provider.token(&url, "orders:read").await;
    let (status, _, body) = call(&url, &viewer, "open_orders", json!({})).await;
    assert_eq!((status, said(&body).as_str()), (200, "3 open orders"));
    let (status, challenge, _) = call(&url, &viewer, "ship_order", json!({"order": 8})).await;
    assert_eq!(status, 403, "a viewer may not ship: {challenge}");
    assert!(!shipped(8));

    let manager = provider.token(&url, "orders:read orders:write").await;
    let (status, _, body) = call(&url, &manager, "ship_order", json!({"order": 7})).await;
    assert_eq!((status, said(&body).as_str()), (200, "shipped 7"));
    // Checked once: the next calls find the token among those already checked.
    let (status, _, body) = call(&url, &manager, "open_orders", json!({})).await;
    assert_eq!((status, said(&body).as_str()), (200, "3 open orders"));
    assert_eq!(
        provider.count("jwks_fetches").await,
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
    let Some((provider, url)) = signed_in_server(|verifier| verifier).await else {
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
            "the token has no `exp` claim",
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
    let Some((provider, url)) =
        signed_in_server(|verifier| verifier.key_refetch_floor(floor)).await
    else {
        return;
    };
    let current = provider
        .mint("current", json!({"scope": "orders:read"}))
        .await;
    assert_eq!(call(&url, &current, "open_orders", json!({})).await.0, 200);
    assert_eq!(provider.count("jwks_fetches").await, 1);
    tokio::time::sleep(floor + Duration::from_millis(100)).await;

    // A key the set lacks fetches the set again at once, but a flood of them fetches no more.
    let next = provider.mint("next", json!({"scope": "orders:read"})).await;
    let flooded = std::time::Instant::now();
    for _ in 0..20 {
        let (status, challenge, _) = call(&url, &next, "open_orders", json!({})).await;
        assert_eq!(status, 401);
        assert!(
            challenge.contains("a key its issuer does not publish"),
            "{challenge}"
        );
    }
    // One fetch for the unknown key, and at most one more per floor the flood lasted.
    let floors = u64::try_from(flooded.elapsed().as_millis() / floor.as_millis()).unwrap();
    let fetches = provider.count("jwks_fetches").await - 1;
    assert!(
        fetches >= 1 && fetches <= 1 + floors,
        "{fetches} fetches in {floors} floors"
    );
    let before_rotation = provider.count("jwks_fetches").await;

    // The issuer rotates: once it publishes the key, a token signed by it passes.
    provider.keys(json!({"publishNext": true})).await;
    tokio::time::sleep(floor + Duration::from_millis(100)).await;
    let rotated = provider
        .mint("next", json!({"scope": "orders:read", "jti": "2"}))
        .await;
    assert_eq!(call(&url, &rotated, "open_orders", json!({})).await.0, 200);
    assert_eq!(provider.count("jwks_fetches").await, before_rotation + 1);
    assert_eq!(
        call(&url, &current, "open_orders", json!({})).await.0,
        200,
        "the old key too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_that_is_down_never_lets_a_token_through_nor_stops_the_keys_fetched() {
    let floor = Duration::from_millis(300);
    let Some((provider, url)) =
        signed_in_server(|verifier| verifier.key_refetch_floor(floor)).await
    else {
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
    let Some((provider, url)) = signed_in_server(|verifier| verifier).await else {
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
    let Some((provider, url)) =
        signed_in_server(|verifier| verifier.audience("api://shop-tools")).await
    else {
        return;
    };
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
    // A role the map does not know grants nothing: signed in, but asked for the scope that would.
    let token = provider.mint("current", role).await;
    let (status, challenge, _) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!(status, 403);
    assert!(challenge.contains("scope=\"orders:read\""), "{challenge}");
}
