//! **Tools for AI agents from plain async functions.**
//!
//! Write an `async fn`, put [`#[tool]`](tool) on it, and toolgate derives its JSON Schemas from the
//! signature and doc comments, gates it behind the abilities you declare (a tool that declares nothing does
//! not compile), previews writes for a person to approve, and registers it at link time. One [`Registry`]
//! then lists and calls the tools for each [`Caller`] with one policy and one call pipeline: in-process from
//! your own agent loop, and over MCP ([`mcp`], stdio and Streamable HTTP, with the `mcp` feature, on by
//! default).
//!
//! ```rust,standalone_crate
//! use toolgate::prelude::*;
//!
//! /// Add two integers.
//! #[tool(public, read_only)]
//! async fn add(
//!     /// The left operand.
//!     a: i64,
//!     /// The right operand.
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Registry::builder().build()?;
//! let caller = Caller::anonymous();
//! let tool = registry.get("add").unwrap();
//! assert_eq!(tool.input_schema()["properties"]["a"]["description"], "The left operand.");
//!
//! let outcome = registry.call(&caller, "add", serde_json::json!({ "a": 2, "b": 40 })).await;
//! assert_eq!(outcome.into_result().text_for_model(), "42");
//!
//! let outcome = registry.call(&caller, "add", serde_json::json!({ "a": "two" })).await;
//! assert_eq!(
//!     outcome.error().unwrap().message(),
//!     "Invalid arguments for `add`: missing required argument `b`; \
//!      `a`: \"two\" is not of type \"integer\". Fix them and call again."
//! );
//! # Ok::<(), toolgate::BuildError>(())
//! # }).unwrap();
//! ```
//!
//! The book (in `book/` of the repository) is the guide; this reference documents every item.

mod ask;
mod audit;
mod call;
mod caller;
mod ceiling;
mod config;
pub mod confirm;
mod content;
mod dialect;
mod dynamic;
mod entry;
mod error;
pub mod hooks;
mod inject;
#[cfg(feature = "mcp")]
pub mod mcp;
mod outcome;
mod output;
mod page;
mod param;
mod parts;
mod preview;
mod registry;
mod result;
mod schema;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod tool;

pub use ask::{Ask, ClientSupport, Elicited, Root};
pub use audit::{AuditAction, AuditEvent, AuditSink, TracingAudit};
pub use call::Call;
pub use caller::{Authorizer, Caller};
pub use config::{Config, ConfigError, ToolConfig};
pub use confirm::{KeyError, KeyRing};
pub use content::{Content, EmbeddedResource};
pub use dialect::{Dialect, ModelCall};
pub use dynamic::DynamicTool;
pub use error::{ErrorKind, ToolError};
pub use inject::{
    Cancellation, Extension, Invocation, Log, LogEntry, LogLevel, Progress, ProgressUpdate,
    Settings, State,
};
pub use outcome::{APPROVAL_KEY, InputRequired, Outcome, Pending};
pub use output::{IntoOutput, Structured};
pub use page::{Limit, Page, Row};
pub use param::{ArgSchema, Input, Param, ParamKind, ParamSpec, Requirement};
pub use parts::CallParts;
pub use preview::{IntoPreview, Preview};
pub use registry::{BuildError, Registry, RegistryBuilder};
pub use result::ToolResult;
pub use tokio_util::sync::CancellationToken;
pub use tool::{Source, Tool};

#[doc = include_str!("../docs/tool.md")]
pub use toolgate_macros::tool;

/// The items a tool module needs: `use toolgate::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Call, Caller, Cancellation, Content, Input, Invocation, Limit, Log, Outcome, Page, Preview,
        Progress, Registry, Settings, State, ToolError, ToolResult, tool,
    };
}

// Not public API. Used by the code `#[tool]` generates; may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use core::option::Option::{self, None, Some};
    pub use core::result::Result::{Err, Ok};
    pub use std::boxed::Box;

    pub use inventory;

    pub use crate::entry::{Access, PreviewFuture, ToolEntry, ToolFuture, fail, into_preview};
    pub use crate::output::{OutputSpec, dispatch};
    pub use crate::param::{Literal, check_named, check_params, default_value};
    pub use crate::{CallParts, Param, ParamSpec};
}

#[allow(unused_extern_crates)]
extern crate self as toolgate;
