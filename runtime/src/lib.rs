//! **Tools for AI agents from plain async functions.**
//!
//! Write an `async fn`, put [`#[tool]`](macro@tool) on it, and toolgate derives its JSON Schemas from the
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

mod call;
mod caller;
mod catalog;
mod clock;
pub mod confirm;
pub mod dialect;
mod error;
#[cfg(feature = "mcp")]
pub mod http;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "oauth")]
mod oauth;
#[cfg(feature = "openapi")]
pub mod openapi;
#[cfg(feature = "operator")]
pub mod operator;
pub mod output;
pub mod param;
pub mod policy;
mod random;
pub mod registry;
#[cfg(feature = "remote")]
pub mod remote;
mod schema;
mod search;
#[cfg(feature = "sqlite")]
pub use store::sqlite;
pub mod store;
mod sync;
pub mod text;
mod tool;

// What a tool author and an app write every day; the rest is in its concept's module.
pub use call::Call;
pub use call::{TaskError, TaskHandle};
pub use caller::{Caller, Delegation};
pub use error::{ErrorKind, ToolError};
pub use output::{Content, Limit, Outcome, Page, Preview, ToolResult};
pub use param::{
    Ask, Cancellation, Elicited, Extension, Input, Invocation, Log, Progress, Settings, State,
};
pub use registry::{BuildError, Registry, RegistryBuilder};
pub use tool::{Defer, DynamicTool, Source, TaskSupport, Tool};

#[doc = include_str!("../docs/tool.md")]
pub use toolgate_macros::tool;

/// The items a tool module needs: `use toolgate::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Ask, Call, Caller, Cancellation, Content, Elicited, Input, Invocation, Limit, Log, Outcome,
        Page, Preview, Progress, Registry, Settings, State, ToolError, ToolResult, tool,
    };
}

// Not public API. Used by the code `#[tool]` generates; may change in any release.
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[allow(unused_extern_crates)]
extern crate self as toolgate;
