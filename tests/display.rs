//! Tables and charts in-process: what the model reads, what a chat UI gets, what is refused, the schemas
//! published, and the built-in `show_table` and `draw_chart`.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use serde_json::{Value, json};
use toolgate::output::{CHART_KEY, Dataset};
use toolgate::output::{Chart, ChartKind, Column, Table};
use toolgate::prelude::*;
use toolgate::registry::BuiltIn;
use toolgate::{BuildError, DynamicTool, ErrorKind};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sales {
    /// Sales per month.
    chart: Chart,
    total: f64,
}

/// Sales per month, as a bar chart beside the total; `months` shorter than the data draws wrong.
#[tool(public, read_only)]
async fn sales(months: u32) -> Sales {
    let labels = ["Jan", "Feb", "Mar"].into_iter().take(months as usize);
    let chart = Chart::new(ChartKind::Bar, "Sales")
        .labels(labels)
        .dataset("2026", [120.0, 80.5, 99.0]);
    Sales {
        chart,
        total: 299.5,
    }
}

/// Open orders as a table; `link` is where the first row points.
#[tool(public, read_only)]
async fn open_orders(link: String) -> Table {
    Table::new([
        Column::text("Order"),
        Column::number("Total"),
        Column::boolean("Paid"),
    ])
    .title("Open | orders")
    .row_with_url(["RO-1".into(), json!(12.5), true.into()], link)
    .row(["RO-2".into(), Value::Null, false.into()])
}

