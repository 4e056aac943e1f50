//! A real PostgreSQL server stopped while a registry serves, and started again.

use std::time::Duration;

use serde_json::json;
use toolgate::ErrorKind;
use toolgate::prelude::*;
use toolgate::store::{AuditQuery, Change, Edit, RecordErrorKind};

use crate::db::Db;
use crate::postgres::Cluster;
use crate::{clerk, lists, record, refunds, registry, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_the_database_is_away_calls_go_on_writes_fail_closed_and_what_changed_arrives_after()
{
    let Some(cluster) = Cluster::start("outage") else {
        return;
    };
    let url = cluster.database("outage").await;
    let db = Db::on_cluster(&url).await;
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    tokio::spawn(registry.watch(Duration::from_millis(200)));
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&clerk(), "refund", json!({ "order": 21 }))
        .await
    else {
        panic!("a write is previewed first");
    };

    let seen = record(&registry, "slow_report").await;

    cluster.down();
    let read = registry
        .call(&clerk(), "search_catalogue", json!({ "query": "lamps" }))
        .await;
    assert_eq!(
        read.into_result().text_for_model(),
        "20 rows for lamps",
        "calls go on under the last policy loaded"
    );
    let approved = registry.confirm(&clerk(), pending.confirmation()).await;
    let error = approved.error().expect("the write fails closed");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(
        error
            .message()
            .contains("did not run and nothing was changed"),
        "{error:?}"
    );
    assert_eq!(refunds(21), 0, "nothing ran");
    let counted = registry.call(&clerk(), "export_catalogue", json!({})).await;
    let error = counted.error().expect("a tool with a ceiling fails closed");
    assert_eq!(error.kind(), ErrorKind::Unavailable);
    assert!(
        error.message().contains("their count cannot be reached"),
        "{error:?}"
    );
    let refused = registry
        .edit(&Edit::new("ops", &seen, Change::Disable))
        .await
        .unwrap_err();
    assert_eq!(refused.kind(), RecordErrorKind::Database);
    assert!(lists(&registry, "slow_report"), "nothing changed");
    let (code, out) = crate::operator::run(&registry, &["tools", "disable", "slow_report"]).await;
    assert_eq!(code, toolgate::operator::UNAVAILABLE, "{out}");
    assert!(
        out.contains("cannot reach the PostgreSQL database"),
        "{out}"
    );

    cluster.up();
    // Another replica changes a record as soon as the database is back; this one picks it up.
    let other = Db::on_cluster(&url).await;
    let seen = other.store().load().await.unwrap().tools["slow_report"].clone();
    other
        .store()
        .edit(&Edit::new("ops", &seen, Change::Disable))
        .await
        .unwrap();
    wait_until(|| !lists(&registry, "slow_report")).await;

    // The approval that failed recorded nothing: approved now, the write runs, once.
    let approved = registry.confirm(&clerk(), pending.confirmation()).await;
    assert_eq!(
        approved.into_result().text_for_model(),
        "Refunded order 21."
    );
    assert_eq!(refunds(21), 1);
    // The audit rows of the calls made during the outage were kept and written.
    let reads = db
        .store()
        .audit_trail(&AuditQuery::newest(10).tool("search_catalogue"))
        .await
        .unwrap();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert!(!record(&registry, "slow_report").await.enabled);
}
