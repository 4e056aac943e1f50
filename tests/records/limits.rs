//! Rate limits in the records, the same on SQLite and PostgreSQL: set by the CLI and the admin API, a
//! call past one refused with when to try again, and every replica counting against the same budget.

use serde_json::json;
use toolgate::prelude::*;

use crate::db::{Backend, Db, on_both_backends};
use crate::{clerk, registry};

on_both_backends![
    a_rate_limit_refuses_calls_past_it_saying_when_to_try_again_on_every_replica,
    limits_per_caller_and_per_profile_count_who_the_operator_meant,
];

fn text(outcome: Outcome) -> (String, bool) {
    let result = outcome.into_result();
    (result.text_for_model(), result.is_error)
}

async fn operate(registry: &Registry, args: &[&str]) -> String {
    let (code, out) = toolgate::operator::run(registry, args.iter().copied()).await;
    assert_eq!(code, 0, "{args:?}: {out}");
    out
}

async fn a_rate_limit_refuses_calls_past_it_saying_when_to_try_again_on_every_replica(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "rates").await else {
        return;
    };
    let a = registry(&db).await;
    a.sync("deploy").await.unwrap();
    let b = registry(&db.reopen().await).await;
    let set = operate(
        &a,
        &["toolgate", "limits", "set", "tool:count_lamps", "3/1h"],
    )
    .await;
    assert!(
        set.starts_with("`tool:count_lamps`: 3 calls an hour."),
        "{set}"
    );
    b.refresh().await.unwrap();
    let mut ran = 0;
    for replica in [&a, &b, &a, &b, &a] {
        let (said, error) = text(replica.call(&clerk(), "count_lamps", json!({})).await);
        if error {
            assert!(
                said.contains("You may call `count_lamps` 3 times an hour"),
                "{said}"
            );
            assert!(said.contains("Nothing ran; try again in "), "{said}");
        } else {
            ran += 1;
        }
    }
    assert_eq!(ran, 3, "the replicas count against one budget");
    let other = Caller::new("another clerk").with_abilities(["catalogue.view"]);
    let (said, error) = text(a.call(&other, "count_lamps", json!({})).await);
    assert!(!error, "each caller has its own: {said}");

    let listed = operate(&a, &["toolgate", "limits", "list"]).await;
    assert_eq!(
        listed.trim_end(),
        "tool:count_lamps                 3 calls an hour"
    );
    operate(&a, &["toolgate", "limits", "remove", "tool:count_lamps"]).await;
    let (said, error) = text(a.call(&clerk(), "count_lamps", json!({})).await);
    assert!(!error, "without the limit: {said}");
    let (code, out) =
        toolgate::operator::run(&a, ["toolgate", "limits", "set", "tools:x", "3/1h"]).await;
    assert_eq!(code, toolgate::operator::REFUSED, "{out}");
    let (code, out) =
        toolgate::operator::run(&a, ["toolgate", "limits", "set", "caller", "0/1m"]).await;
    assert_eq!(code, toolgate::operator::REFUSED, "{out}");
}

async fn limits_per_caller_and_per_profile_count_who_the_operator_meant(backend: Backend) {
    let Some(db) = Db::fresh(backend, "rates_scopes").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    operate(&registry, &["toolgate", "limits", "set", "caller", "2/1h"]).await;
    let helper = clerk().delegate(toolgate::Delegation::to("helper").abilities(["catalogue.view"]));
    let outcomes = [
        registry.call(&clerk(), "count_lamps", json!({})).await,
        registry.call(&helper, "count_lamps", json!({})).await,
        registry
            .call(&helper, "search_catalogue", json!({ "query": "lamp" }))
            .await,
    ];
    let refused: Vec<bool> = outcomes.into_iter().map(|o| text(o).1).collect();
    assert_eq!(
        refused,
        [false, false, true],
        "a sub-agent's calls count against its person"
    );
    let (said, _) = text(registry.call(&clerk(), "count_lamps", json!({})).await);
    assert!(
        said.starts_with("[ERROR] You may make 2 calls an hour, and that many were made."),
        "{said}"
    );

    operate(&registry, &["toolgate", "limits", "remove", "caller"]).await;
    operate(&registry, &["toolgate", "profiles", "create", "bots"]).await;
    operate(
        &registry,
        &["toolgate", "profiles", "assign", "bots", "count_lamps"],
    )
    .await;
    operate(
        &registry,
        &["toolgate", "limits", "set", "profile:bots", "2/1d"],
    )
    .await;
    let bot = |n: u32| {
        Caller::new(format!("bot-{n}"))
            .with_abilities(["catalogue.view"])
            .with_profile("bots")
    };
    let refused: Vec<bool> = refusals(&registry, [bot(1), bot(2), bot(3)]).await;
    assert_eq!(
        refused,
        [false, false, true],
        "the profile's callers share its limit"
    );
    let (said, _) = text(registry.call(&bot(4), "count_lamps", json!({})).await);
    assert!(
        said.contains("The callers of the profile `bots` may make 2 calls a day together"),
        "{said}"
    );
}

/// Whether each of `callers`' calls of `count_lamps`, one after another, was refused.
async fn refusals(registry: &Registry, callers: [Caller; 3]) -> Vec<bool> {
    let mut refused = Vec::new();
    for caller in callers {
        refused.push(text(registry.call(&caller, "count_lamps", json!({})).await).1);
    }
    refused
}

#[tokio::test]
async fn a_limit_counted_in_memory_refuses_past_it_as_one_counted_in_a_database_does() {
    let records = toolgate::sqlite::SqliteStore::in_memory().unwrap();
    // Records only: the counts stay in this process's memory, and a limited call keeps to the common path.
    let registry = Registry::builder()
        .compiled_tools(["count_lamps"])
        .records(records)
        .load()
        .await
        .unwrap();
    registry.sync("deploy").await.unwrap();
    operate(
        &registry,
        // A day's window: windows are aligned to the clock, and three calls must not straddle two.
        &["toolgate", "limits", "set", "tool:count_lamps", "2/1d"],
    )
    .await;
    let mut refused = Vec::new();
    for _ in 0..3 {
        refused.push(text(
            registry.call(&clerk(), "count_lamps", json!({})).await,
        ));
    }
    assert_eq!(refused[0], ("12 lamps".to_owned(), false));
    assert_eq!(refused[1], ("12 lamps".to_owned(), false));
    assert!(
        refused[2].1
            && refused[2]
                .0
                .contains("You may call `count_lamps` 2 times a day"),
        "{refused:?}"
    );
    let invalid = registry
        .call(&clerk(), "count_lamps", json!({ "nope": 1 }))
        .await;
    assert!(
        !text(invalid).0.contains("You may call"),
        "an invalid call is refused for what it is"
    );
}
