//! Who sees and runs what: listings per caller, denials, read-only mode, switched-off tools, a custom authorizer.

use super::fixtures::*;

#[test]
fn lists_show_each_caller_only_what_they_may_run() {
    let registry = registry(&Ledger::default());
    let public = names(&registry.list(&Caller::anonymous()));
    assert_eq!(
        public[0], "shop_overview",
        "the overview tool is listed first"
    );
    assert!(
        public[1..].windows(2).all(|w| w[0] < w[1]),
        "the rest by name: {public:?}"
    );
    assert!(
        !public.contains(&"find_orders".to_owned())
            && !public.contains(&"confirm_order".to_owned())
    );
    assert!(
        !public.contains(&"web_search".to_owned()),
        "deferred tools are not preloaded"
    );

    let for_viewer = names(&registry.list(&viewer()));
    assert!(
        for_viewer.contains(&"find_orders".to_owned())
            && !for_viewer.contains(&"confirm_order".to_owned())
    );
    let for_manager = names(&registry.list(&manager()));
    assert!(
        for_manager.contains(&"confirm_order".to_owned())
            && for_manager.contains(&"create_customer".to_owned())
    );

    assert_eq!(
        names(&registry.list_category(&viewer(), "orders")),
        ["shop_overview", "find_orders"]
    );
    assert_eq!(
        names(&registry.list_category(&manager(), "orders")),
        ["shop_overview", "confirm_order", "find_orders"]
    );
    assert_eq!(
        names(&registry.search(&Caller::anonymous(), "search the web", 5))[0],
        "web_search"
    );
    assert_eq!(
        registry
            .for_capability(&viewer(), "order_search")
            .map(|t| t.name().to_owned()),
        Some("find_orders".to_owned())
    );
    assert!(
        registry
            .for_capability(&Caller::anonymous(), "order_search")
            .is_none()
    );
}

#[test]
fn search_ranks_what_each_caller_may_run_and_never_reveals_the_rest() {
    let registry = registry(&Ledger::default());
    let query = "confirm a pending order";
    let for_manager = names(&registry.search(&manager(), query, 3));
    assert_eq!(
        for_manager[0], "confirm_order",
        "its name holds the query's rare words: {for_manager:?}"
    );
    let for_viewer = names(&registry.search(&viewer(), query, 10));
    assert!(
        !for_viewer.contains(&"confirm_order".to_owned()),
        "the viewer may not run it, so search never shows it: {for_viewer:?}"
    );
    assert_eq!(
        for_viewer[0], "find_orders",
        "the best of what the viewer may run: {for_viewer:?}"
    );
    assert!(
        names(&registry.search(&Caller::anonymous(), query, 10))
            .iter()
            .all(|name| !["confirm_order", "find_orders"].contains(&name.as_str())),
        "nor does it show anonymous callers the tools that need abilities"
    );
    assert_eq!(
        names(&registry.search(&viewer(), "customer name", 1)),
        ["find_orders"],
        "a parameter's description counts"
    );
    assert!(registry.search(&manager(), "zzz", 10).is_empty());
}

#[tokio::test]
async fn a_denied_call_runs_nothing_and_says_so_in_the_seed_wording() {
    let ledger = Ledger::default();
    let hidden = registry(&ledger);
    let args = json!({ "number": "RO-1" });
    let outcome = hidden.call(&viewer(), "confirm_order", args.clone()).await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::UnknownTool,
            "Unknown tool `confirm_order`. List the tools to see which ones you can use.".into()
        ),
        "by default a caller learns nothing of a tool it may not run"
    );
    let registry = Registry::builder()
        .state(ledger.clone())
        .explain_denials(true)
        .build()
        .unwrap();
    let outcome = registry
        .call(&viewer(), "confirm_order", args.clone())
        .await;
    assert!(matches!(outcome, Outcome::Denied(_)));
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::Denied,
            "Your role (Viewer) is not allowed to do this.".into()
        )
    );
    assert_eq!(
        outcome.into_result().text_for_model(),
        "[ERROR] Your role (Viewer) is not allowed to do this."
    );
    let outcome = registry
        .call(&Caller::new("x"), "confirm_order", args)
        .await;
    assert_eq!(failure(&outcome).1, "You are not allowed to do this.");
    assert!(ledger.lines().is_empty(), "not even the preview ran");
}

