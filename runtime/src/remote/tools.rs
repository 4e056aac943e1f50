//! A remote server's tool definitions as tools of the registry: named with the server's label, under the
//! operator's decisions, each call going to the server.

use std::sync::Arc;

use rmcp::model::Tool as RemoteDefinition;
use serde_json::{Value, json};

use crate::output::Preview;
use crate::tool::{DynamicTool, META_CAPABILITY};

use super::names::served_name;
use super::server::Access;
use super::session::Remote;

/// One remote tool, ready for the registry.
pub(crate) struct Offer {
    pub(crate) tool: DynamicTool,
    /// Its name on the server.
    pub(crate) remote_name: Arc<str>,
    /// Switched off by the operator.
    pub(crate) enabled: bool,
}

/// The tools `definitions` of `remote` offers, and the problems of those that cannot be served.
pub(crate) fn offers(
    remote: &Arc<Remote>,
    definitions: &[RemoteDefinition],
) -> (Vec<Offer>, Vec<String>) {
    let mut problems = Vec::new();
    let offers = definitions
        .iter()
        .filter_map(
            |definition| match served_name(remote.label(), &definition.name) {
                Ok(name) => Some(offer(remote, definition, name)),
                Err(problem) => {
                    problems.push(problem);
                    None
                }
            },
        )
        .collect();
    (offers, problems)
}

fn offer(remote: &Arc<Remote>, definition: &RemoteDefinition, name: String) -> Offer {
    let server = &remote.server;
    let remote_name: Arc<str> = Arc::from(&*definition.name);
    let decisions = server.tools.get(&*definition.name);
    let access = match decisions {
        Some(tool) if tool.access.decided() => &tool.access,
        _ => &server.access,
    };
    let hint = |pick: fn(&rmcp::model::ToolAnnotations) -> Option<bool>| {
        definition.annotations.as_ref().and_then(pick)
    };
    let read_only = decisions
        .and_then(|t| t.read_only)
        .unwrap_or(server.trusted && hint(|a| a.read_only_hint) == Some(true));
    let approve = !read_only
        && decisions
            .and_then(|t| t.approve)
            .unwrap_or(server.approve_writes);
    let capability = decisions.and_then(|t| t.capability.clone()).or_else(|| {
        let meta = definition.meta.as_ref()?;
        meta.get(META_CAPABILITY)?.as_str().map(str::to_owned)
    });
    let description = definition.description.as_deref().unwrap_or_default();
    let schema = Value::Object((*definition.input_schema).clone());
    let call = {
        let (remote, remote_name) = (Arc::clone(remote), Arc::clone(&remote_name));
        move |arguments, parts| {
            let (remote, remote_name) = (Arc::clone(&remote), Arc::clone(&remote_name));
            async move { remote.call(&remote_name, arguments, parts).await }
        }
    };
    let mut tool = DynamicTool::new(name, description, schema, call).timeout(server.timeout);
    // A remote tool may ask for input (MRTR), relayed to the caller's client.
    tool.asks = true;
    tool = with_access(tool, access);
    if read_only {
        tool = tool.read_only();
    }
    if server.downstream {
        tool = tool.enforced_downstream();
    }
    if let Some(title) = definition
        .title
        .clone()
        .or_else(|| definition.annotations.as_ref()?.title.clone())
    {
        tool = tool.title(title);
    }
    if let Some(schema) = &definition.output_schema {
        tool = tool.output_schema(Value::Object((**schema).clone()));
    }
    if let Some(capability) = capability {
        tool = tool.capability(capability);
    }
    if hint(|a| a.idempotent_hint) == Some(true) {
        tool = tool.idempotent();
    }
    if hint(|a| a.open_world_hint) != Some(false) {
        tool = tool.open_world();
    }
    if approve {
        let (label, remote_name) = (remote.label().to_owned(), Arc::clone(&remote_name));
        tool = tool.preview(move |arguments, _| {
            let preview = preview(&label, &remote_name, &arguments);
            async move { preview }
        });
    }
    Offer {
        tool,
        remote_name,
        enabled: decisions.is_none_or(|t| t.enabled),
    }
}

fn with_access(mut tool: DynamicTool, access: &Access) -> DynamicTool {
    if access.public {
        tool = tool.public();
    }
    for ability in &access.abilities {
        tool = tool.ability(ability.clone());
    }
    tool
}

/// What a person approves before a remote write runs: the server, the tool and the arguments, since
/// toolgate knows nothing more of what it does.
fn preview(label: &str, tool: &str, arguments: &Value) -> Preview {
    Preview::new(format!(
        "Run `{tool}` on the remote server `{label}` with {arguments}"
    ))
    .with_data(json!({ "server": label, "tool": tool, "arguments": arguments }))
}
