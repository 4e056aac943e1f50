//! The registry: every tool of the application with the policy that decides who sees and runs them, one
//! [`Registry`] over the catalog of tools and the call pipeline; its builder, the operator's
//! configuration, the records it serves and the remote servers it lists.
//!
//! | part | where |
//! |---|---|
//! | the `Registry` and its one `impl` | `handle` |
//! | what every clone shares: the catalog and the pipeline | `core` |
//! | the builder's settings, then building | `builder`, `build` |
//! | the operator's configuration file | `config` |
//! | the tools toolgate offers itself | `builtin` |
//! | the operator's records: loading, watching, syncing, edits | `records` |
//! | remote servers' status, listing and edits | `remote` |
//! | delegation tokens | `delegation` |

mod build;
mod builder;
mod builtin;
mod config;
mod core;
mod delegation;
mod handle;
pub(crate) mod records;
#[cfg(feature = "remote")]
mod remote;

pub use crate::caller::MAX_DELEGATION_TTL;
pub use crate::catalog::{BuildError, ScopeMap};
#[cfg(feature = "mcp")]
pub(crate) use crate::catalog::{Current, Handover, Resolved, Snapshot, ToolId, Uses};
pub use crate::tool::{DRAW_CHART, SHOW_TABLE, TOOL_SEARCH, tools_found};
pub use build::LoadError;
pub use builder::RegistryBuilder;
pub use builtin::BuiltIn;
pub use config::{Config, ConfigError, ToolConfig};
pub use delegation::DELEGATION_PREFIX;
pub use handle::Registry;
