//! The error types of everyday Rust code as a tool's error: the model reads a message (masked when the
//! error is internal), and operators keep the error itself with its chain.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::error::Error;

use serde_json::json;
use toolgate::prelude::*;
use toolgate::{ErrorKind, Registry};

/// Parse a number.
#[tool(public, read_only)]
async fn parse_boxed(text: String) -> Result<u32, Box<dyn Error + Send + Sync>> {
    Ok(text.parse()?)
}

/// Parse a number, with context.
#[tool(public, read_only)]
async fn parse_anyhow(text: String) -> anyhow::Result<String> {
    use anyhow::Context;
    let number: u32 = text
        .parse()
        .with_context(|| format!("reading `{text}` as a count"))?;
    Ok(format!("{number} items"))
}

#[tokio::test]
async fn boxed_and_anyhow_errors_are_internal_errors_that_keep_their_source() {
    let registry = Registry::builder().build().unwrap();
    let anyone = Caller::anonymous();
    let done = registry
        .call(&anyone, "parse_boxed", json!({ "text": "12" }))
        .await;
    assert_eq!(done.into_result().structured.as_deref(), Some(&json!(12)));

    let boxed = registry
        .call(&anyone, "parse_boxed", json!({ "text": "twelve" }))
        .await;
    let error = boxed.error().unwrap();
    assert_eq!(error.kind(), ErrorKind::Internal);
    assert_eq!(
        error.message(),
        "The tool failed because of an internal error."
    );
    let parse = error
        .source()
        .unwrap()
        .downcast_ref::<std::num::ParseIntError>();
    assert!(
        parse.is_some(),
        "the boxed error is the source: {:?}",
        error.source()
    );

    let open = Registry::builder()
        .mask_internal_errors(false)
        .build()
        .unwrap();
    let anyhow = open
        .call(&anyone, "parse_anyhow", json!({ "text": "a few" }))
        .await;
    let error = anyhow.error().unwrap();
    assert_eq!(error.message(), "reading `a few` as a count");
    let cause = error.source().unwrap().source().unwrap();
    assert_eq!(
        cause.to_string(),
        "invalid digit found in string",
        "the chain is kept"
    );
    let fine = open
        .call(&anyone, "parse_anyhow", json!({ "text": "3" }))
        .await;
    assert_eq!(fine.into_result().text_for_model(), "3 items");
}
