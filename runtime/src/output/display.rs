//! A result's `chart` and `table`, found, checked and rendered as text: what the model and text-only hosts
//! read in place of the drawing.

use std::fmt::Write as _;
use std::sync::LazyLock;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::chart::{Chart, DisplayError};
use super::table::Table;

/// The key of a result's chart, beside its data: what chat UIs draw under the answer.
///
/// ```
/// use toolgate::output::{CHART_KEY, Chart, ChartKind, IntoOutput};
///
/// let chart = Chart::new(ChartKind::Pie, "Orders by status").labels(["pending", "shipped"]).dataset("Orders", [3.0, 9.0]);
/// let result = chart.into_output().unwrap();
/// assert_eq!(result.structured.unwrap()[CHART_KEY]["type"], "pie");
/// assert!(result.content[0].as_text().unwrap().starts_with("Orders by status (pie chart)\n|  | Orders |"));
/// ```
pub const CHART_KEY: &str = "chart";
/// The key of a result's table, beside its data.
///
/// ```
/// use toolgate::output::{Column, IntoOutput, TABLE_KEY, Table};
///
/// let table = Table::new([Column::text("Order"), Column::boolean("Paid")])
///     .row_with_url(["RO-1".into(), true.into()], "https://shop.example/o/1");
/// let result = table.into_output().unwrap();
/// assert_eq!(result.structured.unwrap()[TABLE_KEY]["rows"][0]["cells"][1], true);
/// assert_eq!(result.content[0].as_text().unwrap(), "| Order | Paid |\n|---|---|\n| [RO-1](https://shop.example/o/1) | yes |");
/// ```
pub const TABLE_KEY: &str = "table";

/// The text the model reads for a structured value that holds a chart or a table: each as a Markdown
/// table, then the rest of the data as JSON. `None` when it holds neither.
///
/// # Errors
/// When a chart or table is there but cannot be drawn as it says, or does not have their shape.
pub(crate) fn describe(value: &Value) -> Result<Option<String>, DisplayError> {
    let Some(object) = value.as_object() else {
        return Ok(None);
    };
    let chart = object.get(CHART_KEY).filter(|v| is_chart(v));
    let table = object.get(TABLE_KEY).filter(|v| is_table(v));
    if chart.is_none() && table.is_none() {
        return Ok(None);
    }
    let mut text = String::new();
    if let Some(chart) = chart {
        let chart = Chart::deserialize(chart)
            .map_err(|e| DisplayError::new("the chart".into(), e.to_string()))?;
        chart.check()?;
        chart_text(&chart, &mut text);
    }
    if let Some(table) = table {
        let table = Table::deserialize(table)
            .map_err(|e| DisplayError::new("the table".into(), e.to_string()))?;
        table.check()?;
        table_text(&table, &mut text);
    }
    let shown =
        |key: &str| key == CHART_KEY && chart.is_some() || key == TABLE_KEY && table.is_some();
    let rest: Map<String, Value> = object
        .iter()
        .filter(|(key, _)| !shown(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !rest.is_empty() {
        text.push_str(&Value::Object(rest).to_string());
    }
    Ok(Some(text.trim_end().to_owned()))
}

/// The text of a chart or table returned on its own, written by `write`.
pub(crate) fn alone<T>(shown: &T, write: fn(&T, &mut String)) -> String {
    let mut text = String::new();
    write(shown, &mut text);
    text.trim_end().to_owned()
}

/// Whether a value claims to be a chart: an object with a `type` and `datasets`.
fn is_chart(value: &Value) -> bool {
    value.get("type").is_some_and(Value::is_string) && value.get("datasets").is_some()
}

/// Whether a value claims to be a table: an object with `columns` and `rows`.
fn is_table(value: &Value) -> bool {
    value.get("columns").is_some() && value.get("rows").is_some()
}

/// A chart as the model reads it: its title and kind, then a Markdown table of its values.
pub(crate) fn chart_text(chart: &Chart, text: &mut String) {
    let _ = writeln!(text, "{} ({} chart)", chart.title, chart.kind.as_str());
    let headings =
        std::iter::once(String::new()).chain(chart.datasets.iter().map(|d| d.label.clone()));
    let rows = chart.labels.iter().enumerate().map(|(i, label)| {
        let values = chart.datasets.iter().map(move |d| d.data[i].to_string());
        std::iter::once(label.clone()).chain(values).collect()
    });
    markdown(headings.collect(), rows, text);
}

/// A table as the model reads it: its title, then a Markdown table with each row's link on its first cell.
pub(crate) fn table_text(table: &Table, text: &mut String) {
    if let Some(title) = &table.title {
        let _ = writeln!(text, "{title}");
    }
    let headings = table.columns.iter().map(|c| c.title.clone()).collect();
    let rows = table.rows.iter().map(|row| {
        let mut cells: Vec<String> = row.cells.iter().map(cell_text).collect();
        if let (Some(url), Some(first)) = (&row.url, cells.first_mut()) {
            *first = format!("[{first}]({url})");
        }
        cells
    });
    markdown(headings, rows, text);
}

fn cell_text(cell: &Value) -> String {
    match cell {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        other => other.to_string(),
    }
}

/// A Markdown table of `headings` and `rows`, with cells made safe for it, ended by a blank line.
fn markdown(headings: Vec<String>, rows: impl Iterator<Item = Vec<String>>, text: &mut String) {
    let line = |cells: &[String], text: &mut String| {
        text.push('|');
        for cell in cells {
            let cell = cell.replace('|', "\\|").replace(['\n', '\r'], " ");
            let _ = write!(text, " {cell} |");
        }
        text.push('\n');
    };
    line(&headings, text);
    text.push('|');
    text.push_str(&"---|".repeat(headings.len()));
    text.push('\n');
    for row in rows {
        line(&row, text);
    }
    text.push('\n');
}

/// The output schemas of a bare chart and a bare table, as toolgate publishes them, to recognise them in
/// a tool's output schema.
static SCHEMAS: LazyLock<[Value; 2]> = LazyLock::new(|| {
    let chart = crate::schema::output_schema(|g| Some(Chart::json_schema(g)));
    let table = crate::schema::output_schema(|g| Some(Table::json_schema(g)));
    [chart, table].map(|schema| {
        let mut schema = schema.unwrap_or_default();
        strip_annotations(&mut schema);
        schema
    })
});

/// Whether a tool's output schema has a `chart` or `table` property of toolgate's own type: its results
/// can be drawn by the MCP App. Toolgate's own schemas are made only once some tool has such a property.
pub(crate) fn shows_view(output: &Value) -> bool {
    let properties = &output["properties"];
    [CHART_KEY, TABLE_KEY].iter().enumerate().any(|(i, key)| {
        properties
            .get(*key)
            .is_some_and(|p| is_schema(p, &SCHEMAS[i]))
    })
}

/// Whether `property` is `ours`, maybe nullable, whatever the field's own description.
fn is_schema(property: &Value, ours: &Value) -> bool {
    let mut candidate = property.clone();
    strip_annotations(&mut candidate);
    if candidate == *ours {
        return true;
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        candidate[*key]
            .as_array()
            .is_some_and(|branches| branches.iter().any(|b| is_schema(b, ours)))
    })
}

fn strip_annotations(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut() {
        for key in ["$schema", "title", "description", "default"] {
            object.remove(key);
        }
    }
}
