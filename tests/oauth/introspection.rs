//! Opaque access tokens from the real `oidc-provider`, checked by `TokenVerifier` at its introspection
//! endpoint (RFC 7662): a token the issuer calls active runs what its scopes grant and is asked about
//! once; a revoked one stops working within the trust window; one for another resource, or unknown, is
//! refused; an endpoint that is down refuses as unavailable and never accepts.

use std::time::Duration;

use serde_json::json;

use crate::oidc_provider::Provider;
use crate::signed_in::{call, said, shipped, signed_in_server};

/// A provider issuing opaque tokens, and a server that introspects them, trusting an answer for
/// `trusted_for`; `None` when the provider is not installed.
async fn introspecting_server(trusted_for: Duration) -> Option<(Provider, String)> {
    let (provider, url) = signed_in_server(|verifier| {
        // ANCHOR: introspect
        verifier
            .introspect("orders-api", "orders-api-secret")
            .introspection_trusted_for(trusted_for)
        // ANCHOR_END: introspect
    })
    .await?;
    provider.tokens(json!({"format": "opaque"})).await;
    Some((provider, url))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opaque_token_the_issuer_calls_active_runs_what_its_scopes_grant() {
    let Some((provider, url)) = introspecting_server(Duration::from_secs(60)).await else {
        return;
    };
    let viewer = provider.token(&url, "orders:read").await;
    assert_eq!(viewer.split('.').count(), 1, "an opaque token: {viewer}");
    let (status, _, body) = call(&url, &viewer, "open_orders", json!({})).await;
    assert_eq!((status, said(&body).as_str()), (200, "3 open orders"));
    let (status, challenge, _) = call(&url, &viewer, "ship_order", json!({"order": 31})).await;
    assert_eq!(status, 403, "a viewer may not ship: {challenge}");
    assert!(!shipped(31));
    assert_eq!(
        provider.count("introspections").await,
        1,
        "asked about once, then trusted"
    );

    let manager = provider.token(&url, "orders:read orders:write").await;
    let (status, _, body) = call(&url, &manager, "ship_order", json!({"order": 32})).await;
    assert_eq!((status, said(&body).as_str()), (200, "shipped 32"));

    // One for another resource, and one the issuer never issued, are refused, and run nothing.
    let elsewhere = provider
        .token("https://other.example/mcp", "orders:read orders:write")
        .await;
    let made_up = "Dl2G2W6_6Rsf95q0-dY0KCUZWtn4yMRUbZJiRxop0dC";
    for (token, reason) in [
        (elsewhere.as_str(), "the token is for another resource"),
        (made_up, "the token is not active"),
    ] {
        let (status, challenge, body) = call(&url, token, "ship_order", json!({"order": 33})).await;
        assert_eq!(status, 401, "{body}");
        assert!(challenge.contains("invalid_token"), "{challenge}");
        assert!(challenge.contains(reason), "{challenge}");
    }
    assert!(!shipped(33));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_stops_working_within_the_trust_window() {
    let trusted_for = Duration::from_secs(1);
    let Some((provider, url)) = introspecting_server(trusted_for).await else {
        return;
    };
    let revoked_first = provider.token(&url, "orders:read").await;
    provider.revoke(&revoked_first).await;
    let (status, challenge, _) = call(&url, &revoked_first, "open_orders", json!({})).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("the token is not active"), "{challenge}");

    let token = provider.token(&url, "orders:read").await;
    assert_eq!(call(&url, &token, "open_orders", json!({})).await.0, 200);
    provider.revoke(&token).await;
    // The answer is trusted for its window; past it, the issuer is asked again and says no.
    tokio::time::sleep(trusted_for + Duration::from_millis(1100)).await;
    let (status, challenge, _) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("the token is not active"), "{challenge}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_introspection_endpoint_that_is_down_never_lets_a_token_through() {
    let Some((provider, url)) = introspecting_server(Duration::from_secs(60)).await else {
        return;
    };
    let token = provider.token(&url, "orders:read orders:write").await;
    provider.tokens(json!({"introspection": "down"})).await;
    let (status, challenge, body) = call(&url, &token, "ship_order", json!({"order": 34})).await;
    assert_eq!(status, 503, "unavailable, never an accept: {body}");
    assert!(challenge.is_empty(), "signing in again would not help");
    assert!(!shipped(34));

    provider.tokens(json!({"introspection": "up"})).await;
    let (status, _, body) = call(&url, &token, "ship_order", json!({"order": 34})).await;
    assert_eq!((status, said(&body).as_str()), (200, "shipped 34"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_made_up_tokens_is_not_passed_on_to_a_slow_issuer() {
    let Some((provider, url)) = introspecting_server(Duration::from_secs(60)).await else {
        return;
    };
    provider.tokens(json!({"introspection": "slow"})).await;
    let mut flood = tokio::task::JoinSet::new();
    for n in 0..48 {
        let url = url.clone();
        flood.spawn(async move {
            let token = format!("made-up-token-{n}");
            call(&url, &token, "open_orders", json!({})).await.0
        });
    }
    let statuses: Vec<u16> = flood.join_all().await;
    assert!(statuses.iter().all(|status| *status == 503), "{statuses:?}");
    let asked = provider.count("introspections").await;
    assert!(asked <= 32, "at most 32 asked at once, not all 48: {asked}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_introspection_an_opaque_token_is_refused_as_not_a_jwt() {
    let Some((provider, url)) = signed_in_server(|verifier| verifier).await else {
        return;
    };
    provider.tokens(json!({"format": "opaque"})).await;
    let token = provider.token(&url, "orders:read").await;
    let (status, challenge, _) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("not a JWT"), "{challenge}");
    assert_eq!(provider.count("introspections").await, 0);
}
