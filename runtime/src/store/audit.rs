//! The audit trail as a database keeps it: one [`AuditRecord`] per call, read back with an [`AuditQuery`].

use serde::Serialize;

/// One row of the audit trail.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::sqlite::SqliteStore;
/// use toolgate::store::{AuditQuery, RecordStore};
///
/// /// Read a file.
/// #[tool(ability = "files.read", read_only)]
/// async fn read_file(path: String) -> String {
///     format!("contents of {path}")
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = SqliteStore::in_memory().unwrap();
/// let registry = Registry::builder().audit(db.audit()).build().unwrap();
/// let outcome = registry.call(&Caller::new("eve"), "read_file", json!({ "path": "/etc/passwd" })).await;
/// assert_eq!(outcome.label(), "unknown_tool", "eve is told of no such tool");
/// let record = &db.audit_trail(&AuditQuery::newest(10)).await.unwrap()[0];
/// assert_eq!((record.caller.as_str(), record.tool.as_str(), record.outcome.as_str()), ("eve", "read_file", "denied"), "the operator sees the denial");
/// assert_eq!(record.action, "call");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AuditRecord {
    /// Its place in the trail: later rows have larger numbers.
    pub seq: u64,
    /// When the call finished (milliseconds since the Unix epoch).
    pub at_ms: u64,
    /// The caller's id.
    pub caller: String,
    /// The tool, or `-` for a confirmation refused before its tool was known.
    pub tool: String,
    /// `call`, `preview`, `approve` or `decline`.
    pub action: String,
    /// The SHA-256 of the canonical arguments.
    pub digest: String,
    /// The outcome's label: `done`, `needs_confirmation`, `denied`, `confirmation_refused`, ...
    pub outcome: String,
    /// The session, when there is one.
    pub session: Option<String>,
    /// How long the call took, in microseconds.
    pub elapsed_us: u64,
    /// The operator's policy revision the call ran under (`None` on rows older than the records).
    pub revision: Option<u64>,
    /// Whom a delegated caller acted for, nearest first, up to the person at the root; empty otherwise.
    pub on_behalf_of: Vec<String>,
    /// The result's line for the people watching the session, if it wrote one.
    pub session_log: Option<String>,
    /// The result's telemetry, if it gave some.
    pub telemetry: Option<serde_json::Value>,
    /// The text of the preview a person was shown: a preview's own, and for an approval or a decline the
    /// preview it answered.
    pub preview: Option<String>,
    /// The client the caller signed in through (an access token's `azp` or `client_id`).
    pub client: Option<String>,
    /// Who acted for the caller by its token's `act` chain, nearest first; empty otherwise.
    pub actors: Vec<String>,
}

/// How many times one tool was called (plain calls and approved writes) over a time, from the audit trail.
///
/// ```
/// use toolgate::sqlite::SqliteStore;
/// use toolgate::store::RecordStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let db = SqliteStore::in_memory()?;
/// assert!(db.calls_per_tool(0).await?.is_empty(), "nothing called yet");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ToolCalls {
    /// The tool.
    pub tool: String,
    /// How many calls.
    pub calls: u64,
}

/// The statement that counts each tool's calls since `$1` (a backend's placeholder), most called first.
#[cfg(database)]
macro_rules! calls_per_tool {
    ($since:literal) => {
        concat!(
            "SELECT tool, COUNT(*) FROM toolgate_audit WHERE at_ms >= ",
            $since,
            " AND action IN ('call', 'approve') AND tool <> '-' GROUP BY tool ORDER BY COUNT(*) DESC, tool"
        )
    };
}
#[cfg(database)]
pub(crate) use calls_per_tool;

/// The audit columns a database keeps as JSON text, read back: the chain and the telemetry. Text that is
/// not what toolgate wrote reads as nothing.
#[cfg(database)]
pub(crate) fn from_json_columns(
    chain: Option<String>,
    telemetry: Option<String>,
) -> (Vec<String>, Option<serde_json::Value>) {
    let chain = chain
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let telemetry = telemetry.and_then(|text| serde_json::from_str(&text).ok());
    (chain, telemetry)
}

/// Which audit rows to read: the newest `limit` that match every filter set, newest first.
///
/// ```
/// use toolgate::store::AuditQuery;
///
/// let query = AuditQuery::newest(50).caller("agent-7").tool("ship_order").outcome("done").since_ms(1_700_000_000_000);
/// assert_eq!(query.caller.as_deref(), Some("agent-7"));
/// assert_eq!(query.limit, 50);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// At most this many rows.
    pub limit: usize,
    /// Only this caller's calls.
    pub caller: Option<String>,
    /// Only calls of this tool.
    pub tool: Option<String>,
    /// Only calls with this outcome label.
    pub outcome: Option<String>,
    /// Only calls that finished at or after this time (milliseconds since the Unix epoch).
    pub since_ms: Option<u64>,
    /// Only calls that finished before this time.
    pub until_ms: Option<u64>,
}

impl AuditQuery {
    /// The newest `limit` rows, of any call.
    pub fn newest(limit: usize) -> Self {
        AuditQuery {
            limit,
            ..AuditQuery::default()
        }
    }

    /// Only `caller`'s calls.
    pub fn caller(mut self, caller: impl Into<String>) -> Self {
        self.caller = Some(caller.into());
        self
    }

    /// Only calls of `tool`.
    pub fn tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }

    /// Only calls whose outcome is labelled `outcome`.
    pub fn outcome(mut self, outcome: impl Into<String>) -> Self {
        self.outcome = Some(outcome.into());
        self
    }

    /// Only calls that finished at or after `ms`.
    pub fn since_ms(mut self, ms: u64) -> Self {
        self.since_ms = Some(ms);
        self
    }

    /// Only calls that finished before `ms`.
    pub fn until_ms(mut self, ms: u64) -> Self {
        self.until_ms = Some(ms);
        self
    }

    /// The limit as a database takes it.
    #[cfg(database)]
    pub(crate) fn limit_i64(&self) -> i64 {
        i64::try_from(self.limit).unwrap_or(i64::MAX)
    }

    /// The time bounds as a database takes them: from 0, to the end of time.
    #[cfg(database)]
    pub(crate) fn bounds_i64(&self) -> (i64, i64) {
        let as_i64 = |ms: u64| i64::try_from(ms).unwrap_or(i64::MAX);
        (
            self.since_ms.map_or(0, as_i64),
            self.until_ms.map_or(i64::MAX, as_i64),
        )
    }
}