#[tokio::test]
async fn read_only_mode_exposes_only_read_only_tools() {
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .read_only(true)
        .build()
        .unwrap();
    let listed = names(&registry.list_all(&manager()));
    assert!(listed.contains(&"find_orders".to_owned()));
    assert!(
        !listed.contains(&"confirm_order".to_owned())
            && !listed.contains(&"create_customer".to_owned())
    );
    let outcome = registry
        .call(
            &manager(),
            "create_customer",
            json!({ "name": "Ada", "email": "a@b" }),
        )
        .await;
    assert_eq!(failure(&outcome).0, ErrorKind::Unavailable);
    assert!(ledger.lines().is_empty());
}

// ANCHOR: compiled_tools
#[tokio::test]
async fn a_registry_of_some_compiled_tools_has_only_those_and_needs_only_their_state() {
    // No `Ledger`: the tools that take it are not part of this registry.
    let registry = Registry::builder().compiled_tools(["add"]).build().unwrap();
    assert_eq!(names(&registry.list(&manager())), ["add"]);
    let outcome = registry
        .call(&manager(), "find_orders", json!({ "query": "x" }))
        .await;
    assert_eq!(failure(&outcome).0, ErrorKind::UnknownTool);
    let sum = registry
        .call(&manager(), "add", json!({ "a": 2, "b": 40 }))
        .await;
    assert_eq!(sum.into_result().structured.as_deref(), Some(&json!(42)));

    let misspelt = Registry::builder().compiled_tools(["ad"]).build();
    assert!(
        matches!(&misspelt, Err(toolgate::BuildError::UnknownTool { setting: "compiled_tools", name }) if name == "ad"),
        "{:?}",
        misspelt.err()
    );
}
// ANCHOR_END: compiled_tools

#[tokio::test]
async fn operators_switch_tools_off_but_not_system_tools() {
    let registry = Registry::builder()
        .state(Ledger::default())
        .allow_only(["add"])
        .tool(
            DynamicTool::new(
                "help",
                "How to use this assistant.",
                json!({"type": "object"}),
                |_, _| async { "Ask about orders." },
            )
            .public()
            .read_only()
            .system(),
        )
        .build()
        .unwrap();
    assert_eq!(names(&registry.list(&manager())), ["add", "help"]);
    let outcome = registry
        .call(&manager(), "find_orders", json!({ "query": "x" }))
        .await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Unavailable, "This tool is switched off.".into())
    );
    assert_eq!(
        registry
            .call(&manager(), "help", Value::Null)
            .await
            .into_result()
            .text_for_model(),
        "Ask about orders."
    );

    let error = Registry::builder()
        .state(Ledger::default())
        .disable("nope")
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "`disable` names `nope`, but no tool has that name"
    );
}

#[tokio::test]
async fn a_custom_authorizer_decides_both_listing_and_calling() {
    // ANCHOR: authorizer
    let registry = Registry::builder()
        .state(Ledger::default())
        .authorizer(|caller: &Caller, tool: &Tool| {
            caller.role() == Some("Admin") || tool.allows(caller)
        })
        .build()
        .unwrap();
    // ANCHOR_END: authorizer
    let admin = Caller::new("root").with_role("Admin");
    assert!(names(&registry.list(&admin)).contains(&"confirm_order".to_owned()));
    let outcome = registry
        .call(
            &admin,
            "create_customer",
            json!({ "name": "Ada", "email": "ada@example.org" }),
        )
        .await;
    assert!(outcome.is_done());
}
