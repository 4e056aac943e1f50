//! The rounds of writes and questions: previews, approvals, declines, replays, and tools that ask.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::caller::Caller;
use crate::catalog::{Catalog, ToolId};
use crate::confirm::{self, Claim, Claimed, Decision, Grant, GrantKind};
use crate::error::{ErrorKind, ToolError};
use crate::output::{APPROVAL_KEY, InputRequired, Outcome, ToolResult, Unsupported};
use crate::param::{Answers, Approval, ClientSupport, Invocation, Unanswered};
use crate::policy::AuditAction;

use super::flight::{InFlight, Step};
use super::pipeline::Pipeline;
use super::request::{Attachments, Call, Decided, Meta, Reply, Resume};

impl Pipeline {
    /// Approves a previewed write: it runs now, once, with exactly the arguments that were previewed.
    ///
    /// Refused, with nothing run, when the confirmation is forged, altered, expired, already used or
    /// declined, or another caller's, and when the caller has since lost the right to run the tool.
    /// Approving twice returns the first run's result.
    pub(crate) async fn confirm(
        &self,
        catalog: &Catalog,
        caller: &Caller,
        confirmation: &str,
    ) -> Outcome {
        match self.bound_call(catalog, caller, confirmation, Decision::Approve) {
            Ok(call) => self.run(catalog, caller, call).await,
            Err(error) => Outcome::Failed(error),
        }
    }

    /// Declines a previewed write: it will never run.
    ///
    /// # Errors
    /// When the confirmation is forged, altered, expired or another caller's, or was already approved.
    pub(crate) async fn decline(
        &self,
        catalog: &Catalog,
        caller: &Caller,
        confirmation: &str,
    ) -> Result<(), ToolError> {
        let call = self.bound_call(catalog, caller, confirmation, Decision::Decline)?;
        match self.run(catalog, caller, call).await {
            Outcome::Declined => Ok(()),
            outcome => Err(outcome
                .error()
                .cloned()
                .unwrap_or_else(|| ToolError::new(outcome.into_result().text_for_model()))),
        }
    }

    /// The call a confirmation was issued for, carrying `decision` and the opened grant. One that does
    /// not open is refused here, and audited under the tool name `-`, since its tool is not known.
    pub(super) fn bound_call(
        &self,
        catalog: &Catalog,
        caller: &Caller,
        confirmation: &str,
        decision: Decision,
    ) -> Result<Call, ToolError> {
        match self
            .confirmations()
            .open_any(confirmation, GrantKind::Confirm)
        {
            Ok(mut grant) => {
                let arguments = Value::Object(grant.arguments.take().unwrap_or_default());
                let call = Call::new(grant.tool.clone(), arguments);
                Ok(call.decided(confirmation, decision, grant))
            }
            Err(error) => {
                let snapshot = catalog.snapshot();
                let flight = InFlight {
                    catalog,
                    snapshot: &snapshot,
                    caller,
                    invocation: Cow::Owned(Invocation::of(&Arc::from("-"))),
                    admitted: None,
                    hook_arguments: None,
                    audit_arguments: self.audit.as_ref().map(|_| Value::Null),
                    started: self.audit.as_ref().map(|_| Instant::now()),
                    action: AuditAction::Approve,
                    waited_ms: 0,
                };
                let mut outcome = Outcome::Failed(error);
                self.finish(&flight, &mut outcome);
                Err(outcome
                    .error()
                    .cloned()
                    .unwrap_or_else(|| unreachable!("finishing keeps a refusal a failure")))
            }
        }
    }

    /// The calls of a delegated caller counted, [`round`](Self::round), then the synchronous steps after
    /// the call, then the record of an approved write's final outcome.
    pub(super) async fn call_with_rounds(
        &self,
        mut flight: InFlight<'_>,
        index: ToolId,
        arguments: Map<String, Value>,
        meta: Meta,
    ) -> Outcome {
        let mut counted = match flight.caller.is_delegated() {
            true => self.ceilings.take_calls(flight.caller).await,
            false => Ok(()),
        };
        // Rate limits a shared store counts (admission counted those in memory). A reply to a preview or a
        // question is the same call: it was counted when it was first made.
        if let (Ok(()), Some(rates), Some(_), false) = (
            &counted,
            &flight.snapshot.rates,
            &self.ceilings.shared,
            meta.is_reply(),
        ) {
            let tool = &flight.snapshot.tool(index).tool.name;
            counted = rates.take(&self.ceilings, tool, flight.caller).await;
        }
        let (mut outcome, claimed) = match counted {
            Ok(()) => self.round(&mut flight, index, arguments, meta).await,
            Err(error) => (Outcome::Failed(error), None),
        };
        self.finish(&flight, &mut outcome);
        if let Some(id) = claimed {
            self.record(&id, &mut outcome).await;
        }
        outcome
    }

