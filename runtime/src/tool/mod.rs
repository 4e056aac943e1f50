//! What a tool is: its declaration ([`Tool`], [`Source`]), a tool defined at run time ([`DynamicTool`]),
//! and the entry `#[tool]` registers at link time.

mod definition;
mod dynamic;
mod entry;
mod found;
mod name;
mod rights;

#[cfg(feature = "mcp")]
pub use definition::META_CAPABILITY;
pub use definition::{DRAW_CHART, Defer, SHOW_TABLE, Source, TOOL_SEARCH, TaskSupport, Tool};
pub use dynamic::DynamicTool;
pub(crate) use dynamic::{DynHandler, DynPreview};
pub use entry::{
    Access, Body, Finished, PreviewFuture, ToolEntry, ToolFuture, fail, finish, into_preview,
};
pub use found::tools_found;
pub(crate) use name::NAME_RULE;
pub use name::{INVALID_FN_NAME, INVALID_NAME, NOT_REPLACEABLE, is_replaceable, is_tool_name};
pub(crate) use rights::{Admission, Rights};
