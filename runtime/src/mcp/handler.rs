//! [`McpHandler`]: the rmcp `ServerHandler` that serves a [`Registry`]'s tools, composed with the user's own
//! handler for prompts, resources and completion.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderName;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, Cursor, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetTaskParams,
    GetTaskResult, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
    Tool as McpTool, UpdateTaskParams,
};
use rmcp::model::{NumberOrString, ProgressToken, RequestId, SubscriptionFilter};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::call::Call;
use crate::call::TaskError;
use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};
use crate::output::Outcome;
use crate::param::{ClientSupport, LogEntry, ProgressUpdate};
use crate::policy::slots::{Busy, Slot};
use crate::registry::{Current, Registry, Snapshot, Uses, tools_found};
use crate::sync::Locked;
use crate::tool::{TaskSupport, Tool};

use super::convert::{self, CallAnswer};
use super::input::{self, META_CONFIRMATION, Questions};
use super::sessions::{BoundSession, Opening};
use super::{logging, tasks, view};

/// The W3C trace context headers, named once rather than parsed on every call.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// MCP's `MissingRequiredClientCapabilityError`.
const MISSING_CLIENT_CAPABILITY: i32 = -32021;

/// A handler with nothing to add: the server offers tools only.
///
/// ```
/// use toolgate::mcp::rmcp::ServerHandler;
/// use toolgate::mcp::{McpServer, ToolsOnly};
/// use toolgate::Registry;
///
/// /// Prompts and resources of your own, served beside the tools.
/// #[derive(Clone)]
/// struct Extras;
///
/// impl ServerHandler for Extras {}
///
/// let tools_only: McpServer<ToolsOnly> = McpServer::new(Registry::builder().build()?);
/// let with_extras: McpServer<Extras> = tools_only.with_handler(Extras);
/// # let _ = with_extras;
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolsOnly;

impl ServerHandler for ToolsOnly {}

/// What every session of one server shares.
pub(crate) struct Shared {
    pub(crate) registry: Registry,
    pub(crate) info: ServerConfig,
    pub(crate) default_caller: Caller,
    pub(crate) page_size: usize,
    /// How long a question during a call waits for the client's answer.
    pub(crate) question_timeout: Duration,
    pub(crate) draining: AtomicBool,
    pub(crate) peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Refuse writes for clients that cannot show an approval prompt, instead of returning the preview.
    pub(crate) refuse_unconfirmable_writes: bool,
    /// `subscriptions/listen` streams of 2026-07-28 clients that asked for `toolsListChanged`.
    /// Each with a key of its own, so that a failed one can be removed after the lock was released.
    pub(crate) listeners: Mutex<Vec<(u64, SubscriptionSink)>>,
    pub(crate) next_listener: AtomicU64,
}

/// The MCP definitions of a snapshot's tools, in its order, made once per snapshot: as the JSON text of
/// a listing of every tool, which such a listing shares and any other copies its tools from, instead of
/// serializing every schema again; and as rmcp's type only when rmcp's own paths first ask (its listing,
/// its `Mcp-Param-*` checks), so that a server whose requests all take the hot path keeps one copy of
/// each schema, its registry's.
struct Definitions {
    /// The `result` of a listing of every tool on one page.
    listing: Bytes,
    /// Where each tool's definition is in `listing`.
    spans: Vec<Range<usize>>,
    tools: OnceLock<Vec<McpTool>>,
    /// Whether some definition may ask for `Mcp-Param-*` headers.
    param_headers: bool,
}

/// The most bytes of tool definitions one `tools/list` page holds after its first tool: half the 1 MiB
/// event the official Python SDK reads at most.
const MAX_PAGE_BYTES: usize = 512 * 1024;

/// What a listing's `result` starts with, before its first tool.
const LISTING_START: &[u8] = br#"{"tools":["#;

