//! An operator's configuration file over the code's settings.

use super::fixtures::*;

#[tokio::test]
async fn an_operator_file_switches_tools_and_sets_settings_over_the_code() {
    let path = std::env::temp_dir().join(format!("toolgate-config-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        r#"
        first = ["add"]
        default_timeout_secs = 0.05

        [tools.find_orders]
        enabled = false

        [tools.shop_overview]
        enabled = true

        [tools.whoami.settings]
        greeting = "hi"
        "#,
    )
    .unwrap();
    let config = toolgate::registry::Config::load(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .settings("whoami", json!({ "greeting": "hello", "unused": 1 }))
        .disable("shop_overview")
        .config(config)
        .build()
        .unwrap();

    let listed = names(&registry.list(&manager()));
    assert_eq!(listed[0], "add");
    assert!(listed.contains(&"shop_overview".to_owned()));
    assert!(!listed.contains(&"find_orders".to_owned()));
    let refused = registry
        .call(&manager(), "find_orders", json!({ "query": "x" }))
        .await;
    assert_eq!(failure(&refused).0, ErrorKind::Unavailable);
    assert!(ledger.lines().is_empty());
    let greeted = registry
        .call(&Caller::new("ada@acme"), "whoami", json!({}))
        .await;
    assert!(
        greeted
            .into_result()
            .text_for_model()
            .starts_with("hi ada@acme")
    );
    let stalled = registry.call(&manager(), "stall", json!({})).await;
    assert_eq!(
        failure(&stalled),
        (
            ErrorKind::Timeout,
            "`stall` did not finish within 50ms and was stopped.".into()
        )
    );

    let json =
        toolgate::registry::Config::from_json(r#"{ "read_only": true, "tools": {} }"#).unwrap();
    let read_only = Registry::builder()
        .state(Ledger::default())
        .config(json)
        .build()
        .unwrap();
    let listed = read_only.list_all(&manager());
    assert!(listed.len() > 3 && listed.iter().all(|t| t.is_read_only()));
    assert!(
        registry.get("confirm_order").is_some()
            && !listed.iter().any(|t| t.name() == "confirm_order")
    );

    let typo = toolgate::registry::Config::from_toml("[tools.ship]\nenabeld = false").unwrap_err();
    assert!(
        typo.to_string().contains("unknown field `enabeld`"),
        "{typo}"
    );
    let bad = toolgate::registry::Config::from_toml("default_timeout_secs = -1").unwrap_err();
    assert_eq!(
        bad.to_string(),
        "configuration: `default_timeout_secs` must be a positive number of seconds, not -1"
    );
    let missing = toolgate::registry::Config::load("/nonexistent/toolgate.toml").unwrap_err();
    assert!(
        missing
            .to_string()
            .starts_with("configuration /nonexistent/toolgate.toml: ")
    );
}

#[test]
fn the_bounds_of_an_operators_file_are_checked_as_it_is_read() {
    use toolgate::registry::Config;
    let bounds = Config::from_toml(
        "max_concurrent_calls = 32\nmax_calls_per_caller = 4\nmax_unfinished_tasks_per_caller = 8\n\
         count_window_secs = 3600\naudit_retention_days = 30",
    )
    .unwrap();
    assert_eq!(bounds.max_calls_per_caller, Some(4));
    for (file, refused) in [
        (
            "max_concurrent_calls = 0",
            "`max_concurrent_calls` must be from 1 to 1000000, not 0",
        ),
        (
            "count_window_secs = 0",
            "`count_window_secs` must be from 1",
        ),
        (
            "audit_retention_days = 99999999",
            "`audit_retention_days` must be from 1 to 36500",
        ),
        ("max_calls_per_caller = -1", "invalid value"),
    ] {
        let error = Config::from_toml(file).unwrap_err().to_string();
        assert!(error.contains(refused), "{file}: {error}");
    }
    assert!(
        Config::from_toml("audit_retention_days = 0").is_ok(),
        "0 keeps every call"
    );
}
