//! Sealed confirmations and request states.
//!
//! A previewed write gets a confirmation: a token sealed under the [`KeyRing`] that binds the tool, the
//! caller, the arguments (their canonical digest, and the arguments themselves so any replica can run
//! them) and an expiry. A tool that asks the client for input gets a request state sealed the same way,
//! carrying the answers given so far. The [`ConfirmationStore`] makes each confirmation act once.

mod canonical;
#[cfg(signs_in)]
mod cipher;
mod keys;
mod store;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub(crate) use canonical::digest;
pub use keys::{KeyError, KeyRing};
#[cfg(database)]
pub(crate) use store::store_failed;
pub use store::{
    Claim, Claimed, ConfirmationStore, Decision, HOLD_MARGIN, KEEP_USED, MemoryStore, StoreFuture,
};

use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};
pub(crate) use crate::random::random_bytes;
use crate::random::random_id;
use crate::tool::Tool;

/// What a sealed token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum GrantKind {
    /// Approves one previewed write.
    Confirm,
    /// Carries the answers a tool has been given so far.
    Ask,
}

impl GrantKind {
    /// What a person calls it, in messages.
    fn noun(self) -> &'static str {
        match self {
            GrantKind::Confirm => "confirmation",
            GrantKind::Ask => "request state",
        }
    }

    /// What to do instead, ending a message.
    fn again(self) -> &'static str {
        match self {
            GrantKind::Confirm => " for a new preview",
            GrantKind::Ask => " without it",
        }
    }
}

/// The sealed payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) kind: GrantKind,
    /// Random; names the confirmation in the store.
    pub(crate) id: String,
    pub(crate) tool: String,
    pub(crate) caller: String,
    /// The digest of the canonical arguments.
    pub(crate) digest: String,
    /// The arguments themselves (confirmations only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Map<String, Value>>,
    /// The answers given so far (request states only).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub(crate) answers: Map<String, Value>,
    /// Unix milliseconds.
    pub(crate) expires: u64,
}

impl Grant {
    pub(crate) fn expires_at(&self) -> SystemTime {
        UNIX_EPOCH
            .checked_add(Duration::from_millis(self.expires))
            .unwrap_or(UNIX_EPOCH)
    }
}

/// Decides whether a caller's write runs without a preview; see
/// [`RegistryBuilder::skip_confirmation`](crate::RegistryBuilder::skip_confirmation).
pub(crate) type SkipPolicy = Box<dyn Fn(&Caller, &Tool) -> bool + Send + Sync>;

/// The confirmation machinery of one registry.
pub(crate) struct Confirmations {
    /// Swapped for the records' ring when an operator rotates the keys (`from_records`).
    pub(crate) keys: std::sync::Arc<arc_swap::ArcSwap<KeyRing>>,
    /// Whether the keys come from the records' store rather than the builder.
    pub(crate) from_records: bool,
    pub(crate) store: Box<dyn ConfirmationStore>,
    pub(crate) ttl: Duration,
    pub(crate) skip: Option<SkipPolicy>,
}

impl Confirmations {
    /// Seals a new grant for `tool`, `caller` and `arguments`.
    pub(crate) fn seal(
        &self,
        kind: GrantKind,
        tool: &str,
        caller: &Caller,
        arguments: &Map<String, Value>,
        answers: Map<String, Value>,
    ) -> String {
        let grant = Grant {
            kind,
            id: random_id(),
            tool: tool.to_owned(),
            caller: bound_to(kind, caller).to_owned(),
            digest: digest(arguments),
            arguments: (kind == GrantKind::Confirm).then(|| arguments.clone()),
            answers,
            expires: unix_ms().saturating_add(millis(self.ttl).max(1)),
        };
        let payload = serde_json::to_vec(&grant).unwrap_or_default();
        self.keys.load().seal(&payload)
    }

    /// Opens a token whatever it binds: checks only the seal and the kind.
    pub(crate) fn open_any(&self, token: &str, kind: GrantKind) -> Result<Grant, ToolError> {
        let grant: Grant = self
            .keys
            .load()
            .open(token)
            .and_then(|payload| serde_json::from_slice(&payload).ok())
            .filter(|grant: &Grant| grant.kind == kind)
            .ok_or_else(|| refused(forged(kind)))?;
        Ok(grant)
    }

    /// Opens a token and checks that it binds this tool, caller and arguments and has not expired.
    pub(crate) fn open(
        &self,
        token: &str,
        kind: GrantKind,
        tool: &str,
        caller: &Caller,
        arguments: &Map<String, Value>,
    ) -> Result<Grant, ToolError> {
        let grant = self.open_any(token, kind)?;
        self.bind(grant, kind, tool, caller, arguments)
    }

    /// Checks that an opened grant binds this tool, caller and arguments and has not expired.
    pub(crate) fn bind(
        &self,
        grant: Grant,
        kind: GrantKind,
        tool: &str,
        caller: &Caller,
        arguments: &Map<String, Value>,
    ) -> Result<Grant, ToolError> {
        let (what, again) = (kind.noun(), kind.again());
        if grant.expires <= unix_ms() {
            return Err(refused(format!(
                "This {what} has expired; nothing was changed. Call the tool again{again}."
            )));
        }
        if grant.tool != tool {
            return Err(refused(format!(
                "This {what} is for `{}`, not `{tool}`; nothing was changed.",
                grant.tool
            )));
        }
        if kind == GrantKind::Confirm && caller.is_delegated() {
            return Err(ToolError::with_kind(
                ErrorKind::Denied,
                format!(
                    "A delegated caller cannot approve or decline a write; {}, for whom it acts, \
                     decides. Nothing was changed.",
                    caller.root().id()
                ),
            ));
        }
        if grant.caller != bound_to(kind, caller) {
            return Err(ToolError::with_kind(
                ErrorKind::Denied,
                format!("This {what} belongs to another caller; nothing was changed."),
            ));
        }
        if grant.digest != digest(arguments) {
            return Err(refused(format!(
                "The arguments differ from the ones this {what} was issued for; nothing was changed. \
                 Call the tool again{again}."
            )));
        }
        Ok(grant)
    }
}

/// Whom a grant is bound to: a write's confirmation to the person at the root of the caller's chain, who
/// alone decides it; a question's answers to the caller that was asked.
fn bound_to(kind: GrantKind, caller: &Caller) -> &str {
    match kind {
        GrantKind::Confirm => caller.root().owner(),
        GrantKind::Ask => caller.owner(),
    }
}

fn forged(kind: GrantKind) -> String {
    format!(
        "This {} is not valid: it was altered, forged, or sealed with a key this server does not \
         have. Nothing was changed; call the tool again{}.",
        kind.noun(),
        kind.again()
    )
}

/// A refusal of a confirmation or request state.
pub(crate) fn refused(message: impl Into<String>) -> ToolError {
    ToolError::with_kind(ErrorKind::Confirmation, message)
}

pub(crate) use crate::clock::{unix_ms, whole_ms as millis};
