//! Finishing a call: hooks after, masking of internal errors, audit.

use std::time::SystemTime;

use super::flight::InFlight;
use super::pipeline::Pipeline;
use crate::error::ErrorKind;
use crate::output::Outcome;
use crate::policy::AuditEvent;
use crate::policy::hooks::CallInfo;

impl Pipeline {
    /// Hooks after the call, masking of internal errors, audit.
    pub(super) fn finish(&self, flight: &InFlight<'_>, outcome: &mut Outcome) {
        if let (Some(index), Some(hook_arguments)) = (flight.admitted, &flight.hook_arguments) {
            let tool = &flight.snapshot.tool(index).tool;
            let info = CallInfo {
                tool,
                caller: flight.caller,
                arguments: hook_arguments,
                invocation: &flight.invocation,
            };
            for hook in &self.hooks {
                hook.after_call(&info, outcome);
            }
        }
        self.mask(outcome);
        if let (Some(sink), Some(arguments), Some(started)) =
            (&self.audit, &flight.audit_arguments, flight.started)
        {
            sink.record(&AuditEvent {
                tool: &flight.invocation.tool_name,
                caller: flight.caller,
                invocation: &flight.invocation,
                arguments,
                outcome,
                action: flight.action,
                at: SystemTime::now(),
                elapsed: started.elapsed(),
                revision: flight.snapshot.revision,
            });
        }
    }

    /// Logs internal errors and, when masking is on, replaces their text for the model.
    pub(super) fn mask(&self, outcome: &mut Outcome) {
        if let Outcome::Failed(error) = outcome
            && error.kind() == ErrorKind::Internal
        {
            let causes = error.causes().unwrap_or_default();
            tracing::error!(target: "toolgate", error = error.message(), causes, "tool failed with an internal error");
            if self.mask_internal_errors {
                *error = error.masked();
            }
        }
    }
}