fn all_definitions(snapshot: &Snapshot) -> Option<&Definitions> {
    snapshot.derived(|s: &Snapshot| {
        let mut listing = LISTING_START.to_vec();
        let mut spans = Vec::with_capacity(s.tools.len());
        let mut param_headers = false;
        for (n, registered) in s.tools.iter().enumerate() {
            if n > 0 {
                listing.push(b',');
            }
            let json = serde_json::to_string(&convert::tool(&registered.tool))
                .expect("a tool definition serializes");
            param_headers |= json.contains(r#""x-mcp-header""#);
            spans.push(listing.len()..listing.len() + json.len());
            listing.extend_from_slice(json.as_bytes());
        }
        listing.extend_from_slice(b"]}");
        Definitions {
            // Without the room the vector grew by, which the listing would otherwise hold as long as
            // its snapshot lives.
            listing: listing.into_boxed_slice().into(),
            spans,
            tools: OnceLock::new(),
            param_headers,
        }
    })
}

/// Whether some tool of `snapshot` may have an argument its client must also send as an `Mcp-Param-*`
/// header (an `x-mcp-header` in its input schema), which rmcp checks on 2026-07-28 calls.
pub(crate) fn declares_param_headers(snapshot: &Snapshot) -> bool {
    all_definitions(snapshot).is_none_or(|d| d.param_headers)
}

/// The MCP definition of each tool of `snapshot`, in its order, as rmcp's type.
fn definitions(snapshot: &Snapshot) -> &[McpTool] {
    all_definitions(snapshot).map_or(&[], |d| {
        d.tools.get_or_init(|| {
            snapshot
                .tools
                .iter()
                .map(|r| convert::tool(&r.tool))
                .collect()
        })
    })
}

/// One page of a `tools/list`: the indices of the tools listed, and the cursor of the next page.
pub(crate) struct Page<'a> {
    pub(crate) snapshot: Current<'a>,
    pub(crate) tools: Vec<usize>,
    pub(crate) next: Option<Cursor>,
}

impl Page<'_> {
    /// The `result` of the listing as JSON text, made once per snapshot, when the page lists every tool:
    /// the same value rmcp's `ListToolsResult` serializes to, shared rather than copied.
    pub(crate) fn shared_json(&self) -> Option<Bytes> {
        // The indices are distinct, so a page of as many as the snapshot has lists every tool.
        let whole = self.next.is_none() && self.tools.len() == self.snapshot.tools.len();
        whole
            .then(|| all_definitions(&self.snapshot))
            .flatten()
            .map(|d| d.listing.clone())
    }

    /// The `result` of the listing as JSON text, with each tool's text copied from the listing of every
    /// tool: the same value rmcp's `ListToolsResult` serializes to.
    pub(crate) fn result_json(&self, out: &mut Vec<u8>) {
        let (listing, spans) = all_definitions(&self.snapshot)
            .map_or((&[][..], &[][..]), |d| (&d.listing[..], &d.spans[..]));
        let json = |i: usize| &listing[spans[i].clone()];
        // Sized once for the whole page, rather than grown as each tool's text is copied in.
        out.reserve(self.tools.iter().map(|&i| json(i).len() + 1).sum::<usize>() + 64);
        out.extend_from_slice(LISTING_START);
        for (n, &i) in self.tools.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(json(i));
        }
        out.push(b']');
        if let Some(next) = &self.next {
            out.extend_from_slice(br#","nextCursor":"#);
            serde_json::to_writer(&mut *out, next).expect("a cursor serializes");
        }
        out.push(b'}');
    }
}

/// Whether some tool of `snapshot` links the App, which is then served as a resource.
pub(crate) fn serves_view(snapshot: &Snapshot) -> bool {
    snapshot.tools.iter().any(|r| r.tool.shows_view())
}

/// How often clients are told at most that the tools changed: a storm of changes (a remote server that
/// relists again and again) is one notification a window.
const CHANGE_WINDOW: Duration = Duration::from_secs(1);

/// Tells every connected client when the registry swaps in new tools, at once and then at most once a
/// [`CHANGE_WINDOW`], until the server or the registry is gone.
pub(crate) async fn relay_changes(shared: Weak<Shared>, mut revisions: watch::Receiver<u64>) {
    while revisions.changed().await.is_ok() {
        let Some(strong) = shared.upgrade() else {
            return;
        };
        Notifier(strong).tools_changed().await;
        // Changes during the window are marked seen by the next `changed`, which then returns at once.
        tokio::time::sleep(CHANGE_WINDOW).await;
    }
}

/// Tells connected clients that the tool list changed: legacy sessions by `notifications/tools/list_changed`,
/// 2026-07-28 clients on their `subscriptions/listen` streams. Over MCP every call carries one, so a tool
/// can take it as `Extension<Notifier>`; [`McpHandler::notifier`] gives one to the application.
///
/// ```
/// use toolgate::mcp::McpServer;
/// use toolgate::Registry;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let handler = McpServer::new(Registry::builder().build()?).handler();
/// let notifier = handler.notifier();
/// // After switching tools on or off for some callers, say so; with no client connected it does nothing.
/// notifier.tools_changed().await;
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Notifier(Arc<Shared>);

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Notifier")
    }
}

