//! [`Outcome`]: what came of a call, with done, needs-confirmation, denied and failed told apart.

use serde_json::{Map, Value, json};

use crate::error::ToolError;

use super::{Preview, ToolResult};

/// The key of the approval question in the answers of a resumed write (see [`Pending::approval_request`]).
///
/// ```rust,standalone_crate
/// use serde_json::{Map, json};
/// use toolgate::prelude::*;
/// use toolgate::output::APPROVAL_KEY;
///
/// /// Publish a post. Changes data.
/// #[tool(public, preview = preview_publish)]
/// async fn publish(title: String) -> String {
///     format!("Published {title}.")
/// }
///
/// async fn preview_publish(title: String) -> Preview {
///     Preview::new(format!("Publish {title} to 3,000 subscribers"))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let ada = Caller::new("ada");
/// let args = json!({ "title": "Hello" });
/// let Outcome::NeedsConfirmation(pending) = registry.call(&ada, "publish", args.clone()).await else { unreachable!() };
/// assert_eq!(pending.approval_request()["params"]["message"], "Publish Hello to 3,000 subscribers");
///
/// // The person's answer to the approval form, under APPROVAL_KEY:
/// let answer = json!({ "action": "accept", "content": { "approve": true } });
/// let answers: Map<_, _> = [(APPROVAL_KEY.to_owned(), answer)].into_iter().collect();
/// let resumed = Call::new("publish", args).resume(Some(pending.confirmation()), answers);
/// assert_eq!(registry.run(&ada, resumed).await.into_result().text_for_model(), "Published Hello.");
/// # });
/// ```
pub const APPROVAL_KEY: &str = "approval";

/// The outcome of an in-process call.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
///
/// /// Delete a note. Changes data: a person approves first.
/// #[tool(ability = "notes.delete", preview = preview_delete)]
/// async fn delete_note(id: u32) -> String {
///     format!("Note {id} deleted.")
/// }
///
/// async fn preview_delete(id: u32) -> Preview {
///     Preview::new(format!("Delete note {id}."))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().explain_denials(true).build()?;
/// let editor = Caller::new("ed@example.com").with_abilities(["notes.delete"]);
/// match registry.call(&editor, "delete_note", json!({ "id": 7 })).await {
///     Outcome::NeedsConfirmation(pending) => {
///         assert_eq!(pending.preview().text(), "Delete note 7.");
///         let done = registry.confirm(&editor, pending.confirmation()).await;
///         assert_eq!(done.into_result().text_for_model(), "Note 7 deleted.");
///     }
///     other => panic!("a write waits for approval, not {}", other.label()),
/// }
///
/// let stranger = Caller::new("eve@example.com");
/// let denied = registry.call(&stranger, "delete_note", json!({ "id": 7 })).await;
/// assert!(matches!(denied, Outcome::Denied(_)));
/// assert_eq!(denied.label(), "denied");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Outcome {
    /// The tool ran. Its result may still be a failure the tool reported itself (`result.is_error`).
    Done(ToolResult),
    /// A write with a preview: nothing ran yet; show the preview and approve or decline it.
    NeedsConfirmation(Pending),
    /// The tool asked for input (see [`Ask`](crate::Ask)): answer its requests and resume the call.
    InputRequired(InputRequired),
    /// The tool asked what this client cannot answer: it did not declare the capability the question
    /// needs (see [`ClientSupport`](crate::param::ClientSupport)).
    Unsupported(Unsupported),
    /// A person declined the write: nothing ran, and it never will.
    Declined,
    /// The caller may not run this tool; nothing ran.
    Denied(ToolError),
    /// The call failed: unknown tool, invalid arguments, a ceiling, a timeout, or an error from the tool.
    Failed(ToolError),
}

/// A write waiting for a person's approval: show [`preview`](Self::preview), then pass
/// [`confirmation`](Self::confirmation) to [`Registry::confirm`](crate::Registry::confirm) or
/// [`Registry::decline`](crate::Registry::decline).
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
///
/// /// Archive a project. Changes data.
/// #[tool(public, preview = preview_archive)]
/// async fn archive(project: String) -> String {
///     format!("{project} archived.")
/// }
///
/// async fn preview_archive(project: String) -> Preview {
///     Preview::new(format!("Archive {project} and its 12 tasks."))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let caller = Caller::new("ada@example.com");
/// let Outcome::NeedsConfirmation(pending) = registry.call(&caller, "archive", json!({ "project": "Apollo" })).await
/// else { unreachable!() };
/// assert_eq!(pending.tool(), "archive");
/// registry.decline(&caller, pending.confirmation()).await.unwrap();
/// let again = registry.confirm(&caller, pending.confirmation()).await;
/// assert_eq!(again.error().unwrap().kind(), toolgate::ErrorKind::Confirmation, "a declined write never runs");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct Pending {
    pub(crate) tool: String,
    pub(crate) preview: Preview,
    pub(crate) confirmation: String,
}

impl Pending {
    /// The tool that would run.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// What it would do.
    pub fn preview(&self) -> &Preview {
        &self.preview
    }

    /// The token to pass to [`Registry::confirm`](crate::Registry::confirm) or
    /// [`Registry::decline`](crate::Registry::decline).
    pub fn confirmation(&self) -> &str {
        &self.confirmation
    }
}

impl Pending {
    /// The approval question as an `elicitation/create` request: a form whose message is the preview and
    /// whose one field, `approve`, is a yes or no. Answer it under [`APPROVAL_KEY`] when resuming.
    pub fn approval_request(&self) -> Value {
        crate::param::elicitation(
            self.preview.text(),
            json!({
                "type": "object",
                "properties": {
                    "approve": {
                        "type": "boolean",
                        "title": "Approve",
                        "description": "Run this change now, exactly as described.",
                    },
                },
                "required": ["approve"],
            }),
        )
    }
}

