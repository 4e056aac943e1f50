//! The registry: every tool of the application with the policy that decides who sees and runs them; its
//! builder and the operator's configuration; the registered tools built once at start-up, and the snapshot the operator's records change.

mod builder;
mod builtin;
mod config;
mod delegation;
mod error;
mod queries;
mod records;
mod registered;
#[cfg(feature = "remote")]
mod remote;
mod snapshot;

pub use crate::tool::{DRAW_CHART, SHOW_TABLE, TOOL_SEARCH};
pub use builder::{LoadError, RegistryBuilder};
pub use builtin::{BuiltIn, tools_found};
pub use config::{Config, ConfigError, ToolConfig};
pub use delegation::{DELEGATION_PREFIX, MAX_DELEGATION_TTL};
pub use error::BuildError;
pub use queries::Registry;
#[cfg(feature = "mcp")]
pub(crate) use registered::Uses;
pub(crate) use registered::{Handler, RegisteredTool, Visibility};
#[cfg(feature = "mcp")]
pub(crate) use snapshot::{Current, Handover, Resolved};
pub(crate) use snapshot::{Snapshot, ToolId};
