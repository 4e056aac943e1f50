//! Tasks kept in the database, the same on SQLite and PostgreSQL: a result that survives a restart, a task
//! that lost its process reported as failed, only the owner seeing a task, cancellation, questions
//! answered one at a time, an approved write run once, and a second process answering for a task.

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolgate::prelude::*;
use toolgate::store::{TaskRecord, TaskStatus};
use toolgate::{TaskError, TaskHandle};

use crate::db::{Backend, Db, on_both_backends};
use crate::tasks_client::{Client, call, connect};
use crate::{clerk, refunds, registry};

on_both_backends![
    a_completed_task_survives_a_restart_and_only_its_owner_sees_it,
    a_task_whose_process_stopped_is_reported_failed,
    a_cancelled_task_stops_its_tool_and_says_cancelled,
    a_task_that_asks_waits_for_every_answer_then_runs_once,
    an_approved_write_runs_as_a_task_once,
    another_process_answers_for_a_task_and_cancels_it,
    over_mcp_any_replica_answers_for_a_task_and_a_write_runs_once_after_approval,
];

/// Waits until `task` is no longer working, reading it through `registry` as `caller`.
async fn ended(registry: &Registry, caller: &Caller, id: &str) -> TaskRecord {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let task = registry.task(caller, id).await.unwrap();
            if task.status != TaskStatus::Working {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the task ends")
}

async fn start(registry: &Registry, tool: &str, arguments: Value) -> TaskHandle {
    registry
        .start_task(&clerk(), Call::new(tool, arguments))
        .await
        .unwrap()
}

async fn a_completed_task_survives_a_restart_and_only_its_owner_sees_it(backend: Backend) {
    let Some(db) = Db::fresh(backend, "task_restart").await else {
        return;
    };
    let first = registry(&db).await;
    first.sync("deploy").await.unwrap();
    let task = start(&first, "rebuild_index", json!({ "seconds": 0 })).await;
    let done = task.finished().await.unwrap();
    assert_eq!(done.status, TaskStatus::Completed);
    drop(first);

    // A new process on the same database.
    let db = db.reopen().await;
    let second = registry(&db).await;
    let kept = second.task(&clerk(), task.id()).await.unwrap();
    assert_eq!(kept.status, TaskStatus::Completed);
    assert_eq!(
        kept.result.unwrap().text_for_model(),
        "index rebuilt in 0 s"
    );
    let stranger = Caller::new("eve").with_abilities(["catalogue.view"]);
    let refused = second.task(&stranger, task.id()).await.unwrap_err();
    let unknown = second.task(&clerk(), "tgt_nothing").await.unwrap_err();
    assert!(
        matches!(refused, TaskError::Unknown(_)) && matches!(unknown, TaskError::Unknown(_)),
        "another caller's task is as unknown as one that never was"
    );
    assert!(second.cancel_task(&stranger, task.id()).await.is_err());

    let forbidden = second
        .start_task(
            &clerk(),
            Call::new("search_catalogue", json!({ "query": "x" })),
        )
        .await
        .unwrap_err();
    assert!(
        forbidden.to_string().contains("does not run as a task"),
        "{forbidden}"
    );
}

async fn a_task_whose_process_stopped_is_reported_failed(backend: Backend) {
    let Some(db) = Db::fresh(backend, "task_orphan").await else {
        return;
    };
    let registry = registry(&db).await;
    // A task a process was running when it died: working, its lease long over.
    let mut orphan = TaskRecord::example();
    orphan.owner = "clerk".into();
    orphan.lease_until_ms = 1;
    db.tasks().create(&orphan).await.unwrap();
    let seen = registry.task(&clerk(), &orphan.id).await.unwrap();
    assert_eq!(seen.status, TaskStatus::Failed);
    let error = seen.error.unwrap();
    assert!(
        error.message.contains("stopped before it finished"),
        "{error:?}"
    );
    let again = db.tasks().get(&orphan.id).await.unwrap().unwrap();
    assert_eq!(again.status, TaskStatus::Failed, "kept as failed");
}

async fn a_cancelled_task_stops_its_tool_and_says_cancelled(backend: Backend) {
    let Some(db) = Db::fresh(backend, "task_cancel").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let task = start(&registry, "rebuild_index", json!({ "seconds": 60 })).await;
    // Progress is readable through the task once the lease is renewed with it.
    tokio::time::timeout(Duration::from_secs(30), async {
        while task.state().await.unwrap().message.is_none() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("progress is kept");
    let message = task.state().await.unwrap().message.unwrap();
    assert!(message.contains("/600: rebuilding"), "{message}");
    task.cancel().await.unwrap();
    let ended = ended(&registry, &clerk(), task.id()).await;
    assert_eq!(ended.status, TaskStatus::Cancelled);
    task.cancel().await.unwrap();
    assert_eq!(
        task.state().await.unwrap().status,
        TaskStatus::Cancelled,
        "cancelling an ended task changes nothing"
    );
}

async fn a_task_that_asks_waits_for_every_answer_then_runs_once(backend: Backend) {
    let Some(db) = Db::fresh(backend, "task_input").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let task = start(&registry, "import_feed", json!({})).await;
    let asked = task.finished().await.unwrap();
    assert_eq!(asked.status, TaskStatus::InputRequired);
    let mut keys: Vec<&String> = asked.input_requests.as_ref().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["feed", "owner"]);

    let answer = |key: &str, name: &str| -> Map<String, Value> {
        let mut answers = Map::new();
        answers.insert(
            key.into(),
            json!({ "action": "accept", "content": { "name": name } }),
        );
        answers.insert(
            "unasked".into(),
            json!({ "action": "accept", "content": {} }),
        );
        answers
    };
    registry
        .answer_task(&clerk(), task.id(), answer("feed", "lamps"))
        .await
        .unwrap();
    let half = task.state().await.unwrap();
    assert_eq!(
        half.status,
        TaskStatus::InputRequired,
        "one answer is still missing"
    );
    let pending: Vec<&String> = half.input_requests.as_ref().unwrap().keys().collect();
    assert_eq!(pending, ["owner"], "the answered key is gone");

    registry
        .answer_task(&clerk(), task.id(), answer("owner", "Lumen Ltd"))
        .await
        .unwrap();
    let done = ended(&registry, &clerk(), task.id()).await;
    assert_eq!(done.status, TaskStatus::Completed);
    assert_eq!(
        done.result.unwrap().text_for_model(),
        "imported lamps of Lumen Ltd"
    );
}

async fn an_approved_write_runs_as_a_task_once(backend: Backend) {
    let Some(db) = Db::fresh(backend, "task_write").await else {
        return;
    };
    let registry = registry(&db).await;
    registry.sync("deploy").await.unwrap();
    let order = match backend {
        Backend::Sqlite => 9101,
        Backend::Postgres => 9102,
    };
    let unapproved = registry
        .start_task(&clerk(), Call::new("refund", json!({ "order": order })))
        .await
        .unwrap_err();
    assert!(unapproved.to_string().contains("approval"), "{unapproved}");
    let Outcome::NeedsConfirmation(pending) = registry
        .call(&clerk(), "refund", json!({ "order": order }))
        .await
    else {
        panic!("a write is previewed first");
    };
    let approved =
        || Call::new("refund", json!({ "order": order })).confirmation(pending.confirmation());
    let first = registry.start_task(&clerk(), approved()).await.unwrap();
    let second = registry.start_task(&clerk(), approved()).await.unwrap();
    let (first, second) = (
        first.finished().await.unwrap(),
        second.finished().await.unwrap(),
    );
    assert_eq!(first.status, TaskStatus::Completed);
    assert_eq!(second.status, TaskStatus::Completed);
    let texts = [first, second].map(|t| t.result.unwrap().text_for_model());
    assert!(
        texts.contains(&format!("Refunded order {order}.")),
        "{texts:?}"
    );
    assert_eq!(refunds(order), 1, "the approved write ran once: {texts:?}");
}

async fn another_process_answers_for_a_task_and_cancels_it(backend: Backend) {
    let Some(db) = Db::fresh(backend, "task_replicas").await else {
        return;
    };
    let a = registry(&db).await;
    a.sync("deploy").await.unwrap();
    let other = db.reopen().await;
    let b = registry(&other).await;
    let task = start(&a, "rebuild_index", json!({ "seconds": 60 })).await;
    assert_eq!(
        b.task(&clerk(), task.id()).await.unwrap().status,
        TaskStatus::Working,
        "the other process reads it at once"
    );
    // Cancelled through the other process: the one running it hears of it when it renews its lease.
    b.cancel_task(&clerk(), task.id()).await.unwrap();
    let ended = ended(&b, &clerk(), task.id()).await;
    assert_eq!(ended.status, TaskStatus::Cancelled);
    assert_eq!(
        a.task(&clerk(), task.id()).await.unwrap().status,
        TaskStatus::Cancelled
    );
}

/// A server on `registry` over Streamable HTTP on loopback, with a token for the clerk and one for
/// another caller, and its URL.
async fn serve(registry: &Registry) -> String {
    use toolgate::http::{BearerTokens, HttpServer};
    use toolgate::mcp::McpServer;
    let tokens = BearerTokens::new().token("clerk-token", clerk()).token(
        "eve-token",
        Caller::new("eve").with_abilities(["catalogue.view"]),
    );
    let server = HttpServer::new(McpServer::new(registry.clone())).authenticator(tokens);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/mcp",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    url
}

/// The id of the task a `tools/call` answered with.
async fn task_of(client: &Client, params: rmcp::model::CallToolRequestParams) -> String {
    match client.peer().call_tool_once(params).await.unwrap() {
        rmcp::model::CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Polls task `id` through `client` until it is no longer working, and returns it as JSON.
async fn polled(client: &Client, id: &str) -> Value {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let params = rmcp::model::GetTaskParams::new(id.to_owned());
            let task = serde_json::to_value(client.peer().get_task(params).await.unwrap()).unwrap();
            if task["status"] != "working" {
                return task;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the task ends")
}

async fn over_mcp_any_replica_answers_for_a_task_and_a_write_runs_once_after_approval(
    backend: Backend,
) {
    let Some(db) = Db::fresh(backend, "task_mcp").await else {
        return;
    };
    let a = registry(&db).await;
    a.sync("deploy").await.unwrap();
    let b = registry(&db.reopen().await).await;
    let (url_a, url_b) = (serve(&a).await, serve(&b).await);
    let clerk_a = connect(&url_a, "clerk-token", true).await;
    let clerk_b = connect(&url_b, "clerk-token", true).await;
    let eve_b = connect(&url_b, "eve-token", true).await;

    let id = task_of(&clerk_a, call("rebuild_index", json!({ "seconds": 60 }))).await;
    let seen = serde_json::to_value(
        clerk_b
            .peer()
            .get_task(rmcp::model::GetTaskParams::new(id.clone()))
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(seen["status"], "working", "{seen}");
    assert_eq!(seen["resultType"], "complete");
    let stranger = eve_b
        .peer()
        .get_task(rmcp::model::GetTaskParams::new(id.clone()))
        .await
        .unwrap_err();
    assert!(
        stranger.to_string().contains("-32602") || stranger.to_string().contains("no task"),
        "{stranger}"
    );
    clerk_b
        .peer()
        .cancel_task(rmcp::model::CancelTaskParams::new(id.clone()))
        .await
        .unwrap();
    assert_eq!(polled(&clerk_a, &id).await["status"], "cancelled");

    // A client that cannot poll gets the result while it waits.
    let plain = connect(&url_a, "clerk-token", false).await;
    let result = plain
        .peer()
        .call_tool_once(call("rebuild_index", json!({ "seconds": 0 })))
        .await
        .unwrap();
    assert!(
        matches!(result, rmcp::model::CallToolResponse::Complete(_)),
        "{result:?}"
    );

    // A write: its preview and approval come first, then it runs as a task, once.
    let order = match backend {
        Backend::Sqlite => 9201,
        Backend::Postgres => 9202,
    };
    let asked = clerk_a
        .peer()
        .call_tool_once(call("refund", json!({ "order": order })))
        .await
        .unwrap();
    let rmcp::model::CallToolResponse::InputRequired(question) = asked else {
        panic!("the write asks for approval first: {asked:?}");
    };
    let mut approve = call("refund", json!({ "order": order }));
    approve.request_state = question.request_state.clone();
    approve.input_responses = Some(
        [(
            toolgate::output::APPROVAL_KEY.to_owned(),
            json!({ "action": "accept", "content": { "approve": true } }),
        )]
        .into_iter()
        .collect(),
    );
    let id = task_of(&clerk_a, approve.clone()).await;
    let done = polled(&clerk_b, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"],
        format!("Refunded order {order}.")
    );
    let again = task_of(&clerk_a, approve).await;
    polled(&clerk_a, &again).await;
    assert_eq!(refunds(order), 1, "the approved write ran once");
}
