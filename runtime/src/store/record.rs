//! A tool's record, the operator's edits of it, and why an edit is refused.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::schema;
use crate::tool::Tool;

/// One tool as the operator's records hold it: the declared part, as the last sync found it in the code,
/// and the operator's part.
///
/// ```
/// use toolgate::store::{Change, Edit, RecordErrorKind, Records};
///
/// # fn record() -> toolgate::store::ToolRecord { toolgate::store::ToolRecord::example() }
/// let record = record(); // `search_orders`, declared with the ability `orders.view`
/// let tightened = Edit::new("ops@example.com", &record, Change::Require("orders.audit".into()))
///     .apply(&record)?;
/// assert_eq!(tightened.required_abilities, ["orders.audit"]);
///
/// let loosened = Edit::new("ops@example.com", &record, Change::Unrequire("orders.view".into()));
/// assert_eq!(loosened.apply(&record).unwrap_err().kind(), RecordErrorKind::Invalid);
/// # let _ = Records::default();
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolRecord {
    /// The tool's name.
    pub name: String,
    /// Where it comes from: `compiled` or `dynamic`.
    pub source: String,
    /// Its description, as declared.
    pub description: String,
    /// Whether it only reads, as declared.
    pub read_only: bool,
    /// The capability it fulfils, as declared.
    pub capability: Option<String>,
    /// Its categories, as declared.
    pub categories: Vec<String>,
    /// Whether the code lets anyone run it.
    pub public: bool,
    /// The abilities the code requires.
    pub declared_abilities: Vec<String>,
    /// The schema its settings must match, when it takes settings.
    pub settings_schema: Option<Value>,
    /// A digest of everything declared, to tell a changed tool at the next sync.
    pub fingerprint: String,
    /// The operator's switch.
    pub enabled: bool,
    /// The operator's settings, merged over the code's and the configuration file's.
    pub settings: Option<Value>,
    /// Abilities the operator requires on top of the declared ones.
    pub required_abilities: Vec<String>,
    /// The capability the operator says it fulfils, over the declared one (a remote tool's, mostly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability_override: Option<String>,
    /// Whether the last sync found it in the code.
    pub status: Status,
    /// When a sync first found it (milliseconds since the Unix epoch).
    pub first_seen_ms: u64,
    /// When a sync last found it.
    pub last_seen_ms: u64,
    /// Moves with every change of this record; an edit names the version it was made against.
    pub version: u64,
}

/// Whether the last sync found a tool in the code.
///
/// ```
/// use toolgate::store::Status;
///
/// assert_eq!(Status::Missing.as_str(), "missing");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It is there.
    Present,
    /// It is gone from the code: hidden, with its settings kept, until it comes back or is deleted.
    Missing,
}

impl Status {
    /// `present` or `missing`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Present => "present",
            Status::Missing => "missing",
        }
    }
}

impl ToolRecord {
    /// The record of a tool as the code declares it, first seen `now`: switched on, no settings of the
    /// operator's.
    pub fn declared(tool: &Tool, now: u64) -> ToolRecord {
        ToolRecord {
            name: tool.name().to_owned(),
            source: tool.source().kind().to_owned(),
            description: tool.description().to_owned(),
            read_only: tool.is_read_only(),
            capability: tool.capability().map(str::to_owned),
            categories: tool.categories().to_vec(),
            public: tool.is_public(),
            declared_abilities: tool.abilities().to_vec(),
            settings_schema: tool.settings_schema().cloned(),
            fingerprint: fingerprint(tool),
            enabled: true,
            settings: None,
            required_abilities: Vec::new(),
            capability_override: None,
            status: Status::Present,
            first_seen_ms: now,
            last_seen_ms: now,
            version: 0,
        }
    }

    /// A record for examples: `search_orders`, which requires `orders.view`.
    #[doc(hidden)]
    pub fn example() -> ToolRecord {
        ToolRecord {
            name: "search_orders".into(),
            source: "compiled".into(),
            description: "Search orders.".into(),
            read_only: true,
            capability: None,
            categories: Vec::new(),
            public: false,
            declared_abilities: vec!["orders.view".into()],
            settings_schema: None,
            fingerprint: String::new(),
            enabled: true,
            settings: None,
            required_abilities: Vec::new(),
            capability_override: None,
            status: Status::Present,
            first_seen_ms: 0,
            last_seen_ms: 0,
            version: 1,
        }
    }
}

