//! [`Table`]: rows under titled, typed columns, each row with an optional link, checked before it is shown.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::chart::DisplayError;

/// The most rows and columns a table may have.
const MAX_ROWS: usize = 500;
const MAX_COLUMNS: usize = 20;

/// A table: columns with titles and types, and rows of one cell per column, each row with an optional
/// url where a person opens its record.
///
/// A tool returns one on its own, or beside its data as a field named `table`; the model gets it as a
/// Markdown table, a chat UI the value, and an MCP Apps host a drawn table with the links.
///
/// ```
/// use serde_json::json;
/// use toolgate::output::{Column, Table};
///
/// let table = Table::new([Column::text("Order"), Column::number("Total (EUR)")])
///     .title("Open orders")
///     .row_with_url(["RO-00012".into(), json!(129.5)], "https://shop.example/orders/RO-00012");
/// assert!(table.check().is_ok());
///
/// let wrong = Table::new([Column::number("Total")]).row(["a lot".into()]);
/// assert_eq!(
///     wrong.check().unwrap_err().to_string(),
///     "the table cannot be drawn: row 1, column \"Total\": \"a lot\" is not a number"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(
    inline,
    description = "A table: titled, typed columns, and rows of one cell per column."
)]
#[non_exhaustive]
pub struct Table {
    /// What the table shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The columns, in order.
    #[schemars(length(min = 1, max = MAX_COLUMNS))]
    pub columns: Vec<Column>,
    /// The rows, each with one cell per column.
    #[schemars(length(max = MAX_ROWS))]
    pub rows: Vec<TableRow>,
}

/// A column of a [`Table`]: its title and the type of its cells.
///
/// ```
/// use toolgate::output::{Column, ColumnType};
///
/// assert_eq!(Column::date("Placed").kind, ColumnType::Date);
/// assert_eq!(serde_json::to_value(Column::text("Customer")).unwrap(), serde_json::json!({ "title": "Customer", "type": "text" }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline, description = "A column: its heading and what its cells hold.")]
#[non_exhaustive]
pub struct Column {
    /// The column's heading.
    pub title: String,
    /// What its cells hold.
    #[serde(rename = "type", default)]
    pub kind: ColumnType,
}

/// What the cells of a [`Column`] hold; any cell may also be `null`, shown empty.
///
/// ```
/// use toolgate::output::ColumnType;
///
/// assert_eq!(serde_json::from_value::<ColumnType>("number".into()).unwrap(), ColumnType::Number);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// Strings.
    #[default]
    Text,
    /// Numbers, aligned right.
    Number,
    /// Dates or times as strings, e.g. `2026-11-30`.
    Date,
    /// `true` or `false`, shown as yes or no.
    Boolean,
}

/// A row of a [`Table`]: one cell per column, and where a person opens its record.
///
/// ```
/// use toolgate::output::{Column, Table};
///
/// let table = Table::new([Column::text("Order")]).row_with_url(["RO-1".into()], "https://shop.example/o/1");
/// assert_eq!(table.rows[0].url.as_deref(), Some("https://shop.example/o/1"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    inline,
    description = "A row: one cell per column, and an optional link to its record."
)]
#[non_exhaustive]
pub struct TableRow {
    /// The cells, in the columns' order: strings, numbers, booleans or `null`.
    #[schemars(schema_with = "cells_schema")]
    pub cells: Vec<Value>,
    /// An `http` or `https` link to the row's record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A plain `enum` of names, as for [`ChartKind`](super::ChartKind).
impl JsonSchema for ColumnType {
    fn schema_name() -> Cow<'static, str> {
        "ColumnType".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": ["text", "number", "date", "boolean"],
            "default": "text",
            "description": "What the column's cells hold (dates as strings such as 2026-11-30); any cell may be null."
        })
    }
}

/// The schema of a row's cells: each a string, a number, a boolean or `null`, spelled as every client
/// reads it (no bare `true` schema, no list of types).
fn cells_schema(_: &mut SchemaGenerator) -> Schema {
    let kinds = ["string", "number", "boolean", "null"].map(|kind| json!({ "type": kind }));
    json_schema!({ "type": "array", "items": { "anyOf": kinds } })
}

