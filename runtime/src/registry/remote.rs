//! Remote servers' tools in the registry's snapshots: registered beside the declared ones under the same
//! policy, and withheld while their server is offline or no operator decided who may run them.

use std::collections::HashMap;
use std::sync::Arc;

use crate::remote::{
    Health, Offer, RemoteServer, Remotes, SEPARATOR, Served, ServerStatus, offers,
    server_from_entry,
};
use crate::store::{
    RecordError, RecordErrorKind, Records, ServerChange, ServerEdit, ServerRecord, ToolRecord,
    Write,
};
use crate::tool::{Source, Tool};

use super::error::BuildError;
use super::queries::Registry;
use super::registered::{RegisteredTool, defined};
use super::snapshot::Tools;

/// The servers, once each is checked and no two share a label.
pub(super) fn checked(servers: Vec<RemoteServer>) -> Result<Remotes, BuildError> {
    let mut labels = std::collections::HashSet::new();
    for server in &servers {
        let label = server.label().to_owned();
        server.check().map_err(|reason| BuildError::InvalidServer {
            label: label.clone(),
            reason,
        })?;
        if !labels.insert(label.clone()) {
            let reason =
                format!("two remote servers are labelled `{label}`: give each its own label");
            return Err(BuildError::InvalidServer { label, reason });
        }
    }
    Ok(Remotes::new(servers))
}

/// Serves the servers the records add beside the declared ones. A record this toolgate cannot read is
/// left out, and logged.
pub(super) fn reconcile(remotes: &Remotes, records: &Records) {
    let added = records
        .servers
        .values()
        .filter_map(|record| match server_from_entry(&record.label, &record.entry) {
            Ok(server) => Some(server),
            Err(error) => {
                tracing::error!(target: "toolgate::remote", server = record.label, error, "not served");
                None
            }
        })
        .collect();
    remotes.reconcile(added);
}

/// The tools every server serves now, after the declared ones. A tool whose name does not fit, or is
/// taken by a declared tool or another server's, is left out and reported to the operator in its
/// server's status, naming both sources.
pub(super) fn remote_tools(declared: &[RegisteredTool], remotes: &Remotes) -> Vec<RegisteredTool> {
    let mut taken: HashMap<Arc<str>, Source> = declared
        .iter()
        .map(|r| (Arc::clone(&r.tool.name), r.tool.source.clone()))
        .collect();
    let mut tools = Vec::new();
    for remote in remotes.servers().iter() {
        let served = remote.served();
        let (offered, mut problems) = offers(remote, &served.definitions);
        let mut own = Vec::new();
        for offer in offered {
            let name = offer.tool.name.clone();
            if let Some(other) = taken.get(name.as_str()) {
                problems.push(format!(
                    "the tool `{}` of the server `{}` is not served: `{name}` is already {other}",
                    offer.remote_name,
                    remote.label()
                ));
                continue;
            }
            match registered(offer, remote.label(), &served) {
                Ok(registered) => {
                    taken.insert(
                        Arc::clone(&registered.tool.name),
                        registered.tool.source.clone(),
                    );
                    own.push(registered);
                }
                Err(problem) => problems.push(problem),
            }
        }
        own.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        tools.extend(own);
        remote.set_problems(problems);
    }
    tools
}

fn registered(offer: Offer, label: &str, served: &Served) -> Result<RegisteredTool, String> {
    let source = Source::Remote {
        server: label.into(),
        tool: Arc::clone(&offer.remote_name),
    };
    let remote_name = Arc::clone(&offer.remote_name);
    let mut registered = defined(offer.tool, source).map_err(|error| {
        format!("the tool `{remote_name}` of the server `{label}` is not served: {error}")
    })?;
    registered.enabled = offer.enabled;
    if served.health == Health::Offline {
        let error = served.last_error.as_deref().unwrap_or("it does not answer");
        let reason = format!(
            "This tool comes from the remote server `{label}`, which is offline ({error}). It comes back \
             when the server answers again."
        );
        registered.enabled = false;
        registered.withheld = Some(reason.into());
    }
    Ok(registered)
}

