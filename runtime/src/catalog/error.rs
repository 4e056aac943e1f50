//! [`BuildError`]: why a registry could not be built.

use crate::tool::{NAME_RULE, is_replaceable};
use std::fmt;

/// Why a registry could not be built. Each message names the tool and what to change.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::BuildError;
///
/// #[derive(Clone)]
/// struct Db;
///
/// /// Count the rows.
/// #[tool(public, read_only)]
/// async fn count(_db: State<Db>) -> u64 {
///     3
/// }
///
/// let error = Registry::builder().build().unwrap_err();
/// assert!(matches!(&error, BuildError::MissingState { tool, .. } if tool == "count"));
/// assert!(error.to_string().ends_with(
///     "Db>`, but the registry has no such state; add it with `Registry::builder().state(value)`"
/// ));
/// assert!(Registry::builder().state(Db).build().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name.
    DuplicateName {
        /// The name.
        name: String,
        /// Where the first is defined.
        first: String,
        /// Where the second is defined.
        second: String,
    },
    /// An app's tool has the name of a built-in tool the registry offers, and does not say
    /// `overrides_builtin`.
    BuiltInClash {
        /// The name.
        name: String,
        /// Where the app's tool is defined.
        tool: String,
    },
    /// A dynamic tool says `overrides_builtin`, but no built-in tool it may replace has its name.
    NotBuiltIn {
        /// The tool.
        tool: String,
    },
    /// A tool asks for `State<T>` the builder was not given.
    MissingState {
        /// The tool.
        tool: String,
        /// The state's type.
        type_name: String,
    },
    /// A schema could not be built or compiled.
    InvalidSchema {
        /// The tool.
        tool: String,
        /// What is wrong.
        reason: String,
    },
    /// Settings from the code or the configuration file do not match the schema the tool publishes.
    InvalidSettings {
        /// The tool.
        tool: String,
        /// Which settings are wrong, and how.
        reason: String,
    },
    /// A dynamic tool declares neither `public`, an ability nor `enforced_downstream`, or `public` with one
    /// of the others.
    Undeclared {
        /// The tool.
        tool: String,
    },
    /// A dynamic tool's name breaks MCP's naming rule.
    InvalidName {
        /// The name.
        name: String,
    },
    /// A builder setting names a tool that does not exist.
    UnknownTool {
        /// The builder method.
        setting: &'static str,
        /// The name given.
        name: String,
    },
    /// A builder setting has a value outside its range.
    OutOfRange {
        /// The builder method.
        setting: &'static str,
        /// The range it takes.
        range: &'static str,
    },
    /// A remote server cannot be served as configured, or two share a label.
    InvalidServer {
        /// Its label.
        label: String,
        /// What is wrong, and what to write instead.
        reason: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::DuplicateName {
                name,
                first,
                second,
            } => {
                write!(
                    f,
                    "two tools are named `{name}`: one at {first}, one at {second}; rename one with `name = \"...\"`"
                )
            }
            BuildError::BuiltInClash { name, tool } if is_replaceable(name) => write!(
                f,
                "two tools are named `{name}`: toolgate's built-in one, and one at {tool}; say \
                 `overrides_builtin` on yours to replace the built-in, or rename it with `name = \"...\"`"
            ),
            BuildError::BuiltInClash { name, tool } => write!(
                f,
                "two tools are named `{name}`: toolgate's built-in one, which cannot be replaced, and one at \
                 {tool}; rename yours with `name = \"...\"`"
            ),
            BuildError::NotBuiltIn { tool } => write!(
                f,
                "dynamic tool `{tool}` says `overrides_builtin`, but only `show_table` and `draw_chart` can be \
                 replaced; rename it after one of them, or drop `.overrides_builtin()`"
            ),
            BuildError::MissingState { tool, type_name } => write!(
                f,
                "tool `{tool}` takes `State<{type_name}>`, but the registry has no such state; \
                 add it with `Registry::builder().state(value)`"
            ),
            BuildError::InvalidSchema { tool, reason } => write!(f, "tool `{tool}`: {reason}"),
            BuildError::InvalidSettings { reason, .. } => f.write_str(reason),
            BuildError::Undeclared { tool } => write!(
                f,
                "dynamic tool `{tool}` must declare who may run it: call `.public()` (anyone), or `.ability(..)` \
                 and/or `.enforced_downstream()` (its backend checks each caller), not `.public()` with either"
            ),
            BuildError::InvalidName { name } => {
                write!(f, "`{name}` is not a valid tool name: {NAME_RULE}")
            }
            BuildError::UnknownTool { setting, name } => {
                write!(f, "`{setting}` names `{name}`, but no tool has that name")
            }
            BuildError::OutOfRange { setting, range } => {
                write!(f, "`{setting}` must be {range}")
            }
            BuildError::InvalidServer { reason, .. } => f.write_str(reason),
        }
    }
}

impl std::error::Error for BuildError {}