impl Notifier {
    /// Sends the change to every client that can receive it; closed sessions are forgotten.
    pub async fn tools_changed(&self) {
        let peers: Vec<Peer<RoleServer>> = {
            let mut peers = self.0.peers.locked();
            peers.retain(|p| !p.is_transport_closed());
            peers.clone()
        };
        for peer in peers {
            if let Err(error) = peer.notify_tool_list_changed().await {
                tracing::debug!(target: "toolgate::mcp", %error, "could not send tools/list_changed");
            }
        }
        let listeners = self.0.listeners.locked().clone();
        let mut gone = Vec::new();
        for (key, sink) in listeners {
            if sink.notify_tool_list_changed().await.is_err() {
                gone.push(key);
            }
        }
        if !gone.is_empty() {
            let mut listeners = self.0.listeners.locked();
            listeners.retain(|(key, _)| !gone.contains(key));
        }
    }
}

/// The rmcp [`ServerHandler`] of a toolgate server: tools from the registry, everything else from `H`.
///
/// One handler serves one session (stdio connection or HTTP session); clones share the registry.
///
/// ```
/// use toolgate::mcp::rmcp::ServerHandler;
/// use toolgate::mcp::McpServer;
/// use toolgate::Registry;
///
/// let handler = McpServer::new(Registry::builder().build()?).name("shop").version("2.1.0").handler();
/// let info = handler.get_info();
/// assert_eq!((info.server_info.name.as_str(), info.server_info.version.as_str()), ("shop", "2.1.0"));
/// assert_eq!(info.capabilities.tools.unwrap().list_changed, Some(true));
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Clone)]
pub struct McpHandler<H = ToolsOnly> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) extras: H,
    /// What this session has set and found, shared by its clones.
    session: Arc<SessionState>,
}

/// A session's own state, in one allocation.
#[derive(Debug)]
struct SessionState {
    /// The minimum level of log messages sent to this session (`logging/setLevel`).
    log_level: AtomicU8,
    /// The deferred tools this session's searches found, listed to it from then on.
    found: Mutex<Vec<Arc<str>>>,
}

impl<H> std::fmt::Debug for McpHandler<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHandler")
            .field("server", &self.shared.info.server_info.name)
            .finish_non_exhaustive()
    }
}

impl<H: Clone> McpHandler<H> {
    pub(crate) fn new(shared: Arc<Shared>, extras: H) -> Self {
        McpHandler {
            shared,
            extras,
            session: Arc::new(SessionState {
                log_level: AtomicU8::new(logging::DEFAULT_RANK),
                found: Mutex::default(),
            }),
        }
    }

    /// A handler for a new session: same server, its own log level.
    pub(crate) fn for_session(&self) -> Self {
        Self::new(Arc::clone(&self.shared), self.extras.clone())
    }

    /// A handle that tells connected clients when the tool list changed.
    pub fn notifier(&self) -> Notifier {
        Notifier(Arc::clone(&self.shared))
    }

    /// Tells every connected client that the tool list changed (see [`Notifier`]).
    pub async fn notify_tools_changed(&self) {
        self.notifier().tools_changed().await;
    }

    /// A call of `tool`, which may run as a task, started as one when the client declared the tasks
    /// extension on this request or its session. A write's preview and approval come first, as for any
    /// call, and so do the questions of a tool that asks them first (`after_questions`); `None` then, and
    /// when the call runs while the request waits. A tool that runs only as a task refuses a client that
    /// cannot poll. It takes the request's HTTP `parts` when it starts one.
    async fn as_task(
        &self,
        tool: &Tool,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        caller: &Caller,
        parts: Option<&http::request::Parts>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        let support = tool.task_support();
        if !declared {
            return (support != TaskSupport::Optional).then(|| Err(tasks::required()));
        }
        let replies = request.request_state.is_some()
            || request.input_responses.is_some()
            || context.meta.get(META_CONFIRMATION).is_some();
        if (tool.has_preview() || support == TaskSupport::AfterQuestions) && !replies {
            return None;
        }
        let arguments = request
            .arguments
            .clone()
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        let call = self.call_for(
            &request.name,
            arguments,
            context,
            parts,
            Uses::EVERYTHING,
            caller,
        );
        let call = replied(
            call,
            context,
            request.request_state.clone(),
            request.input_responses.clone(),
        );
        Some(
            match self.shared.registry.start_task_record(caller, call).await {
                Ok(task) => Ok(tasks::created(&task).into()),
                Err(TaskError::NotStarted(refused)) => {
                    convert::call_result(Outcome::Failed(refused), false).map(Into::into)
                }
                Err(error) => Err(tasks::error(error)),
            },
        )
    }

