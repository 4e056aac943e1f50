//! The registry's remote servers: how each is doing, listing them now, and an operator's change of one.

use crate::remote::{ServerStatus, server_from_entry};
use crate::store::{RecordError, RecordErrorKind, ServerChange, ServerEdit, Write};

use super::core::Core;
use super::records;

/// The remote servers and how each is doing, in the order they were added.
pub(super) fn servers(core: &Core) -> Vec<ServerStatus> {
    core.catalog.live().map_or_else(Vec::new, |live| {
        live.remotes.servers().iter().map(|r| r.status()).collect()
    })
}

/// Lists every remote server's tools now, and serves what changed.
pub(super) async fn refresh_servers(core: &Core) -> Result<(), RecordError> {
    // First take up the servers the records add.
    records::refresh(core).await?;
    core.catalog.list_remotes().await;
    records::refresh(core).await.map(drop)
}

/// Writes an operator's change of a remote server, checked first, and serves it at once.
pub(super) async fn edit_server(core: &Core, edit: &ServerEdit) -> Result<u64, RecordError> {
    if let ServerChange::Put(entry) = &edit.change {
        server_from_entry(&edit.label, entry)
            .map_err(|e| RecordError::new(RecordErrorKind::Invalid, e))?;
    }
    let revision = core.catalog.store()?.write(Write::Server(edit)).await?;
    records::served(core, revision).await
}
