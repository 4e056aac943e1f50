//! [`Ask`]: a tool asks the client for input (a form a person fills in, a model completion, the client's
//! roots) and gets the answers when the call comes back.
//!
//! The call does not wait: a question without an answer ends this round with
//! [`Outcome::InputRequired`](crate::Outcome::InputRequired), and the tool runs again from the start when
//! the answers come back, with every answer given so far (they travel in a sealed request state). Over MCP,
//! 2026-07-28 clients get an `InputRequiredResult`, and older clients with a session get the questions as
//! requests during the call.

use std::fmt;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::error::ToolError;
use crate::sync::Locked;

use super::{CallParts, Param, ParamKind, ParamSpec, Requirement};

/// What the client of a call can answer.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::Ask;
/// use toolgate::param::ClientSupport;
///
/// /// Summarize with the client's model when it has one.
/// #[tool(public, read_only)]
/// async fn summarize(ask: Ask, text: String) -> Result<String, ToolError> {
///     if !ask.supports().sampling {
///         return Ok(text.chars().take(20).collect());
///     }
///     let reply = ask.sample("summary", &format!("Summarize: {text}"), 100)?;
///     Ok(reply["content"]["text"].as_str().unwrap_or_default().to_owned())
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let args = serde_json::json!({ "text": "A long story about a short trip." });
/// let plain = Call::new("summarize", args.clone()).client_support(ClientSupport::NONE);
/// let outcome = registry.run(&Caller::anonymous(), plain).await;
/// assert_eq!(outcome.into_result().text_for_model(), "A long story about a");
///
/// let rich = Call::new("summarize", args).client_support(ClientSupport { sampling: true, ..ClientSupport::NONE });
/// assert!(matches!(registry.run(&Caller::anonymous(), rich).await, Outcome::InputRequired(_)));
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSupport {
    /// Forms a person fills in (`elicitation/create`).
    pub elicitation: bool,
    /// Completions from the client's model (`sampling/createMessage`).
    pub sampling: bool,
    /// The client's roots (`roots/list`).
    pub roots: bool,
    /// Links a person opens in their browser (`elicitation/create` in URL mode): where they sign in
    /// to a server behind the gateway.
    pub url_elicitation: bool,
}

impl ClientSupport {
    /// Everything: the default of in-process calls, whose host answers what it can.
    pub const ALL: ClientSupport = ClientSupport {
        elicitation: true,
        sampling: true,
        roots: true,
        url_elicitation: true,
    };
    /// Nothing.
    pub const NONE: ClientSupport = ClientSupport {
        elicitation: false,
        sampling: false,
        roots: false,
        url_elicitation: false,
    };

    /// The capability a request of `method` needs, and whether the client has it; `None` for a method
    /// no client capability answers.
    #[cfg(feature = "remote")]
    pub(crate) fn answers(self, method: &str) -> Option<(&'static str, bool)> {
        match method {
            "elicitation/create" => Some(("elicitation", self.elicitation)),
            "sampling/createMessage" => Some(("sampling", self.sampling)),
            "roots/list" => Some(("roots", self.roots)),
            _ => None,
        }
    }
}

/// The answers a resumed call carries, and what its client supports.
#[derive(Debug)]
pub(crate) struct Answers {
    pub(crate) given: Map<String, Value>,
    pub(crate) support: ClientSupport,
}

/// A person's answer to a form.
///
/// ```
/// use toolgate::Elicited;
///
/// let answer: Elicited<u32> = Elicited::Declined;
/// let seats = match answer {
///     Elicited::Accepted(n) => n,
///     Elicited::Declined | Elicited::Cancelled => 1,
/// };
/// assert_eq!(seats, 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T> {
    /// Filled in and sent.
    Accepted(T),
    /// Refused.
    Declined,
    /// Dismissed without a choice.
    Cancelled,
}

/// A directory or file the client exposes (`roots/list`).
///
/// ```rust,standalone_crate
/// use serde_json::{Map, json};
/// use toolgate::prelude::*;
/// use toolgate::Ask;
///
/// /// List the client's project folders.
/// #[tool(public, read_only)]
/// async fn projects(ask: Ask) -> Result<String, ToolError> {
///     let roots = ask.roots("roots")?;
///     Ok(roots.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>().join(", "))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let Outcome::InputRequired(input) = registry.call(&Caller::anonymous(), "projects", json!({})).await else { unreachable!() };
/// assert_eq!(input.requests()["roots"]["method"], "roots/list");
/// let answer = json!({ "roots": [{ "uri": "file:///home/ada/app", "name": "app" }] });
/// let answers: Map<_, _> = [("roots".to_owned(), answer)].into_iter().collect();
/// let resumed = Call::new("projects", json!({})).resume(Some(input.state()), answers);
/// let outcome = registry.run(&Caller::anonymous(), resumed).await;
/// assert_eq!(outcome.into_result().text_for_model(), "file:///home/ada/app");
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for people.
    #[serde(default)]
    pub name: Option<String>,
}