    /// The path of writes with a preview, of tools that ask for input, and of calls that carry a
    /// confirmation or answers. Returns, with the outcome, the id of a confirmation whose write ran, for
    /// [`record`](Self::record) once the outcome is final.
    pub(super) async fn round(
        &self,
        flight: &mut InFlight<'_>,
        index: ToolId,
        arguments: Map<String, Value>,
        meta: Meta,
    ) -> (Outcome, Option<String>) {
        let registered = &flight.snapshot.tool(index);
        let (tool, caller) = (&*registered.tool.name, flight.caller);
        let confirmations = &self.confirmations;
        let Meta {
            progress,
            log,
            extensions,
            cancellation,
            reply,
            support,
            ..
        } = meta;
        let mut attachments = Attachments {
            progress,
            log,
            extensions,
            cancellation,
            answers: None,
        };
        let Reply {
            mut decided,
            resume,
        } = reply.map_or_else(Reply::default, |reply| *reply);
        let has_preview = registered.tool.has_preview;
        let mut answers = Map::new();
        if let Some(Resume {
            state,
            answers: given,
        }) = resume
        {
            match state {
                // A write's request state is its confirmation, and its one answer the approval.
                Some(state) if has_preview => match approval(&given) {
                    Some(decision) => {
                        decided = Some(Decided {
                            token: state,
                            decision,
                            opened: None,
                        });
                    }
                    None => {
                        if let Err(error) =
                            confirmations.open(&state, GrantKind::Confirm, tool, caller, &arguments)
                        {
                            return (state_refused(error), None);
                        }
                    }
                },
                Some(state) => {
                    match confirmations.open(&state, GrantKind::Ask, tool, caller, &arguments) {
                        Ok(grant) => answers = grant.answers,
                        Err(error) => return (state_refused(error), None),
                    }
                    answers.extend(given);
                }
                None => answers = given,
            }
        }
        if let Some(Decided {
            token,
            decision,
            opened,
        }) = decided
        {
            if !has_preview {
                let error = confirm::refused(format!(
                    "`{tool}` has no preview and takes no confirmation; call it without one."
                ));
                return (state_refused(error), None);
            }
            let grant = match opened {
                Some(grant) => {
                    confirmations.bind(grant, GrantKind::Confirm, tool, caller, &arguments)
                }
                None => confirmations.open(&token, GrantKind::Confirm, tool, caller, &arguments),
            };
            let grant = match grant {
                Ok(grant) => grant,
                Err(error) => return (state_refused(error), None),
            };
            return match decision {
                Decision::Decline => {
                    flight.action = AuditAction::Decline;
                    (self.declined(&grant).await, None)
                }
                Decision::Approve => {
                    flight.action = AuditAction::Approve;
                    self.approved(flight, index, arguments, grant, attachments)
                        .await
                }
            };
        }
        // A delegated caller's write always waits for the person it acts for.
        let skip = has_preview
            && !caller.is_delegated()
            && confirmations
                .skip
                .as_ref()
                .is_some_and(|policy| policy(caller, &registered.tool));
        if has_preview && !skip {
            flight.action = AuditAction::Preview;
            let launched = self.launch(flight, index, arguments, attachments, Step::Preview);
            return (self.drive(flight, launched).await, None);
        }
        let kept = arguments.clone();
        let answers = Arc::new(Answers {
            given: answers,
            support: support.unwrap_or(ClientSupport::ALL),
        });
        attachments.answers = Some(Arc::clone(&answers));
        let launched = self.launch(flight, index, arguments, attachments, Step::Body);
        let launched = self.counted(flight, index, launched);
        let outcome = self.drive(flight, launched).await;
        let unanswered = match &outcome {
            Outcome::Failed(error) => error.source().and_then(|s| s.downcast_ref::<Unanswered>()),
            _ => None,
        };
        let outcome = match unanswered {
            Some(Unanswered::Questions {
                requests,
                kept: kept_answers,
            }) => {
                if registered.tool.max_runs.is_some() {
                    // A round that only asked is no run.
                    let session = flight.invocation.session_id.as_ref();
                    self.ceilings
                        .give_back(caller, session, &registered.tool.name)
                        .await;
                }
                let sealed = kept_answers
                    .clone()
                    .unwrap_or_else(|| answers.given.clone());
                let state = confirmations.seal(GrantKind::Ask, tool, caller, &kept, sealed);
                Outcome::InputRequired(InputRequired {
                    tool: tool.to_owned(),
                    requests: requests.clone(),
                    state,
                })
            }
            Some(Unanswered::Unsupported(capability)) => Outcome::Unsupported(Unsupported {
                tool: tool.to_owned(),
                capability,
            }),
            None => outcome,
        };
        (outcome, None)
    }

