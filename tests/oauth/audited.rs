//! The audit of a signed-in call names the person, the client they signed in through (`azp`), and who
//! acted for them by the token's `act` chain; a chain too long or a name that hides a character is
//! refused before anything runs.

use std::time::Duration;

use serde_json::json;
use toolgate::Registry;
use toolgate::sqlite::SqliteStore;
use toolgate::store::{AuditQuery, RecordStore};

use crate::signed_in::{self, call, said, signed_in_registry};

#[tokio::test]
async fn the_audit_names_the_client_and_the_actors_of_a_signed_in_call() {
    let store = SqliteStore::in_memory().unwrap();
    let registry = signed_in::registry()
        .records(store.clone())
        .audit(store.audit())
        .load()
        .await
        .unwrap();
    registry.sync("deploy").await.unwrap();
    let Some((provider, url)) = signed_in_registry(registry, |v| v).await else {
        return;
    };
    let claims = json!({
        "aud": url, "scope": "orders:read", "azp": "claude",
        "act": {"sub": "agent-7", "act": {"sub": "gateway"}},
    });
    let token = provider.mint("current", claims).await;
    let (status, _, body) = call(&url, &token, "open_orders", json!({})).await;
    assert_eq!((status, said(&body)), (200, "3 open orders".to_owned()));
    assert!(store.audit().flush(Duration::from_secs(5)).await);
    let row = store
        .audit_trail(&AuditQuery::newest(1))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(
        (
            row.caller.as_str(),
            row.client.as_deref(),
            row.actors.as_slice()
        ),
        (
            "rita",
            Some("claude"),
            &["agent-7".to_owned(), "gateway".to_owned()][..]
        )
    );
    let (code, tail) = toolgate::operator::run(
        &Registry::builder()
            .records(store.clone())
            .load()
            .await
            .unwrap(),
        ["toolgate", "audit", "tail", "--limit", "1"],
    )
    .await;
    assert_eq!(code, 0, "{tail}");
    assert!(
        tail.contains("agent-7 < gateway < rita via claude"),
        "{tail}"
    );

    let mut deep = json!({"sub": "a0"});
    for n in 1..12 {
        deep = json!({"sub": format!("a{n}"), "act": deep});
    }
    for (claims, why) in [
        (
            json!({"aud": url, "scope": "orders:read", "act": deep}),
            "actors",
        ),
        (
            json!({"aud": url, "scope": "orders:read", "azp": "cla\u{202e}ude"}),
            "U+202E",
        ),
    ] {
        let token = provider.mint("current", claims).await;
        let (status, challenge, body) = call(&url, &token, "open_orders", json!({})).await;
        assert_eq!(status, 401, "{body}");
        assert!(challenge.contains("invalid_token"), "{challenge}");
        assert!(body.to_string().contains(why), "{why}: {body}");
    }
}
