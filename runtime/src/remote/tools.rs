//! A remote server's tool definitions as tools of the registry: named with the server's label, under the
//! operator's decisions, each call going to the server.

use std::sync::Arc;

use rmcp::model::Tool as RemoteDefinition;
use serde_json::{Value, json};

use crate::error::ToolError;
use crate::output::{Preview, ToolResult};
use crate::text::{capped, shown};
use crate::tool::{DynamicTool, META_CAPABILITY};

use super::names::served_name;
use super::session::Remote;

/// One remote tool, ready for the registry.
pub(crate) struct Offer {
    pub(crate) tool: DynamicTool,
    /// Its name on the server.
    pub(crate) remote_name: Arc<str>,
    /// Switched off by the operator.
    pub(crate) enabled: bool,
}

/// The longest description of a remote tool that is served.
pub(crate) const MAX_DESCRIPTION: usize = 16 * 1024;

/// The longest input or output schema of a remote tool that is served, as JSON text.
pub(crate) const MAX_SCHEMA: usize = 64 * 1024;

/// The deepest a remote tool's schema may nest.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 32;

/// The tools `definitions` of `remote` offers, and the problems of those that cannot be served.
pub(crate) fn offers(
    remote: &Arc<Remote>,
    definitions: &[RemoteDefinition],
) -> (Vec<Offer>, Vec<String>) {
    let mut problems = Vec::new();
    let offers = definitions
        .iter()
        .filter_map(|definition| {
            let offered = served_name(remote.label(), &definition.name)
                .and_then(|name| fits(remote.label(), definition).map(|()| name))
                .and_then(|name| offer(remote, definition, name));
            offered.map_err(|problem| problems.push(problem)).ok()
        })
        .collect();
    (offers, problems)
}

/// Whether a definition is within the bounds a served tool keeps: its description and schemas are not
/// too long, and its schemas not too deep, so that one tool cannot make a listing unreadable.
fn fits(label: &str, definition: &RemoteDefinition) -> Result<(), String> {
    let refused = |why: String| {
        format!(
            "the tool `{}` of the server `{label}` is not served: {why}",
            capped(&shown(&definition.name))
        )
    };
    let description = definition.description.as_deref().unwrap_or_default();
    if description.len() > MAX_DESCRIPTION {
        return Err(refused(format!(
            "its description is {} bytes, past the {MAX_DESCRIPTION} a served tool may have",
            description.len()
        )));
    }
    let schemas = [
        Some(&definition.input_schema),
        definition.output_schema.as_ref(),
    ];
    for schema in schemas.into_iter().flatten() {
        let schema = Value::Object((**schema).clone());
        let length = schema.to_string().len();
        if length > MAX_SCHEMA {
            return Err(refused(format!(
                "a schema of it is {length} bytes, past the {MAX_SCHEMA} a served tool may have"
            )));
        }
        if depth(&schema) > MAX_SCHEMA_DEPTH {
            return Err(refused(format!(
                "a schema of it nests deeper than {MAX_SCHEMA_DEPTH} levels"
            )));
        }
    }
    Ok(())
}

/// How deep `value` nests: 1 for a scalar.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 1,
    }
}

fn offer(
    remote: &Arc<Remote>,
    definition: &RemoteDefinition,
    name: String,
) -> Result<Offer, String> {
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
    // A capability the server names for itself is believed only of a trusted server: an untrusted one
    // could claim the application's own, and stand in for its tool.
    let capability = decisions.and_then(|t| t.capability.clone()).or_else(|| {
        let meta = definition.meta.as_ref().filter(|_| server.trusted)?;
        meta.get(META_CAPABILITY)?.as_str().map(str::to_owned)
    });
    // What the server writes for the model and for people, with every character that hides itself shown.
    let description = shown(definition.description.as_deref().unwrap_or_default()).into_owned();
    let schema = Value::Object((*definition.input_schema).clone());
    let output = match &definition.output_schema {
        Some(schema) => Some(Arc::new(
            crate::schema::validator(&Value::Object((**schema).clone())).map_err(|error| {
                format!(
                    "the tool `{}` of the server `{}` is not served: its output schema is not valid \
                     ({error})",
                    capped(&shown(&definition.name)),
                    remote.label()
                )
            })?,
        )),
        None => None,
    };
    let call = {
        let (remote, remote_name) = (Arc::clone(remote), Arc::clone(&remote_name));
        move |arguments, parts| {
            let (remote, remote_name) = (Arc::clone(&remote), Arc::clone(&remote_name));
            let output = output.clone();
            async move {
                let result = remote.call(&remote_name, arguments, parts).await?;
                keeps_its_schema(remote.label(), &remote_name, result, output.as_deref())
            }
        }
    };
    let mut tool = DynamicTool::new(name, description, schema, call).timeout(server.timeout);
    // A remote tool may ask for input (MRTR), relayed to the caller's client.
    tool.asks = true;
    tool.tool.rights = access.with_downstream_of(&server.access);
    if read_only {
        tool = tool.read_only();
    }
    if let Some(title) = definition
        .title
        .clone()
        .or_else(|| definition.annotations.as_ref()?.title.clone())
    {
        tool = tool.title(capped(&shown(&title)).into_owned());
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
    Ok(Offer {
        tool,
        remote_name,
        enabled: decisions.is_none_or(|t| t.enabled),
    })
}

/// `result`, unless its structured content breaks the output schema its tool publishes: a client would
/// refuse such a result (both official SDKs do), so it is an error that names the server instead.
fn keeps_its_schema(
    label: &str,
    tool: &str,
    result: ToolResult,
    output: Option<&jsonschema::Validator>,
) -> Result<ToolResult, ToolError> {
    let (Some(validator), Some(structured)) = (output, &result.structured) else {
        return Ok(result);
    };
    if result.is_error {
        return Ok(result);
    }
    let refused = validator
        .iter_errors(structured)
        .next()
        .map(|error| capped(&shown(&error.to_string())).into_owned());
    match refused {
        None => Ok(result),
        Some(error) => Err(ToolError::new(format!(
            "The remote server `{label}` answered `{tool}` with structured content that its own output \
             schema refuses ({error}); the answer is not passed on."
        ))),
    }
}

/// What a person approves before a remote write runs: the server, the tool and the arguments, since
/// toolgate knows nothing more of what it does.
fn preview(label: &str, tool: &str, arguments: &Value) -> Preview {
    Preview::new(format!(
        "Run `{tool}` on the remote server `{label}` with {arguments}"
    ))
    .with_data(json!({ "server": label, "tool": tool, "arguments": arguments }))
}
