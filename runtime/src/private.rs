//! Everything the code `#[tool]` generates uses, and nothing else. Not public API: it may change in any
//! release.

pub use crate::output::encode::{OutputSpec, dispatch};
pub use crate::param::inject::check_shareable;
pub use crate::param::spec::{
    Literal, ParamFields, ParamSpec, check_named, check_params, default_value,
};
pub use crate::param::{CallParts, Param};
pub use crate::tool::{
    Access, Body, Defer, Finished, INVALID_FN_NAME, INVALID_NAME, NOT_REPLACEABLE, PreviewFuture,
    TaskSupport, ToolEntry, ToolFuture, fail, finish, into_preview, is_replaceable, is_tool_name,
};
pub use core::option::Option::{self, None, Some};
pub use core::result::Result::{Err, Ok};
pub use inventory;
pub use std::boxed::Box;
