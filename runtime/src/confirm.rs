//! Pending writes: a previewed call waits here, bound to its tool, arguments, caller and expiry, until a
//! person approves it (it runs once) or declines it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::{Invocation, ToolError};

/// A write that was previewed and not yet approved.
pub(crate) struct PendingWrite {
    pub(crate) slot: usize,
    pub(crate) caller_id: String,
    pub(crate) arguments: Map<String, Value>,
    pub(crate) invocation: Invocation,
    expires: Instant,
}

/// The pending writes of one registry, keyed by an unguessable token.
pub(crate) struct Confirmations {
    pending: Mutex<HashMap<String, PendingWrite>>,
    ttl: Duration,
}

impl Confirmations {
    pub(crate) fn new(ttl: Duration) -> Self {
        Confirmations {
            pending: Mutex::new(HashMap::new()),
            ttl,
        }
    }

    /// Parks a write and returns its token.
    pub(crate) fn park(
        &self,
        slot: usize,
        caller_id: &str,
        arguments: Map<String, Value>,
        invocation: Invocation,
    ) -> Result<String, ToolError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| {
            ToolError::with_kind(crate::ErrorKind::Internal, format!("no randomness: {e}"))
        })?;
        let token = bytes.iter().fold(String::with_capacity(32), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
        let now = Instant::now();
        let write = PendingWrite {
            slot,
            caller_id: caller_id.to_owned(),
            arguments,
            invocation,
            expires: now + self.ttl,
        };
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|_, w| w.expires > now);
        pending.insert(token.clone(), write);
        Ok(token)
    }

    /// Takes a write out for `caller_id`: it can be taken once. A token of another caller stays parked.
    pub(crate) fn take(&self, token: &str, caller_id: &str) -> Result<PendingWrite, ToolError> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let unknown = || {
            ToolError::new(
                "This confirmation is unknown or was already used; nothing was changed. Call the tool again for a new preview.",
            )
        };
        let write = pending.get(token).ok_or_else(unknown)?;
        if write.caller_id != caller_id {
            return Err(ToolError::with_kind(
                crate::ErrorKind::Denied,
                "This confirmation belongs to another caller; nothing was changed.",
            ));
        }
        let write = pending.remove(token).ok_or_else(unknown)?;
        if write.expires <= Instant::now() {
            return Err(ToolError::new(
                "This confirmation has expired; nothing was changed. Call the tool again for a new preview.",
            ));
        }
        Ok(write)
    }
}
