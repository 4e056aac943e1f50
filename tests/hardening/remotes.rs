//! What remote servers hand us (part B): a hostile server (`hostile.py`, raw JSON-RPC over stdio) in each
//! of its modes, behind the gateway's policy.

#[path = "../support/real_clients.rs"]
#[allow(dead_code, unreachable_pub)]
mod real_clients;

use std::sync::Arc;

use toolgate::remote::RemoteServer;

use super::*;

/// The hostile server in `mode`, labelled `label`, public and quick to give up.
fn hostile(label: &str, mode: &str) -> RemoteServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hardening/hostile.py");
    RemoteServer::stdio(label, "python3")
        .args([script.display().to_string(), mode.to_owned()])
        .public()
        .timeout(Duration::from_secs(20))
}

/// A registry with `servers`, their tools listed.
async fn gateway(builder: RegistryBuilder, servers: Vec<RemoteServer>) -> Registry {
    let registry = servers
        .into_iter()
        .fold(builder.compiled_tools(TOOLS), RegistryBuilder::remote)
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    registry
}

fn listed(registry: &Registry, caller: &Caller) -> Vec<String> {
    registry
        .list_all(caller)
        .iter()
        .map(|t| t.name().to_owned())
        .collect()
}

fn problems(registry: &Registry, label: &str) -> Vec<String> {
    let status = registry
        .servers()
        .into_iter()
        .find(|s| s.label == label)
        .unwrap();
    status.problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_server_holds_only_its_own_calls_and_everything_else_serves_on() {
    let registry = gateway(
        Registry::builder()
            .max_concurrent_calls(8)
            .max_calls_per_caller(8),
        vec![
            hostile("hang", "hang").max_concurrent(2),
            hostile("other", "flap"),
        ],
    )
    .await;
    let url = serve(&registry, stateless()).await;
    let hung: Vec<_> = (0..2)
        .map(|_| {
            let url = url.clone();
            // A probe below may hold a slot for a moment; a call refused then takes the next one.
            tokio::spawn(async move {
                loop {
                    let answer = call(&url, "viewer-token", "hang_hang_work", json!({})).await;
                    if !result_text(&answer).0.contains("running as many calls") {
                        return answer;
                    }
                }
            })
        })
        .collect();
    // The server's two slots are taken: the next calls are refused at once, and nothing was sent.
    until("the server's slots are taken", async || {
        let answer = call(&url, "viewer-token", "hang_ok_quick", json!({})).await;
        result_text(&answer)
            .0
            .contains("running as many calls as it may (2)")
    })
    .await;
    for _ in 0..8 {
        let (text, error) =
            result_text(&call(&url, "viewer-token", "hang_hang_work", json!({})).await);
        assert!(error && text.contains("nothing was sent"), "{text}");
    }
    let (text, _) = result_text(&call(&url, "manager-token", "hello", json!({})).await);
    assert_eq!(text, "hello", "a local call");
    let (text, _) = result_text(&call(&url, "manager-token", "other_keep", json!({})).await);
    assert_eq!(text, "keep ran", "another server's call");
    assert!(
        hung.iter().all(|h| !h.is_finished()),
        "while the two calls still hang"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_switch_off_holds_when_a_remote_tool_goes_missing_and_comes_back() {
    let switch =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("flap-{}", std::process::id()));
    let _ = std::fs::remove_file(&switch);
    let (db, _) = database("sticky").await;
    let server = hostile("flap", "flap").args([switch.display().to_string()]);
    let registry = Registry::builder()
        .compiled_tools(TOOLS)
        .remote(server)
        .database(&db)
        .load()
        .await
        .unwrap();
    registry.refresh_servers().await.unwrap();
    registry.sync("deploy").await.unwrap();
    let operate = async |args: &[&str]| {
        let (code, out) = toolgate::operator::run(&registry, args.iter().copied()).await;
        assert_eq!(code, 0, "{args:?}: {out}");
    };
    operate(&["toolgate", "tools", "disable", "flap_wipe"]).await;
    assert!(!listed(&registry, &max()).contains(&"flap_wipe".to_owned()));
    std::fs::write(&switch, "gone").unwrap();
    registry.refresh_servers().await.unwrap();
    operate(&["toolgate", "sync", "--apply"]).await;
    std::fs::remove_file(&switch).unwrap();
    registry.refresh_servers().await.unwrap();
    registry.refresh().await.unwrap();
    assert!(
        !listed(&registry, &max()).contains(&"flap_wipe".to_owned()),
        "the remote undid the switch"
    );
    let refused = registry.call(&max(), "flap_wipe", json!({})).await;
    assert!(refused.error().is_some(), "{refused:?}");
    assert!(listed(&registry, &max()).contains(&"flap_keep".to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_huge_remote_tool_is_left_out_and_the_official_python_sdk_reads_the_rest() {
    let Some(clients) = real_clients::installed(&["py/bin/python"]) else {
        return;
    };
    let registry = gateway(
        Registry::builder(),
        vec![hostile("schemas", "huge"), hostile("many", "many")],
    )
    .await;
    let names = listed(&registry, &max());
    assert!(
        names.contains(&"schemas_fine".to_owned()) && !names.contains(&"schemas_huge".to_owned())
    );
    let problem = problems(&registry, "schemas").join("\n");
    assert!(
        problem.contains("description is 1048576 bytes, past the 16384"),
        "{problem}"
    );
    let many = problems(&registry, "many").join("\n");
    assert!(
        many.contains("more than 1000 tools: only the first 1000 are served"),
        "{many}"
    );
    assert_eq!(
        names.iter().filter(|n| n.starts_with("many_")).count(),
        1000
    );

    let url = serve(&registry, HttpOptions::default()).await;
    let out = std::process::Command::new(clients.join("py/bin/python"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("hardening/list_tools.py"))
        .args([format!("{url}/mcp"), "manager-token".to_owned()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.lines().any(|l| l == "hello") && stdout.lines().any(|l| l == "schemas_fine"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().count(), names.len(), "every page read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_malformed_tool_is_reported_and_its_servers_others_serve_on() {
    let registry = gateway(Registry::builder(), vec![hostile("bad", "malformed")]).await;
    let names = listed(&registry, &max());
    assert!(names.contains(&"bad_fine".to_owned()), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "bad_deep" || n == "bad_noschema"),
        "{names:?}"
    );
    let problem = problems(&registry, "bad").join("\n");
    assert!(
        problem.contains("`noschema`") && problem.contains("not a valid MCP tool"),
        "{problem}"
    );
    assert!(problem.contains("`deep`"), "{problem}");
    let status = registry.servers().into_iter().next().unwrap();
    assert_eq!(status.health.as_str(), "online", "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_breaks_its_own_schema_or_a_picture_that_is_not_one_is_an_error() {
    let registry = gateway(Registry::builder(), vec![hostile("res", "results")]).await;
    let broken = registry.call(&max(), "res_structbad", json!({})).await;
    let message = broken
        .error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(message.contains("output schema refuses"), "{broken:?}");
    let image = registry.call(&max(), "res_badimage", json!({})).await;
    let message = image
        .error()
        .map(|e| e.message().to_owned())
        .unwrap_or_default();
    assert!(message.contains("not base64"), "{image:?}");
    assert_eq!(
        registry
            .call(&max(), "res_fine", json!({}))
            .await
            .into_result()
            .text_for_model(),
        "fine ran"
    );
}

/// Stands in for the application's own `lookup_order`, which fulfils the capability `order_lookup`.
#[tool(ability = "orders.manage", read_only, capability = "order_lookup")]
async fn lookup_order() -> &'static str {
    "the application's own"
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_servers_own_capability_never_stands_in_for_the_applications_tool() {
    let registry = hostile("capgrab", "capgrab");
    let registry = Registry::builder()
        .compiled_tools(["lookup_order"])
        .remote(registry)
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    assert!(
        registry.for_capability(&vera(), "order_lookup").is_none(),
        "vera may not run the app's tool"
    );
    let found = registry.for_capability(&max(), "order_lookup").unwrap();
    assert_eq!(found.name(), "lookup_order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_server_writes_is_shown_with_every_hidden_character_and_its_questions_name_it() {
    let (db, _) = database("written").await;
    let registry = Registry::builder()
        .compiled_tools(TOOLS)
        .remote(hostile("inj", "inject"))
        .remote(hostile("names", "names"))
        .remote(hostile("ask2", "ask"))
        .database(&db)
        .load()
        .await
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let tool = registry.get("inj_inject").unwrap();
    let description = tool.description();
    assert!(
        description.contains("\\u{202e}") && description.contains("\\u{1b}[2J\\u{7}"),
        "{description}"
    );
    let (code, printed) = toolgate::operator::run(&registry, ["toolgate", "servers", "list"]).await;
    assert_eq!(code, 0, "{printed}");
    assert!(
        !printed.contains('\u{1b}') && !printed.contains('\u{7}'),
        "{printed:?}"
    );
    assert!(
        printed.contains("bad\\u{1b}]0;pwned\\u{7}\\u{a}"),
        "{printed}"
    );
    assert!(
        !printed.lines().any(|l| l.trim_start().starts_with("fake:")),
        "a line of the remote's own:\n{printed}"
    );
    assert!(printed.lines().all(|l| l.len() < 600), "{printed}");

    let Outcome::InputRequired(asked) = registry.call(&max(), "ask2_ask", json!({})).await else {
        panic!("the remote's question comes up");
    };
    let message = asked.requests()["approve"]["params"]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.starts_with("The remote server `ask2` asks: Waiting for approval"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_renames_its_tools_cannot_grow_the_records_without_end() {
    let (db, path) = database("rename").await;
    let registry = Registry::builder()
        .compiled_tools(TOOLS)
        .remote(hostile("ren", "rename"))
        .database(&db)
        .load()
        .await
        .unwrap();
    for _ in 0..450 {
        registry.sync("cron").await.unwrap();
    }
    let records = sqlite_count(
        &path,
        "SELECT count(*) FROM toolgate_tools WHERE name LIKE 'ren\\_%' ESCAPE '\\'",
    );
    assert_eq!(records, 2000, "the bound on one server's records");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_list_changed_is_one_listing_a_second_and_few_notifications() {
    let registry = gateway(Registry::builder(), vec![hostile("storm", "storm")]).await;
    tokio::spawn(registry.watch(Duration::from_secs(3600)));
    let server = McpServer::new(registry.clone()).default_caller(max());
    let (client, changes) = mcp_client::connect(server).await;
    let started = std::time::Instant::now();
    let _ = registry.call(&max(), "storm_go", json!({})).await;
    // The storm: 2,000 notifications over about a second, each with a new listing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seconds = started.elapsed().as_secs() + 1;
    let told = changes.count() as u64;
    assert!(told <= seconds + 1, "{told} notifications in {seconds} s");
    drop(client);
}

#[path = "../support/mcp_client.rs"]
mod mcp_client;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_that_reach_a_caller_carry_no_address_or_type_name() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let away = RemoteServer::http("away", format!("http://127.0.0.1:{port}/mcp"))
        .public()
        .timeout(Duration::from_secs(2));
    let registry = Registry::builder().remote(away).build().unwrap();
    registry.refresh_servers().await.unwrap();
    let status = registry.servers().into_iter().next().unwrap();
    assert!(status.last_error.is_some(), "the operator sees why");
    let registry = Arc::new(registry);
    for name in ["away_lookup", "away_anything"] {
        let outcome = registry.call(&max(), name, json!({})).await;
        let text = outcome.into_result().text_for_model();
        assert!(
            !text.contains(&port.to_string())
                && !text.contains("rmcp::")
                && !text.contains("127.0.0.1"),
            "{text}"
        );
    }
}
