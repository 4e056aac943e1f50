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
    /// The revision of the operator's grants it was made with.
    revision: Option<u64>,
    /// The token's `exp`, in seconds since the epoch.
    expires: u64,
}

impl Validated {
    /// The caller `token` made, if it was checked, has not expired at `now` (seconds), and was made
    /// with the grants of `revision`.
    pub(super) fn get(&self, token: &str, now: u64, revision: Option<u64>) -> Option<Caller> {
        let entries = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        entries
            .get(token)
            .filter(|checked| checked.expires > now && checked.revision == revision)
            .map(|checked| checked.caller.clone())
    }

    /// Keeps `token`'s caller, made with the grants of `revision`, until `expires`. A full cache first
    /// drops what expired, then, when nothing did, everything: the tokens still in use are checked
    /// again on their next call.
    pub(super) fn put(
        &self,
        token: &str,
        (caller, revision): (Caller, Option<u64>),
        expires: u64,
        now: u64,
    ) {
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
        let checked = Checked {
            caller,
            revision,
            expires,
        };
        entries.insert(token.into(), checked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_until_it_expires_and_the_cache_stays_bounded() {
        let validated = Validated::default();
        validated.put("t", (Caller::new("rita"), Some(3)), 100, 0);
        assert_eq!(
            validated.get("t", 99, Some(3)).map(|c| c.id().to_owned()),
            Some("rita".into())
        );
        assert!(validated.get("t", 100, Some(3)).is_none(), "expired");
        assert!(
            validated.get("t", 99, Some(4)).is_none(),
            "the grants changed"
        );
        assert!(validated.get("u", 0, Some(3)).is_none(), "never seen");
        for n in 0..CAPACITY + 10 {
            validated.put(&n.to_string(), (Caller::new("sam"), None), 100, 0);
        }
        assert!(validated.0.lock().unwrap().len() <= CAPACITY);
    }
}
