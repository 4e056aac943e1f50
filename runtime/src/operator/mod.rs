//! The operator's commands, run from the application's own binary, because a sync needs the tools linked
//! into it: `my-server toolgate tools list`, `my-server toolgate sync --plan`.
//!
//! ```
//! use toolgate::Registry;
//! use toolgate::sqlite::SqliteStore;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Registry::builder().records(SqliteStore::in_memory()?).load().await?;
//! let (code, out) = toolgate::operator::run(&registry, ["toolgate", "sync", "--apply"]).await;
//! assert_eq!(code, 0, "{out}");
//! let (code, out) = toolgate::operator::run(&registry, ["toolgate", "tools", "show", "no_such_tool"]).await;
//! assert_eq!((code, out.trim()), (1, "no tool `no_such_tool` in the records; list them, or run a sync first"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! With the `mcp` feature, the same commands are an HTTP API and a page ([`AdminApi`]).

#[cfg(admin)]
mod admin;
mod cli;
mod commands;
mod printed;

#[cfg(admin)]
pub use admin::{ADMIN_ABILITY, AdminApi};
pub use cli::{OK, REFUSED, UNAVAILABLE, USAGE, run};