    /// The pipeline's call of `name` for this request, with what the tool `uses` of it attached: the
    /// client's peer, the notifier and the HTTP request's `parts` (with its `caller`) as extensions.
    fn call_for(
        &self,
        name: &str,
        arguments: serde_json::Value,
        context: &RequestContext<RoleServer>,
        parts: Option<&http::request::Parts>,
        uses: Uses,
        caller: &Caller,
    ) -> Call {
        let mut call = Call::new(name, arguments)
            .tool_call_id(id_text(&context.id))
            .cancellation(context.ct.clone());
        let bound = parts.and_then(|p| p.extensions.get::<BoundSession>());
        if let Some(BoundSession(session)) = bound {
            call = call.session(Arc::clone(session));
        }
        if uses.extensions {
            call = call
                .extension(context.peer.clone())
                .extension(self.notifier());
        }
        // The trace context of the request's `_meta`, or else of its HTTP headers.
        let header = |name: &HeaderName| parts?.headers.get(name)?.to_str().ok();
        let trace = match context.meta.get_traceparent() {
            Some(traceparent) => Some((traceparent, context.meta.get_tracestate())),
            None => header(&TRACEPARENT).map(|parent| (parent, header(&TRACESTATE))),
        };
        if let Some((traceparent, tracestate)) = trace {
            call = call.trace(traceparent, tracestate.map(Into::into));
        }
        if let Some(parts) = parts.filter(|_| uses.extensions) {
            // With its caller among its extensions, as rmcp's path hands them over, however it came.
            call = call.extension(FromHttp { parts, caller }.to_parts());
        }
        call
    }

    /// Runs one round of a call of the tool its name `resolved` to, with its progress and log messages
    /// relayed to the client before the result when it `reports` any.
    async fn round(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        call: Call,
        resolved: Option<usize>,
        context: &RequestContext<RoleServer>,
    ) -> Outcome {
        let reports = resolved.is_none_or(|i| snapshot.tools[i].uses.reports);
        let (call, relay) = if reports {
            Relay::attach(
                call,
                context,
                self.session.log_level.load(Ordering::Relaxed),
            )
        } else {
            (call, Relay(None))
        };
        let outcome = self
            .shared
            .registry
            .run_resolved(snapshot, caller, call, resolved)
            .await;
        relay.flush().await;
        outcome
    }

    /// Adds the tools a `tool_search` found to this session's listing and tells the client that the list
    /// changed, on a session that can hear it (one that began with `initialize`).
    async fn load_found(&self, outcome: &Outcome, context: &RequestContext<RoleServer>) {
        let Outcome::Done(result) = outcome else {
            return;
        };
        if context.peer.peer_info().is_none() {
            return;
        }
        let added = {
            let mut found = self.session.found.locked();
            let before = found.len();
            for name in tools_found(result) {
                if !found.iter().any(|f| **f == *name) {
                    found.push(name.into());
                }
            }
            found.len() > before
        };
        if added && let Err(error) = context.peer.notify_tool_list_changed().await {
            tracing::debug!(target: "toolgate::mcp", %error, "could not send tools/list_changed");
        }
    }

