//! Deferred tools and `tool_search`: who is offered the search, what it finds for whom, and `defer` modes.

use toolgate::Defer;
use toolgate::registry::{TOOL_SEARCH, tools_found};

use super::fixtures::*;

/// The fixtures, narrowed to two reads and the deferred refund (and the system tools).
fn narrowed(ledger: &Ledger) -> Registry {
    Registry::builder()
        .state(ledger.clone())
        .allow_only(["add", "find_orders", "refund_order"])
        .build()
        .unwrap()
}

async fn search(registry: &Registry, caller: &Caller, query: &str) -> Vec<String> {
    let outcome = registry
        .call(caller, TOOL_SEARCH, json!({ "query": query, "limit": 20 }))
        .await;
    let result = outcome.into_result();
    assert!(!result.is_error, "{result:?}");
    tools_found(&result)
}

#[test]
fn tool_search_is_offered_exactly_to_callers_who_may_run_a_deferred_tool() {
    let registry = narrowed(&Ledger::default());
    let manager_sees = names(&registry.list(&manager()));
    assert!(
        manager_sees.contains(&TOOL_SEARCH.to_owned())
            && !manager_sees.contains(&"refund_order".to_owned()),
        "the refund is deferred for the manager, and the search that finds it is listed: {manager_sees:?}"
    );
    assert_eq!(names(&registry.list_deferred(&manager())), ["refund_order"]);
    assert!(names(&registry.list_all(&manager())).contains(&"refund_order".to_owned()));
    for caller in [viewer(), Caller::anonymous()] {
        let sees = names(&registry.list(&caller));
        assert!(
            !sees.contains(&TOOL_SEARCH.to_owned()),
            "{} may run nothing deferred, so no search is offered: {sees:?}",
            caller.id()
        );
        assert!(registry.list_deferred(&caller).is_empty());
    }
    let everything = super::fixtures::registry(&Ledger::default());
    assert!(
        names(&everything.list(&Caller::anonymous())).contains(&TOOL_SEARCH.to_owned()),
        "anyone may run the deferred web_search of the full fixtures"
    );
}

#[tokio::test]
async fn tool_search_returns_full_definitions_and_never_a_tool_the_caller_may_not_run() {
    let ledger = Ledger::default();
    let registry = narrowed(&ledger);
    let outcome = registry
        .call(
            &manager(),
            TOOL_SEARCH,
            json!({ "query": "refund an order" }),
        )
        .await;
    let found = outcome.into_result().structured.unwrap();
    let first = &found["tools"][0];
    assert_eq!(first["name"], "refund_order", "{found}");
    assert_eq!(
        first["inputSchema"]["properties"]["number"]["type"], "string",
        "the full definition, so the model can call it next: {first}"
    );
    assert_eq!(
        first["description"],
        "Refund an order in full, back to the card it was paid with."
    );

    let for_viewer = search(&registry, &viewer(), "refund an order").await;
    assert!(
        !for_viewer.contains(&"refund_order".to_owned()),
        "{for_viewer:?}"
    );
    assert_eq!(
        for_viewer,
        ["find_orders"],
        "the only order tool the viewer may run"
    );
    let for_anyone = search(&registry, &Caller::anonymous(), "refund an order").await;
    assert!(for_anyone.is_empty(), "{for_anyone:?}");
    let all = search(&registry, &manager(), "order add number tool search find").await;
    assert!(
        !all.contains(&TOOL_SEARCH.to_owned()),
        "the search never returns itself: {all:?}"
    );
    assert!(ledger.lines().is_empty(), "searching runs nothing");

    let found = registry
        .call(&manager(), "refund_order", json!({ "number": "RO-7" }))
        .await;
    assert_eq!(
        found.into_result().text_for_model(),
        "RO-7 refunded",
        "a deferred tool runs by name"
    );

    for bad in [
        json!({}),
        json!({ "query": "" }),
        json!({ "query": "x", "limit": 0 }),
        json!({ "query": "x", "limit": 21 }),
    ] {
        let outcome = registry.call(&manager(), TOOL_SEARCH, bad.clone()).await;
        assert_eq!(failure(&outcome).0, ErrorKind::InvalidArguments, "{bad}");
    }
}

#[test]
fn defer_modes_follow_the_registrys_threshold() {
    let hello = DynamicTool::new(
        "hello",
        "Say hello.",
        json!({ "type": "object" }),
        |_, _| async { "hello" },
    )
    .public()
    .read_only()
    .defer_as(Defer::Never);
    let build = |threshold| {
        Registry::builder()
            .state(Ledger::default())
            .tool(hello.clone())
            .allow_only(["add", "find_orders", "hello", "web_search"])
            .defer_above(threshold)
            .build()
            .unwrap()
    };
    let few = build(5);
    assert_eq!(
        names(&few.list_deferred(&viewer())),
        ["web_search"],
        "below the threshold only `defer` tools are deferred"
    );
    let many = build(2);
    assert_eq!(
        names(&many.list_deferred(&viewer())),
        ["add", "find_orders", "web_search"]
    );
    let listed = names(&many.list(&viewer()));
    assert!(
        listed.contains(&"hello".to_owned()) && listed.contains(&TOOL_SEARCH.to_owned()),
        "a `never` tool stays loaded however many tools there are: {listed:?}"
    );
    assert_eq!(
        names(&many.list_deferred(&Caller::anonymous())),
        ["add", "web_search"],
        "the count is the caller's own: anyone may run three tools here, more than two"
    );
    assert_eq!(
        many.get(TOOL_SEARCH).unwrap().defer(),
        Defer::Never,
        "the search itself is never deferred"
    );
}

#[test]
fn an_apps_own_tool_search_clashes_with_the_built_in() {
    let mine = DynamicTool::new(
        TOOL_SEARCH,
        "Mine.",
        json!({ "type": "object" }),
        |_, _| async { "mine" },
    )
    .public();
    let clash = Registry::builder()
        .state(Ledger::default())
        .tool(mine)
        .build()
        .unwrap_err();
    assert_eq!(
        clash.to_string(),
        "two tools are named `tool_search`: toolgate's built-in one, which cannot be replaced, and one at a \
         dynamic tool; rename yours with `name = \"...\"`",
        "an app's own tool_search clashes with the built-in, naming both"
    );
}
