//! The sealing keys as an operator sees them: which may be retired, and each key's state without its
//! secret.

use crate::confirm::KeyRing;

#[cfg(database)]
use super::record::{RecordError, RecordErrorKind};

/// One key of a ring, without its secret.
#[cfg(edits)]
#[derive(Debug, serde::Serialize)]
pub(crate) struct KeyInfo<'a> {
    pub(crate) id: &'a str,
    /// When it seals from (milliseconds since the Unix epoch; 0: it always did).
    pub(crate) seals_from_ms: u64,
    /// Whether it is the key that seals now.
    pub(crate) sealing: bool,
}

#[cfg(edits)]
impl KeyInfo<'_> {
    /// Every key of `ring`, newest first.
    pub(crate) fn of(ring: &KeyRing) -> Vec<KeyInfo<'_>> {
        let sealing = ring.current_id();
        ring.keys()
            .map(|(id, seals_from_ms)| KeyInfo {
                id,
                seals_from_ms,
                sealing: id == sealing,
            })
            .collect()
    }
}

/// Whether key `id` of `ring` may be retired: it exists (else `NotFound`), it is not the one that seals
/// now, and so not the last key (else `Invalid`).
#[cfg(database)]
pub(crate) fn retirable(ring: &KeyRing, id: &str) -> Result<(), RecordError> {
    if !ring.keys().any(|(known, _)| known == id) {
        return Err(RecordError::new(
            RecordErrorKind::NotFound,
            format!("no key `{id}`; `keys list` shows them"),
        ));
    }
    if ring.current_id() == id {
        return Err(RecordError::new(
            RecordErrorKind::Invalid,
            format!(
                "`{id}` seals confirmations now; rotate first, and retire it once the new key seals and \
                 the confirmations it sealed have expired"
            ),
        ));
    }
    Ok(())
}
