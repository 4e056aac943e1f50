//! [`Config`]: what an operator sets in a file, without recompiling: which tools are on, their settings, and
//! the registry's policy.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// An operator's configuration, read from TOML or JSON and applied with
/// [`RegistryBuilder::config`](crate::RegistryBuilder::config). Every key is optional; what the file leaves
/// out keeps the value the code set. Unknown keys are refused, and so are tool names no tool has (when the
/// registry is built), so a typo never passes silently.
///
/// ```toml
/// read_only = false                 # true: only read-only tools are listed and run
/// default_timeout_secs = 30         # for tools that declare no timeout
/// confirmation_ttl_secs = 600       # how long a write preview can be approved
/// mask_internal_errors = true
/// first = ["shop_overview"]         # listed first, in this order
/// # allow_only = ["search_orders"]  # switch off every other tool (system tools stay on)
///
/// [tools.ship_order]
/// enabled = false                   # listed to nobody, calls refused
///
/// [tools.search_orders.settings]    # merged over the settings the code gives, key by key
/// max_rows = 50
///
/// [grants]                          # what signed-in callers' scopes and roles grant, over the code's map
/// "scope:orders:read" = ["orders.view"]
/// "role:manager" = ["orders.view", "orders.manage"]
/// ```
///
/// ```rust
/// use toolgate::registry::Config;
///
/// let config = Config::from_toml(
///     "read_only = true\n[tools.ship_order]\nenabled = false\n[tools.search_orders.settings]\nmax_rows = 50\n",
/// )?;
/// assert_eq!(config.read_only, Some(true));
/// assert_eq!(config.tools["ship_order"].enabled, Some(false));
/// assert_eq!(config.tools["search_orders"].settings, Some(serde_json::json!({ "max_rows": 50 })));
///
/// let typo = Config::from_toml("read_olny = true").unwrap_err();
/// assert!(typo.to_string().contains("unknown field `read_olny`"));
/// # Ok::<(), toolgate::registry::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct Config {
    /// Only read-only tools are listed and run.
    pub read_only: Option<bool>,
    /// A timeout, in seconds, for tools that declare none.
    pub default_timeout_secs: Option<f64>,
    /// How long, in seconds, a write preview can be approved.
    pub confirmation_ttl_secs: Option<u64>,
    /// Whether internal errors reach the model as a generic message.
    pub mask_internal_errors: Option<bool>,
    /// Tools listed first, in this order.
    pub first: Option<Vec<String>>,
    /// Switches off every tool not named here, except `system` tools.
    pub allow_only: Option<Vec<String>>,
    /// `max_concurrent_calls`.
    pub max_concurrent_calls: Option<usize>,
    /// `max_calls_per_caller`.
    pub max_calls_per_caller: Option<usize>,
    /// `max_unfinished_tasks_per_caller`.
    pub max_unfinished_tasks_per_caller: Option<usize>,
    /// `count_window`, in seconds.
    pub count_window_secs: Option<u64>,
    /// `audit_retention`, in days; 0 keeps every call.
    pub audit_retention_days: Option<u64>,
    /// Per tool, by name.
    pub tools: BTreeMap<String, ToolConfig>,
    /// What the scopes and roles of signed-in callers' access tokens grant, by `scope:NAME` or
    /// `role:NAME`: each replaces what the code's [`ScopeMap`](crate::registry::ScopeMap) says of it, and
    /// an operator's grant in the records replaces it in turn.
    pub grants: BTreeMap<String, Vec<String>>,
    /// Remote MCP servers, by label: `[servers.<label>]` (see the book's chapter on federation).
    #[cfg(feature = "remote")]
    #[serde(deserialize_with = "crate::remote::deserialize_servers")]
    pub servers: BTreeMap<String, crate::remote::RemoteServer>,
    /// REST APIs served as tools, by label: `[apis.<label>]` (see the book's chapter on REST APIs as
    /// tools), each read and converted as the file is.
    #[cfg(feature = "openapi")]
    pub apis: crate::openapi::ConfiguredApis,
}

