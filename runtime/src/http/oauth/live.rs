//! The scope map in force: the code's [`ScopeMap`], with what the operator's records grant over it,
//! made again only when those records' grants change.

use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwap;

use super::claims::ScopeMap;
use crate::registry::Registry;

/// The code's map, and the registry whose records are laid over it once a server serves it.
pub(super) struct LiveScopes {
    code: ScopeMap,
    registry: OnceLock<Registry>,
    made: ArcSwap<InForce>,
}

/// The map in force, and the revision of the registry's grants it was made with (`None`: the code's
/// map alone, before a registry is served).
pub(super) struct InForce {
    pub(super) revision: Option<u64>,
    pub(super) map: ScopeMap,
}

impl LiveScopes {
    /// The code's `map`, alone until a registry is [served](Self::serve).
    pub(super) fn new(code: ScopeMap) -> Self {
        let made = InForce {
            revision: None,
            map: code.clone(),
        };
        LiveScopes {
            code,
            registry: OnceLock::new(),
            made: ArcSwap::from_pointee(made),
        }
    }

    /// Reads the operator's grants in `registry` from now on; the first registry served is kept.
    pub(super) fn serve(&self, registry: &Registry) {
        let _ = self.registry.set(registry.clone());
    }

    /// The revision of the registry's grants now: a caller made at another one is made again.
    pub(super) fn revision(&self) -> Option<u64> {
        (self.registry.get()).map(|registry| registry.grants().revision)
    }

    /// The map in force now.
    pub(super) fn now(&self) -> Arc<InForce> {
        let Some(registry) = self.registry.get() else {
            return self.made.load_full();
        };
        let grants = registry.grants();
        let made = self.made.load_full();
        if made.revision == Some(grants.revision) {
            return made;
        }
        let fresh = Arc::new(InForce {
            revision: Some(grants.revision),
            map: self.code.overlaid(&grants),
        });
        self.made.store(Arc::clone(&fresh));
        fresh
    }
}
