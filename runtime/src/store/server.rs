//! A remote server's record: added, changed and removed by an operator, kept beside the tool records.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{RecordError, RecordErrorKind};

/// A remote MCP server an operator added: its entry, as the configuration file writes it under
/// `[servers.<label>]` (in JSON), which holds the names of the environment variables with its secrets,
/// never the secrets.
///
/// ```
/// use serde_json::json;
/// use toolgate::store::{ServerChange, ServerEdit, ServerRecord};
///
/// let added = ServerEdit::new("ops", "files", 0, ServerChange::Put(json!({ "command": "files-mcp", "ability": "files.read" })))
///     .apply(None)?
///     .expect("a record");
/// assert_eq!((added.label.as_str(), added.version), ("files", 1));
/// let stale = ServerEdit::new("ben", "files", 0, ServerChange::Remove).apply(Some(&added)).unwrap_err();
/// assert!(stale.message().contains("changed by someone else"));
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ServerRecord {
    /// The server's label.
    pub label: String,
    /// Its entry, as under `[servers.<label>]` in the configuration file.
    pub entry: Value,
    /// Moves with every change; an edit names the version it was made against (0 for a new server).
    pub version: u64,
}

/// What an operator does to a server's record. Its JSON form is what the admin API takes and the
/// records' history shows:
///
/// ```
/// use toolgate::store::ServerChange;
///
/// assert_eq!(serde_json::json!(ServerChange::Remove), serde_json::json!({ "change": "remove" }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change", content = "value")]
#[non_exhaustive]
pub enum ServerChange {
    /// Adds the server, or replaces its entry.
    Put(Value),
    /// Removes it: its tools are served no more.
    Remove,
}

/// One operator's change of one server's record, made against its version (see [`ServerRecord`] and
/// `Registry::edit_server`, with the `remote` feature).
///
/// ```
/// use toolgate::store::{ServerChange, ServerEdit};
///
/// let removed = ServerEdit::new("ops", "files", 3, ServerChange::Remove);
/// assert_eq!((removed.label.as_str(), removed.version), ("files", 3));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerEdit {
    /// Who makes it.
    pub actor: String,
    /// The server's label.
    pub label: String,
    /// The version the operator saw; 0 for a server not added yet.
    pub version: u64,
    /// The change.
    pub change: ServerChange,
}

impl ServerEdit {
    /// `actor`'s `change` of the server `label` at `version`.
    pub fn new(
        actor: impl Into<String>,
        label: impl Into<String>,
        version: u64,
        change: ServerChange,
    ) -> Self {
        ServerEdit {
            actor: actor.into(),
            label: label.into(),
            version,
            change,
        }
    }

    /// The record after this edit (`None`: removed), or why it is refused: the record moved since, or
    /// there is none to remove. The entry itself is checked before it is written, by the registry.
    ///
    /// # Errors
    /// A [`RecordError`] of kind `Conflict` or `NotFound`; nothing is changed.
    pub fn apply(
        &self,
        current: Option<&ServerRecord>,
    ) -> Result<Option<ServerRecord>, RecordError> {
        let seen = current.map_or(0, |r| r.version);
        if seen != self.version {
            let what = format!("the server `{}`", self.label);
            return Err(RecordError::moved(what, self.version, seen));
        }
        match &self.change {
            ServerChange::Put(entry) => Ok(Some(ServerRecord {
                label: self.label.clone(),
                entry: entry.clone(),
                version: seen + 1,
            })),
            ServerChange::Remove if current.is_none() => Err(unknown_server(&self.label)),
            ServerChange::Remove => Ok(None),
        }
    }
}

/// No record of the server `label`.
fn unknown_server(label: &str) -> RecordError {
    RecordError::new(
        RecordErrorKind::NotFound,
        format!(
            "no remote server `{label}` in the records; list them with `toolgate servers list`"
        ),
    )
}
