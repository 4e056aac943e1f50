//! What access tokens' scopes and roles grant, as the operator's records say: the part of a snapshot a
//! token verifier reads, over what its code says.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::store::{Claim, Records};

/// The operator's grants of one snapshot, with the revision at which they last changed: a verifier
/// keeps what it made of them until that moves.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Grants {
    /// The records' revision when they last changed (0 before any).
    pub(crate) revision: u64,
    /// The abilities each scope or role grants.
    pub(crate) by_claim: BTreeMap<Claim, Vec<String>>,
}

impl Grants {
    /// The grants of the configuration file, `configured`, with those `records` hold over them:
    /// `previous` itself when they are the same, so that what was made of them stays good while other
    /// records change.
    pub(crate) fn of(
        records: &Records,
        configured: &Grants,
        previous: &Arc<Grants>,
    ) -> Arc<Grants> {
        let mut by_claim = configured.by_claim.clone();
        for grant in records.grants.values() {
            by_claim.insert(grant.claim.clone(), grant.abilities.clone());
        }
        if by_claim == previous.by_claim {
            return Arc::clone(previous);
        }
        Arc::new(Grants {
            revision: records.revision,
            by_claim,
        })
    }
}
