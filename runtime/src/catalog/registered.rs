//! Registered tools: each tool with everything needed to run it, built once from its entry or its dynamic
//! definition.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::caller::Caller;
use crate::param::{CallParts, Invocation, ParamKind, RequirementKind, StateMap};
use crate::tool::{
    Access, Admission, Body, Defer, DynHandler, DynPreview, DynamicTool, PreviewFuture, Rights,
    Source, Tool, ToolEntry, is_tool_name,
};

use super::error::BuildError;
use crate::schema::{self, ArgumentCheck, LazyValidator};

/// A tool with everything needed to run it. Cloning is cheap: a snapshot is made of clones of the tools as
/// the code and the configuration file declare them, with the operator's records over them.
#[derive(Clone)]
pub(crate) struct RegisteredTool {
    pub(crate) tool: Arc<Tool>,
    pub(crate) handler: Handler,
    pub(crate) check: Arc<ArgumentCheck>,
    pub(crate) defaults: Arc<[(String, Value)]>,
    pub(crate) settings: Option<Arc<Value>>,
    /// Checks settings against the tool's settings schema, when it takes `Settings<T>`.
    pub(crate) settings_validator: Option<Arc<LazyValidator>>,
    /// A write with a preview, or a tool that asks the client for input: its calls may take more than one
    /// round, and keep their arguments to seal them. MCP reads it, to know which calls may ask.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) has_rounds: bool,
    /// Whether its calls take the path of rounds: it has rounds, or its runs are counted in a store that
    /// replicas share, which takes an await before its body runs.
    pub(crate) via_rounds: bool,
    /// What its calls may use of what a transport attaches to a call.
    #[cfg_attr(not(feature = "mcp"), allow(dead_code))]
    pub(crate) uses: Uses,
    pub(crate) enabled: bool,
    /// Why it is switched off when no operator did it: a remote tool whose server is offline, or about
    /// which no one decided who may run it.
    pub(crate) withheld: Option<Arc<str>>,
    /// The abilities it requires, as indices into the registry's list of abilities.
    pub(crate) required: Box<[usize]>,
    /// The profiles it is assigned to, each with the settings its callers get (`None`: the tool's own).
    pub(crate) profiles: Option<Arc<Profiles>>,
    /// What a call that carries no ids knows of itself, lent to each such call, so that it shares the
    /// tool's name without counting one more reference to it.
    pub(crate) invocation: Invocation,
}

/// What decides who sees a tool besides the abilities it requires, for each tool of a snapshot in a
/// vector of its own, so that a listing of many tools decides from a few bytes a tool rather than from
/// each tool's whole entry and its `Tool`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Visibility {
    /// Switched on, or a system tool, which is never switched off.
    pub(crate) on: bool,
    pub(crate) read_only: bool,
    pub(crate) admission: Admission,
    pub(crate) defer: Defer,
}

impl Visibility {
    /// What decides who sees `registered` as it is now.
    pub(crate) fn of(registered: &RegisteredTool) -> Visibility {
        let tool = &registered.tool;
        Visibility {
            on: registered.enabled || tool.system,
            read_only: tool.read_only,
            admission: tool.admission(),
            defer: tool.defer,
        }
    }
}

/// What a tool's calls may use of what a transport attaches to them, so that a transport attaches only
/// that. A tool that takes the whole call (a dynamic one) or an injectable of the application's own may
/// use everything.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Uses {
    /// Log messages and progress, which a transport relays to its client.
    pub(crate) reports: bool,
    /// Extensions: over MCP the client's `Peer`, the `Notifier`, the HTTP request's parts.
    pub(crate) extensions: bool,
}

impl Uses {
    pub(crate) const EVERYTHING: Uses = Uses {
        reports: true,
        extensions: true,
    };
}

/// A tool's profiles: name, and the settings of the assignment merged over the tool's.
pub(crate) type Profiles = rustc_hash::FxHashMap<Box<str>, Option<Arc<Value>>>;

