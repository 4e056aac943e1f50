//! The audit step: every call's tool, caller, outcome and duration, handed to an [`AuditSink`].

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::output::Outcome;
use crate::param::Invocation;

/// What a call did about confirmation.
///
/// ```rust,standalone_crate
/// use std::sync::{Arc, Mutex};
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::policy::{AuditAction, AuditEvent, AuditSink};
///
/// /// Close an account. Changes data.
/// #[tool(public, preview = preview_close)]
/// async fn close_account(id: u32) -> String {
///     format!("Account {id} closed.")
/// }
///
/// async fn preview_close(id: u32) -> Preview {
///     Preview::new(format!("Close account {id}"))
/// }
///
/// #[derive(Clone, Default)]
/// struct Actions(Arc<Mutex<Vec<AuditAction>>>);
///
/// impl AuditSink for Actions {
///     fn record(&self, event: &AuditEvent<'_>) {
///         self.0.lock().unwrap().push(event.action);
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let actions = Actions::default();
/// let registry = Registry::builder().audit(actions.clone()).build().unwrap();
/// let ada = Caller::new("ada");
/// let Outcome::NeedsConfirmation(pending) = registry.call(&ada, "close_account", json!({ "id": 4 })).await else { unreachable!() };
/// registry.confirm(&ada, pending.confirmation()).await;
/// assert_eq!(*actions.0.lock().unwrap(), [AuditAction::Preview, AuditAction::Approve]);
/// assert_eq!(AuditAction::Approve.as_str(), "approve");
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditAction {
    /// A call that needs no confirmation (or one the skip policy let through).
    Call,
    /// The preview of a write: nothing ran.
    Preview,
    /// A confirmation came back: the write ran, or the confirmation was refused.
    Approve,
    /// A write was declined.
    Decline,
}

impl AuditAction {
    /// `call`, `preview`, `approve` or `decline`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::Call => "call",
            AuditAction::Preview => "preview",
            AuditAction::Approve => "approve",
            AuditAction::Decline => "decline",
        }
    }
}

/// One finished call, as recorded by the audit step.
///
/// ```rust,standalone_crate
/// use std::sync::{Arc, Mutex};
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::policy::{AuditEvent, AuditSink};
///
/// /// Look up a customer.
/// #[tool(public, read_only)]
/// async fn customer(email: String) -> String {
///     format!("{email}: gold tier")
/// }
///
/// /// Keeps the digest of the arguments, never the arguments (they may hold personal data).
/// #[derive(Clone, Default)]
/// struct Digests(Arc<Mutex<Vec<String>>>);
///
/// impl AuditSink for Digests {
///     fn record(&self, event: &AuditEvent<'_>) {
///         let line = format!("{} {} {}", event.tool, event.outcome.label(), event.argument_digest());
///         self.0.lock().unwrap().push(line);
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let digests = Digests::default();
/// let registry = Registry::builder().audit(digests.clone()).build().unwrap();
/// registry.call(&Caller::anonymous(), "customer", json!({ "email": "ada@example.com" })).await;
/// let lines = digests.0.lock().unwrap();
/// assert!(lines[0].starts_with("customer done ") && !lines[0].contains("ada@"));
/// assert_eq!(lines[0].len(), "customer done ".len() + 64, "a hex SHA-256");
/// # });
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct AuditEvent<'a> {
    /// The tool name as called.
    pub tool: &'a str,
    /// Who called.
    pub caller: &'a Caller,
    /// The call's metadata.
    pub invocation: &'a Invocation,
    /// The arguments as received.
    pub arguments: &'a Value,
    /// What came of it.
    pub outcome: &'a Outcome,
    /// Plain call, preview, approval or decline.
    pub action: AuditAction,
    /// When it finished.
    pub at: SystemTime,
    /// How long the pipeline took.
    pub elapsed: Duration,
    /// The operator's policy revision the call ran under (0 without records): why it was allowed or
    /// refused can be read back from the records' history.
    pub revision: u64,
}