/// Asks the client of a call for input; take it as a tool parameter.
///
/// Each question has a key. A question without an answer is recorded and returns an error: return it (with
/// `?`) and the call ends with [`Outcome::InputRequired`](crate::Outcome::InputRequired) and the questions
/// asked so far.
/// To ask several questions in one round, ask them all, then call [`ready`](Self::ready).
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::{Ask, Elicited, Outcome};
///
/// /// Your name, for the greeting.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Name { name: String }
///
/// /// Greets the user by name.
/// #[tool(public, read_only)]
/// async fn greet(ask: Ask) -> Result<String, ToolError> {
///     match ask.elicit::<Name>("user_name", "What is your name?")? {
///         Elicited::Accepted(Name { name }) => Ok(format!("Hello, {name}!")),
///         _ => Ok("Hello, stranger!".into()),
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let ada = Caller::new("ada");
/// let Outcome::InputRequired(input) = registry.call(&ada, "greet", serde_json::json!({})).await else {
///     panic!("expected a question")
/// };
/// assert_eq!(input.requests()["user_name"]["params"]["message"], "What is your name?");
///
/// // The host shows the form, then resumes the call with the answer.
/// let answer = serde_json::json!({ "action": "accept", "content": { "name": "Ada" } });
/// let call = Call::new("greet", serde_json::json!({}))
///     .resume(Some(input.state()), [("user_name".to_owned(), answer)].into_iter().collect());
/// let outcome = registry.run(&ada, call).await;
/// assert_eq!(outcome.into_result().text_for_model(), "Hello, Ada!");
/// # });
/// ```
#[derive(Debug)]
pub struct Ask {
    answers: Option<Arc<Answers>>,
    asked: Mutex<PendingQuestions>,
}

/// The questions of this round without an answer, and the first capability a question needed that the
/// client lacks.
#[derive(Debug, Default)]
struct PendingQuestions {
    questions: Map<String, Value>,
    unsupported: Option<&'static str>,
}

/// Why a tool that asks stops: questions without an answer, or a question the client cannot answer. It
/// travels typed, as the source of the [`ToolError`] the tool returns with `?`, and the pipeline turns it
/// into [`Outcome::InputRequired`](crate::Outcome::InputRequired) or
/// [`Outcome::Unsupported`](crate::Outcome::Unsupported).
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// The questions asked so far, by key, as MCP requests; and what the state seals in place of the
    /// answers given so far, for questions relayed from elsewhere.
    Questions {
        requests: Map<String, Value>,
        kept: Option<Map<String, Value>>,
    },
    /// The client capability (`elicitation`, `sampling` or `roots`) that a question needs.
    Unsupported(&'static str),
}

impl fmt::Display for Unanswered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unanswered::Questions { .. } => f.write_str(
                "This tool needs input from the user or the client before it can go on.",
            ),
            Unanswered::Unsupported(capability) => f.write_str(&unsupported(capability)),
        }
    }
}

impl std::error::Error for Unanswered {}

/// The answer key under which what a relay sealed comes back, beside the client's answers.
#[cfg(feature = "remote")]
pub(crate) const RELAYED: &str = "io.toolgate/relayed";

/// Relays questions asked elsewhere (a remote server's `InputRequiredResult`) to this call's client,
/// when it can answer every one: `carry` is sealed with them, and comes back under [`RELAYED`] with the
/// answers. A question the client cannot answer is the capability it lacks.
#[cfg(feature = "remote")]
pub(crate) fn relay(
    requests: Map<String, Value>,
    support: ClientSupport,
    carry: Value,
) -> ToolError {
    for request in requests.values() {
        let method = request["method"].as_str().unwrap_or_default();
        let Some((capability, supported)) = support.answers(method) else {
            return ToolError::new(format!(
                "The tool asked its client for {}, which toolgate cannot pass on; nothing more was done.",
                request["method"]
            ));
        };
        if !supported {
            return ToolError::signal(Unanswered::Unsupported(capability));
        }
    }
    let kept = Some([(RELAYED.to_owned(), carry)].into_iter().collect());
    ToolError::signal(Unanswered::Questions { requests, kept })
}

