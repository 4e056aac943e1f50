//! [`Limit`] and [`Page`]: the common shape of a "search and list" tool.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize};

/// How many rows to return: absent means `DEFAULT` (20), anything above `MAX` (50) is clamped to it.
///
/// ```
/// use toolgate::Limit;
///
/// let limit: Limit = serde_json::from_value(serde_json::json!(500)).unwrap();
/// assert_eq!(limit.get(), 50);
/// let limit: Limit = serde_json::from_value(serde_json::Value::Null).unwrap();
/// assert_eq!(limit.get(), 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Limit<const DEFAULT: u32 = 20, const MAX: u32 = 50>(u32);

impl<const DEFAULT: u32, const MAX: u32> Limit<DEFAULT, MAX> {
    /// A limit of `n`, clamped to `1..=MAX`.
    pub fn new(n: u32) -> Self {
        Limit(n.clamp(1, MAX))
    }

    /// The number of rows.
    pub fn get(self) -> u32 {
        self.0
    }

    /// The number of rows as a `usize`, for slicing and `take`.
    pub fn as_usize(self) -> usize {
        self.0 as usize
    }
}

impl<const DEFAULT: u32, const MAX: u32> Default for Limit<DEFAULT, MAX> {
    fn default() -> Self {
        Self::new(DEFAULT)
    }
}

impl<'de, const DEFAULT: u32, const MAX: u32> Deserialize<'de> for Limit<DEFAULT, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let requested = Option::<u64>::deserialize(deserializer)?;
        Ok(requested.map_or_else(Self::default, |n| {
            Self::new(u32::try_from(n).unwrap_or(MAX))
        }))
    }
}

impl<const DEFAULT: u32, const MAX: u32> JsonSchema for Limit<DEFAULT, MAX> {
    fn schema_name() -> Cow<'static, str> {
        "Limit".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "minimum": 1,
            "default": DEFAULT,
            "description": format!("Rows to return: default {DEFAULT}, at most {MAX}."),
        })
    }
}

/// One page of results: how many match in all, and the rows shown, each with a link to its record.
///
/// ```
/// use toolgate::Page;
/// # #[derive(serde::Serialize, schemars::JsonSchema)] struct OrderRow { number: String }
///
/// let rows = vec![OrderRow { number: "RO-1".into() }];
/// let page = Page::new(12, rows, |row| format!("https://shop.example/orders/{}", row.number));
/// let json = serde_json::to_value(&page).unwrap();
/// assert_eq!(json["rows"][0]["url"], "https://shop.example/orders/RO-1");
/// assert_eq!(json["total"], 12);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Page<T> {
    /// How many records match, of which `rows` shows the first ones.
    pub total: u64,
    /// The rows shown.
    pub rows: Vec<Row<T>>,
}

/// A row of a [`Page`]: the record's fields and its `url`.
///
/// ```
/// use toolgate::Page;
///
/// let page = Page::new(7, ["RO-1", "RO-2"], |n| format!("https://shop.example/orders/{n}"));
/// assert_eq!(page.rows[1].item, "RO-2");
/// assert_eq!(page.rows[1].url, "https://shop.example/orders/RO-2");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Row<T> {
    /// Where a person can open the record; include it in answers.
    pub url: String,
    /// The record's fields.
    #[serde(flatten)]
    pub item: T,
}

impl<T> Page<T> {
    /// A page of `rows` out of `total`, with each row's url made by `url`.
    pub fn new(total: u64, rows: impl IntoIterator<Item = T>, url: impl Fn(&T) -> String) -> Self {
        let rows = rows
            .into_iter()
            .map(|item| Row {
                url: url(&item),
                item,
            })
            .collect();
        Page { total, rows }
    }
}