    /// A slot among the calls that may run at once (the registry's, shared with tasks and every
    /// transport), waiting for one and for the caller's share of them for at most `limit`: an error
    /// answer while the server shuts down, [`Busy`] when none came free in time.
    async fn call_slot(
        &self,
        caller: &Caller,
        limit: Option<Duration>,
    ) -> Result<Result<Slot<'_>, Busy>, ErrorData> {
        self.open()?;
        Ok(self.shared.registry.inner.slots.take(caller, limit).await)
    }

    /// The error answer of a server that is shutting down, which starts nothing more.
    fn open(&self) -> Result<(), ErrorData> {
        if self.shared.draining.load(Ordering::Relaxed) {
            return Err(ErrorData::internal_error(
                "the server is shutting down",
                None,
            ));
        }
        Ok(())
    }

    /// `tools/call`, as rmcp's dispatch calls it through [`ServerHandler::call_tool`] and the direct loops
    /// call it themselves, leaving a finished result unencoded for them to write. The caller and the HTTP
    /// request are those it came `from`, or else those among the extensions of its `context`.
    pub(super) async fn answer_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        from: Option<FromHttp<'_>>,
    ) -> Result<CallAnswer, ErrorData> {
        self.open()?;
        let (caller, parts) = match from {
            Some(from) => (from.caller.clone(), Some(from.parts)),
            None => (
                self.caller(&context),
                context.extensions.get::<http::request::Parts>(),
            ),
        };
        // One snapshot and one lookup, after hooks: it decides the rounds, runs each one, and says how the
        // result is encoded.
        let registry = &self.shared.registry;
        let snapshot = registry.snapshot();
        let resolved = registry.resolve(&snapshot, &request.name);
        // A tool the caller may not run is answered as an unknown one, whatever its task mode. Starting a
        // task takes no slot: the task takes one when it runs.
        if let Some(index) = resolved
            && snapshot.tools[index].tool.task_support() != TaskSupport::Forbidden
            && registry.may_run(&snapshot, index, &caller)
            && let Some(started) = Box::pin(self.as_task(
                &snapshot.tools[index].tool,
                &request,
                &context,
                &caller,
                parts,
            ))
            .await
        {
            return started.map(CallAnswer::Response);
        }
        // The wait for a slot counts toward the tool's timeout.
        let timeout = resolved
            .and_then(|i| snapshot.tools[i].tool.timeout)
            .or(registry.inner.default_timeout);
        let asked_at = timeout.map(|_| std::time::Instant::now());
        let mut slot = match self.call_slot(&caller, timeout).await? {
            Ok(slot) => slot,
            Err(busy) => {
                let busy = Outcome::Failed(busy.error(&crate::text::capped(&request.name)));
                return convert::call_result(busy, false).map(Into::into);
            }
        };
        let waited = asked_at.map_or(Duration::ZERO, |at| at.elapsed());
        // Only a tool that may ask needs to know how the client answers.
        let (questions, support) = if snapshot.may_ask(resolved) {
            Questions::of(&context, parts)
        } else {
            (Questions::Unanswerable, ClientSupport::NONE)
        };
        let arguments = request
            .arguments
            .map_or(serde_json::Value::Null, serde_json::Value::Object);
        // Moved, not cloned, unless the client answers questions during the call and rounds may follow.
        let spare =
            matches!(questions, Questions::AsRequests(_)).then(|| (arguments.clone(), parts));
        let uses = resolved.map_or(Uses::EVERYTHING, |i| snapshot.tools[i].uses);
        let call = self
            .call_for(&request.name, arguments, &context, parts, uses, &caller)
            .client_support(support)
            .waited(waited);
        let resumed = request.request_state.is_some();
        let call = replied(
            call,
            &context,
            request.request_state,
            request.input_responses,
        );
        let mut outcome = self
            .round(&snapshot, &caller, call, resolved, &context)
            .await;
        if let (Questions::AsRequests(peer), Some((arguments, parts))) = (&questions, spare) {
            // Boxed: only a client that answers questions during the call waits here.
            let asked = Asked {
                peer,
                name: &request.name,
                arguments,
                parts,
                uses,
                support,
                snapshot: &snapshot,
                caller: &caller,
                resolved,
            };
            let (answered, kept) =
                Box::pin(self.ask_rounds(asked, outcome, slot, &context)).await?;
            outcome = answered;
            slot = kept;
        }
        drop(slot);
        if resolved.is_some() && resolved == snapshot.tool_search {
            self.load_found(&outcome, &context).await;
        }
        let in_result = matches!(questions, Questions::InResult);
        match outcome {
            Outcome::InputRequired(input) if in_result => {
                Ok(CallAnswer::Response(input::input_required(&input)?.into()))
            }
            Outcome::NeedsConfirmation(pending) if in_result && support.elicitation => {
                Ok(CallAnswer::Response(input::approval(&pending)?.into()))
            }
            Outcome::NeedsConfirmation(_) if self.shared.refuse_unconfirmable_writes => {
                let error = ToolError::with_kind(
                    ErrorKind::Denied,
                    "This client cannot show an approval prompt, and this server runs no write without \
                     one. Nothing was changed; use a client that supports elicitation.",
                );
                convert::call_result(Outcome::Denied(error), false).map(Into::into)
            }
            Outcome::Unsupported(missing) => Err(ErrorData::new(
                ErrorCode(MISSING_CLIENT_CAPABILITY),
                missing.message(),
                Some(missing.data()),
            )),
            Outcome::Failed(error) if resumed && error.kind() == ErrorKind::Confirmation => {
                Err(ErrorData::invalid_params(error.message().to_owned(), None))
            }
            outcome => {
                // Encoded against the tool that ran, which a hook may have chosen over the one named.
                let structured_output =
                    resolved.is_some_and(|i| snapshot.tools[i].tool.output_schema.is_some());
                match outcome {
                    Outcome::Done(result) => Ok(CallAnswer::Done {
                        result,
                        structured_output,
                    }),
                    outcome => convert::call_result(outcome, structured_output).map(Into::into),
                }
            }
        }
    }

    /// Asks the client the questions of each round during the call, and runs the next round with its
    /// answers, until the call needs none (at most [`input::MAX_ROUNDS`]); the last round's outcome,
    /// and the slot it ran in.
    async fn ask_rounds<'s>(
        &'s self,
        asked: Asked<'_>,
        mut outcome: Outcome,
        mut slot: Slot<'s>,
        context: &RequestContext<RoleServer>,
    ) -> Result<(Outcome, Slot<'s>), ErrorData> {
        for _ in 0..input::MAX_ROUNDS {
            let (state, questions) = match &outcome {
                Outcome::InputRequired(input) => {
                    (input.state().to_owned(), input.requests().clone())
                }
                Outcome::NeedsConfirmation(pending) if asked.support.elicitation => (
                    pending.confirmation().to_owned(),
                    input::approval_question(pending),
                ),
                _ => break,
            };
            // Waiting for the client takes no slot from other calls.
            drop(slot);
            let answers =
                input::ask_during(asked.peer, &questions, self.shared.question_timeout).await?;
            slot = self
                .call_slot(asked.caller, None)
                .await?
                .expect("a wait without a limit ends with a slot");
            let call = self
                .call_for(
                    asked.name,
                    asked.arguments.clone(),
                    context,
                    asked.parts,
                    asked.uses,
                    asked.caller,
                )
                .client_support(asked.support)
                .resume(Some(state), answers);
            outcome = self
                .round(asked.snapshot, asked.caller, call, asked.resolved, context)
                .await;
        }
        Ok((outcome, slot))
    }

    /// The page of `tools/list` that `request` asks for, of the tools its caller may see.
    pub(crate) fn page(
        &self,
        request: Option<PaginatedRequestParams>,
        caller: &Caller,
    ) -> Result<Page<'_>, ErrorData> {
        let start = match request.and_then(|r| r.cursor) {
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ErrorData::invalid_params(format!("invalid cursor `{cursor}`"), None)
            })?,
            None => 0,
        };
        let page_size = self.shared.page_size;
        let snapshot = self.shared.registry.snapshot();
        let listing = self.shared.registry.listing(&snapshot, caller);
        let visible = {
            let found = self.session.found.locked();
            listing.with(|i| found.contains(&snapshot.tools[i].tool.name))
        };
        // The page kept in place, in the vector of every visible tool: at most `page_size` tools, and no
        // more than `MAX_PAGE_BYTES` of definitions after the first, so that a page of long definitions
        // stays readable to every client.
        let mut tools = visible;
        tools.drain(..start.min(tools.len()));
        let spans = all_definitions(&snapshot).map_or(&[][..], |d| &d.spans[..]);
        let (mut taken, mut bytes) = (0, 0);
        for &i in tools.iter().take(page_size) {
            bytes += spans.get(i).map_or(0, ExactSizeIterator::len);
            if taken > 0 && bytes > MAX_PAGE_BYTES {
                break;
            }
            taken += 1;
        }
        let next = (tools.len() > taken).then(|| Cursor::from((start + taken).to_string()));
        tools.truncate(taken);
        Ok(Page {
            snapshot,
            tools,
            next,
        })
    }

    /// Whether the registry's current tools need the App.
    fn serves_view(&self) -> bool {
        serves_view(&self.shared.registry.snapshot())
    }

    /// The caller of a request: set by the authentication layer over HTTP, the default one otherwise.
    pub(crate) fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .unwrap_or_else(|| self.shared.default_caller.clone())
    }
}

