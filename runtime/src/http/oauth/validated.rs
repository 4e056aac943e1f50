//! Tokens already checked, with the caller each made, until they expire: a call with a token seen before
//! costs a lookup, not a signature check.

use std::sync::Mutex;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::caller::Caller;

/// The most tokens kept. Only tokens that passed every check are kept, so a client cannot fill it with
/// tokens of its own making.
const CAPACITY: usize = 10_000;

/// Checked tokens and their callers.
#[derive(Default)]
pub(super) struct Validated(Mutex<HashMap<Box<str>, Checked, FxBuildHasher>>);

struct Checked {
    caller: Caller,
    /// The token's `exp`, in seconds since the epoch.
    expires: u64,
}

impl Validated {
    /// The caller `token` made, if it was checked and has not expired at `now` (seconds).
    pub(super) fn get(&self, token: &str, now: u64) -> Option<Caller> {
        let entries = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        entries
            .get(token)
            .filter(|checked| checked.expires > now)
            .map(|checked| checked.caller.clone())
    }

    /// Keeps `token`'s caller until `expires`. A full cache first drops what expired, then, when nothing
    /// did, everything: the tokens still in use are checked again on their next call.
    pub(super) fn put(&self, token: &str, caller: Caller, expires: u64, now: u64) {
        let mut entries = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.retain(|_, checked| checked.expires > now);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(token.into(), Checked { caller, expires });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_until_it_expires_and_the_cache_stays_bounded() {
        let validated = Validated::default();
        validated.put("t", Caller::new("rita"), 100, 0);
        assert_eq!(
            validated.get("t", 99).map(|c| c.id().to_owned()),
            Some("rita".into())
        );
        assert!(validated.get("t", 100).is_none(), "expired");
        assert!(validated.get("u", 0).is_none(), "never seen");
        for n in 0..CAPACITY + 10 {
            validated.put(&n.to_string(), Caller::new("sam"), 100, 0);
        }
        assert!(validated.0.lock().unwrap().len() <= CAPACITY);
    }
}
