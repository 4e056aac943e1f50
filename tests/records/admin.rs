//! The records over MCP and the admin API: a connected client is told of a change, and the admin API
//! needs the admin ability and runs the same checks as every other way in.

use serde_json::json;
use toolgate::prelude::*;
use toolgate::store::{Change, Edit};

use crate::db::Db;
use crate::{clerk, mcp_client, names, record, registry, wait_until};

#[tokio::test]
async fn a_connected_mcp_client_is_told_and_lists_without_the_disabled_tool() {
    let registry = registry(&Db::in_memory()).await;
    registry.sync("deploy").await.unwrap();
    let server = toolgate::mcp::McpServer::new(registry.clone()).default_caller(clerk());
    let (client, changes) = mcp_client::connect(server).await;
    let listed = |tools: Vec<rmcp::model::Tool>| -> Vec<String> {
        tools.iter().map(|t| t.name.to_string()).collect()
    };
    assert!(listed(client.list_all_tools().await.unwrap()).contains(&"slow_report".to_owned()));

    let edit = Edit::new(
        "ops",
        &record(&registry, "slow_report").await,
        Change::Disable,
    );
    registry.edit(&edit).await.unwrap();
    wait_until(|| changes.count() > 0).await;
    assert!(!listed(client.list_all_tools().await.unwrap()).contains(&"slow_report".to_owned()));
    client.cancel().await.unwrap();
}

/// The JSON the admin API answers to the operator at `url`.
async fn get_json(http: &reqwest::Client, url: &str) -> serde_json::Value {
    let response = http.get(url).bearer_auth("ops-token").send().await.unwrap();
    response.json().await.unwrap()
}

/// The shop-like server with the admin API on loopback, and its URL.
async fn admin_server() -> (Registry, String) {
    use toolgate::http::{BearerTokens, HttpServer};
    use toolgate::mcp::McpServer;
    use toolgate::operator::{ADMIN_ABILITY, AdminApi};
    let registry = registry(&Db::in_memory()).await;
    registry.sync("deploy").await.unwrap();
    let tokens = BearerTokens::new()
        .token(
            "ops-token",
            Caller::new("ops@example.com").with_abilities([ADMIN_ABILITY]),
        )
        .token("clerk-token", clerk());
    let server = HttpServer::new(McpServer::new(registry.clone()))
        .authenticator(tokens)
        .mount(AdminApi);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(server.serve_listener(listener, std::future::pending()));
    (registry, url)
}

#[tokio::test]
async fn the_admin_api_needs_the_admin_ability_and_changes_nothing_without_it() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let tools = format!("{url}/admin/tools");
    assert_eq!(http.get(&tools).send().await.unwrap().status(), 401);
    let as_clerk = http
        .get(&tools)
        .bearer_auth("clerk-token")
        .send()
        .await
        .unwrap();
    assert_eq!(as_clerk.status(), 403);
    let before = registry.revision();
    let edit = json!({ "version": 1, "change": { "change": "disable" } });
    let refused = http
        .post(format!("{url}/admin/tools/slow_report/edit"))
        .bearer_auth("clerk-token")
        .json(&edit)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert_eq!(registry.revision(), before, "nothing changed");
    assert_eq!(
        as_attacker(http.get(&tools)).await,
        403,
        "a host the server does not answer for"
    );
}

/// The status of `request` sent as the admin, for a host the server does not answer for.
async fn as_attacker(request: reqwest::RequestBuilder) -> reqwest::StatusCode {
    let request = request
        .bearer_auth("ops-token")
        .header("host", "attacker.example");
    request.send().await.unwrap().status()
}

