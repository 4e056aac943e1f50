//! How return values and errors reach the model.

use super::fixtures::*;

#[tokio::test]
async fn results_are_encoded_by_type() {
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let sum = registry
        .call(&anyone, "add", json!({ "a": 2, "b": 40 }))
        .await
        .into_result();
    assert_eq!(
        (sum.text_for_model(), sum.structured.as_deref()),
        ("42".to_owned(), Some(&json!(42)))
    );

    let page = registry
        .call(
            &viewer(),
            "find_orders",
            json!({ "query": "ada", "limit": 500 }),
        )
        .await
        .into_result();
    let page = page.structured.unwrap();
    assert_eq!(page["total"], 100);
    assert_eq!(
        page["rows"].as_array().unwrap().len(),
        50,
        "limit is clamped to 50"
    );
    assert_eq!(
        page["rows"][0],
        json!({ "url": "https://shop.example/orders/ada:RO-0", "number": "ada:RO-0", "status": "open" })
    );

    let text = registry
        .call(&anyone, "shop_overview", Value::Null)
        .await
        .into_result();
    assert_eq!(
        (text.text_for_model(), text.structured.as_deref()),
        ("3 open orders".to_owned(), None)
    );

    let picture = registry
        .call(&anyone, "picture", json!({}))
        .await
        .into_result();
    let binary: Vec<(Vec<u8>, &str)> = picture.binary_results().collect();
    assert_eq!(binary, [(vec![1, 2, 3], "image/png")]);

    let report = registry
        .call(&anyone, "report", json!({}))
        .await
        .into_result();
    assert_eq!(report.session_log.as_deref(), Some("report: 0 issues"));

    let defaults = registry
        .call(&anyone, "sort_things", json!({}))
        .await
        .into_result();
    assert_eq!(defaults.text_for_model(), "newest 3");
}

#[tokio::test]
async fn tool_errors_reach_the_model_and_internal_details_are_masked() {
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let outcome = registry
        .call(&anyone, "ship_order", json!({ "number": "RO-7" }))
        .await;
    assert_eq!(
        failure(&outcome),
        (ErrorKind::Failed, "Order RO-7 is already shipped.".into())
    );
    let result = outcome.into_result();
    assert!(result.is_error);
    assert_eq!(
        result.text_for_model(),
        "[ERROR] Order RO-7 is already shipped."
    );
    assert_eq!(
        result.structured.as_deref(),
        Some(
            &json!({ "error": { "kind": "failed", "message": "Order RO-7 is already shipped.", "data": { "number": "RO-7" } } })
        )
    );

    let masked = registry.call(&anyone, "read_config", json!({})).await;
    assert_eq!(
        failure(&masked),
        (
            ErrorKind::Internal,
            "The tool failed because of an internal error.".into()
        )
    );
    let source = masked.error().unwrap().source().unwrap();
    assert_eq!(
        source.downcast_ref::<std::io::Error>().unwrap().kind(),
        std::io::ErrorKind::NotFound,
        "operators keep the error itself; the model reads only the generic message"
    );
    let open = Registry::builder()
        .state(Ledger::default())
        .mask_internal_errors(false)
        .build()
        .unwrap();
    let detailed = open.call(&anyone, "read_config", json!({})).await;
    assert!(
        failure(&detailed).1.contains("No such file or directory"),
        "{detailed:?}"
    );
}
