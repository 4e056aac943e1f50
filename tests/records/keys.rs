//! Key rotation on both backends: a new key opens at once on every replica and seals only from its time
//! on; a retired key opens nothing; the key that seals cannot be retired.

use serde_json::json;
use toolgate::ErrorKind;
use toolgate::operator::{OK, REFUSED};
use toolgate::prelude::*;

use crate::db::{Backend, Db, on_both_backends};
use crate::operator::run;
use crate::{clerk, registry};

on_both_backends![
    a_rotated_key_reaches_every_replica_before_it_seals_and_a_retired_one_opens_nothing
];

/// A preview of a refund on `registry`, and the id of the key that sealed it.
async fn preview(registry: &Registry, order: u32) -> (String, String) {
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&clerk(), "refund", json!({ "order": order }))
        .await
    else {
        panic!("a write is previewed first");
    };
    let token = pending.confirmation().to_owned();
    let key = token.split('.').nth(1).unwrap().to_owned();
    (token, key)
}

async fn sealing(registry: &Registry) -> String {
    let (code, out) = run(registry, &["--json", "keys", "list"]).await;
    assert_eq!(code, OK, "{out}");
    let keys: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sealing = keys
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["sealing"] == true);
    sealing.unwrap()["id"].as_str().unwrap().to_owned()
}

async fn a_rotated_key_reaches_every_replica_before_it_seals_and_a_retired_one_opens_nothing(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "keys").await else {
        return;
    };
    let order = match backend {
        Backend::Sqlite => 41,
        Backend::Postgres => 42,
    };
    let (a, b) = (registry(&db).await, registry(&db.reopen().await).await);
    a.sync("deploy").await.unwrap();
    b.refresh().await.unwrap();
    let first = sealing(&a).await;
    let (old_token, old_key) = preview(&a, order).await;
    assert_eq!(old_key, first);

    // Scheduled for later: it is in every ring, but the old key still seals.
    let (code, out) = run(&a, &["keys", "rotate", "--after", "1h"]).await;
    assert_eq!(code, OK, "{out}");
    assert_eq!(
        preview(&a, order).await.1,
        first,
        "not sealing before its time"
    );

    // Due now: every replica seals with it once it has heard of it, and opens what the others seal.
    let (code, out) = run(&a, &["keys", "rotate", "--after", "0s"]).await;
    assert_eq!(code, OK, "{out}");
    b.refresh().await.unwrap();
    let now = sealing(&a).await;
    assert_ne!(now, first);
    let (new_token, new_key) = preview(&a, order).await;
    assert_eq!(new_key, now);
    let approved = b.confirm(&clerk(), &new_token).await;
    assert_eq!(
        approved.into_result().text_for_model(),
        format!("Refunded order {order}.")
    );

    let (code, out) = run(&a, &["keys", "retire", &now]).await;
    assert_eq!(code, REFUSED, "{out}");
    assert!(out.contains("seals confirmations now"), "{out}");

    let (code, out) = run(&a, &["keys", "retire", &first]).await;
    assert_eq!(code, OK, "{out}");
    b.refresh().await.unwrap();
    let refused = b.confirm(&clerk(), &old_token).await;
    assert_eq!(
        refused.error().unwrap().kind(),
        ErrorKind::Confirmation,
        "{refused:?}"
    );
    let history = a.records().unwrap().history(3).await.unwrap();
    let what: Vec<&str> = history
        .iter()
        .map(|h| h.what["keys"].as_str().unwrap())
        .collect();
    assert_eq!(what, ["retired", "rotated", "rotated"]);
    assert!(history.iter().all(|h| h.actor == "ops"));
}
