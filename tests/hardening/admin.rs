//! The admin plane (A-W4, A-W5, A-W6): a sub-agent's edits named by its chain, key rotations within a
//! day, and writes that a browser on another site cannot make.

use super::*;

/// `GET path` with `token`: the status and the JSON body.
async fn get(url: &str, path: &str, token: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .get(format!("{url}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admins_sub_agent_edits_under_its_chain_not_a_name_it_chose() {
    let (db, _) = database("admin_chain").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default()).await;
    let admin = toolgate::operator::ADMIN_ABILITY;
    let token = delegate(
        &url,
        "admin-token",
        "max@shop.example",
        json!({ "abilities": [admin] }),
    )
    .await;
    let (_, hello) = get(&url, "/admin/tools/hello", &token).await;
    let edit = json!({ "version": hello["version"], "change": { "change": "disable" } });
    let (status, body) = post(&url, "/admin/tools/hello/edit", &token, &edit).await;
    assert_eq!(status, 200, "{body}");
    let (_, history) = get(&url, "/admin/history?limit=1", "admin-token").await;
    assert_eq!(
        history[0]["actor"], "max@shop.example < olga@shop.example",
        "{history}"
    );
    let (_, printed) =
        toolgate::operator::run(&registry, ["toolgate", "history", "--limit", "1"]).await;
    assert!(
        printed.contains("max@shop.example < olga@shop.example"),
        "{printed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotated_for_the_far_future_is_refused_and_nothing_changes() {
    let (db, _) = database("rotate").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default()).await;
    let (_, before) = get(&url, "/admin/keys", "admin-token").await;
    for after_ms in [json!(9_223_372_036_854_775_808u64), json!(90_000_000)] {
        let (status, body) = post(
            &url,
            "/admin/keys/rotate",
            "admin-token",
            &json!({ "after_ms": after_ms }),
        )
        .await;
        assert_eq!(status, 422, "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("within a day"),
            "{body}"
        );
    }
    let (_, after) = get(&url, "/admin/keys", "admin-token").await;
    assert_eq!(before, after);
    let (code, out) =
        toolgate::operator::run(&registry, ["toolgate", "keys", "rotate", "--after", "400d"]).await;
    assert_eq!(code, toolgate::operator::REFUSED, "{out}");
    let (status, _) = post(
        &url,
        "/admin/keys/rotate",
        "admin-token",
        &json!({ "after_ms": 60_000 }),
    )
    .await;
    assert_eq!(status, 200, "a rotation within a day");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_from_another_site_or_not_in_json_is_refused_and_changes_nothing() {
    let (db, _) = database("csrf").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default()).await;
    let form = "{\"version\": 0, \"change\": {\"change\": \"create\", \"value\": {\"description\": \"x\"}}}";
    let send = |path: &'static str, content_type: &'static str, origin: Option<&'static str>| {
        let mut request = reqwest::Client::new()
            .post(format!("{url}{path}"))
            .bearer_auth("admin-token")
            .header("content-type", content_type)
            .body(form);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    let profile = "/admin/profiles/csrf/edit";
    assert_eq!(
        send(profile, "text/plain", Some("http://evil.example")).await,
        403
    );
    assert_eq!(send(profile, "text/plain", None).await, 415);
    assert_eq!(
        send(profile, "application/json", Some("http://evil.example")).await,
        403
    );
    assert_eq!(send("/delegations", "text/plain", None).await, 415);
    assert_eq!(
        send(
            "/delegations",
            "application/json",
            Some("https://evil.example")
        )
        .await,
        403
    );
    let (_, profiles) = get(&url, "/admin/profiles", "admin-token").await;
    assert_eq!(profiles["profiles"], json!([]), "nothing was created");
    assert_eq!(
        send(
            profile,
            "application/json; charset=utf-8",
            Some("http://localhost:5173")
        )
        .await,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_api_without_an_authenticator_is_refused_with_the_reason() {
    let (db, _) = database("no_authenticator").await;
    let registry = registry(&db, Registry::builder()).await;
    let server = HttpServer::new(McpServer::new(registry).default_caller(olga())).mount(AdminApi);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    let (status, body) = get(&url, "/admin/tools", "anything").await;
    assert_eq!(status, 403);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("behind an authenticator"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sets_a_rate_limit_through_the_admin_api_and_a_call_past_it_says_when_to_retry()
{
    let (db, _) = database("limits_api").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    // A day's window: windows are aligned to the clock, and three calls must not straddle two of them.
    let set = json!({ "version": 0, "change": { "change": "set", "value": { "calls": 2, "per_secs": 86_400 } } });
    let (status, body) = post(&url, "/admin/limits/tool:hello/edit", "admin-token", &set).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["limit"]["rate"],
        json!({ "calls": 2, "per_secs": 86_400 })
    );
    let (status, _) = post(&url, "/admin/limits/tool:hello/edit", "admin-token", &set).await;
    assert_eq!(status, 409, "made against an older version");
    let (status, body) = post(&url, "/admin/limits/everyone/edit", "admin-token", &set).await;
    assert_eq!(status, 422, "{body}");
    let mut texts = Vec::new();
    for _ in 0..3 {
        texts.push(result_text(
            &call(&url, "viewer-token", "hello", json!({})).await,
        ));
    }
    assert_eq!(
        texts[..2],
        [("hello".to_owned(), false), ("hello".to_owned(), false)]
    );
    assert!(
        texts[2].1 && texts[2].0.contains("You may call `hello` 2 times a day"),
        "{texts:?}"
    );
    let (_, limits) = get(&url, "/admin/limits", "admin-token").await;
    assert_eq!(limits[0]["scope"], "tool:hello");
    let remove = json!({ "version": 1, "change": { "change": "remove" } });
    let (status, _) = post(
        &url,
        "/admin/limits/tool:hello/edit",
        "admin-token",
        &remove,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        result_text(&call(&url, "viewer-token", "hello", json!({})).await).0,
        "hello"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_sets_what_a_scope_grants_through_the_admin_api_against_the_version_seen() {
    let (db, _) = database("grants_api").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, stateless()).await;
    let set = json!({ "version": 0, "change": { "change": "set", "value": ["orders.view", "orders.view"] } });
    let (status, body) = post(
        &url,
        "/admin/grants/scope:orders:read/edit",
        "admin-token",
        &set,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["grant"],
        json!({ "claim": "scope:orders:read", "abilities": ["orders.view"], "version": 1 })
    );
    let (status, _) = post(
        &url,
        "/admin/grants/scope:orders:read/edit",
        "admin-token",
        &set,
    )
    .await;
    assert_eq!(status, 409, "made against an older version");
    let (status, body) = post(&url, "/admin/grants/team:ops/edit", "admin-token", &set).await;
    assert_eq!(status, 422, "{body}");
    let (status, _) = post(
        &url,
        "/admin/grants/scope:orders:read/edit",
        "viewer-token",
        &set,
    )
    .await;
    assert_eq!(status, 403, "only an operator edits grants");
    let (_, grants) = get(&url, "/admin/grants", "admin-token").await;
    assert_eq!(grants.as_array().unwrap().len(), 1);
    let remove = json!({ "version": 1, "change": { "change": "remove" } });
    let (status, body) = post(
        &url,
        "/admin/grants/scope:orders:read/edit",
        "admin-token",
        &remove,
    )
    .await;
    assert_eq!((status, &body["grant"]), (200, &Value::Null), "{body}");
}