impl Column {
    /// A column of `kind` titled `title`.
    pub fn new(title: impl Into<String>, kind: ColumnType) -> Self {
        Column {
            title: title.into(),
            kind,
        }
    }

    /// A column of text.
    pub fn text(title: impl Into<String>) -> Self {
        Self::new(title, ColumnType::Text)
    }

    /// A column of numbers.
    pub fn number(title: impl Into<String>) -> Self {
        Self::new(title, ColumnType::Number)
    }

    /// A column of dates.
    pub fn date(title: impl Into<String>) -> Self {
        Self::new(title, ColumnType::Date)
    }

    /// A column of yes or no.
    pub fn boolean(title: impl Into<String>) -> Self {
        Self::new(title, ColumnType::Boolean)
    }

    /// Whether `cell` belongs in this column.
    fn holds(&self, cell: &Value) -> bool {
        matches!(
            (self.kind, cell),
            (_, Value::Null)
                | (ColumnType::Text | ColumnType::Date, Value::String(_))
                | (ColumnType::Number, Value::Number(_))
                | (ColumnType::Boolean, Value::Bool(_))
        )
    }

    fn expected(&self) -> &'static str {
        match self.kind {
            ColumnType::Text => "is not text",
            ColumnType::Date => "is not a date string",
            ColumnType::Number => "is not a number",
            ColumnType::Boolean => "is not true or false",
        }
    }
}

impl Table {
    /// A table with `columns` and no rows yet.
    pub fn new(columns: impl IntoIterator<Item = Column>) -> Self {
        Table {
            title: None,
            columns: columns.into_iter().collect(),
            rows: Vec::new(),
        }
    }

    /// Sets the title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds a row of `cells`, one per column.
    #[must_use]
    pub fn row(mut self, cells: impl IntoIterator<Item = Value>) -> Self {
        self.rows.push(TableRow {
            cells: cells.into_iter().collect(),
            url: None,
        });
        self
    }

    /// Adds a row of `cells` that links to `url`.
    #[must_use]
    pub fn row_with_url(
        mut self,
        cells: impl IntoIterator<Item = Value>,
        url: impl Into<String>,
    ) -> Self {
        self.rows.push(TableRow {
            cells: cells.into_iter().collect(),
            url: Some(url.into()),
        });
        self
    }

    /// Checks that the table can be drawn as it says: every row has a cell per column of the column's
    /// type, and every link is `http` or `https`.
    ///
    /// # Errors
    /// A [`DisplayError`] naming the first problem.
    pub fn check(&self) -> Result<(), DisplayError> {
        self.problem().map_or(Ok(()), |problem| {
            let what = match &self.title {
                Some(title) => format!("the table {title:?}"),
                None => "the table".to_owned(),
            };
            Err(DisplayError::new(what, problem))
        })
    }

    fn problem(&self) -> Option<String> {
        let columns = self.columns.len();
        if columns == 0 {
            return Some("it has no columns".into());
        }
        if columns > MAX_COLUMNS {
            return Some(format!("it has {columns} columns, more than {MAX_COLUMNS}"));
        }
        if self.rows.len() > MAX_ROWS {
            let rows = self.rows.len();
            return Some(format!("it has {rows} rows, more than {MAX_ROWS}"));
        }
        for (n, row) in (1..).zip(&self.rows) {
            let cells = row.cells.len();
            if cells != columns {
                return Some(format!("row {n} has {cells} cells for {columns} columns"));
            }
            for (column, cell) in self.columns.iter().zip(&row.cells) {
                if !column.holds(cell) {
                    let (title, expected) = (&column.title, column.expected());
                    return Some(format!("row {n}, column {title:?}: {cell} {expected}"));
                }
            }
            let url = row.url.as_deref().unwrap_or("https://");
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Some(format!(
                    "row {n} links to {url:?}, which is not http or https"
                ));
            }
        }
        None
    }
}