/// A plain result that happens to have a `table` field naming a database table.
#[tool(public, read_only)]
async fn row_count() -> Value {
    json!({ "table": "orders", "rows": 30 })
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct MaybeChart {
    chart: Option<Chart>,
}

/// A chart only when there is data to draw.
#[tool(public, read_only)]
async fn maybe_chart() -> MaybeChart {
    MaybeChart { chart: None }
}

fn registry() -> Registry {
    Registry::builder()
        .built_in(BuiltIn::ShowTable)
        .built_in(BuiltIn::DrawChart)
        .build()
        .unwrap()
}

async fn call(registry: &Registry, tool: &str, args: Value) -> Outcome {
    registry.call(&Caller::new("ada"), tool, args).await
}

#[tokio::test]
async fn a_chart_beside_data_reaches_the_model_as_a_table_and_the_ui_unchanged() {
    let result = call(&registry(), "sales", json!({ "months": 3 }))
        .await
        .into_result();
    assert!(!result.is_error, "{result:?}");
    let structured = result.structured.as_ref().unwrap();
    assert_eq!(structured["chart"]["type"], "bar");
    assert_eq!(
        structured["chart"]["datasets"][0]["data"],
        json!([120.0, 80.5, 99.0])
    );
    assert_eq!(structured["total"], 299.5);
    assert_eq!(
        result.text_for_model(),
        "Sales (bar chart)\n|  | 2026 |\n|---|---|\n| Jan | 120 |\n| Feb | 80.5 |\n| Mar | 99 |\n\n{\"total\":299.5}"
    );
}

#[tokio::test]
async fn a_chart_whose_labels_and_data_disagree_is_refused_naming_the_problem() {
    let outcome = call(&registry(), "sales", json!({ "months": 2 })).await;
    let error = outcome.error().expect("refused");
    assert_eq!(error.kind(), ErrorKind::Failed);
    assert_eq!(
        error.message(),
        "the chart \"Sales\" cannot be drawn: dataset \"2026\" has 3 values for 2 labels"
    );
}

#[tokio::test]
async fn a_table_reaches_the_model_as_markdown_and_a_bad_link_is_refused() {
    let registry = registry();
    let result = call(
        &registry,
        "open_orders",
        json!({ "link": "https://shop.example/o/1" }),
    )
    .await
    .into_result();
    assert_eq!(
        result.text_for_model(),
        "Open | orders\n| Order | Total | Paid |\n|---|---|---|\n| [RO-1](https://shop.example/o/1) | 12.5 | yes |\n| RO-2 |  | no |"
    );
    assert_eq!(
        result.structured.unwrap()["table"]["rows"][1]["cells"],
        json!(["RO-2", null, false])
    );

    let outcome = call(
        &registry,
        "open_orders",
        json!({ "link": "javascript:alert(1)" }),
    )
    .await;
    assert_eq!(
        outcome.error().expect("refused").message(),
        "the table \"Open | orders\" cannot be drawn: row 1 links to \"javascript:alert(1)\", which is not http or https"
    );
}

#[tokio::test]
async fn a_field_named_table_that_is_no_table_is_left_alone() {
    let registry = registry();
    let result = call(&registry, "row_count", json!({})).await.into_result();
    assert!(!result.is_error);
    assert_eq!(result.text_for_model(), r#"{"rows":30,"table":"orders"}"#);
    assert!(!registry.get("row_count").unwrap().shows_view());
    let nothing = call(&registry, "maybe_chart", json!({}))
        .await
        .into_result();
    assert_eq!(
        nothing.text_for_model(),
        r#"{"chart":null}"#,
        "no chart, nothing to check"
    );
}

#[test]
fn tools_that_return_charts_or_tables_say_so_and_publish_their_schemas() {
    let registry = registry();
    for name in [
        "sales",
        "open_orders",
        "show_table",
        "draw_chart",
        "maybe_chart",
    ] {
        assert!(registry.get(name).unwrap().shows_view(), "{name}");
    }
    let sales = registry.get("sales").unwrap();
    let chart = &sales.output_schema().unwrap()["properties"]["chart"];
    assert_eq!(chart["description"], "Sales per month.");
    assert_eq!(
        chart["properties"]["type"]["enum"],
        json!(["bar", "line", "pie", "doughnut"]),
        "a plain enum, which every model API reads"
    );
    let dataset = &chart["properties"]["datasets"]["items"];
    assert_eq!(
        dataset["description"],
        "A series: its name and one value per label."
    );
    let table = registry.get("open_orders").unwrap();
    let schema = table.output_schema().unwrap();
    assert_eq!(schema["required"], json!(["table"]));
    assert!(schema["properties"]["table"]["properties"]["rows"].is_object());
}

#[tokio::test]
async fn draw_chart_draws_what_the_model_hands_it_and_refuses_what_cannot_be_drawn() {
    let registry = registry();
    let tool = registry.get("draw_chart").unwrap();
    assert!(tool.is_public() && tool.is_read_only() && tool.is_system());
    assert_eq!(tool.source(), &toolgate::Source::BuiltIn);
    let pie = json!({
        "type": "pie", "title": "Orders by status", "labels": ["pending", "shipped"],
        "datasets": [{ "label": "Orders", "data": [3, 9] }]
    });
    let result = call(&registry, "draw_chart", pie.clone())
        .await
        .into_result();
    let drawn = &result.structured.as_ref().unwrap()[CHART_KEY];
    assert_eq!(drawn["labels"], pie["labels"]);
    assert!(result.text_for_model().contains("| shipped | 9 |"));

    let cases = [
        (
            json!({ "type": "pie", "title": "T", "labels": ["a"], "datasets": [
            { "label": "x", "data": [1] }, { "label": "y", "data": [2] }] }),
            "a pie chart draws one dataset, not 2",
        ),
        (
            json!({ "type": "doughnut", "title": "T", "labels": ["a", "b"], "datasets": [{ "label": "x", "data": [1, -2] }] }),
            "the slice \"b\" is negative",
        ),
        (
            json!({ "type": "line", "title": "T", "labels": [], "datasets": [{ "label": "x", "data": [] }] }),
            "`labels`",
        ),
        (
            json!({ "type": "radar", "title": "T", "labels": ["a"], "datasets": [{ "label": "x", "data": [1] }] }),
            "`type`",
        ),
    ];
    for (args, problem) in cases {
        let outcome = call(&registry, "draw_chart", args.clone()).await;
        let error = outcome
            .error()
            .unwrap_or_else(|| panic!("{args} is refused"));
        assert_eq!(error.kind(), ErrorKind::InvalidArguments, "{args}");
        assert!(
            error.message().contains(problem),
            "{args}: {}",
            error.message()
        );
    }
}

#[tokio::test]
async fn show_table_refuses_rows_that_do_not_fit_their_columns() {
    let registry = registry();
    let table = json!({
        "title": "Stock", "columns": [{ "title": "Item" }, { "title": "Units", "type": "number" }],
        "rows": [{ "cells": ["lamp", 12] }, { "cells": ["desk", "three"] }]
    });
    let error = call(&registry, "show_table", table)
        .await
        .error()
        .cloned()
        .expect("refused");
    assert_eq!(
        error.message(),
        "Invalid arguments for `show_table`: the table \"Stock\" cannot be drawn: row 2, column \"Units\": \"three\" is not a number. Fix them and call again."
    );
}

#[test]
fn the_built_ins_are_there_only_when_switched_on() {
    let plain = Registry::builder().build().unwrap();
    assert!(plain.get("show_table").is_none() && plain.get("draw_chart").is_none());
    let charts = Registry::builder()
        .built_in(BuiltIn::DrawChart)
        .build()
        .unwrap();
    assert!(charts.get("draw_chart").is_some() && charts.get("show_table").is_none());
}

#[tokio::test]
async fn an_app_tool_replaces_a_built_in_only_when_it_says_so() {
    let own = || {
        DynamicTool::new(
            "show_table",
            "Show a table in the shop's own style.",
            json!({ "type": "object" }),
            |_args, _parts| async { "shown the shop's way" },
        )
        .public()
        .read_only()
    };
    let error = Registry::builder()
        .built_in(BuiltIn::ShowTable)
        .tool(own())
        .build()
        .unwrap_err();
    assert!(matches!(&error, BuildError::BuiltInClash { name, .. } if name == "show_table"));
    assert_eq!(
        error.to_string(),
        "two tools are named `show_table`: toolgate's built-in one, and one at a dynamic tool; say \
         `overrides_builtin` on yours to replace the built-in, or rename it with `name = \"...\"`"
    );

    let registry = Registry::builder()
        .built_in(BuiltIn::ShowTable)
        .tool(own().overrides_builtin())
        .build()
        .unwrap();
    let tool = registry.get("show_table").unwrap();
    assert_eq!(tool.source(), &toolgate::Source::Dynamic);
    let result = call(&registry, "show_table", json!({})).await.into_result();
    assert_eq!(result.text_for_model(), "shown the shop's way");

    let stray = DynamicTool::new(
        "tool_search",
        "Mine.",
        json!({ "type": "object" }),
        |_a, _p| async { "" },
    )
    .public()
    .overrides_builtin();
    let error = Registry::builder().tool(stray).build().unwrap_err();
    assert_eq!(
        error,
        BuildError::NotBuiltIn {
            tool: "tool_search".into()
        }
    );
}

#[test]
fn a_chart_built_in_code_is_checked_the_same_way() {
    let chart = Chart::new(ChartKind::Line, "Visits")
        .labels(["Mon", "Tue"])
        .dataset("Visits", [1.0, f64::NAN]);
    assert_eq!(
        chart.check().unwrap_err().to_string(),
        "the chart \"Visits\" cannot be drawn: dataset \"Visits\" has no number for \"Tue\""
    );
    let many = Chart::new(ChartKind::Bar, "Many").labels(["a"]);
    let many = (0..13).fold(many, |c, n| c.dataset(n.to_string(), [1.0]));
    assert!(
        many.check()
            .unwrap_err()
            .to_string()
            .ends_with("it has 13 datasets, more than 12")
    );
    let dataset: &Dataset = &many.datasets[0];
    assert_eq!(dataset.label, "0");
}