impl RegisteredTool {
    /// Whether its settings match the schema its `Settings<T>` publishes (settings it does not take are
    /// not checked).
    pub(crate) fn check_settings(&self) -> Result<(), String> {
        self.settings
            .as_deref()
            .map_or(Ok(()), |settings| self.check_settings_of(settings))
    }

    /// Whether `settings` would match its settings schema.
    pub(crate) fn check_settings_of(&self, settings: &Value) -> Result<(), String> {
        match &self.settings_validator {
            Some(validator) => schema::check_settings(validator, &self.tool.name, settings),
            None => Ok(()),
        }
    }

    /// Whether a caller carrying `profile` may see it: a system tool always, another only when assigned.
    pub(crate) fn in_profile(&self, profile: &str) -> bool {
        self.tool.system
            || self
                .profiles
                .as_ref()
                .is_some_and(|p| p.contains_key(profile))
    }

    /// The settings a call by `caller` gets: those of the assignment of the profile nearest the root of
    /// its chain that assigns the tool (the person's assignment wins over any its sub-agents carry, so
    /// that delegating never reaches another profile's settings), else the tool's.
    #[inline]
    pub(crate) fn settings_for(&self, caller: &Caller) -> Option<&Arc<Value>> {
        let Some(profiles) = &self.profiles else {
            return self.settings.as_ref();
        };
        let assigned = |caller: &Caller| profiles.get(caller.profile()?);
        let assignment = if caller.is_delegated() {
            let chain: Vec<&Caller> = caller.chain().collect();
            chain.into_iter().rev().find_map(assigned)
        } else {
            assigned(caller)
        };
        match assignment {
            Some(Some(settings)) => Some(settings),
            _ => self.settings.as_ref(),
        }
    }
}

#[derive(Clone)]
pub(crate) enum Handler {
    Compiled {
        call: Body,
        preview: Option<fn(CallParts<'_>) -> PreviewFuture>,
    },
    Dynamic {
        call: DynHandler,
        preview: Option<DynPreview>,
    },
}

pub(crate) fn compiled_tool(
    entry: &'static ToolEntry,
    state: &StateMap,
) -> Result<RegisteredTool, BuildError> {
    let source = Source::Compiled {
        module: entry.module,
        file: entry.file,
        line: entry.line,
    };
    let invalid = |reason: String| BuildError::InvalidSchema {
        tool: entry.name.to_owned(),
        reason,
    };
    let mut asks = false;
    let mut settings_schema = None;
    let mut uses = Uses {
        reports: false,
        extensions: false,
    };
    for spec in entry.params {
        let requirement = (spec.fields.requirement)().map(|r| r.kind);
        match requirement {
            Some(RequirementKind::Reports) => uses.reports = true,
            Some(RequirementKind::Extension) => uses.extensions = true,
            None if spec.kind() == ParamKind::Injected => uses = Uses::EVERYTHING,
            _ => {}
        }
        match requirement {
            Some(RequirementKind::State { type_id, type_name }) if !state.contains(type_id()) => {
                return Err(BuildError::MissingState {
                    tool: entry.name.to_owned(),
                    type_name: type_name.to_owned(),
                });
            }
            Some(RequirementKind::Asks) => asks = true,
            Some(RequirementKind::Settings { schema }) => {
                settings_schema = Some(schema::taken_schema(schema));
            }
            _ => {}
        }
    }
    let input = schema::input_schema(entry.params).map_err(invalid)?;
    let input_schema = Arc::new(input.schema);
    let check = ArgumentCheck::new(&input_schema, true).map_err(invalid)?;
    // Each default alone must satisfy its property's schema; the other arguments' `required` does not apply.
    for (name, value) in &input.defaults {
        if !check.admits_alone(name, value).map_err(invalid)? {
            return Err(invalid(format!(
                "the default of `{name}` ({value}) does not satisfy its own schema"
            )));
        }
    }
    let mut rights = Rights::default();
    match entry.access {
        Access::Public => rights.public(),
        Access::Abilities(list) => list.iter().for_each(|a| rights.ability((*a).to_owned())),
    }
    if entry.downstream {
        rights.enforced_downstream();
    }
    let tool = Tool {
        name: entry.name.into(),
        title: entry.title.map(str::to_owned),
        description: entry.description.to_owned(),
        rights,
        read_only: entry.read_only,
        capability: entry.capability.map(str::to_owned),
        categories: entry.categories.iter().map(|c| (*c).to_owned()).collect(),
        system: entry.system,
        defer: entry.defer,
        task: entry.task,
        idempotent: entry.idempotent,
        open_world: entry.open_world,
        max_runs: entry.max_runs,
        timeout: entry.timeout_ms.map(Duration::from_millis),
        has_preview: entry.preview.is_some(),
        overrides_builtin: entry.overrides_builtin,
        input_schema,
        output_schema: schema::output_schema(entry.output_schema).map(Arc::new),
        settings_schema: settings_schema.map(Arc::new),
        source,
    };
    let settings_validator = match &tool.settings_schema {
        Some(schema) => Some(Arc::new(LazyValidator::new(schema, true).map_err(invalid)?)),
        None => None,
    };
    let rounds = asks || entry.preview.is_some();
    if entry.preview.is_some() {
        // The preview's own parameters are not listed with the tool's.
        uses = Uses::EVERYTHING;
    }
    Ok(RegisteredTool {
        has_rounds: rounds,
        via_rounds: rounds,
        uses,
        invocation: Invocation::of(&tool.name),
        tool: Arc::new(tool),
        handler: Handler::Compiled {
            call: entry.call,
            preview: entry.preview,
        },
        check: Arc::new(check),
        defaults: input
            .defaults
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v))
            .collect(),
        settings: None,
        settings_validator,
        enabled: true,
        withheld: None,
        required: Box::default(),
        profiles: None,
    })
}

