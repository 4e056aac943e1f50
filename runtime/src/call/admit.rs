//! Admission: authorize, check availability and the ceiling, validate. What refuses a call before anything runs.

use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::catalog::{RegisteredTool, ToolId, Visibility};
use crate::error::{ErrorKind, ToolError};
use crate::output::Outcome;
use crate::param::Invocation;
use crate::policy::ceiling::{Ceilings, Count, Refused};
use crate::schema;

use super::flight::{InFlight, Refusal, refuse, unknown_tool};
use super::pipeline::Pipeline;

impl Pipeline {
    /// Authorize, check the ceiling, validate: the steps that refuse a call before anything runs. A call
    /// that replies to a preview or a question skips the ceiling's early check: its decision or replay
    /// runs no body, and a body it does run is counted then.
    pub(super) fn admit(
        &self,
        flight: &InFlight<'_>,
        requested: &str,
        resolved: Option<ToolId>,
        arguments: Value,
        replying: bool,
    ) -> Result<(ToolId, Map<String, Value>), Refusal> {
        let (caller, invocation) = (flight.caller, &flight.invocation);
        let name = &*invocation.tool_name;
        let index = resolved.ok_or_else(|| unknown_tool(requested))?;
        let registered = &flight.snapshot.tool(index);
        self.gate(flight, registered, flight.snapshot.visibility_of(index))?;
        if !replying {
            self.ceiling(registered, caller, invocation, Ceilings::check)?;
        }
        let mut arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                let message =
                    format!("Invalid arguments for `{name}`: expected a JSON object, got {other}.");
                return Err(refuse(Outcome::Failed(ToolError::with_kind(
                    ErrorKind::InvalidArguments,
                    message,
                ))));
            }
        };
        for (key, value) in registered.defaults.iter() {
            if !arguments.contains_key(key) {
                arguments.insert(key.clone(), value.clone());
            }
        }
        let arguments = schema::validate(&registered.check, name, arguments)
            .map_err(|e| refuse(Outcome::Failed(e)))?;
        // Rate limits counted in memory, here; a shared store's, on the path that can wait for it.
        if let Some(rates) = &flight.snapshot.rates
            && !replying
            && self.ceilings.shared.is_none()
        {
            rates
                .take_now(&self.ceilings, name, caller)
                .map_err(|e| refuse(Outcome::Failed(e)))?;
        }
        Ok((index, arguments))
    }

    /// Authorization, then availability (switched on, mode), so that only a caller who may run the tool
    /// learns why it cannot run now. A denial reaches the audit as one; unless denials are explained, the
    /// caller gets the unknown tool's answer instead (see `call_with`).
    pub(super) fn gate(
        &self,
        flight: &InFlight<'_>,
        registered: &RegisteredTool,
        visibility: Visibility,
    ) -> Result<(), Refusal> {
        let (catalog, caller) = (flight.catalog, flight.caller);
        if !catalog.authorized(registered, visibility, caller, None) {
            return Err(refuse(Outcome::Denied(ToolError::with_kind(
                ErrorKind::Denied,
                caller.denial(),
            ))));
        }
        catalog
            .availability(registered, visibility)
            .map_err(|reason| {
                refuse(Outcome::Failed(ToolError::with_kind(
                    ErrorKind::Unavailable,
                    reason,
                )))
            })
    }

    /// Applies `count` to the tool's ceiling for this caller and session, if the tool has one. Admission
    /// only checks it; a run is counted when the tool's body runs.
    #[inline(always)]
    pub(super) fn ceiling(
        &self,
        registered: &RegisteredTool,
        caller: &Caller,
        invocation: &Invocation,
        count: Count,
    ) -> Result<(), Refusal> {
        let tool = &registered.tool;
        let Some(max) = tool.max_runs else {
            return Ok(());
        };
        let session = invocation.session_id.as_ref();
        count(&self.ceilings, caller, session, &tool.name, max)
            .map_err(|refused| limit_reached(&tool.name, max, &refused))
    }
}

pub(super) fn limit_reached(tool: &str, max: u32, refused: &Refused) -> Refusal {
    refuse(Outcome::Failed(limit_error(tool, max, refused)))
}

/// Why a run of `tool` was not counted, for the model.
pub(super) fn limit_error(tool: &str, max: u32, refused: &Refused) -> ToolError {
    let message = match refused {
        Refused::Reached => format!(
            "`{tool}` may run at most {max} times per conversation and has reached that limit. Answer with what you have."
        ),
        Refused::Full => format!(
            "`{tool}` cannot run now: the server counts too many conversations for its limit. Try again later."
        ),
    };
    ToolError::with_kind(ErrorKind::LimitReached, message)
}