/// An HTTP request that a direct path answers: its parts and the caller the gate found for it, lent as
/// they are rather than put among the extensions of the request's context, each of which costs a map
/// and a box.
#[derive(Clone, Copy)]
pub(crate) struct FromHttp<'a> {
    pub(crate) parts: &'a http::request::Parts,
    pub(crate) caller: &'a Caller,
}

impl FromHttp<'_> {
    /// The parts as rmcp's service reads them, with the caller among their extensions.
    pub(crate) fn to_parts(self) -> http::request::Parts {
        let mut parts = self.parts.clone();
        parts.extensions.insert(self.caller.clone());
        parts
    }
}

/// A call whose client answers its questions as they are asked: what each further round needs.
struct Asked<'a> {
    peer: &'a Peer<RoleServer>,
    name: &'a str,
    arguments: serde_json::Value,
    parts: Option<&'a http::request::Parts>,
    uses: Uses,
    support: ClientSupport,
    snapshot: &'a Snapshot,
    caller: &'a Caller,
    resolved: Option<usize>,
}

/// Forwards a call's progress and log messages to the client, in order. The forwarding task starts with the
/// first message, and a request that can receive neither costs nothing here.
struct Relay(Option<Arc<Mutex<RelayState>>>);

struct RelayState {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    min_level: u8,
    running: Option<(mpsc::UnboundedSender<Relayed>, JoinHandle<()>)>,
}

/// A progress update or a log entry on its way to the client.
enum Relayed {
    Progress(ProgressUpdate),
    Log(LogEntry),
}