#[tokio::test]
async fn the_admin_api_edits_records_with_the_same_checks_as_everywhere() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let ops = |request: reqwest::RequestBuilder| request.bearer_auth("ops-token");
    let listed = get_json(&http, &format!("{url}/admin/tools")).await;
    let slow = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "slow_report")
        .unwrap();
    let version = slow["version"].as_u64().unwrap();
    let search = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_catalogue")
        .unwrap();

    let edit_url = format!("{url}/admin/tools/slow_report/edit");
    let disable = json!({ "version": version, "change": { "change": "disable" } });
    let done = ops(http.post(&edit_url))
        .json(&disable)
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 200);
    let done: serde_json::Value = done.json().await.unwrap();
    assert_eq!(done["tool"]["enabled"], false);
    assert!(
        !names(&registry, &clerk()).contains(&"slow_report".to_owned()),
        "served at once"
    );

    let stale = ops(http.post(&edit_url))
        .json(&disable)
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 409, "made against a version that moved");
    let settings = json!({ "version": search["version"], "change": { "change": "settings", "value": { "max_rows": "lots" } } });
    let wrong = ops(http.post(format!("{url}/admin/tools/search_catalogue/edit")))
        .json(&settings)
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 422);
    let wrong: serde_json::Value = wrong.json().await.unwrap();
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`max_rows`"),
        "{wrong}"
    );
    assert_eq!(
        wrong["error"]["problems"][0]["path"], "max_rows",
        "the page shows it beside the field"
    );
    let unknown = ops(http.get(format!("{url}/admin/tools/no_such_tool")))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    let history = get_json(&http, &format!("{url}/admin/history?limit=1")).await;
    assert_eq!(history[0]["actor"], "ops@example.com");
    let plan = get_json(&http, &format!("{url}/admin/sync")).await;
    assert_eq!(plan["applied"], false);
}

#[tokio::test]
async fn the_openapi_document_describes_every_route() {
    let (_, url) = admin_server().await;
    let http = reqwest::Client::new();
    let document = get_json(&http, &format!("{url}/admin/openapi.json")).await;
    assert_eq!(document["openapi"], "3.1.0");
    let source = include_str!("../../runtime/src/operator/admin/mod.rs");
    let routes: Vec<&str> = source
        .lines()
        .filter_map(|line| line.trim().strip_prefix(".route(\""))
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert!(routes.len() >= 6, "{routes:?}");
    for route in routes {
        assert!(
            document["paths"].get(route).is_some(),
            "`{route}` is not in the OpenAPI document"
        );
    }
}

#[tokio::test]
async fn the_admin_api_manages_profiles_and_reads_the_audit_trail() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value| {
        http.post(format!("{url}{path}"))
            .bearer_auth("ops-token")
            .json(&body)
            .send()
    };
    let create = json!({ "version": 0, "change": { "change": "create", "value": { "description": "the support chat" } } });
    let made = post("/admin/profiles/support-bot/edit", create.clone())
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    let made: serde_json::Value = made.json().await.unwrap();
    assert_eq!(made["profile"]["version"], 1);
    let twice = post("/admin/profiles/support-bot/edit", create)
        .await
        .unwrap();
    assert_eq!(twice.status(), 409, "a profile is made once");

    let assign = |settings: serde_json::Value| json!({ "version": 1, "change": { "change": "assign", "value": { "tool": "search_catalogue", "settings": settings } } });
    let wrong = post(
        "/admin/profiles/support-bot/edit",
        assign(json!({ "max_rows": "all" })),
    )
    .await
    .unwrap();
    assert_eq!(wrong.status(), 422);
    let wrong: serde_json::Value = wrong.json().await.unwrap();
    assert!(
        wrong["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`max_rows`"),
        "{wrong}"
    );
    let right = post(
        "/admin/profiles/support-bot/edit",
        assign(json!({ "max_rows": 2 })),
    )
    .await
    .unwrap();
    assert_eq!(right.status(), 200);
    let listed = get_json(&http, &format!("{url}/admin/profiles")).await;
    assert_eq!(
        listed["profiles"][0]["tools"]["search_catalogue"]["settings"],
        json!({ "max_rows": 2 })
    );
    let unknown = http
        .get(format!("{url}/admin/profiles/nobody"))
        .bearer_auth("ops-token")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);

    let bot = Caller::new("bot")
        .with_abilities(["catalogue.view"])
        .with_profile("support-bot");
    let outcome = registry
        .call(&bot, "search_catalogue", json!({ "query": "x" }))
        .await;
    assert_eq!(outcome.into_result().text_for_model(), "2 rows for x");
    registry.call(&clerk(), "slow_report_nope", json!({})).await;
    let trail = get_json(&http, &format!("{url}/admin/audit?caller=bot&outcome=done")).await;
    assert_eq!(trail.as_array().unwrap().len(), 1, "{trail}");
    assert_eq!(trail[0]["tool"], "search_catalogue");
    let bad = http
        .get(format!("{url}/admin/audit?since_ms=yesterday"))
        .bearer_auth("ops-token")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
}

