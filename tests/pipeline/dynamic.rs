//! Tools defined at run time go through the same pipeline.

use super::fixtures::*;

#[tokio::test]
async fn dynamic_tools_go_through_the_same_pipeline() {
    let lookup = DynamicTool::new(
        "lookup_fact",
        "Returns a fun fact about a topic.",
        json!({ "type": "object", "properties": { "topic": { "type": "string" } }, "required": ["topic"] }),
        |args, parts: CallParts<'static>| async move {
            match args["topic"].as_str() {
                Some("Rust") => Ok(json!({ "fact": "Rust 1.0 shipped in 2015.", "for": parts.caller().id() })),
                other => Err(ToolError::new(format!("No fact stored for {}.", other.unwrap_or("?")))),
            }
        },
    )
    .ability("facts.read")
    .read_only();
    let registry = Registry::builder()
        .state(Ledger::default())
        .tool(lookup)
        .build()
        .unwrap();
    let reader = Caller::new("r").with_abilities(["facts.read"]);
    let done = registry
        .call(&reader, "lookup_fact", json!({ "topic": "Rust" }))
        .await
        .into_result();
    assert_eq!(
        done.structured.as_deref(),
        Some(&json!({ "fact": "Rust 1.0 shipped in 2015.", "for": "r" }))
    );
    let refused = registry
        .call(&reader, "lookup_fact", json!({ "topic": "PHP" }))
        .await;
    assert_eq!(failure(&refused).1, "No fact stored for PHP.");
    let invalid = registry
        .call(&reader, "lookup_fact", json!({ "topic": 3 }))
        .await;
    assert_eq!(failure(&invalid).0, ErrorKind::InvalidArguments);
    let denied = registry
        .call(
            &Caller::anonymous(),
            "lookup_fact",
            json!({ "topic": "Rust" }),
        )
        .await;
    assert_eq!(failure(&denied).0, ErrorKind::UnknownTool);
    assert!(!names(&registry.list(&Caller::anonymous())).contains(&"lookup_fact".to_owned()));

    let undeclared = DynamicTool::new("x", "X.", json!({ "type": "object" }), |_, _| async { "x" });
    let error = Registry::builder()
        .state(Ledger::default())
        .tool(undeclared)
        .build()
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "dynamic tool `x` must declare who may run it: call `.public()` (anyone), or `.ability(..)` and/or \
         `.enforced_downstream()` (its backend checks each caller), not `.public()` with either"
    );
    let bad_name = DynamicTool::new("look up", "X.", json!({ "type": "object" }), |_, _| async {
        "x"
    })
    .public();
    assert!(
        Registry::builder()
            .state(Ledger::default())
            .tool(bad_name)
            .build()
            .is_err()
    );
}
