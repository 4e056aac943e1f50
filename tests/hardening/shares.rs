//! Fair shares of the server (A-B4, A-W1, and the slots B-B1 took): tasks under the same slots as calls,
//! one caller's share of them, a bounded number of one caller's tasks, and a database another process
//! holds locked that stalls nothing and loses no audit row.

use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_wait_for_the_slots_calls_take_and_one_caller_has_a_bounded_number() {
    let gauge = Arc::new(Gauge::default());
    let (db, _) = database("tasks").await;
    let builder = Registry::builder()
        .tool(gauged("gauged", &gauge))
        .max_concurrent_calls(2)
        .max_unfinished_tasks_per_caller(5);
    let registry = registry(&db, builder).await;
    let url = serve(&registry, HttpOptions::default()).await;
    let vera = connect(&url, "viewer-token", true).await;
    let mut ids = Vec::new();
    for _ in 0..5 {
        ids.push(
            task_of(&vera, "gauged", json!({ "ms": 2000 }))
                .await
                .unwrap(),
        );
    }
    let refused = task_of(&vera, "gauged", json!({ "ms": 300 }))
        .await
        .unwrap_err();
    assert!(
        refused.contains("You have 5 tasks running or waiting to run"),
        "{refused}"
    );
    let helper = delegate(&url, "viewer-token", "helper", json!({})).await;
    let helper = connect(&url, &helper, true).await;
    let refused = task_of(&helper, "gauged", json!({ "ms": 300 }))
        .await
        .unwrap_err();
    assert!(
        refused.contains("5 tasks"),
        "her sub-agent's tasks are hers: {refused}"
    );
    let max = connect(&url, "manager-token", true).await;
    ids.push(task_of(&max, "gauged", json!({ "ms": 10 })).await.unwrap());
    for id in &ids {
        until("every task ends", async || {
            let clients = [&vera, &max];
            for client in clients {
                let params = rmcp::model::GetTaskParams::new(id.clone());
                if let Ok(task) = client.peer().get_task(params).await {
                    return serde_json::to_value(task).unwrap()["status"] == "completed";
                }
            }
            false
        })
        .await;
    }
    assert_eq!(gauge.most(), 2, "six tasks ran, at most two at once");
    assert!(
        task_of(&vera, "gauged", json!({ "ms": 1 })).await.is_ok(),
        "ended tasks free her count"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_holds_at_most_its_share_of_the_slots_and_its_wait_counts_toward_the_timeout() {
    let gauge = Arc::new(Gauge::default());
    let (db, _) = database("share").await;
    let quick = DynamicTool::new(
        "quick",
        "Answers.",
        json!({ "type": "object" }),
        |_, _| async { "quick" },
    )
    .public()
    .read_only()
    .timeout(Duration::from_millis(300));
    let builder = Registry::builder()
        .tool(gauged("gauged", &gauge))
        .tool(quick)
        .max_concurrent_calls(4)
        .max_calls_per_caller(2);
    let registry = registry(&db, builder).await;
    let url = serve(&registry, stateless()).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let url = url.clone();
        held.push(tokio::spawn(async move {
            call(&url, "viewer-token", "gauged", json!({ "ms": 3000 })).await
        }));
    }
    until("two of vera's calls run", async || gauge.running() == 2).await;
    let (text, error) = result_text(&call(&url, "manager-token", "quick", json!({})).await);
    assert_eq!(
        (text.as_str(), error),
        ("quick", false),
        "max's call runs in his own share"
    );
    assert!(gauge.running() >= 1, "while vera's calls still hold theirs");
    let (text, error) = result_text(&call(&url, "viewer-token", "quick", json!({})).await);
    assert!(error, "{text}");
    assert!(
        text.contains("did not start within"),
        "her wait for a slot counts toward the timeout: {text}"
    );
    for call in held {
        let (text, _) = result_text(&call.await.unwrap());
        assert_eq!(text, "waited", "the third waited for her share, and ran");
    }
    assert_eq!(gauge.most(), 2);
}

/// Another process that holds the file locked (`BEGIN IMMEDIATE`), as a backup or an operator's `sqlite3`
/// would, until it is told to let go.
struct Locker(std::process::Child);

impl Locker {
    fn lock(path: &Path) -> Locker {
        let script = "import sqlite3, sys\n\
                      c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                      c.execute('BEGIN IMMEDIATE')\n\
                      print('locked', flush=True)\n\
                      sys.stdin.readline()\n\
                      c.execute('COMMIT')\n";
        let mut child = Command::new("python3")
            .args(["-c", script, path.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        Locker(child)
    }

    fn release(mut self) {
        writeln!(self.0.stdin.as_mut().unwrap()).unwrap();
        self.0.wait().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_locked_by_another_process_stalls_no_call_and_loses_no_audit_row() {
    let (db, path) = database("locked").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    let locker = Locker::lock(&path);
    // Everything below is answered while the other process still holds the file.
    let ping = rpc(&url, "viewer-token", "ping", json!({})).await;
    assert_eq!(ping["result"], json!({}), "{ping}");
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { call(&url, "viewer-token", "hello", json!({})).await })
        })
        .collect();
    for answer in calls {
        assert_eq!(result_text(&answer.await.unwrap()).0, "hello");
    }
    assert_eq!(sqlite_count_locked(&path), None, "the lock is still held");
    locker.release();
    until("every call's row is written", async || {
        sqlite_count(&path, "SELECT count(*) FROM toolgate_audit") == 4
    })
    .await;
}

/// The audit's rows, unless the file is locked: then `None`.
fn sqlite_count_locked(path: &Path) -> Option<i64> {
    let connection = toolgate::sqlite::rusqlite::Connection::open(path).unwrap();
    connection
        .execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
        .ok()
        .map(|()| {
            connection
                .query_row("SELECT count(*) FROM toolgate_audit", [], |r| r.get(0))
                .unwrap()
        })
}