/// What the model and the client read when a question needs `capability`, which the client lacks.
pub(crate) fn unsupported(capability: &str) -> String {
    format!(
        "This tool needs the client capability `{capability}`, which the client did not declare."
    )
}

impl Ask {
    /// What the client can answer. Ask only what it supports: asking for more ends the call with
    /// [`Outcome::Unsupported`](crate::Outcome::Unsupported).
    pub fn supports(&self) -> ClientSupport {
        self.answers
            .as_ref()
            .map_or(ClientSupport::ALL, |a| a.support)
    }

    /// The raw answer to question `key`, if one came back.
    pub fn answer(&self, key: &str) -> Option<&Value> {
        self.answers.as_ref()?.given.get(key)
    }

    /// Asks a person to fill in a form with the fields of `T` (flat: strings, numbers, booleans, enums).
    ///
    /// # Errors
    /// The error that asks, until the answer comes back, or, when the client cannot show forms, the one
    /// that says so. Return either with `?`.
    pub fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        key: &str,
        message: &str,
    ) -> Result<Elicited<T>, ToolError> {
        let answer = self
            .answer(key)
            .and_then(|answer| match answer.get("action")?.as_str()? {
                "accept" => serde_json::from_value(answer.get("content")?.clone())
                    .ok()
                    .map(Elicited::Accepted),
                "decline" => Some(Elicited::Declined),
                "cancel" => Some(Elicited::Cancelled),
                _ => None,
            });
        if let Some(answer) = answer {
            return Ok(answer);
        }
        self.require(self.supports().elicitation, "elicitation")?;
        Err(self.record(key, elicitation(message, form_schema::<T>())))
    }

    /// Asks the client's model for a completion of `prompt`, at most `max_tokens` long. The answer is the
    /// client's `CreateMessageResult`; its text is at `["content"]["text"]`.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit), with sampling.
    pub fn sample(&self, key: &str, prompt: &str, max_tokens: u32) -> Result<Value, ToolError> {
        if let Some(answer) = self.answer(key).filter(|a| a.get("content").is_some()) {
            return Ok(answer.clone());
        }
        self.require(self.supports().sampling, "sampling")?;
        let request = json!({
            "method": "sampling/createMessage",
            "params": {
                "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
                "maxTokens": max_tokens,
            },
        });
        Err(self.record(key, request))
    }

    /// Asks for the client's roots.
    ///
    /// # Errors
    /// As for [`elicit`](Self::elicit), with roots.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>, ToolError> {
        let answer = self
            .answer(key)
            .and_then(|a| serde_json::from_value(a.get("roots")?.clone()).ok());
        if let Some(roots) = answer {
            return Ok(roots);
        }
        self.require(self.supports().roots, "roots")?;
        Err(self.record(key, json!({ "method": "roots/list", "params": {} })))
    }

    /// `Ok` when every question asked so far has its answer; otherwise the error that asks them all.
    ///
    /// # Errors
    /// The error that asks every unanswered question.
    pub fn ready(&self) -> Result<(), ToolError> {
        let asked = self.asked.locked();
        match asked.unsupported {
            Some(capability) => Err(ToolError::signal(Unanswered::Unsupported(capability))),
            None if asked.questions.is_empty() => Ok(()),
            None => Err(ToolError::signal(Unanswered::Questions {
                requests: asked.questions.clone(),
                kept: None,
            })),
        }
    }

    fn require(&self, supported: bool, capability: &'static str) -> Result<(), ToolError> {
        if supported {
            return Ok(());
        }
        self.asked.locked().unsupported.get_or_insert(capability);
        Err(ToolError::signal(Unanswered::Unsupported(capability)))
    }

    fn record(&self, key: &str, request: Value) -> ToolError {
        let mut asked = self.asked.locked();
        asked.questions.insert(key.to_owned(), request);
        ToolError::signal(Unanswered::Questions {
            requests: asked.questions.clone(),
            kept: None,
        })
    }
}

/// An `elicitation/create` request for a form.
pub(crate) fn elicitation(message: &str, schema: Value) -> Value {
    json!({
        "method": "elicitation/create",
        "params": { "mode": "form", "message": message, "requestedSchema": schema },
    })
}

/// The form schema of `T`: its object schema without the meta keys clients do not expect.
fn form_schema<T: JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.retain(|key, _| matches!(key.as_str(), "type" | "properties" | "required"));
    }
    schema
}

impl Param for Ask {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(Ask {
            answers: parts.answers.clone(),
            asked: Mutex::default(),
        })
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::asks())
    }
}