/// A SHA-256 over what the code declares of a tool, in hex.
fn fingerprint(tool: &Tool) -> String {
    let mut declared = serde_json::json!({
        "description": tool.description(),
        "input": tool.input_schema(),
        "output": tool.output_schema(),
        "settings": tool.settings_schema(),
        "public": tool.is_public(),
        "abilities": tool.abilities(),
        "read_only": tool.is_read_only(),
        "capability": tool.capability(),
        "categories": tool.categories(),
    });
    // Only when set, so that the tools synced before it existed keep their fingerprints.
    if tool.is_enforced_downstream() {
        declared["enforced_downstream"] = true.into();
    }
    let digest = Sha256::digest(declared.to_string().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What an operator changes in a record. Its JSON form is what the records' history shows:
///
/// ```
/// use toolgate::store::Change;
///
/// assert_eq!(serde_json::json!(Change::Require("orders.audit".into())), serde_json::json!({ "change": "require", "value": "orders.audit" }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change", content = "value")]
#[non_exhaustive]
pub enum Change {
    /// Switch the tool on.
    Enable,
    /// Switch it off: listed to nobody, calls refused.
    Disable,
    /// Replace the operator's settings; they must match the tool's settings schema.
    Settings(Value),
    /// Require one more ability.
    Require(String),
    /// Stop requiring an ability the operator added; the code's own stay.
    Unrequire(String),
    /// Say which capability the tool fulfils, for [`Registry::for_capability`](crate::Registry::for_capability);
    /// `None` goes back to the declared one.
    Capability(Option<String>),
}

/// One operator's change of one record, made against the record's version: a second operator who read
/// the same version is refused once the first one's edit is written.
///
/// ```
/// use toolgate::store::{Change, Edit, RecordErrorKind, ToolRecord};
///
/// let seen = ToolRecord::example();
/// let first = Edit::new("ana", &seen, Change::Disable).apply(&seen)?;
/// let second = Edit::new("ben", &seen, Change::Enable).apply(&first).unwrap_err();
/// assert_eq!(second.kind(), RecordErrorKind::Conflict);
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Edit {
    /// Who makes it.
    pub actor: String,
    /// The tool.
    pub tool: String,
    /// The record's version the operator saw; the edit is refused when the record has moved since.
    pub version: u64,
    /// The change.
    pub change: Change,
}

impl Edit {
    /// `actor`'s `change` of `record`, as it is now.
    pub fn new(actor: impl Into<String>, record: &ToolRecord, change: Change) -> Edit {
        Edit {
            actor: actor.into(),
            tool: record.name.clone(),
            version: record.version,
            change,
        }
    }

    /// `actor`'s `change` of `tool`'s record at `version`, as read elsewhere (an API request).
    pub fn for_tool(actor: impl Into<String>, tool: &str, version: u64, change: Change) -> Edit {
        Edit {
            actor: actor.into(),
            tool: tool.to_owned(),
            version,
            change,
        }
    }

    /// The record after this edit, or why it is refused: the record moved since the edit was made,
    /// settings that do not match the schema, or an ability requirement that would loosen the code's.
    /// Every backend runs this check in the transaction that writes the result.
    ///
    /// # Errors
    /// A [`RecordError`] of kind `Conflict` or `Invalid`; nothing is changed.
    pub fn apply(&self, record: &ToolRecord) -> Result<ToolRecord, RecordError> {
        if record.version != self.version {
            let what = format!("`{}`", record.name);
            return Err(RecordError::moved(what, self.version, record.version));
        }
        let mut next = record.clone();
        match &self.change {
            Change::Enable => next.enabled = true,
            Change::Disable => next.enabled = false,
            Change::Settings(settings) => {
                if let Some(schema) = &record.settings_schema {
                    let validator = schema::validator(schema).map_err(invalid)?;
                    schema::settings_problems(&validator, &record.name, settings)
                        .map_err(RecordError::settings)?;
                } else {
                    return Err(invalid(format!("`{}` takes no settings", record.name)));
                }
                next.settings = Some(settings.clone());
            }
            Change::Require(ability) => {
                if ability.trim().is_empty() {
                    return Err(invalid("an ability needs a name".to_owned()));
                }
                let held = record.declared_abilities.contains(ability)
                    || record.required_abilities.contains(ability);
                if !held {
                    next.required_abilities.push(ability.clone());
                }
            }
            Change::Unrequire(ability) => {
                if record.declared_abilities.contains(ability) {
                    return Err(invalid(format!(
                        "`{}` requires `{ability}` in its code; an operator may require more, never less",
                        record.name
                    )));
                }
                next.required_abilities.retain(|a| a != ability);
            }
            Change::Capability(capability) => {
                if capability.as_ref().is_some_and(|c| c.trim().is_empty()) {
                    return Err(invalid("a capability needs a name".to_owned()));
                }
                next.capability_override.clone_from(capability);
            }
        }
        next.version = record.version + 1;
        Ok(next)
    }
}

fn invalid(message: String) -> RecordError {
    RecordError::new(RecordErrorKind::Invalid, message)
}

/// One change in the records' history.
///
/// ```
/// use toolgate::Registry;
/// use toolgate::sqlite::SqliteStore;
/// use toolgate::store::RecordStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().records(SqliteStore::in_memory()?).load().await?;
/// let history = registry.records().unwrap().history(10).await?;
/// assert!(history.is_empty(), "nothing changed yet");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChangeEntry {
    /// The revision it made.
    pub revision: u64,
    /// When (milliseconds since the Unix epoch).
    pub at_ms: u64,
    /// Who made it: an operator, or `sync`.
    pub actor: String,
    /// The tool.
    pub tool: String,
    /// What changed, as JSON.
    pub what: Value,
}

/// Why the records refused an operation, or could not be reached.
///
/// ```
/// use toolgate::store::{RecordError, RecordErrorKind};
///
/// let error = RecordError::new(RecordErrorKind::NotFound, "no tool `x` in the records");
/// assert_eq!(error.to_string(), "no tool `x` in the records");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    kind: RecordErrorKind,
    message: String,
    problems: Vec<(String, String)>,
}

