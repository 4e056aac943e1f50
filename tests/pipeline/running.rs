//! Running a call: validation, unknown tools, panics, timeouts, cancellation, ceilings and injection.

use super::fixtures::*;

#[tokio::test]
async fn bad_arguments_get_a_message_naming_the_field_and_run_nothing() {
    let ledger = Ledger::default();
    let registry = registry(&ledger);
    let outcome = registry
        .call(
            &viewer(),
            "find_orders",
            json!({ "query": "", "limit": "ten", "colour": 1 }),
        )
        .await;
    let (kind, message) = failure(&outcome);
    assert_eq!(kind, ErrorKind::InvalidArguments);
    assert!(
        message.starts_with("Invalid arguments for `find_orders`: "),
        "{message}"
    );
    assert!(
        message.contains("`query`: \"\" is shorter than 1 character"),
        "{message}"
    );
    assert!(
        message.contains("`limit`: \"ten\" is not of type \"integer\""),
        "{message}"
    );
    assert!(message.contains("unknown argument `colour`"), "{message}");
    let data = outcome.error().unwrap().data().unwrap();
    assert_eq!(data["problems"].as_array().unwrap().len(), 3);

    let outcome = registry
        .call(
            &manager(),
            "confirm_order",
            json!({ "number": "order one" }),
        )
        .await;
    assert!(
        failure(&outcome)
            .1
            .contains("`number`: \"order one\" does not match \"^RO-[0-9]+$\"")
    );
    let outcome = registry
        .call(&manager(), "create_customer", json!({ "name": "Ada" }))
        .await;
    assert_eq!(
        failure(&outcome).1,
        "Invalid arguments for `create_customer`: missing required argument `email`. Fix them and call again."
    );
    let outcome = registry.call(&manager(), "add", json!([1, 2])).await;
    assert_eq!(
        failure(&outcome).1,
        "Invalid arguments for `add`: expected a JSON object, got [1,2]."
    );
    let outcome = registry
        .call(&manager(), "sort_things", json!({ "order": "random" }))
        .await;
    assert!(
        failure(&outcome)
            .1
            .contains("`order`: \"random\" is not one of"),
        "{outcome:?}"
    );
    assert!(ledger.lines().is_empty());
}

/// An argument the schema allows but the parameter's type cannot hold (an `i64` beyond its range, which
/// `"type": "integer"` admits) is refused by the argument's extraction, naming the argument, and the tool
/// does not run.
#[tokio::test]
async fn an_argument_its_type_cannot_hold_is_refused_naming_it() {
    let registry = registry(&Ledger::default());
    let outcome = registry
        .call(
            &manager(),
            "add",
            json!({ "a": 9_223_372_036_854_775_808_u64, "b": 1 }),
        )
        .await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::InvalidArguments,
            "argument `a`: invalid value: integer `9223372036854775808`, expected i64".into()
        )
    );
}

#[tokio::test]
async fn unknown_tools_are_a_clear_failure() {
    let registry = registry(&Ledger::default());
    let outcome = registry.call(&manager(), "serch_orders", json!({})).await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::UnknownTool,
            "Unknown tool `serch_orders`. List the tools to see which ones you can use.".into()
        )
    );
}

#[tokio::test]
async fn a_panic_becomes_a_tool_error_and_the_registry_keeps_serving() {
    let ledger = Ledger::default();
    let registry = Registry::builder()
        .state(ledger.clone())
        .mask_internal_errors(false)
        .build()
        .unwrap();
    let outcome = registry
        .call(&Caller::anonymous(), "explode", json!({}))
        .await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::Internal,
            "the tool panicked: the flux capacitor broke".into()
        )
    );
    assert_eq!(ledger.lines(), ["explode ran"]);
    let after = registry
        .call(&Caller::anonymous(), "add", json!({ "a": 1, "b": 1 }))
        .await;
    assert!(after.is_done());
}

