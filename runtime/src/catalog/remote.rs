//! Remote servers' tools in the registry's snapshots: registered beside the declared ones under the same
//! policy, and withheld while their server is offline or no operator decided who may run them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::remote::{
    Health, Listed, Offer, Remote, RemoteServer, Remotes, SEPARATOR, Vault, offers,
    server_from_entry,
};
use crate::store::{Records, ToolRecord};
use crate::sync::Locked;
use crate::tool::{Source, Tool};

use super::error::BuildError;
use super::registered::{RegisteredTool, defined};

/// The servers, once each is checked and no two share a label.
pub(crate) fn checked(
    servers: Vec<RemoteServer>,
    vault: Option<Vault>,
) -> Result<Remotes, BuildError> {
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
    Ok(Remotes::new(servers, vault))
}

/// Serves the servers the records add beside the declared ones. A record this toolgate cannot read is
/// left out, and logged.
pub(crate) fn reconcile(remotes: &Remotes, records: &Records) {
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

/// One server's tools made ready for the registry from one listing (their schemas compiled), with the
/// problems of those that cannot be served: kept until the server lists anew or is replaced, so that a
/// change of one server (a storm of relistings) rebuilds no other server's tools.
pub(crate) struct Prepared {
    remote: Weak<Remote>,
    definitions: Arc<[crate::remote::RemoteDefinition]>,
    tools: Vec<RegisteredTool>,
    problems: Vec<String>,
}

/// Each server's [`Prepared`] tools, by label.
pub(crate) type PreparedTools = Mutex<HashMap<String, Arc<Prepared>>>;

/// The tools every server serves now, after the declared ones. A tool whose name does not fit, or is
/// taken by a declared tool or another server's, is left out and reported to the operator in its
/// server's status, naming both sources.
pub(crate) fn remote_tools(
    declared: &[RegisteredTool],
    remotes: &Remotes,
    prepared: &PreparedTools,
) -> Vec<RegisteredTool> {
    let mut taken: HashMap<Arc<str>, Source> = declared
        .iter()
        .map(|r| (Arc::clone(&r.tool.name), r.tool.source.clone()))
        .collect();
    let servers = remotes.servers();
    let mut prepared = prepared.locked();
    prepared.retain(|label, _| servers.iter().any(|r| r.label() == label));
    let mut tools = Vec::new();
    for remote in servers.iter() {
        let served = remote.served();
        let ready = match prepared.get(remote.label()) {
            Some(ready)
                if Weak::as_ptr(&ready.remote) == Arc::as_ptr(remote)
                    && Arc::ptr_eq(&ready.definitions, &served.definitions) =>
            {
                Arc::clone(ready)
            }
            _ => {
                let ready = Arc::new(prepare(remote, &served.definitions));
                prepared.insert(remote.label().to_owned(), Arc::clone(&ready));
                ready
            }
        };
        let mut problems = ready.problems.clone();
        let mut own = Vec::new();
        for registered in &ready.tools {
            let name = &registered.tool.name;
            if let Some(other) = taken.get(name) {
                let remote_name = match &registered.tool.source {
                    Source::Remote { tool, .. } => tool,
                    _ => name,
                };
                problems.push(format!(
                    "the tool `{remote_name}` of the server `{}` is not served: `{name}` is already {other}",
                    remote.label()
                ));
                continue;
            }
            taken.insert(Arc::clone(name), registered.tool.source.clone());
            own.push(served_now(registered.clone(), remote.label(), &served));
        }
        own.sort_by(|a, b| a.tool.name.cmp(&b.tool.name));
        tools.extend(own);
        remote.set_problems(problems);
    }
    tools
}

/// `remote`'s tools of `definitions`, made ready for the registry.
fn prepare(remote: &Arc<Remote>, definitions: &Arc<[crate::remote::RemoteDefinition]>) -> Prepared {
    let (offered, mut problems) = offers(remote, definitions);
    let mut tools = Vec::new();
    for offer in offered {
        match registered(offer, remote.label()) {
            Ok(registered) => tools.push(registered),
            Err(problem) => problems.push(problem),
        }
    }
    Prepared {
        remote: Arc::downgrade(remote),
        definitions: Arc::clone(definitions),
        tools,
        problems,
    }
}

fn registered(offer: Offer, label: &str) -> Result<RegisteredTool, String> {
    let source = Source::Remote {
        server: label.into(),
        tool: Arc::clone(&offer.remote_name),
    };
    let remote_name = Arc::clone(&offer.remote_name);
    let mut registered = defined(offer.tool, source).map_err(|error| {
        format!("the tool `{remote_name}` of the server `{label}` is not served: {error}")
    })?;
    registered.enabled = offer.enabled;
    Ok(registered)
}

/// `registered` as its server's health allows now: withheld while the server is offline.
fn served_now(mut registered: RegisteredTool, label: &str, served: &Listed) -> RegisteredTool {
    if served.health == Health::Offline {
        // Why it is offline (addresses, the transport's errors) is in the server's status, for operators.
        let reason = format!(
            "This tool comes from the remote server `{label}`, which does not answer now. It comes back \
             when the server answers again."
        );
        registered.enabled = false;
        registered.withheld = Some(reason.into());
    }
    registered
}

/// Switches off every remote tool about which no one decided who may run it, even after the operator's
/// records: such a tool is listed to no one (fail closed).
pub(crate) fn withhold_undecided(tools: &mut [RegisteredTool]) {
    for registered in tools {
        let tool: &Tool = &registered.tool;
        if let Source::Remote { server, .. } = &tool.source
            && !tool.rights.decided()
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

/// The most records one remote server's tools have, missing ones included: a server that renames its
/// tools at every listing cannot grow the records without end.
pub(crate) const MAX_RECORDS_PER_SERVER: usize = 2 * crate::remote::MAX_TOOLS;

/// Leaves out of `plan` the new records of a server that has as many as it may, logging how many.
pub(crate) fn bound_new_records(plan: &mut crate::store::SyncPlan, records: &Records) {
    let server = |name: &str| {
        name.split_once(SEPARATOR)
            .map(|(label, _)| label.to_owned())
    };
    let mut kept: HashMap<String, usize> = HashMap::new();
    for record in records.tools.values().filter(|r| r.source == "remote") {
        if let Some(label) = server(&record.name) {
            *kept.entry(label).or_default() += 1;
        }
    }
    let mut left_out: HashMap<String, usize> = HashMap::new();
    plan.new.retain(|record| {
        let Some(label) = server(&record.name).filter(|_| record.source == "remote") else {
            return true;
        };
        let count = kept.entry(label.clone()).or_default();
        if *count >= MAX_RECORDS_PER_SERVER {
            *left_out.entry(label).or_default() += 1;
            return false;
        }
        *count += 1;
        true
    });
    for (server, tools) in left_out {
        tracing::warn!(
            target: "toolgate::records",
            server,
            tools,
            "the server's tools have {MAX_RECORDS_PER_SERVER} records already: no record was made for its new ones (delete the missing ones to make room)"
        );
    }
}

/// Whether `record` is of a server whose last listing failed or came back empty, which then says nothing
/// of whether the tool is still there: a sync leaves it as it is.
pub(crate) fn unlisted(remotes: &Remotes, record: &ToolRecord) -> bool {
    let Some((label, _)) = record.name.split_once(SEPARATOR) else {
        return false;
    };
    record.source == "remote"
        && remotes
            .servers()
            .iter()
            .any(|r| r.label() == label && !r.served().listed)
}