impl Relay {
    /// Attaches the progress and log sinks that the request asks for to `call`.
    fn attach(
        call: Call,
        context: &RequestContext<RoleServer>,
        session_level: u8,
    ) -> (Call, Relay) {
        let token = context.meta.get_progress_token();
        let min_level = logging::min_rank(context, session_level);
        let wants_progress = token.is_some();
        if !wants_progress && min_level == u8::MAX {
            return (call, Relay(None));
        }
        let state = RelayState {
            peer: context.peer.clone(),
            token,
            min_level,
            running: None,
        };
        let state = Arc::new(Mutex::new(state));
        let mut call = call;
        if min_level != u8::MAX {
            let logs = Arc::clone(&state);
            call = call.on_log(move |entry| Self::send(&logs, Relayed::Log(entry)));
        }
        if wants_progress {
            let progress = Arc::clone(&state);
            call = call.on_progress(move |update| Self::send(&progress, Relayed::Progress(update)));
        }
        (call, Relay(Some(state)))
    }

    fn send(state: &Mutex<RelayState>, relayed: Relayed) {
        let mut state = state.locked();
        if state.running.is_none() {
            let (sender, receiver) = mpsc::unbounded_channel();
            let task = tokio::spawn(Self::forward(
                state.peer.clone(),
                state.token.clone(),
                state.min_level,
                receiver,
            ));
            state.running = Some((sender, task));
        }
        if let Some((sender, _)) = &state.running {
            let _ = sender.send(relayed);
        }
    }

    async fn forward(
        peer: Peer<RoleServer>,
        token: Option<ProgressToken>,
        min_level: u8,
        mut receiver: mpsc::UnboundedReceiver<Relayed>,
    ) {
        while let Some(relayed) = receiver.recv().await {
            let sent = match relayed {
                Relayed::Progress(update) => {
                    let Some(token) = token.clone() else { continue };
                    let mut param = ProgressNotificationParam::new(token, update.progress);
                    if let Some(total) = update.total {
                        param = param.with_total(total);
                    }
                    if let Some(message) = update.message {
                        param = param.with_message(message);
                    }
                    peer.notify_progress(param).await
                }
                Relayed::Log(entry) => match logging::send(&peer, entry, min_level) {
                    Some(sending) => sending.await,
                    None => continue,
                },
            };
            if sent.is_err() {
                break;
            }
        }
    }

    /// Waits until every note sent during the call has reached the client, so none trails the result.
    async fn flush(self) {
        let Some(state) = self.0 else { return };
        let running = state.locked().running.take();
        if let Some((sender, task)) = running {
            drop(sender);
            let _ = task.await;
        }
    }
}

impl<H: ServerHandler + Clone> ServerHandler for McpHandler<H> {
    fn get_info(&self) -> ServerConfig {
        self.shared.info.clone()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        if context.peer.peer_info().is_none() {
            context.peer.set_peer_info(request.clone());
        }
        // A session being opened over HTTP: its requests may be answered directly, by this handler.
        if let Some(opening) = context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Opening<Self>>())
        {
            opening.open(self.clone(), context.peer.clone());
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        {
            let mut peers = self.shared.peers.locked();
            peers.retain(|p| !p.is_transport_closed());
            peers.push(context.peer.clone());
        }
        self.extras.on_initialized(context).await;
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let page = self.page(request, &self.caller(&context))?;
        let definitions = definitions(&page.snapshot);
        let tools = page.tools.iter().map(|&i| definitions[i].clone()).collect();
        let mut result = ListToolsResult::with_all_items(tools);
        result.next_cursor = page.next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        let snapshot = self.shared.registry.snapshot();
        let index = *snapshot.by_name.get(name)?;
        Some(definitions(&snapshot)[index].clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.answer_call(request, context, None)
            .await
            .map(CallAnswer::into_response)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let caller = self.caller(&context);
        let task = self
            .shared
            .registry
            .task(&caller, &request.task_id)
            .await
            .map_err(tasks::error)?;
        let structured = self
            .shared
            .registry
            .get(&task.tool)
            .is_some_and(|tool| tool.output_schema.is_some());
        tasks::detailed(task, structured)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context);
        let answers = request.input_responses.into_iter().collect();
        self.shared
            .registry
            .answer_task(&caller, &request.task_id, answers)
            .await
            .map_err(tasks::error)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = self.caller(&context);
        self.shared
            .registry
            .cancel_task(&caller, &request.task_id)
            .await
            .map_err(tasks::error)
    }

