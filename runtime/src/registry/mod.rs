//! The registry: every tool of the application with the policy that decides who sees and runs them; its
//! builder and the operator's configuration; the registered tools and schemas built once at start-up.

mod builder;
mod config;
mod error;
mod queries;
mod registered;
pub(crate) mod schema;
mod snapshot;

pub use builder::RegistryBuilder;
pub use config::{Config, ConfigError, ToolConfig};
pub use error::BuildError;
pub use queries::Registry;
pub(crate) use registered::{Handler, RegisteredTool};
pub(crate) use snapshot::Snapshot;