    /// Runs an approved write once; a retry gets the first run's result.
    pub(super) async fn approved(
        &self,
        flight: &mut InFlight<'_>,
        index: ToolId,
        arguments: Map<String, Value>,
        grant: Grant,
        mut attachments: Attachments,
    ) -> (Outcome, Option<String>) {
        let registered = &flight.snapshot.tool(index);
        let mut claim = Claim::new(Decision::Approve, grant.expires_at());
        if let Some(run) = registered.tool.timeout.or(self.default_timeout) {
            claim = claim.held_for(run);
        }
        let claimed = self.confirmations.store.claim(&grant.id, claim).await;
        let outcome = match claimed {
            Ok(first @ (Claimed::First | Claimed::Resumed)) => {
                if first == Claimed::Resumed {
                    tracing::warn!(
                        target: "toolgate",
                        tool = &*registered.tool.name,
                        "an approved write whose run was abandoned (its process died) runs again"
                    );
                }
                let resumed = first == Claimed::Resumed;
                attachments
                    .extensions
                    .insert(Approval::new(&grant.id, resumed));
                let launched = self.launch(flight, index, arguments, attachments, Step::Body);
                let launched = self.counted(flight, index, launched);
                return (self.drive(flight, launched).await, Some(grant.id));
            }
            Ok(Claimed::Approved {
                outcome: Some(record),
            }) => match serde_json::from_str(&record) {
                Ok(result) => Outcome::Done(result),
                Err(_) => state_refused(already_used()),
            },
            Ok(Claimed::Approved { outcome: None }) => state_refused(already_used()),
            Ok(Claimed::Declined) => state_refused(confirm::refused(
                "This write was declined and will never run; nothing was changed. Call the tool again for a new preview.",
            )),
            Err(error) => Outcome::Failed(error),
        };
        (outcome, None)
    }

    /// Records the final outcome of an approved write (after hooks and masking), returned to retries.
    /// Its structured value is held as a value from here on, so that this caller reads the same JSON
    /// text as a retry that reads the record back.
    pub(super) async fn record(&self, id: &str, outcome: &mut Outcome) {
        if let Outcome::Done(ToolResult {
            structured: Some(value),
            ..
        }) = outcome
        {
            value.hold_value();
        }
        let record = serde_json::to_string(&outcome.clone().into_result()).unwrap_or_default();
        if let Err(error) = self.confirmations.store.finish(id, record).await {
            tracing::error!(target: "toolgate", error = error.message(), "could not record a confirmed write's result");
        }
    }

    /// Records a decline; declining twice is the same decline.
    pub(super) async fn declined(&self, grant: &Grant) -> Outcome {
        let store = &self.confirmations.store;
        match store
            .claim(&grant.id, Claim::new(Decision::Decline, grant.expires_at()))
            .await
        {
            Ok(Claimed::First | Claimed::Declined) => Outcome::Declined,
            Ok(Claimed::Approved { .. } | Claimed::Resumed) => state_refused(confirm::refused(
                "This write was already approved; it cannot be declined any more.",
            )),
            Err(error) => Outcome::Failed(error),
        }
    }
}

/// The answer to a write's approval question, if there is a well-formed one.
pub(super) fn approval(answers: &Map<String, Value>) -> Option<Decision> {
    let answer = answers.get(APPROVAL_KEY)?;
    match answer.get("action")?.as_str()? {
        "accept" => match answer.get("content")?.get("approve")?.as_bool()? {
            true => Some(Decision::Approve),
            false => Some(Decision::Decline),
        },
        "decline" | "cancel" => Some(Decision::Decline),
        _ => None,
    }
}

pub(super) fn already_used() -> ToolError {
    confirm::refused(
        "This confirmation was already used: the write ran, or is running. Nothing was changed by this call.",
    )
}

/// A refused confirmation or request state, as an outcome: denied when it is another caller's.
pub(super) fn state_refused(error: ToolError) -> Outcome {
    if error.kind() == ErrorKind::Denied {
        Outcome::Denied(error)
    } else {
        Outcome::Failed(error)
    }
}