    #[allow(deprecated)] // logging/setLevel: deprecated by SEP-2577, still part of the versions served
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = logging::rank(request.level);
        self.session.log_level.store(level, Ordering::Relaxed);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.extras.complete(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.extras.get_prompt(request, context).await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.extras.list_prompts(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        if !self.serves_view() {
            return self.extras.list_resources(request, context).await;
        }
        let first_page = request.as_ref().is_none_or(|r| r.cursor.is_none());
        let mut listed = match self.extras.list_resources(request, context).await {
            // Handlers that offer no resources of their own say so; the App is the only one.
            Err(e) if e.code == ErrorCode::METHOD_NOT_FOUND => ListResourcesResult::default(),
            other => other?,
        };
        if first_page {
            listed.resources.insert(0, view::resource());
        }
        Ok(listed)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.extras.list_resource_templates(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri == view::VIEW_URI && self.serves_view() {
            return Ok(view::contents().into());
        }
        self.extras.read_resource(request, context).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let mut accepted = self
            .extras
            .accepted_subscription_filter(requested)
            .unwrap_or_default();
        if requested.tools_list_changed == Some(true) {
            accepted.tools_list_changed = Some(true);
        }
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        if context.accepted().tools_list_changed == Some(true) {
            let mut listeners = self.shared.listeners.locked();
            let key = self.shared.next_listener.fetch_add(1, Ordering::Relaxed);
            listeners.push((key, context.sink().clone()));
        }
        self.extras.listen(context).await
    }

    #[allow(deprecated)] // resources/subscribe: legacy-only in rmcp, still part of the versions served
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.extras.subscribe(request, context).await
    }

    #[allow(deprecated)] // resources/unsubscribe: as above
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.extras.unsubscribe(request, context).await
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [rmcp::model::ProtocolVersion]> {
        self.extras.supported_protocol_versions()
    }
}

/// A JSON-RPC id as the tool call id: its number or string.
fn id_text(id: &RequestId) -> Arc<str> {
    match id {
        NumberOrString::Number(n) => Arc::from(itoa::Buffer::new().format(*n)),
        NumberOrString::String(s) => Arc::clone(s),
    }
}

/// `call` with what its request brings back to an earlier round: a write's confirmation in `_meta`, or
/// answers with the sealed state of the round that asked.
fn replied(
    mut call: Call,
    context: &RequestContext<RoleServer>,
    state: Option<String>,
    answers: Option<rmcp::model::InputResponses>,
) -> Call {
    if let Some(token) = context.meta.get(META_CONFIRMATION).and_then(|v| v.as_str()) {
        call = call.confirmation(token);
    }
    if state.is_some() || answers.is_some() {
        let answers = answers.unwrap_or_default();
        call = call.resume(state, answers.into_iter().collect());
    }
    call
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::DynamicTool;

    #[test]
    fn a_listing_of_every_tool_shares_its_text_a_page_copies_it_and_only_rmcps_paths_make_its_type()
    {
        let schema = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
        let tools = ["find", "count", "sum"].map(|name| {
            DynamicTool::new(name, "Reads.", schema.clone(), |_, _| async { "done" }).public()
        });
        let registry = tools
            .into_iter()
            .fold(Registry::builder(), |builder, tool| builder.tool(tool))
            .build()
            .unwrap();
        let page = |tools: Vec<usize>, next: Option<&str>| Page {
            tools,
            snapshot: registry.snapshot(),
            next: next.map(Cursor::from),
        };
        let json = |page: &Page<'_>| {
            let mut listed = Vec::new();
            page.result_json(&mut listed);
            serde_json::from_slice::<serde_json::Value>(&listed).unwrap()
        };

        let every = page(vec![0, 1, 2], None);
        let shared = every
            .shared_json()
            .expect("a listing of every tool is shared");
        let made = all_definitions(&every.snapshot).unwrap();
        assert_eq!(
            shared.as_ptr(),
            made.listing.as_ptr(),
            "the listing was copied"
        );
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&shared).unwrap(),
            json(&every)
        );
        assert!(made.tools.get().is_none(), "a listing made rmcp's type");

        let some = page(vec![0, 2], Some("2"));
        assert!(
            some.shared_json().is_none(),
            "a page of some tools shares the listing of all"
        );
        let last = page(vec![2], None);
        assert!(
            last.shared_json().is_none(),
            "the last page shares the listing of all"
        );

        // rmcp's own listing: the same definitions, as its type, made once.
        let rmcp = serde_json::to_value(definitions(&every.snapshot)).unwrap();
        assert_eq!(json(&every), json!({ "tools": rmcp }));
        assert_eq!(
            json(&some),
            json!({ "tools": [rmcp[0], rmcp[2]], "nextCursor": "2" })
        );
        assert_eq!(json(&last), json!({ "tools": [rmcp[2]] }));
        assert!(made.tools.get().is_some());
    }
}
