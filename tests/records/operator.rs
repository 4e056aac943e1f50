//! The operator's command line on both backends: exit codes, text and JSON, and the audit trail queried.

use serde_json::{Value, json};
use toolgate::operator::{self, OK, REFUSED, USAGE};

use crate::db::{Backend, Db, on_both_backends};
use crate::{clerk, lists, registry};

on_both_backends![
    the_operator_switches_a_tool_off_and_reads_who_did_it,
    the_operator_queries_the_audit_trail_by_caller_tool_outcome_and_time,
];

/// Runs `toolgate ARGS` as operator `ops`.
pub(crate) async fn run(registry: &toolgate::Registry, args: &[&str]) -> (i32, String) {
    let line = ["toolgate", "--actor", "ops"].iter().chain(args);
    operator::run(registry, line.copied()).await
}

async fn json_of(registry: &toolgate::Registry, args: &[&str]) -> Value {
    let (code, out) = run(registry, &[&["--json"], args].concat()).await;
    assert_eq!(code, OK, "{out}");
    serde_json::from_str(&out).unwrap()
}

async fn the_operator_switches_a_tool_off_and_reads_who_did_it(backend: Backend) {
    let Some(db) = Db::fresh(backend, "operator_tools").await else {
        return;
    };
    let registry = registry(&db).await;
    let (code, out) = run(&registry, &["sync", "--apply"]).await;
    assert_eq!(code, OK, "{out}");
    assert!(out.contains("+ slow_report: new"), "{out}");

    let (code, out) = run(&registry, &["tools", "disable", "slow_report"]).await;
    assert_eq!(code, OK, "{out}");
    assert!(
        out.starts_with("slow_report") && out.contains(" off "),
        "{out}"
    );
    assert!(!lists(&registry, "slow_report"));

    let history = json_of(&registry, &["history", "--limit", "1"]).await;
    assert_eq!(history[0]["actor"], "ops");
    assert_eq!(history[0]["what"], json!({ "change": "disable" }));

    let (code, out) = run(
        &registry,
        &[
            "tools",
            "settings",
            "search_catalogue",
            "{\"max_rows\": \"all\"}",
        ],
    )
    .await;
    assert_eq!((code, out.contains("`max_rows`")), (REFUSED, true), "{out}");
    let (code, out) = run(&registry, &["tools", "show", "nope"]).await;
    assert_eq!(code, REFUSED, "{out}");
    let (code, out) = run(&registry, &["audit", "query", "--since", "yesterday-ish"]).await;
    assert_eq!(code, USAGE, "{out}");
    assert!(out.contains("neither a time"), "{out}");
}

async fn the_operator_queries_the_audit_trail_by_caller_tool_outcome_and_time(backend: Backend) {
    let Some(db) = Db::fresh(backend, "operator_audit").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let nobody = toolgate::Caller::new("nobody");
    registry
        .call(&clerk(), "search_catalogue", json!({ "query": "a" }))
        .await;
    registry
        .call(&nobody, "search_catalogue", json!({ "query": "b" }))
        .await;
    registry
        .call(&clerk(), "search_catalogue", json!({ "query": 3 }))
        .await;

    let tail = json_of(&registry, &["audit", "tail", "-n", "10"]).await;
    let outcomes: Vec<&str> = tail
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        ["invalid_arguments", "denied", "done"],
        "newest first"
    );

    let clerk_done = json_of(
        &registry,
        &[
            "audit",
            "query",
            "--caller",
            "clerk",
            "--outcome",
            "done",
            "--since",
            "1h",
        ],
    )
    .await;
    assert_eq!(clerk_done.as_array().unwrap().len(), 1, "{clerk_done}");
    assert_eq!(clerk_done[0]["revision"], registry.revision());
    let future = json_of(
        &registry,
        &[
            "audit",
            "query",
            "--tool",
            "search_catalogue",
            "--since",
            "2999-01-01T00:00:00Z",
        ],
    )
    .await;
    assert_eq!(future, json!([]));
    let before_now = json_of(
        &registry,
        &["audit", "query", "--until", "2999-01-01T00:00:00Z"],
    )
    .await;
    assert_eq!(before_now.as_array().unwrap().len(), 3);

    let (code, text) = run(&registry, &["audit", "tail", "-n", "1"]).await;
    assert_eq!(code, OK);
    assert!(
        text.contains("clerk") && text.contains("invalid_arguments") && text.contains('Z'),
        "{text}"
    );
}