/// Switches off every remote tool about which no one decided who may run it, even after the operator's
/// records: such a tool is listed to no one (fail closed).
pub(super) fn withhold_undecided(tools: &mut [RegisteredTool]) {
    for registered in tools {
        let tool: &Tool = &registered.tool;
        if let Source::Remote { server, .. } = &tool.source
            && !tool.public
            && tool.abilities.is_empty()
            && !tool.downstream
        {
            let reason = format!(
                "No operator has decided who may run `{}` of the remote server `{server}`: give the server a \
                 default ability, decide for the tool in the configuration, or require an ability on its \
                 record.",
                tool.name
            );
            registered.enabled = false;
            registered.withheld = Some(reason.into());
        }
    }
}

/// Whether `record` is of a server whose last listing failed or came back empty, which then says nothing
/// of whether the tool is still there: a sync leaves it as it is.
pub(super) fn unlisted(remotes: &Remotes, record: &ToolRecord) -> bool {
    let Some((label, _)) = record.name.split_once(SEPARATOR) else {
        return false;
    };
    record.source == "remote"
        && remotes
            .servers()
            .iter()
            .any(|r| r.label() == label && !r.served().listed)
}

impl Registry {
    /// The remote servers and how each is doing, in the order they were added.
    pub fn servers(&self) -> Vec<ServerStatus> {
        self.remotes().map_or_else(Vec::new, |remotes| {
            remotes.servers().iter().map(|r| r.status()).collect()
        })
    }

    /// Lists every remote server's tools now, rather than at the next check, and serves what changed.
    ///
    /// # Errors
    /// When the records cannot be read; the registry goes on serving its snapshot.
    pub async fn refresh_servers(&self) -> Result<(), RecordError> {
        // First take up the servers the records add.
        self.refresh().await?;
        self.list_servers().await;
        self.refresh().await.map(drop)
    }

    /// Lists every remote server's tools now.
    pub(super) async fn list_servers(&self) {
        if let Some(remotes) = self.remotes() {
            for remote in remotes.servers().iter() {
                remote.list().await;
            }
        }
    }

    /// The remote servers operators added, as the records have them now.
    ///
    /// # Errors
    /// Without records, or when they cannot be read.
    pub async fn server_records(&self) -> Result<Vec<ServerRecord>, RecordError> {
        let records = self.store()?.load().await?;
        Ok(records.servers.into_values().collect())
    }

    /// Writes an operator's change of a remote server and serves it at once: an added server's tools
    /// come once it is listed, a removed one's go now. An entry is checked as the configuration file's
    /// are (`[servers.<label>]`, in JSON) before anything is written.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate::Registry;
    /// use toolgate::sqlite::SqliteStore;
    /// use toolgate::store::{RecordErrorKind, ServerChange, ServerEdit};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let registry = Registry::builder().records(SqliteStore::in_memory()?).load().await?;
    /// let add = ServerEdit::new("ops", "files", 0, ServerChange::Put(json!({ "command": "files-mcp", "ability": "files.read" })));
    /// registry.edit_server(&add).await?;
    /// assert_eq!(registry.servers()[0].reached_by, "stdio: files-mcp");
    ///
    /// let sse = ServerEdit::new("ops", "old", 0, ServerChange::Put(json!({ "type": "sse", "url": "http://127.0.0.1:9/sse" })));
    /// let refused = registry.edit_server(&sse).await.unwrap_err();
    /// assert_eq!(refused.kind(), RecordErrorKind::Invalid);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// An entry that cannot be served, a stale version, an unknown server to remove, or records that
    /// cannot be written; then nothing changed.
    pub async fn edit_server(&self, edit: &ServerEdit) -> Result<u64, RecordError> {
        if let ServerChange::Put(entry) = &edit.change {
            server_from_entry(&edit.label, entry)
                .map_err(|e| RecordError::new(RecordErrorKind::Invalid, e))?;
        }
        let revision = self.store()?.write(Write::Server(edit)).await?;
        self.refresh().await?;
        Ok(revision)
    }

    pub(super) fn remotes(&self) -> Option<&Remotes> {
        match &self.inner.tools {
            Tools::Live(live) => Some(&live.remotes),
            Tools::Fixed(_) => None,
        }
    }
}
