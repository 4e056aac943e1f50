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

/// The longest `state` an authorization response is read with.
#[cfg(signs_in)]
const MAX_STATE: usize = 512;

/// Begins an operator's sign-in to the server `label`: where the operator goes to sign in.
#[cfg(signs_in)]
pub(super) async fn begin_sign_in(core: &Core, label: &str) -> Result<String, RecordError> {
    let remote = remote(core, label)?;
    (remote.begin_sign_in().await).map_err(|why| RecordError::new(RecordErrorKind::Invalid, why))
}

/// Finishes the operator's sign-in the authorization response `query` answers: the label of its server.
#[cfg(signs_in)]
pub(super) async fn finish_sign_in(core: &Core, query: &str) -> Result<String, RecordError> {
    let invalid = |why: String| RecordError::new(RecordErrorKind::Invalid, why);
    let state = oauth2::url::form_urlencoded::parse(query.as_bytes())
        .find(|(name, _)| name == "state")
        .map(|(_, state)| state.into_owned())
        .filter(|state| !state.is_empty() && state.len() <= MAX_STATE)
        .ok_or_else(|| invalid("the authorization response carries no state".into()))?;
    let live = core
        .catalog
        .live()
        .ok_or_else(|| invalid("this registry serves no remote servers".into()))?;
    let vault = (live.remotes.vault()).ok_or_else(|| {
        invalid("this registry keeps no sign-ins: it has no records database".into())
    })?;
    let (label, begun) = vault.finish(&state).await.map_err(invalid)?;
    let remote = match remote(core, &label) {
        Ok(remote) => remote,
        // Added by an operator a moment ago, on another replica or from the command line.
        Err(_) => {
            records::refresh(core).await?;
            remote(core, &label)?
        }
    };
    remote.finish_sign_in(begun, query).await.map_err(invalid)?;
    Ok(label)
}

/// The remote server `label`, as served now.
#[cfg(signs_in)]
fn remote(core: &Core, label: &str) -> Result<std::sync::Arc<crate::remote::Remote>, RecordError> {
    let not_found = || {
        RecordError::new(
            RecordErrorKind::NotFound,
            format!("there is no remote server `{label}`"),
        )
    };
    let live = core.catalog.live().ok_or_else(not_found)?;
    let servers = live.remotes.servers();
    servers
        .iter()
        .find(|remote| remote.label() == label)
        .cloned()
        .ok_or_else(not_found)
}

/// The gateway's client ID metadata document at `path`, for the remote servers that name it.
#[cfg(all(signs_in, admin))]
pub(super) fn client_metadata(core: &Core, path: &str) -> Option<serde_json::Value> {
    core.catalog.live()?.remotes.client_metadata(path)
}
