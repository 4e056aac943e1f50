//! [`Chart`]: a bar, line, pie or doughnut chart a tool returns beside its data, checked before it is shown.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// The most labels, and so values per dataset, a chart may have: more would draw as noise.
const MAX_LABELS: usize = 500;
/// The most datasets a bar or line chart may have.
const MAX_DATASETS: usize = 12;

/// A chart: its kind, a title, one label per point and one or more datasets with a value per label. The
/// shape is Chart.js's, as chat UIs read it: `{"type", "title", "labels", "datasets": [{"label", "data"}]}`.
///
/// A tool returns one on its own, or beside its data as a field named `chart`; either way the model gets a
/// table of the numbers, a chat UI the value, and an MCP Apps host a drawing. A chart whose datasets
/// and labels disagree is refused when the tool returns it, with a tool error naming the problem.
///
/// ```rust,standalone_crate
/// use toolgate::output::{Chart, ChartKind};
/// use toolgate::prelude::*;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct OrdersPerDay {
///     chart: Chart,
///     total: u32,
/// }
///
/// /// Orders per day, drawn as a line.
/// #[tool(public, read_only)]
/// async fn orders_per_day() -> OrdersPerDay {
///     let chart = Chart::new(ChartKind::Line, "Orders per day")
///         .labels(["Mon", "Tue", "Wed"])
///         .dataset("Orders", [4.0, 7.0, 5.0]);
///     OrdersPerDay { chart, total: 16 }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let result = registry.call(&Caller::anonymous(), "orders_per_day", serde_json::json!({})).await.into_result();
/// assert_eq!(result.structured.as_ref().unwrap()["chart"]["datasets"][0]["data"][1], 7.0);
/// assert!(result.text_for_model().contains("| Tue | 7 |"), "the model reads the numbers");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    inline,
    description = "A chart: one label per point, and datasets with a value per label."
)]
#[non_exhaustive]
pub struct Chart {
    /// How the values are drawn.
    #[serde(rename = "type")]
    pub kind: ChartKind,
    /// What the chart shows, e.g. "Orders per day".
    pub title: String,
    /// One label per value: the days of a line, the bars, the slices of a pie.
    #[schemars(length(min = 1, max = MAX_LABELS))]
    pub labels: Vec<String>,
    /// The series drawn. Pie and doughnut charts take exactly one.
    #[schemars(length(min = 1, max = MAX_DATASETS))]
    pub datasets: Vec<Dataset>,
}

/// How a [`Chart`] draws its values.
///
/// ```
/// use toolgate::output::ChartKind;
///
/// assert_eq!(serde_json::to_value(ChartKind::Doughnut).unwrap(), "doughnut");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChartKind {
    /// Bars side by side, one group per label: amounts to compare.
    Bar,
    /// A line through the values: anything over time.
    Line,
    /// Slices of a whole.
    Pie,
    /// Slices of a whole, as a ring.
    Doughnut,
}

/// A plain `enum` of names, which every model API reads (Gemini's takes no `oneOf` of `const`s).
impl JsonSchema for ChartKind {
    fn schema_name() -> Cow<'static, str> {
        "ChartKind".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": ChartKind::ALL.map(ChartKind::as_str),
            "description": "How the values are drawn: bar to compare amounts, line for anything over time, \
                pie or doughnut for the slices of a whole."
        })
    }
}

impl ChartKind {
    const ALL: [ChartKind; 4] = [
        ChartKind::Bar,
        ChartKind::Line,
        ChartKind::Pie,
        ChartKind::Doughnut,
    ];

    /// Its name in the chart's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChartKind::Bar => "bar",
            ChartKind::Line => "line",
            ChartKind::Pie => "pie",
            ChartKind::Doughnut => "doughnut",
        }
    }

    fn is_slices(self) -> bool {
        matches!(self, ChartKind::Pie | ChartKind::Doughnut)
    }
}

