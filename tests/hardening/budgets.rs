//! Budgets and bounds (A-B3, A-W2, A-W3): counts keyed by server-made keys and the person at the root,
//! every count expiring, and a delegation never multiplying what its person may do.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_sub_agents_of_one_viewer_share_her_three_runs_and_leave_one_row() {
    let (db, path) = database("ceilings").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    let mut ran = 0;
    for i in 0..60 {
        let token = delegate(
            &url,
            "viewer-token",
            &format!("helper-{i}"),
            json!({ "abilities": ["orders.view"] }),
        )
        .await;
        let (text, error) = result_text(&call(&url, &token, "export_orders", json!({})).await);
        if !error {
            assert_eq!(text, "exported");
            ran += 1;
        } else {
            assert!(text.contains("at most 3 times"), "{text}");
        }
    }
    assert_eq!(ran, 3, "a delegation never multiplies its person's runs");
    let (text, error) = result_text(&call(&url, "viewer-token", "export_orders", json!({})).await);
    assert!(
        error && text.contains("at most 3 times"),
        "vera herself used them up: {text}"
    );
    let rows = sqlite_count(&path, "SELECT count(*) FROM toolgate_ceilings");
    assert_eq!(
        rows, 1,
        "one count, keyed by the person, not one per name chosen"
    );
    let longest = sqlite_count(&path, "SELECT max(length(caller)) FROM toolgate_ceilings");
    assert_eq!(longest, "vera@shop.example".len() as i64);
    let expires = sqlite_count(&path, "SELECT min(expires) FROM toolgate_ceilings");
    assert!(expires > 0, "every count expires");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegations_count_of_calls_ends_with_the_delegation() {
    let (db, path) = database("delegated_calls").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    let token = delegate(
        &url,
        "viewer-token",
        "counter",
        json!({ "max_calls": 2, "expires_in_secs": 30 }),
    )
    .await;
    for _ in 0..3 {
        call(&url, &token, "hello", json!({})).await;
    }
    let (text, error) = result_text(&call(&url, &token, "hello", json!({})).await);
    assert!(error && text.contains("allows 2 calls"), "{text}");
    let expires = sqlite_count(
        &path,
        "SELECT max(expires) FROM toolgate_ceilings WHERE tool = '*'",
    );
    let in_31s = i64::try_from(toolgate::store::unix_ms()).unwrap() + 31_000;
    assert!(
        expires > 0 && expires <= in_31s,
        "the count expires with the delegation: {expires}"
    );
    let key = sqlite_count(
        &path,
        "SELECT max(length(caller)) FROM toolgate_ceilings WHERE tool = '*'",
    );
    assert_eq!(key, 32, "keyed by the delegation's random id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_sub_agents_hold_no_more_sessions_than_she_may() {
    let (db, _) = database("sessions").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default().sessions_per_caller(2)).await;
    let initialize = |token: String| {
        let url = url.clone();
        async move {
            let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                            "clientInfo": { "name": "raw", "version": "0" } } });
            reqwest::Client::new()
                .post(format!("{url}/mcp"))
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .json(&body)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(initialize("viewer-token".into()).await, 200);
    let helper = delegate(&url, "viewer-token", "helper", json!({})).await;
    assert_eq!(initialize(helper.clone()).await, 200);
    let other = delegate(&url, "viewer-token", "other-helper", json!({})).await;
    assert_eq!(
        initialize(other).await,
        429,
        "the third session of vera's, through a sub-agent"
    );
    assert_eq!(
        initialize("manager-token".into()).await,
        200,
        "max's share is his own"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_narrower_sibling_delegation_with_the_same_name_cannot_read_a_task() {
    let (db, _) = database("sibling").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default()).await;
    let wide = delegate(
        &url,
        "viewer-token",
        "helper2",
        json!({ "abilities": ["orders.view"] }),
    )
    .await;
    let narrow = delegate(
        &url,
        "viewer-token",
        "helper2",
        json!({ "profile": "nothing" }),
    )
    .await;
    let (wide, narrow) = (
        connect(&url, &wide, true).await,
        connect(&url, &narrow, true).await,
    );
    let id = task_of(&wide, "slow", json!({ "ms": 10 })).await.unwrap();
    let read = |client: &Client| {
        let params = rmcp::model::GetTaskParams::new(id.clone());
        let peer = client.peer().clone();
        async move { peer.get_task(params).await }
    };
    until("the task ends", async || {
        read(&wide)
            .await
            .is_ok_and(|t| serde_json::to_value(t).unwrap()["status"] == "completed")
    })
    .await;
    let refused = read(&narrow).await.unwrap_err().to_string();
    assert!(
        refused.contains("-32602") || refused.contains("no task"),
        "{refused}"
    );
}