/// The kind of a [`RecordError`]: the operator CLI exits with 1 for a refusal and 3 when the database
/// cannot be reached.
///
/// ```
/// use toolgate::store::RecordErrorKind;
///
/// assert_ne!(RecordErrorKind::Conflict, RecordErrorKind::Database);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecordErrorKind {
    /// No record of that tool.
    NotFound,
    /// The record moved since the edit was made.
    Conflict,
    /// The edit breaks a rule: settings against their schema, an ability the code requires.
    Invalid,
    /// The database was written by a newer toolgate than this one.
    Newer,
    /// The database could not be read or written.
    Database,
}

impl RecordError {
    /// An error of `kind`.
    pub fn new(kind: RecordErrorKind, message: impl Into<String>) -> Self {
        RecordError {
            kind,
            message: message.into(),
            problems: Vec::new(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> RecordErrorKind {
        self.kind
    }

    /// What went wrong, for an operator.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// For settings that do not match their schema, each problem as (the setting's path, such as
    /// `limits.max_rows`, and the problem in words); empty otherwise.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate::store::{Change, Edit, ToolRecord};
    ///
    /// let mut record = ToolRecord::example();
    /// record.settings_schema = Some(json!({
    ///     "type": "object",
    ///     "properties": { "max_rows": { "type": "integer", "minimum": 1 } },
    ///     "required": ["max_rows"]
    /// }));
    /// let bad = Edit::new("ana", &record, Change::Settings(json!({ "max_rows": 0 })));
    /// let error = bad.apply(&record).unwrap_err();
    /// assert_eq!(error.problems()[0].0, "max_rows");
    /// let missing = Edit::new("ana", &record, Change::Settings(json!({})));
    /// assert_eq!(missing.apply(&record).unwrap_err().problems()[0].0, "max_rows");
    /// ```
    pub fn problems(&self) -> &[(String, String)] {
        &self.problems
    }

    /// Settings that do not match their schema: the message and each problem.
    pub(crate) fn settings((message, problems): (String, Vec<(String, String)>)) -> Self {
        RecordError {
            problems,
            ..RecordError::new(RecordErrorKind::Invalid, message)
        }
    }
}

impl RecordError {
    /// No record of `tool`.
    /// A conflict: `what` was changed to version `now` since the operator read version `read`.
    pub(crate) fn moved(what: impl std::fmt::Display, read: u64, now: u64) -> Self {
        RecordError::new(
            RecordErrorKind::Conflict,
            format!(
                "{what} was changed by someone else since you read it (version {read}, now {now}); \
                 read it again and redo your change"
            ),
        )
    }

    pub(crate) fn unknown_tool(tool: &str) -> Self {
        RecordError::new(
            RecordErrorKind::NotFound,
            format!("no tool `{tool}` in the records; list them, or run a sync first"),
        )
    }

    /// A database whose schema a newer toolgate migrated to `found`, past the `known` versions.
    #[cfg(database)]
    pub(crate) fn newer_schema(found: usize, known: usize) -> Self {
        RecordError::new(
            RecordErrorKind::Newer,
            format!(
                "this database is at schema version {found}, written by a newer toolgate; this one knows \
                 versions up to {known}: upgrade the binary, or use another database"
            ),
        )
    }
}

/// A record (of a tool or a profile) as a database keeps it.
#[cfg(database)]
pub(crate) fn to_json<T: Serialize>(record: &T) -> Result<String, RecordError> {
    serde_json::to_string(record)
        .map_err(|e| RecordError::new(RecordErrorKind::Database, e.to_string()))
}

/// A record as a database kept it.
#[cfg(database)]
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, RecordError> {
    serde_json::from_str(text).map_err(|e| {
        RecordError::new(
            RecordErrorKind::Database,
            format!("a record in the database is not one this toolgate reads: {e}"),
        )
    })
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RecordError {}
