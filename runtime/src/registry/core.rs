//! What every clone of a [`Registry`](super::Registry) shares: the catalog of tools and the pipeline calls
//! go through. The registry's own parts (its records, remote servers, delegations, `tool_search`) work on
//! it, so that none of them needs the registry itself.

use crate::call::Pipeline;
use crate::catalog::{Catalog, Resolved};

/// The catalog and the pipeline, behind the registry's one `Arc`.
pub(crate) struct Core {
    pub(super) catalog: Catalog,
    pub(super) pipeline: Pipeline,
}

impl Core {
    /// `name` resolved once, in the current snapshot, after the resolution hooks.
    pub(super) fn resolved(&self, name: &str) -> Resolved<'_> {
        let snapshot = self.catalog.snapshot();
        let tool = self.pipeline.resolve(&snapshot, name);
        Resolved { snapshot, tool }
    }
}
