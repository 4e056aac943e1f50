//! [`Call`]: a call with its metadata, and what it carries back to a write or a question.

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::confirm::{Decision, Grant};
use crate::param::{Answers, ClientSupport, Log, LogEntry, Progress, ProgressUpdate, StateMap};

/// A call with its metadata, for [`Registry::run`](crate::Registry::run). [`Registry::call`](crate::Registry::call) is the short form.
///
/// ```
/// use toolgate::Call;
///
/// let call = Call::new("search_orders", serde_json::json!({ "query": "Lovelace" }))
///     .session("conversation-42")
///     .tool_call_id("call_7")
///     .on_progress(|update| eprintln!("{:.0}%", 100.0 * update.progress / update.total.unwrap_or(1.0)));
/// # let _ = call;
/// ```
#[derive(Debug)]
pub struct Call {
    pub(super) name: String,
    pub(super) arguments: Value,
    pub(super) meta: Meta,
}

/// What a call carries besides its tool and arguments.
#[derive(Debug, Default)]
pub(super) struct Meta {
    pub(super) tool_call_id: Option<Arc<str>>,
    pub(super) session_id: Option<Arc<str>>,
    pub(super) traceparent: Option<Arc<str>>,
    pub(super) tracestate: Option<Arc<str>>,
    pub(super) progress: Progress,
    pub(super) log: Log,
    pub(super) extensions: StateMap,
    pub(super) cancellation: Option<CancellationToken>,
    /// What a call brings back to a write or a question; boxed, as most calls bring nothing.
    pub(super) reply: Option<Box<Reply>>,
    pub(super) support: Option<ClientSupport>,
    /// How long the call waited for a slot before it got here, in milliseconds: it counts toward the
    /// tool's timeout. Milliseconds, so that the field fits in room `Meta` has anyway.
    pub(super) waited_ms: u32,
}

#[derive(Debug, Default)]
pub(super) struct Reply {
    /// A person's decision on a previewed write, with its confirmation.
    pub(super) decided: Option<Decided>,
    /// Answers to a tool's questions, with the sealed state of the round that asked them.
    pub(super) resume: Option<Resume>,
}

/// A decision on a previewed write: the confirmation sent back, and the grant it holds when the registry
/// opened it already (in-process `confirm` and `decline`), so that it is opened once.
#[derive(Debug)]
pub(super) struct Decided {
    pub(super) token: String,
    pub(super) decision: Decision,
    pub(super) opened: Option<Grant>,
}

#[derive(Debug)]
pub(super) struct Resume {
    pub(super) state: Option<String>,
    pub(super) answers: Map<String, Value>,
}

impl Meta {
    /// Whether the call carries anything for the confirmation path.
    pub(super) fn is_reply(&self) -> bool {
        self.reply.is_some()
    }

    /// Whether the call carries an id of its own, of the tool call, its session or its trace.
    pub(super) fn has_ids(&self) -> bool {
        self.tool_call_id.is_some()
            || self.session_id.is_some()
            || self.traceparent.is_some()
            || self.tracestate.is_some()
    }

    pub(super) fn reply(&mut self) -> &mut Reply {
        self.reply.get_or_insert_with(Box::default)
    }
}

impl Call {
    /// A call of tool `name` with JSON `arguments` (an object, or `null` for none).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Call {
            name: name.into(),
            arguments,
            meta: Meta::default(),
        }
    }

    /// The model's id for this tool call.
    #[must_use]
    pub fn tool_call_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.meta.tool_call_id = Some(id.into());
        self
    }

    /// The conversation or session; `max_runs` counts per session (per caller when absent).
    #[must_use]
    pub fn session(mut self, id: impl Into<Arc<str>>) -> Self {
        self.meta.session_id = Some(id.into());
        self
    }

    /// W3C trace context of the caller's span.
    #[must_use]
    pub fn trace(mut self, traceparent: impl Into<Arc<str>>, tracestate: Option<Arc<str>>) -> Self {
        self.meta.traceparent = Some(traceparent.into());
        self.meta.tracestate = tracestate;
        self
    }

    /// Receives the tool's progress updates.
    #[must_use]
    pub fn on_progress(mut self, sink: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        self.meta.progress = Progress::new(sink);
        self
    }

    /// Receives the tool's log messages.
    #[must_use]
    pub fn on_log(mut self, sink: impl Fn(LogEntry) + Send + Sync + 'static) -> Self {
        self.meta.log = Log::new(sink);
        self
    }

    /// Attaches a value the tool can take as [`Extension<T>`](crate::Extension): a handle of the host or
    /// transport (the MCP server attaches the client's `Peer` and the HTTP request's parts).
    #[must_use]
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.meta.extensions.insert(value);
        self
    }

    /// Cancelling this token cancels the call.
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.meta.cancellation = Some(token);
        self
    }

    /// Sends back the confirmation of a previewed write ([`Pending::confirmation`](crate::output::Pending::confirmation)): the write runs once,
    /// if this call has the same tool, arguments and caller as the preview and it has not expired.
    #[must_use]
    pub fn confirmation(mut self, token: impl Into<String>) -> Self {
        self.meta.reply().decided = Some(Decided {
            token: token.into(),
            decision: Decision::Approve,
            opened: None,
        });
        self
    }

    /// Resumes a call that asked for input: `state` as given by [`InputRequired::state`] (or
    /// [`Pending::confirmation`](crate::output::Pending::confirmation) for a write), and the answers by question key. A write's answer is under
    /// [`APPROVAL_KEY`](crate::output::APPROVAL_KEY): `{"action": "accept", "content": {"approve": true}}`
    /// runs it, anything else that is an answer declines it.
    ///
    /// [`InputRequired::state`]: crate::output::InputRequired::state
    #[must_use]
    pub fn resume(mut self, state: Option<impl Into<String>>, answers: Map<String, Value>) -> Self {
        self.meta.reply().resume = Some(Resume {
            state: state.map(Into::into),
            answers,
        });
        self
    }

    /// The call of an opened confirmation, with a person's decision on it.
    pub(super) fn decided(mut self, token: &str, decision: Decision, grant: Grant) -> Self {
        self.meta.reply().decided = Some(Decided {
            token: token.to_owned(),
            decision,
            opened: Some(grant),
        });
        self
    }

    /// What the client can answer when the tool asks for input (default: [`ClientSupport::ALL`]).
    #[must_use]
    pub fn client_support(mut self, support: ClientSupport) -> Self {
        self.meta.support = Some(support);
        self
    }

    /// The call waited this long for a slot to run in: the tool's timeout is that much shorter.
    #[cfg(feature = "mcp")]
    pub(crate) fn waited(mut self, waited: std::time::Duration) -> Self {
        self.meta.waited_ms = u32::try_from(waited.as_millis()).unwrap_or(u32::MAX);
        self
    }

    /// The tool it calls.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its arguments.
    pub(crate) fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// Whether it brings something back to an earlier round: a decision on a previewed write, or answers.
    pub(crate) fn replies(&self) -> bool {
        self.meta.is_reply()
    }
}

/// What a call attaches for the tool besides its arguments (progress and log sinks, extensions,
/// cancellation, answers), moved into its parts.
pub(super) struct Attachments {
    pub(super) progress: Progress,
    pub(super) log: Log,
    pub(super) extensions: StateMap,
    pub(super) cancellation: Option<CancellationToken>,
    pub(super) answers: Option<Arc<Answers>>,
}