impl AuditEvent<'_> {
    /// Whom the caller acts for, nearest first, up to the person at the root: empty unless it is
    /// delegated ([`Caller::delegate`](crate::Caller::delegate)).
    pub fn on_behalf_of(&self) -> impl Iterator<Item = &str> {
        self.caller.chain().skip(1).map(Caller::id)
    }

    /// The result's line for the people watching the session, when the tool ran and wrote one
    /// ([`ToolResult::with_session_log`](crate::ToolResult::with_session_log)).
    pub fn session_log(&self) -> Option<&str> {
        match self.outcome {
            Outcome::Done(result) => result.session_log.as_deref(),
            _ => None,
        }
    }

    /// The result's telemetry, when the tool ran and gave some
    /// ([`ToolResult::with_telemetry`](crate::ToolResult::with_telemetry)).
    pub fn telemetry(&self) -> Option<&Map<String, Value>> {
        match self.outcome {
            Outcome::Done(result) if !result.telemetry.is_empty() => Some(&result.telemetry),
            _ => None,
        }
    }

    /// The text a person was shown, when the call stopped at a preview.
    pub fn preview(&self) -> Option<&str> {
        match self.outcome {
            Outcome::NeedsConfirmation(pending) => Some(pending.preview().text()),
            _ => None,
        }
    }

    /// The SHA-256 of the arguments' canonical JSON, in hex: the same arguments give the same digest, so
    /// a preview and its approval can be matched without storing the arguments.
    pub fn argument_digest(&self) -> String {
        match self.arguments {
            Value::Object(map) => crate::confirm::digest(map),
            _ => crate::confirm::digest(&serde_json::Map::new()),
        }
    }
}

/// Receives an [`AuditEvent`] for every call, after the hooks ran. Keep it fast: it runs on the call path.
///
/// ```rust,standalone_crate
/// use std::sync::{Arc, Mutex};
/// use toolgate::{tool, Caller, Registry};
/// use toolgate::policy::{AuditEvent, AuditSink};
///
/// /// Say hello.
/// #[tool(public, read_only)]
/// async fn hello() -> &'static str { "hello" }
///
/// /// Keeps one line per call.
/// #[derive(Clone, Default)]
/// struct Lines(Arc<Mutex<Vec<String>>>);
///
/// impl AuditSink for Lines {
///     fn record(&self, event: &AuditEvent<'_>) {
///         self.0.lock().unwrap().push(format!("{} {} {}", event.caller.id(), event.tool, event.outcome.label()));
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let lines = Lines::default();
/// let registry = Registry::builder().audit(lines.clone()).build().unwrap();
/// registry.call(&Caller::new("ada"), "hello", serde_json::json!({})).await;
/// registry.call(&Caller::new("ada"), "nope", serde_json::json!({})).await;
/// assert_eq!(*lines.0.lock().unwrap(), ["ada hello done", "ada nope unknown_tool"]);
/// # });
/// ```
pub trait AuditSink: Send + Sync + 'static {
    /// Records one call.
    fn record(&self, event: &AuditEvent<'_>);
}

/// Writes each call as a `tracing` event with target `toolgate::audit`.
///
/// ```
/// use toolgate::Registry;
/// use toolgate::policy::TracingAudit;
///
/// // Install a `tracing` subscriber in `main`; each call is then one `toolgate::audit` event.
/// let registry = Registry::builder().audit(TracingAudit).build()?;
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TracingAudit;

impl AuditSink for TracingAudit {
    fn record(&self, event: &AuditEvent<'_>) {
        tracing::info!(
            target: "toolgate::audit",
            tool = event.tool,
            caller = event.caller.id(),
            session = event.invocation.session_id.as_deref(),
            action = event.action.as_str(),
            outcome = event.outcome.label(),
            elapsed_us = event.elapsed.as_micros() as u64,
            on_behalf_of = tracing::field::debug(event.on_behalf_of().collect::<Vec<_>>()),
            session_log = event.session_log(),
            "tool call"
        );
    }
}