/// One series of a [`Chart`]: a name and a value per label.
///
/// ```
/// use toolgate::output::{Chart, ChartKind};
///
/// let chart = Chart::new(ChartKind::Bar, "Revenue").labels(["Q1", "Q2"]).dataset("2026", [120.0, 135.5]);
/// assert_eq!(chart.datasets[0].label, "2026");
/// assert_eq!(chart.datasets[0].data, [120.0, 135.5]);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(inline, description = "A series: its name and one value per label.")]
#[non_exhaustive]
pub struct Dataset {
    /// The series' name, shown in the legend.
    pub label: String,
    /// One value per label of the chart, in the same order.
    pub data: Vec<f64>,
}

/// Why a [`Chart`] or a [`Table`](super::Table) cannot be shown as it is.
///
/// ```
/// use toolgate::output::{Chart, ChartKind};
///
/// let chart = Chart::new(ChartKind::Line, "Orders per day").labels(["Mon", "Tue"]).dataset("Orders", [4.0]);
/// assert_eq!(
///     chart.check().unwrap_err().to_string(),
///     "the chart \"Orders per day\" cannot be drawn: dataset \"Orders\" has 1 value for 2 labels"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayError {
    what: String,
    problem: String,
}

impl DisplayError {
    pub(crate) fn new(what: String, problem: String) -> Self {
        DisplayError { what, problem }
    }
}

impl fmt::Display for DisplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cannot be drawn: {}", self.what, self.problem)
    }
}

impl std::error::Error for DisplayError {}

impl Chart {
    /// A chart of `kind` titled `title`, with no labels or data yet.
    pub fn new(kind: ChartKind, title: impl Into<String>) -> Self {
        Chart {
            kind,
            title: title.into(),
            labels: Vec::new(),
            datasets: Vec::new(),
        }
    }

    /// Sets the labels, one per value.
    #[must_use]
    pub fn labels<I: IntoIterator<Item = S>, S: Into<String>>(mut self, labels: I) -> Self {
        self.labels = labels.into_iter().map(Into::into).collect();
        self
    }

    /// Adds a dataset named `label`, one value per label.
    #[must_use]
    pub fn dataset<I: IntoIterator<Item = f64>>(
        mut self,
        label: impl Into<String>,
        data: I,
    ) -> Self {
        self.datasets.push(Dataset {
            label: label.into(),
            data: data.into_iter().collect(),
        });
        self
    }

    /// Checks that the chart can be drawn as it says: labels and values agree, values are finite, and a
    /// pie or doughnut has one dataset of values that are not negative and not all zero.
    ///
    /// # Errors
    /// A [`DisplayError`] naming the first problem.
    pub fn check(&self) -> Result<(), DisplayError> {
        self.problem().map_or(Ok(()), |problem| {
            Err(DisplayError::new(
                format!("the chart {:?}", self.title),
                problem,
            ))
        })
    }

    fn problem(&self) -> Option<String> {
        let labels = self.labels.len();
        if labels == 0 {
            return Some("it has no labels".into());
        }
        if labels > MAX_LABELS {
            return Some(format!("it has {labels} labels, more than {MAX_LABELS}"));
        }
        let datasets = self.datasets.len();
        if datasets == 0 {
            return Some("it has no dataset".into());
        }
        if self.kind.is_slices() && datasets != 1 {
            let kind = self.kind.as_str();
            return Some(format!("a {kind} chart draws one dataset, not {datasets}"));
        }
        if datasets > MAX_DATASETS {
            return Some(format!(
                "it has {datasets} datasets, more than {MAX_DATASETS}"
            ));
        }
        for dataset in &self.datasets {
            let values = dataset.data.len();
            let name = &dataset.label;
            if values != labels {
                let plural = if values == 1 { "value" } else { "values" };
                return Some(format!(
                    "dataset {name:?} has {values} {plural} for {labels} labels"
                ));
            }
            if let Some(at) = dataset.data.iter().position(|v| !v.is_finite()) {
                let label = &self.labels[at];
                return Some(format!("dataset {name:?} has no number for {label:?}"));
            }
        }
        let slices = &self.datasets[0].data;
        if self.kind.is_slices() {
            if let Some(at) = slices.iter().position(|v| *v < 0.0) {
                let label = &self.labels[at];
                return Some(format!("the slice {label:?} is negative"));
            }
            if slices.iter().all(|v| *v == 0.0) {
                return Some("every slice is zero".into());
            }
        }
        None
    }
}