#[tokio::test]
async fn the_admin_api_rotates_and_retires_keys_without_showing_a_secret() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let keys = get_json(&http, &format!("{url}/admin/keys")).await;
    assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");
    let first = keys[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(keys[0]["sealing"], true);
    assert!(keys[0].get("secret").is_none());

    let as_clerk = http
        .post(format!("{url}/admin/keys/rotate"))
        .bearer_auth("clerk-token")
        .json(&json!({ "after_ms": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(as_clerk.status(), 403);
    let rotated = http
        .post(format!("{url}/admin/keys/rotate"))
        .bearer_auth("ops-token")
        .json(&json!({ "after_ms": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(rotated.status(), 200);
    let rotated: serde_json::Value = rotated.json().await.unwrap();
    let second = rotated["id"].as_str().unwrap().to_owned();
    assert_eq!(rotated["revision"], registry.revision(), "served at once");

    let retire = |id: String| {
        http.delete(format!("{url}/admin/keys/{id}"))
            .bearer_auth("ops-token")
            .send()
    };
    assert_eq!(retire(second).await.unwrap().status(), 422, "it seals now");
    assert_eq!(retire(first).await.unwrap().status(), 200);
    assert_eq!(retire("no-such-key".into()).await.unwrap().status(), 404);
    let history = registry.records().unwrap().history(1).await.unwrap();
    assert_eq!(history[0].actor, "ops@example.com");
}

#[tokio::test]
async fn the_admin_api_adds_checks_and_removes_remote_servers() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let edit = |body: serde_json::Value, token: &'static str| {
        http.post(format!("{url}/admin/servers/talker/edit"))
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/remote/servers/garbage.py");
    let entry = json!({ "command": "python3", "args": [script], "public": true });

    let by_clerk = edit(
        json!({ "version": 0, "change": { "change": "put", "value": entry } }),
        "clerk-token",
    );
    assert_eq!(
        by_clerk.await.unwrap().status(),
        403,
        "only an admin adds servers"
    );
    let sse = json!({ "version": 0, "change": { "change": "put", "value": { "type": "sse", "url": "http://127.0.0.1:9/sse" } } });
    let refused = edit(sse, "ops-token").await.unwrap();
    assert_eq!(refused.status(), 422);
    let problem: serde_json::Value = refused.json().await.unwrap();
    assert!(
        problem["error"]["message"]
            .as_str()
            .unwrap()
            .contains("legacy HTTP+SSE"),
        "{problem}"
    );
    assert!(registry.servers().is_empty(), "nothing was written");

    let added = edit(
        json!({ "version": 0, "change": { "change": "put", "value": entry } }),
        "ops-token",
    )
    .await
    .unwrap();
    assert_eq!(added.status(), 200);
    let added: serde_json::Value = added.json().await.unwrap();
    assert_eq!(
        added["server"]["reached_by"],
        format!("stdio: python3 {script}")
    );
    let stale = edit(
        json!({ "version": 0, "change": { "change": "remove" } }),
        "ops-token",
    )
    .await
    .unwrap();
    assert_eq!(stale.status(), 409, "made against a version that moved");

    registry.refresh_servers().await.unwrap();
    let listed = get_json(&http, &format!("{url}/admin/servers")).await;
    assert_eq!(listed["servers"][0]["health"], "online", "{listed}");
    assert_eq!(listed["records"][0]["version"], 1);
    assert!(names(&registry, &clerk()).contains(&"talker_talk".to_owned()));

    let removed = edit(
        json!({ "version": 1, "change": { "change": "remove" } }),
        "ops-token",
    )
    .await
    .unwrap();
    assert_eq!(removed.status(), 200);
    assert!(!names(&registry, &clerk()).contains(&"talker_talk".to_owned()));
}

#[tokio::test]
async fn the_page_holds_no_data_and_every_answer_under_admin_carries_a_content_security_policy() {
    let (_, url) = admin_server().await;
    let http = reqwest::Client::new();
    let page = http.get(format!("{url}/admin")).send().await.unwrap();
    assert_eq!(page.status(), 200, "the page itself asks for a token");
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        policy.contains("default-src 'none'") && policy.contains("script-src 'self'"),
        "{policy}"
    );
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("slow_report") && !html.contains("<script>"),
        "no data, no inline script"
    );
    for (path, token) in [
        ("/admin/page.js", None),
        ("/admin/draw.js", None),
        ("/admin/tools", None),
        ("/admin/tools", Some("clerk-token")),
        ("/admin/tools", Some("ops-token")),
        ("/admin/no-such-route", Some("ops-token")),
    ] {
        let mut request = http.get(format!("{url}{path}"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let answer = request.send().await.unwrap();
        assert_eq!(
            answer
                .headers()
                .get("content-security-policy")
                .map(|p| p.to_str().unwrap()),
            Some(policy.as_str()),
            "{path} as {token:?}: {}",
            answer.status()
        );
        assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
    }
    let page = http.get(format!("{url}/admin"));
    assert_eq!(
        as_attacker(page).await,
        403,
        "a host the server does not answer for"
    );
}

#[tokio::test]
async fn the_page_hears_of_a_change_made_elsewhere_and_reads_calls_per_tool() {
    let (registry, url) = admin_server().await;
    let http = reqwest::Client::new();
    let revision = registry.revision();
    let waiting = {
        let (http, url) = (http.clone(), url.clone());
        tokio::spawn(async move {
            get_json(&http, &format!("{url}/admin/changes?after={revision}")).await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "nothing changed yet");
    let edit = Edit::new(
        "cli",
        &record(&registry, "slow_report").await,
        Change::Disable,
    );
    registry.edit(&edit).await.unwrap();
    let answer = waiting.await.unwrap();
    assert_eq!(answer["revision"], registry.revision());
    assert_ne!(answer["revision"], revision);
    let behind = get_json(&http, &format!("{url}/admin/changes?after={revision}")).await;
    assert_eq!(
        behind["revision"],
        registry.revision(),
        "a page behind is answered at once"
    );
    let bad = http
        .get(format!("{url}/admin/changes?after=soon"))
        .bearer_auth("ops-token")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);

    for query in ["a", "b", "c"] {
        registry
            .call(&clerk(), "search_catalogue", json!({ "query": query }))
            .await;
    }
    registry.call(&clerk(), "count_lamps", json!({})).await;
    let calls = get_json(&http, &format!("{url}/admin/calls")).await;
    assert_eq!(
        calls["tools"],
        json!([{ "tool": "search_catalogue", "calls": 3 }, { "tool": "count_lamps", "calls": 1 }])
    );
    assert_eq!(calls["chart"]["type"], "bar");
    assert_eq!(
        calls["chart"]["labels"],
        json!(["search_catalogue", "count_lamps"])
    );
    assert_eq!(calls["chart"]["datasets"][0]["data"], json!([3.0, 1.0]));
}
