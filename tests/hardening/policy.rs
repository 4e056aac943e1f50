//! Policy that holds whatever a sub-agent does (A-B2, A-B5): a delegated caller runs with its person's
//! settings, and a tool one may not run is unknown whatever its task mode.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profiles_sub_agent_runs_with_its_persons_settings_never_another_profiles() {
    let (db, _) = database("settings").await;
    let registry = registry(&db, Registry::builder()).await;
    let operate = |args: &'static [&'static str]| {
        let registry = registry.clone();
        async move {
            let (code, out) = toolgate::operator::run(&registry, args.iter().copied()).await;
            assert_eq!(code, 0, "{args:?}: {out}");
        }
    };
    operate(&["toolgate", "profiles", "create", "narrow"]).await;
    operate(&["toolgate", "profiles", "create", "wide"]).await;
    operate(&[
        "toolgate",
        "profiles",
        "assign",
        "narrow",
        "tuned",
        "--settings",
        r#"{"key": "narrow-key", "limit": 3}"#,
    ])
    .await;
    operate(&[
        "toolgate",
        "profiles",
        "assign",
        "wide",
        "tuned",
        "--settings",
        r#"{"key": "WIDE-SECRET", "limit": 100}"#,
    ])
    .await;
    let url = serve(&registry, stateless()).await;
    let (own, _) = result_text(&call(&url, "bot-token", "tuned", json!({})).await);
    assert_eq!(own, "key=narrow-key limit=3");
    let asks = [
        json!({ "abilities": ["orders.view"], "profile": "wide" }),
        json!({ "abilities": ["orders.view"] }),
        json!({ "abilities": ["orders.view"], "profile": "narrow" }),
    ];
    for asked in asks {
        let token = delegate(&url, "bot-token", "sub", asked.clone()).await;
        let answer = call(&url, &token, "tuned", json!({})).await;
        assert_eq!(
            result_text(&answer).0,
            "key=narrow-key limit=3",
            "{asked}: {answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_one_may_not_run_is_unknown_whatever_its_task_mode() {
    let (db, _) = database("hidden_task").await;
    let registry = registry(&db, Registry::builder()).await;
    let url = serve(&registry, HttpOptions::default()).await;
    for tasks in [false, true] {
        let vera = connect(&url, "viewer-token", tasks).await;
        let answer = |name: &'static str| {
            let peer = vera.peer().clone();
            async move {
                let error = peer
                    .call_tool_once(call_params(name, json!({})))
                    .await
                    .unwrap_err();
                error.to_string().replace(name, "NAME")
            }
        };
        let (hidden, unknown) = (answer("hidden_job").await, answer("no_such_job").await);
        assert_eq!(hidden, unknown, "tasks declared: {tasks}");
        assert!(
            hidden.contains("-32602") || hidden.contains("Unknown tool"),
            "{hidden}"
        );
    }
}
