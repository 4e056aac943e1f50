//! What a call gives back: a tool's return value and how it is encoded, its result and content, a write's
//! preview, pages of rows, tables and charts, and the outcome of the whole call.

mod chart;
mod compound;
mod content;
pub(crate) mod display;
pub(crate) mod encode;
mod outcome;
mod page;
mod preview;
pub(crate) mod result;
mod structured;
mod table;
mod telemetry;

pub use chart::{Chart, ChartKind, Dataset, DisplayError};
pub use content::{Content, EmbeddedResource};
pub use display::{CHART_KEY, TABLE_KEY};
pub use encode::{IntoOutput, Structured};
pub use outcome::{APPROVAL_KEY, InputRequired, Outcome, Pending, Unsupported};
pub use page::{Limit, Page, Row};
pub use preview::{IntoPreview, Preview};
pub use result::ToolResult;
pub use structured::StructuredValue;
pub use table::{Column, ColumnType, Table, TableRow};
pub use telemetry::Telemetry;