/// A tool the application defined at run time, which must say who may run it.
pub(crate) fn dynamic_tool(tool: DynamicTool) -> Result<RegisteredTool, BuildError> {
    let registered = defined(tool, Source::Dynamic)?;
    if !registered.tool.rights.declared_once() {
        let tool = registered.tool.name.to_string();
        return Err(BuildError::Undeclared { tool });
    }
    Ok(registered)
}

/// A tool defined at run time, from `source`: its name and schema checked, its argument check made.
pub(crate) fn defined(dynamic: DynamicTool, source: Source) -> Result<RegisteredTool, BuildError> {
    let DynamicTool {
        mut tool,
        handler,
        preview,
        asks,
    } = dynamic;
    if !is_tool_name(&tool.name) {
        let name = tool.name.to_string();
        return Err(BuildError::InvalidName { name });
    }
    let invalid = |reason| BuildError::InvalidSchema {
        tool: tool.name.to_string(),
        reason,
    };
    if tool.input_schema.get("type") != Some(&Value::from("object")) {
        let reason = "the input schema must be an object schema (`\"type\": \"object\"`)";
        return Err(invalid(reason.to_owned()));
    }
    // toolgate's own tools are trusted like compiled ones; an application's or a remote server's schema
    // is checked now.
    let trusted = matches!(source, Source::BuiltIn);
    let check = ArgumentCheck::new(&tool.input_schema, trusted).map_err(invalid)?;
    tool.source = source;
    tool.has_preview = preview.is_some();
    let rounds = tool.has_preview || asks;
    Ok(RegisteredTool {
        invocation: Invocation::of(&tool.name),
        tool: Arc::new(tool),
        handler: Handler::Dynamic {
            call: handler,
            preview,
        },
        check: Arc::new(check),
        defaults: Arc::default(),
        settings: None,
        settings_validator: None,
        has_rounds: rounds,
        via_rounds: rounds,
        uses: Uses::EVERYTHING,
        enabled: true,
        withheld: None,
        required: Box::default(),
        profiles: None,
    })
}
