//! `#[tool(overrides_builtin)]`: an app's own `show_table` replaces the built-in, and an app's `draw_chart`
//! that does not say so stops the build, naming where it is defined.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use serde_json::{Value, json};
use toolgate::registry::BuiltIn;
use toolgate::{BuildError, Caller, Registry, Source, tool};

// ANCHOR: override
/// Show a table the shop's way: as a list of order numbers.
#[tool(public, read_only, overrides_builtin)]
async fn show_table(rows: Vec<String>) -> String {
    rows.join(", ")
}
// ANCHOR_END: override

/// Draw a chart as the shop's reporting service does.
#[tool(public, read_only)]
async fn draw_chart(title: String) -> String {
    format!("drawn: {title}")
}

#[tokio::test]
async fn an_app_tool_that_says_overrides_builtin_replaces_it() {
    let registry = Registry::builder()
        .built_in(BuiltIn::ShowTable)
        .build()
        .unwrap();
    let tool = registry.get("show_table").unwrap();
    assert!(tool.overrides_builtin());
    assert!(matches!(tool.source(), Source::Compiled { .. }));
    let args: Value = json!({ "rows": ["RO-1", "RO-2"] });
    let result = registry
        .call(&Caller::anonymous(), "show_table", args)
        .await
        .into_result();
    assert_eq!(result.text_for_model(), "RO-1, RO-2");
}

#[test]
fn an_app_tool_with_a_built_in_name_stops_the_build_naming_both() {
    let error = Registry::builder()
        .built_in(BuiltIn::DrawChart)
        .build()
        .unwrap_err();
    let BuildError::BuiltInClash { name, tool } = &error else {
        panic!("unexpected error: {error}")
    };
    assert_eq!(name, "draw_chart");
    let line = line_of("async fn draw_chart");
    assert!(
        tool.ends_with(&format!("overrides.rs:{line}")),
        "{tool} is where the app's tool is"
    );
    assert!(
        error
            .to_string()
            .contains("say `overrides_builtin` on yours"),
        "{error}"
    );
    // Without the built-in switched on, the app's tool is just a tool.
    assert!(
        Registry::builder()
            .build()
            .unwrap()
            .get("draw_chart")
            .is_some()
    );
}

fn line_of(text: &str) -> usize {
    include_str!("overrides.rs")
        .lines()
        .position(|l| l.contains(text))
        .unwrap()
        + 1
}