/// A call waiting for input from the client: answer each of [`requests`](Self::requests) under its key and
/// resume with [`Call::resume`](crate::Call::resume) and [`state`](Self::state).
///
/// ```rust,standalone_crate
/// use serde_json::{Map, json};
/// use toolgate::prelude::*;
/// use toolgate::{Ask, Elicited};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct City {
///     city: String,
/// }
///
/// /// Plan a trip.
/// #[tool(public, read_only)]
/// async fn plan(ask: Ask) -> Result<String, ToolError> {
///     let from = ask.elicit::<City>("from", "Leaving from?");
///     let to = ask.elicit::<City>("to", "Going to?");
///     ask.ready()?; // both questions in one round
///     match (from?, to?) {
///         (Elicited::Accepted(a), Elicited::Accepted(b)) => Ok(format!("{} to {}", a.city, b.city)),
///         _ => Ok("No trip.".into()),
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let caller = Caller::anonymous();
/// let Outcome::InputRequired(input) = registry.call(&caller, "plan", json!({})).await else { unreachable!() };
/// assert_eq!(input.tool(), "plan");
/// assert_eq!(input.requests().keys().collect::<Vec<_>>(), ["from", "to"]);
///
/// let answer = |city: &str| json!({ "action": "accept", "content": { "city": city } });
/// let answers: Map<_, _> = [("from".to_owned(), answer("Oslo")), ("to".to_owned(), answer("Rome"))].into_iter().collect();
/// let resumed = Call::new("plan", json!({})).resume(Some(input.state()), answers);
/// assert_eq!(registry.run(&caller, resumed).await.into_result().text_for_model(), "Oslo to Rome");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct InputRequired {
    pub(crate) tool: String,
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: String,
}

impl InputRequired {
    /// The tool that asked.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The questions by key, each an MCP request object (`{"method": ..., "params": ...}`):
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub fn requests(&self) -> &Map<String, Value> {
        &self.requests
    }

    /// The sealed state to send back with the answers, through [`Call::resume`](crate::Call::resume).
    pub fn state(&self) -> &str {
        &self.state
    }
}

/// A question the client cannot answer: the tool needs a client capability the client did not declare.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::Ask;
/// use toolgate::param::ClientSupport;
///
/// /// Pick a folder among the client's roots.
/// #[tool(public, read_only)]
/// async fn pick_folder(ask: Ask) -> Result<String, ToolError> {
///     Ok(ask.roots("roots")?.len().to_string())
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let call = Call::new("pick_folder", serde_json::json!({})).client_support(ClientSupport::NONE);
/// let Outcome::Unsupported(missing) = registry.run(&Caller::anonymous(), call).await else { unreachable!() };
/// assert_eq!((missing.tool(), missing.capability()), ("pick_folder", "roots"));
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub(crate) tool: String,
    pub(crate) capability: &'static str,
}

impl Unsupported {
    /// The tool that asked.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The capability it needs: `elicitation`, `sampling` or `roots`.
    pub fn capability(&self) -> &'static str {
        self.capability
    }

    /// What the model and the client read.
    pub fn message(&self) -> String {
        crate::param::unsupported(self.capability)
    }

    /// The capability as MCP names it in an error's data: `{"requiredCapabilities": {"roots": {}}}`.
    pub(crate) fn data(&self) -> Value {
        json!({ "requiredCapabilities": { self.capability: {} } })
    }
}

/// What the model reads of a declined write.
const DECLINED: &str =
    "The user declined this change; nothing was changed. Do not try it again unless the user asks.";

impl Outcome {
    /// The outcome of a body that ran: its result, or its error.
    pub(crate) fn finished(result: Result<ToolResult, ToolError>) -> Outcome {
        match result {
            Ok(result) => Outcome::Done(result),
            Err(error) => Outcome::Failed(error),
        }
    }

    /// The result to hand to the model: the tool's own, the preview text, or an `[ERROR] ...` text.
    pub fn into_result(self) -> ToolResult {
        match self {
            Outcome::Done(result) => result,
            Outcome::NeedsConfirmation(pending) => ToolResult::text(format!(
                "Waiting for approval: {}. Nothing has changed yet; tell the user what will happen.",
                pending.preview.text().trim_end_matches('.')
            )),
            Outcome::InputRequired(input) => ToolResult::text(format!(
                "`{}` needs input this host did not provide: {}.",
                input.tool,
                input
                    .requests
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .failed(),
            Outcome::Unsupported(missing) => ToolResult::failure(
                "missing_capability",
                &missing.message(),
                Some(&missing.data()),
            ),
            Outcome::Declined => ToolResult::failure("declined", DECLINED, None),
            Outcome::Denied(error) | Outcome::Failed(error) => ToolResult::error(&error),
        }
    }

    /// Whether the tool ran and did not report a failure.
    pub fn is_done(&self) -> bool {
        matches!(self, Outcome::Done(result) if !result.is_error)
    }

    /// The error of a denied or failed call.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Outcome::Denied(error) | Outcome::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// A short label: `done`, `tool_error`, `needs_confirmation`, `input_required`, `missing_capability`,
    /// `declined`, `denied` or the failure's kind.
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Done(result) if result.is_error => "tool_error",
            Outcome::Done(_) => "done",
            Outcome::NeedsConfirmation(_) => "needs_confirmation",
            Outcome::InputRequired(_) => "input_required",
            Outcome::Unsupported(_) => "missing_capability",
            Outcome::Declined => "declined",
            Outcome::Denied(_) => "denied",
            Outcome::Failed(error) => error.kind().as_str(),
        }
    }
}