/// One tool's entry in a [`Config`].
///
/// ```
/// use toolgate::registry::Config;
///
/// let config = Config::from_json(r#"{ "tools": { "web_search": { "settings": { "engine": "brave" } } } }"#)?;
/// let tool = &config.tools["web_search"];
/// assert_eq!((tool.enabled, tool.settings.as_ref().unwrap()["engine"].as_str()), (None, Some("brave")));
/// # Ok::<(), toolgate::registry::ConfigError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolConfig {
    /// `false` switches the tool off; `true` switches on a tool the code disabled.
    pub enabled: Option<bool>,
    /// Settings injected as [`Settings<T>`](crate::Settings). An object is merged over the code's settings
    /// key by key; any other value replaces them.
    pub settings: Option<Value>,
}

impl Config {
    /// Parses TOML.
    ///
    /// # Errors
    /// The parser's message, with line and column, or an unknown key.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text)
            .map_err(|e| ConfigError::new(None, e.to_string()))
            .and_then(Config::checked)
    }

    /// Parses JSON, with the same keys as TOML.
    ///
    /// # Errors
    /// The parser's message, with line and column, or an unknown key.
    pub fn from_json(text: &str) -> Result<Config, ConfigError> {
        serde_json::from_str(text)
            .map_err(|e| ConfigError::new(None, e.to_string()))
            .and_then(Config::checked)
    }

    fn checked(self) -> Result<Config, ConfigError> {
        if let Some(secs) = self.default_timeout_secs
            && crate::clock::positive_seconds(secs).is_none()
        {
            return Err(ConfigError::new(
                None,
                format!("`default_timeout_secs` must be a positive number of seconds, not {secs}"),
            ));
        }
        let bounds: [(&str, Option<u64>, u64); 5] = [
            (
                "max_concurrent_calls",
                self.max_concurrent_calls.map(|n| n as u64),
                1_000_000,
            ),
            (
                "max_calls_per_caller",
                self.max_calls_per_caller.map(|n| n as u64),
                1_000_000,
            ),
            (
                "max_unfinished_tasks_per_caller",
                self.max_unfinished_tasks_per_caller.map(|n| n as u64),
                1_000_000,
            ),
            ("count_window_secs", self.count_window_secs, 366 * 24 * 3600),
            (
                "audit_retention_days",
                self.audit_retention_days.map(|d| d.max(1)),
                36_500,
            ),
        ];
        for (claim, abilities) in &self.grants {
            grant(claim, abilities).map_err(|error| {
                ConfigError::new(None, format!("`grants`: {}", error.message()))
            })?;
        }
        for (key, value, most) in bounds {
            if let Some(value) = value
                && !(1..=most).contains(&value)
            {
                return Err(ConfigError::new(
                    None,
                    format!("`{key}` must be from 1 to {most}, not {value}"),
                ));
            }
        }
        Ok(self)
    }

    /// Reads a file: JSON if its name ends in `.json`, TOML otherwise.
    ///
    /// # Errors
    /// The file cannot be read or parsed; the error names the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let at = |reason: String| ConfigError::new(Some(path), reason);
        let text = std::fs::read_to_string(path).map_err(|e| at(e.to_string()))?;
        let parsed = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Config::from_json(&text),
            _ => Config::from_toml(&text),
        };
        parsed.map_err(|e| at(e.reason))
    }
}

/// The grant a `[grants]` entry makes, checked as an operator's edit is.
pub(super) fn grant(
    claim: &str,
    abilities: &[String],
) -> Result<crate::store::GrantRecord, crate::store::RecordError> {
    use crate::store::{GrantChange, GrantEdit};
    let change = GrantChange::Set(abilities.to_vec());
    let edit = GrantEdit::new("config", claim.parse()?, 0, change);
    Ok(edit.apply(None)?.expect("a set grant is kept"))
}

/// A configuration that could not be read or parsed.
///
/// ```
/// use toolgate::registry::Config;
///
/// let error = Config::from_toml("read_only = \"yes\"").unwrap_err();
/// assert!(error.to_string().starts_with("configuration: TOML parse error at line 1, column 13"), "{error}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    path: Option<String>,
    reason: String,
}

impl ConfigError {
    fn new(path: Option<&Path>, reason: String) -> ConfigError {
        ConfigError {
            path: path.map(|p| p.display().to_string()),
            reason: reason.trim_end().to_owned(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "configuration {path}: {}", self.reason),
            None => write!(f, "configuration: {}", self.reason),
        }
    }
}

impl std::error::Error for ConfigError {}
