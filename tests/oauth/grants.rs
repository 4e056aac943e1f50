//! What a scope grants, changed by an operator while the server runs: a token already checked makes its
//! caller again with the new grant on its next request, and removing the grant gives the code's map back.

use serde_json::json;
use toolgate::registry::Config;
use toolgate::sqlite::SqliteStore;
use toolgate::{Registry, RegistryBuilder};

use crate::signed_in::{call, registry, said, shipped, signed_in_registry};

async fn operate(registry: &Registry, args: &[&str]) -> (i32, String) {
    let mut argv = vec!["toolgate"];
    argv.extend(args);
    toolgate::operator::run(registry, argv).await
}

/// The tests' registry as `builder` makes it, with records, and its tools recorded.
async fn recorded(builder: RegistryBuilder) -> Registry {
    let registry = builder
        .records(SqliteStore::in_memory().unwrap())
        .load()
        .await
        .unwrap();
    registry.sync("deploy").await.unwrap();
    registry
}

#[tokio::test]
async fn an_operator_changes_what_a_scope_grants_and_signed_in_callers_follow_at_once() {
    let registry = recorded(registry()).await;
    let Some((provider, url)) = signed_in_registry(registry.clone(), |v| v).await else {
        return;
    };
    let reader = provider.token(&url, "orders:read").await;
    let (status, challenge, _) = call(&url, &reader, "ship_order", json!({"order": 141})).await;
    assert_eq!(status, 403, "the code's map: reading grants no shipping");
    assert!(challenge.contains("scope=\"orders:write\""), "{challenge}");

    // ANCHOR: live
    let (code, out) = operate(
        &registry,
        &[
            "grants",
            "set",
            "scope:orders:read",
            "orders.view",
            "orders.manage",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("`scope:orders:read` grants orders.manage, orders.view."),
        "{out}"
    );
    let (status, _, body) = call(&url, &reader, "ship_order", json!({"order": 141})).await;
    assert_eq!(
        (status, said(&body)),
        (200, "shipped 141".to_owned()),
        "the same token, now"
    );
    // ANCHOR_END: live
    assert!(shipped(141));

    let (_, listed) = operate(&registry, &["grants", "list"]).await;
    assert_eq!(
        listed,
        "scope:orders:read                orders.manage, orders.view\n"
    );
    let (code, out) = operate(&registry, &["grants", "remove", "scope:orders:read"]).await;
    assert_eq!(code, 0, "{out}");
    let (status, _, _) = call(&url, &reader, "ship_order", json!({"order": 142})).await;
    assert_eq!(status, 403, "the code's map decides again");
    assert!(!shipped(142));

    // Taking away what the code grants: an empty grant.
    let (code, _) = operate(&registry, &["grants", "set", "scope:orders:read"]).await;
    assert_eq!(code, 0);
    let (status, _, body) = call(&url, &reader, "open_orders", json!({})).await;
    assert_ne!(said(&body), "3 open orders", "{status} {body}");

    for (bad, why) in [
        ("scope:two words", "is not what a token grants by"),
        ("group:admins", "is not what a token grants by"),
        ("role:a\u{202e}b", "is not what a token grants by"),
    ] {
        let (code, out) = operate(&registry, &["grants", "set", bad, "orders.view"]).await;
        assert_ne!(code, 0, "{bad}");
        assert!(out.contains(why), "{bad}: {out}");
    }
    let (code, out) = operate(
        &registry,
        &[
            "grants",
            "set",
            "role:clerk",
            "orders.view",
            "bad\u{0007}ability",
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(out.contains("not an ability"), "{out}");
    let (_, listed) = operate(&registry, &["grants", "list"]).await;
    assert_eq!(
        listed, "scope:orders:read                nothing\n",
        "nothing bad was kept"
    );
}

#[tokio::test]
async fn the_configuration_file_grants_by_role_and_the_records_go_over_it() {
    let config = Config::from_toml("[grants]\n\"role:clerk\" = [\"orders.manage\"]\n").unwrap();
    let registry = recorded(registry().config(config)).await;
    let Some((provider, url)) = signed_in_registry(registry.clone(), |v| v).await else {
        return;
    };
    let clerk = provider
        .mint(
            "current",
            json!({"aud": url, "scope": "orders:read", "roles": ["clerk"]}),
        )
        .await;
    let (status, _, body) = call(&url, &clerk, "ship_order", json!({"order": 143})).await;
    assert_eq!(
        (status, said(&body)),
        (200, "shipped 143".to_owned()),
        "the file's grant"
    );

    let (code, _) = operate(&registry, &["grants", "set", "role:clerk"]).await;
    assert_eq!(code, 0);
    let (status, _, body) = call(&url, &clerk, "ship_order", json!({"order": 144})).await;
    assert_ne!(
        status, 200,
        "the records' grant goes over the file's: {body}"
    );
    assert!(!shipped(144));

    let (code, _) = operate(&registry, &["grants", "remove", "role:clerk"]).await;
    assert_eq!(code, 0);
    let (status, _, _) = call(&url, &clerk, "ship_order", json!({"order": 145})).await;
    assert_eq!(status, 200, "the file's grant again");

    let bad = Config::from_toml("[grants]\n\"scope:a b\" = [\"x\"]\n").unwrap_err();
    assert!(
        bad.to_string()
            .contains("`grants`: `scope:a b` is not what a token grants by"),
        "{bad}"
    );
}