#[tokio::test]
async fn timeouts_stop_the_tool_and_cancel_its_token() {
    let ledger = Ledger::default();
    let registry = registry(&ledger);
    let outcome = registry.call(&Caller::anonymous(), "slow", json!({})).await;
    assert_eq!(
        failure(&outcome),
        (
            ErrorKind::Timeout,
            "`slow` did not finish within 50ms and was stopped.".into()
        )
    );
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(ledger.lines(), ["slow saw its cancellation"]);
}

#[tokio::test]
async fn the_caller_can_cancel_a_call() {
    let registry = Registry::builder()
        .state(Ledger::default())
        .build()
        .unwrap();
    let token = toolgate::param::CancellationToken::new();
    let cancel = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        cancel.cancel();
    });
    let call = Call::new("slow", json!({})).cancellation(token);
    let outcome = registry.run(&Caller::anonymous(), call).await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Cancelled, "The call was cancelled.".into())
    );
}

/// A call whose caller cancelled it before it started does not run its tool at all.
#[tokio::test]
async fn a_call_cancelled_before_it_starts_runs_nothing() {
    let ledger = Ledger::default();
    let registry = registry(&ledger);
    let token = toolgate::param::CancellationToken::new();
    token.cancel();
    let call = Call::new("explode", json!({})).cancellation(token);
    let outcome = registry.run(&Caller::anonymous(), call).await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Cancelled, "The call was cancelled.".into())
    );
    assert!(ledger.lines().is_empty(), "{:?}", ledger.lines());
}

#[tokio::test]
async fn call_ceilings_count_per_session_and_bad_calls_do_not_count() {
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let search =
        |session: &str| Call::new("web_search", json!({ "query": "rust" })).session(session);
    let invalid = registry
        .run(&anyone, Call::new("web_search", json!({})).session("s1"))
        .await;
    assert_eq!(failure(&invalid).0, ErrorKind::InvalidArguments);
    assert!(registry.run(&anyone, search("s1")).await.is_done());
    assert!(registry.run(&anyone, search("s1")).await.is_done());
    let third = registry.run(&anyone, search("s1")).await;
    assert_eq!(
        failure(&third),
        (
            ErrorKind::LimitReached,
            "`web_search` may run at most 2 times per conversation and has reached that limit. Answer with what you have."
                .into()
        )
    );
    assert!(
        registry.run(&anyone, search("s2")).await.is_done(),
        "another session has its own count"
    );
    registry.end_session("s1");
    assert!(registry.run(&anyone, search("s1")).await.is_done());
}

#[tokio::test]
async fn injected_values_reach_the_tool() {
    let registry = registry(&Ledger::default());
    // ANCHOR: call
    let call = Call::new("whoami", json!({}))
        .session("conv-9")
        .tool_call_id("call_3");
    let text = registry
        .run(&viewer(), call)
        .await
        .into_result()
        .text_for_model();
    // ANCHOR_END: call
    assert_eq!(
        text,
        "hello vera@acme (Some(\"Viewer\")) tool=whoami session=Some(\"conv-9\") call=Some(\"call_3\") tenant=acme"
    );
    // A call that carries no ids is lent the tool's own invocation, and still knows which tool it is.
    let plain = registry.call(&viewer(), "whoami", json!({})).await;
    assert_eq!(
        plain.into_result().text_for_model(),
        "hello vera@acme (Some(\"Viewer\")) tool=whoami session=None call=None tenant=acme"
    );

    let updates = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&updates);
    let call = Call::new("count", json!({}))
        .on_progress(move |u| seen.lock().unwrap().push((u.progress, u.message)));
    assert!(registry.run(&Caller::anonymous(), call).await.is_done());
    let updates = updates.lock().unwrap().clone();
    assert_eq!(
        updates,
        [
            (1.0, Some("step 1".into())),
            (2.0, Some("step 2".into())),
            (3.0, Some("step 3".into()))
        ]
    );
}
