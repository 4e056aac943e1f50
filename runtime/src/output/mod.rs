//! What a call gives back: a tool's return value and how it is encoded, its result and content, a write's
//! preview, pages of rows, and the outcome of the whole call.

mod content;
pub(crate) mod encode;
mod outcome;
mod page;
mod preview;
mod result;

pub use content::{Content, EmbeddedResource};
pub use encode::{IntoOutput, Structured};
pub use outcome::{APPROVAL_KEY, InputRequired, Outcome, Pending, Unsupported};
pub use page::{Limit, Page, Row};
pub use preview::{IntoPreview, Preview};
pub use result::ToolResult;
