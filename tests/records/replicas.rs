//! What replicas on one database share: call ceilings counted once, and approvals that survive the death
//! of the process running them. Each test runs on both backends, with two registries as two processes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate::ErrorKind;
use toolgate::confirm::HOLD_MARGIN;
use toolgate::prelude::*;

use crate::db::{Backend, Db, on_both_backends};
use crate::{Gate, clerk, with_gate};

on_both_backends![
    a_ceiling_holds_across_two_processes,
    an_approval_whose_process_died_mid_run_runs_once_on_another,
];

async fn a_ceiling_holds_across_two_processes(backend: Backend) {
    let Some(db) = Db::fresh(backend, "ceiling").await else {
        return;
    };
    let (a, b) = (
        with_gate(&db, Arc::default()).await,
        with_gate(&db.reopen().await, Arc::default()).await,
    );
    let first = a.call(&clerk(), "export_catalogue", json!({})).await;
    let second = b.call(&clerk(), "export_catalogue", json!({})).await;
    assert!(first.is_done() && second.is_done(), "{first:?} {second:?}");
    for registry in [&a, &b] {
        let third = registry.call(&clerk(), "export_catalogue", json!({})).await;
        assert_eq!(
            third.error().map(ToolError::kind),
            Some(ErrorKind::LimitReached),
            "two runs in all, whichever process counts them: {third:?}"
        );
    }

    // Concurrent calls of another caller, split between both: two run, however they interleave.
    let other = Caller::new("auditor").with_abilities(["catalogue.view"]);
    let calls = tokio::join!(
        a.call(&other, "export_catalogue", json!({})),
        b.call(&other, "export_catalogue", json!({})),
        a.call(&other, "export_catalogue", json!({})),
        b.call(&other, "export_catalogue", json!({})),
    );
    let ran = [calls.0, calls.1, calls.2, calls.3]
        .iter()
        .filter(|o| o.is_done())
        .count();
    assert_eq!(ran, 2, "the ceiling is counted in one place");

    // Counts of a conversation are its own, and go when it ends, on every process.
    let in_conversation = || Call::new("export_catalogue", json!({})).session("conv-1");
    for registry in [&a, &b] {
        assert!(registry.run(&clerk(), in_conversation()).await.is_done());
    }
    assert!(!b.run(&clerk(), in_conversation()).await.is_done());
    a.end_session("conv-1");
    let freed = tokio::time::timeout(Duration::from_secs(30), async {
        while !b.run(&clerk(), in_conversation()).await.is_done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    assert!(
        freed.await.is_ok(),
        "the ended conversation's counts are forgotten"
    );
}

async fn an_approval_whose_process_died_mid_run_runs_once_on_another(backend: Backend) {
    let Some(db) = Db::fresh(backend, "abandoned").await else {
        return;
    };
    let (dying, survivor) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
    let a = with_gate(&db, Arc::clone(&dying)).await;
    let b = with_gate(&db.reopen().await, Arc::clone(&survivor)).await;
    let account = match backend {
        Backend::Sqlite => 17,
        Backend::Postgres => 18,
    };
    let Outcome::NeedsConfirmation(pending) = a
        .call(&clerk(), "close_account", json!({ "account": account }))
        .await
    else {
        panic!("a write is previewed first");
    };

    // Process A takes the approval and starts the write, then dies before it finishes.
    let confirmation = pending.confirmation().to_owned();
    let a = Arc::new(a);
    let run = tokio::spawn({
        let a = Arc::clone(&a);
        async move { a.confirm(&clerk(), &confirmation).await }
    });
    dying.started.notified().await;
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());

    // While A's run holds the approval, B refuses it: A might still be running.
    let early = b.confirm(&clerk(), pending.confirmation()).await;
    let refusal = early.into_result().text_for_model();
    assert!(refusal.contains("already used"), "{refusal}");

    // Once the hold (the tool's timeout and the margin) is over, B runs it, once.
    tokio::time::sleep(Duration::from_secs(1) + HOLD_MARGIN).await;
    survivor.finish.notify_one();
    let done = b.confirm(&clerk(), pending.confirmation()).await;
    let closed = format!("Closed account {account}.");
    assert_eq!(
        done.into_result().text_for_model(),
        closed,
        "the approval was not lost with its process"
    );
    let again = a.confirm(&clerk(), pending.confirmation()).await;
    assert_eq!(
        again.into_result().text_for_model(),
        closed,
        "a retry anywhere gets that result, and runs nothing"
    );
    let runs: Vec<(String, bool)> = crate::CLOSE_RUNS
        .lock()
        .unwrap()
        .iter()
        .filter(|(closed, ..)| *closed == account)
        .map(|(_, id, resumed)| (id.clone(), *resumed))
        .collect();
    let [(first, false), (second, true)] = runs.as_slice() else {
        panic!("the abandoned run and its resumption: {runs:?}");
    };
    assert_eq!(first, second, "both runs carry the same idempotency key");
    assert_ne!(first, "-", "an approved run has an approval");
}
