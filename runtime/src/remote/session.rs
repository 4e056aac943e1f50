//! One remote server, live: its session (opened on first use, reused, reopened with backoff), its last
//! good tool definitions, its health, and its calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, DiscoverRequest, DiscoverRequestParams,
    PingRequest, ServerResult, Tool as RemoteDefinition,
};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::error::{ErrorKind, ToolError};
use crate::output::ToolResult;
use crate::param::{CallParts, ClientSupport, RELAYED, relay};
use crate::sync::Locked;
use crate::text::{capped, shown};

use super::Vault;
use super::asked::{HOLD_FOR, Heard, Held, Waiting};
use super::client::{Connection, Credential, connect};
use super::failure::Failure;
use super::flight::InFlightCall;
use super::listing::list_all;
use super::result::tool_result;
use super::result::{labelled, sound_media};
use super::server::RemoteServer;
use super::status::{Health, ServerStatus};

/// Tells the registry that some server's tools or health changed, so that it builds a new snapshot.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    generation: AtomicU64,
    notify: Notify,
}

impl Changes {
    /// How many changes there have been.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn bump(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_one();
    }

    /// Returns at the next change (or at once, if one came since the last wait).
    pub(crate) async fn changed(&self) {
        self.notify.notified().await;
    }
}

/// A remote server and what the registry knows of it.
pub(crate) struct Remote {
    pub(crate) server: RemoteServer,
    /// The task that keeps it current, stopped when the server is removed.
    task: Mutex<Option<tokio::task::AbortHandle>>,
    state: Mutex<Condition>,
    session: tokio::sync::Mutex<Option<Arc<Connection>>>,
    /// For a server that checks each caller's rights: a session per caller's credential.
    per_caller: tokio::sync::Mutex<HashMap<String, Arc<Connection>>>,
    /// The server said its tools changed.
    list_changed: Arc<Notify>,
    signal: Arc<Changes>,
    /// Its calls running now, at most `max_concurrent`.
    calls: tokio::sync::Semaphore,
    /// Its calls held open while their callers answer a question it asked in the middle of them.
    held: Held,
    /// The gateway's sign-in to it, for a server it signs in to.
    #[cfg(feature = "oauth")]
    sign_in: Option<super::sign_in::ServiceSignIn>,
}

struct Condition {
    health: Health,
    last_error: Option<String>,
    protocol: Option<String>,
    /// The last good listing: never replaced by a failed or empty one.
    definitions: Arc<[RemoteDefinition]>,
    /// Whether the last listing succeeded with tools in it: only then may a sync mark tools missing.
    listed: bool,
    /// Its tools that are not served, and why: what its listing had wrong, then what the registry found.
    listing_problems: Vec<String>,
    problems: Vec<String>,
    last_seen_ms: Option<u64>,
    failures: u32,
    retry_at: Option<Instant>,
    /// Why the attempt that started the backoff failed.
    backoff_failure: Option<Failure>,
}

/// What the registry serves of a server now.
pub(crate) struct Listed {
    pub(crate) definitions: Arc<[RemoteDefinition]>,
    pub(crate) health: Health,
    pub(crate) listed: bool,
}

/// The key under which the question a server of an older protocol asked in the middle of a call goes
/// to the caller.
const ASKED: &str = "asked";

/// The longest wait between two attempts to reach a server that does not answer.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The longest wait between two attempts to sign in to a server, so that a sign-in an operator made on
/// another replica is taken up within seconds.
#[cfg(feature = "oauth")]
const MAX_SIGN_IN_BACKOFF: Duration = Duration::from_secs(4);

/// How many callers' sessions a server that checks each caller's rights keeps open at most.
const MAX_CALLER_SESSIONS: usize = 256;

/// How many times one request signs in again when the server refuses the gateway's token: a server
/// that refuses every token ends in an error, not a loop.
#[cfg(feature = "oauth")]
const MAX_CHALLENGES: usize = 2;

/// The shortest time between two listings of one server that said its tools changed: a storm of
/// `list_changed` is one listing a second.
const RELIST_EVERY: Duration = Duration::from_secs(1);

/// The key under which a person is handed the address where they sign in to a server.
#[cfg(feature = "oauth")]
const SIGN_IN_KEY: &str = "sign_in";

/// What a person who has not authorized the gateway at the server `label` is told: a link their
/// client opens, where it can (a URL-mode elicitation; the call goes on when they come back), else the
/// address in the call's error. A person who was given the link and comes back without having signed
/// in, or who declined, is told so rather than asked again.
#[cfg(feature = "oauth")]
fn signing_in(label: &str, address: &str, answers: Option<&crate::param::Answers>) -> ToolError {
    let denied = |why: String| ToolError::with_kind(ErrorKind::Denied, why);
    let came_back = answers.and_then(|a| Some((a.given.get(RELAYED)?, a)));
    if let Some((_, answers)) = came_back.filter(|(carry, _)| carry.get("signed_in").is_some()) {
        let answer = answers.given.get(SIGN_IN_KEY);
        return match answer.and_then(|a| a["action"].as_str()) {
            Some("accept") => denied(format!(
                "You have not finished signing in to `{label}` yet. Open {address} to sign in, then call \
                 the tool again. Nothing was sent."
            )),
            _ => denied(format!(
                "You did not sign in to `{label}`, which it needs to act as you; nothing was sent."
            )),
        };
    }
    let support = answers.map_or(ClientSupport::ALL, |a| a.support);
    if !support.url_elicitation {
        return denied(format!(
            "The remote server `{label}` acts as each person, and you have not signed in to it yet: open \
             {address} to sign in, then call the tool again. Nothing was sent."
        ));
    }
    let link = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": format!("Sign in to `{label}` so that the gateway can act there as you."),
            "url": address,
            "elicitationId": crate::random::random_id(),
        },
    });
    let requests = serde_json::Map::from_iter([(SIGN_IN_KEY.to_owned(), link)]);
    relay(
        requests,
        support,
        json!({ "signed_in": label, "keys": [SIGN_IN_KEY] }),
    )
}

/// Keeps `opened`, whose token is due at `renew_at`, as the session of one caller's `key`: at most
/// [`MAX_CALLER_SESSIONS`], all forgotten past them.
fn kept_for(
    sessions: &mut HashMap<String, Arc<Connection>>,
    key: String,
    mut opened: Connection,
    renew_at: Option<Instant>,
) -> Arc<Connection> {
    opened.renew_at = renew_at;
    if sessions.len() >= MAX_CALLER_SESSIONS {
        sessions.clear();
    }
    let session = Arc::new(opened);
    sessions.insert(key, Arc::clone(&session));
    session
}

/// The error of a call to a server that cannot be reached. What went wrong (addresses, the transport's
/// error chain) is for the operator's log and the server's status, not for the caller.
fn unreachable(label: &str, error: &str) -> ToolError {
    tracing::warn!(target: "toolgate::remote", server = label, error, "a call could not reach its server");
    ToolError::with_kind(
        ErrorKind::Unavailable,
        format!("The remote server `{label}` cannot be reached now; try again later."),
    )
}

impl Remote {
    pub(crate) fn new(server: RemoteServer, signal: Arc<Changes>, vault: Option<&Vault>) -> Self {
        #[cfg(feature = "oauth")]
        let sign_in = match &server.transport {
            super::server::Transport::Http {
                sign_in: Some(grant),
                ..
            } => Some(super::sign_in::ServiceSignIn::new(
                (**grant).clone(),
                vault.cloned(),
            )),
            _ => None,
        };
        #[cfg(not(feature = "oauth"))]
        let _ = vault;
        Remote {
            #[cfg(feature = "oauth")]
            sign_in,
            calls: tokio::sync::Semaphore::new(server.max_concurrent),
            held: Held::default(),
            server,
            state: Mutex::new(Condition {
                health: Health::Pending,
                last_error: None,
                protocol: None,
                definitions: Arc::from([]),
                listed: false,
                listing_problems: Vec::new(),
                problems: Vec::new(),
                last_seen_ms: None,
                failures: 0,
                retry_at: None,
                backoff_failure: None,
            }),
            session: tokio::sync::Mutex::new(None),
            per_caller: tokio::sync::Mutex::default(),
            list_changed: Arc::new(Notify::new()),
            signal,
            task: Mutex::new(None),
        }
    }

    /// Starts keeping it current (once): its tools listed at once, again when it says they changed, and
    /// its health checked every `health_every`, reconnecting with backoff when it is down. The task
    /// ends when the server is removed.
    pub(crate) fn start(self: &Arc<Self>) {
        let mut task = self.task.locked();
        if task.is_none() {
            *task = Some(tokio::spawn(run(Arc::downgrade(self))).abort_handle());
        }
    }

    pub(crate) fn label(&self) -> &str {
        &self.server.label
    }

    /// What it serves now.
    pub(crate) fn served(&self) -> Listed {
        let state = self.state.locked();
        Listed {
            definitions: Arc::clone(&state.definitions),
            health: state.health,
            listed: state.listed,
        }
    }

    /// Begins an operator's sign-in to it: where the operator goes to sign in.
    #[cfg(feature = "oauth")]
    pub(crate) async fn begin_sign_in(&self) -> Result<String, String> {
        let (Some(sign_in), super::server::Transport::Http { url, .. }) =
            (&self.sign_in, &self.server.transport)
        else {
            return Err(format!(
                "the server `{}` does not sign in with OAuth",
                self.label()
            ));
        };
        sign_in.begin(self.label(), url).await
    }

    /// Finishes the sign-in `begun` with the authorization response `query`: a person's is kept for
    /// their calls; with an operator's, the server is reached at once.
    #[cfg(feature = "oauth")]
    pub(crate) async fn finish_sign_in(
        &self,
        begun: super::Begun,
        query: &str,
    ) -> Result<(), String> {
        let Some(sign_in) = &self.sign_in else {
            return Err(format!(
                "the server `{}` does not sign in with OAuth",
                self.label()
            ));
        };
        let personal = begun.is_personal();
        sign_in.finish(self.label(), begun, query).await?;
        if personal {
            return Ok(());
        }
        *self.session.lock().await = None;
        {
            let mut state = self.state.locked();
            state.retry_at = None;
            state.failures = 0;
        }
        self.list().await;
        Ok(())
    }

    /// Records the tools of it that are not served, and why, for the operator.
    pub(crate) fn set_problems(&self, problems: Vec<String>) {
        let mut state = self.state.locked();
        if state.problems != problems {
            for problem in &problems {
                tracing::warn!(target: "toolgate::remote", server = self.label(), "{problem}");
            }
            state.problems = problems;
        }
    }

    pub(crate) fn status(&self) -> ServerStatus {
        let state = self.state.locked();
        ServerStatus {
            label: self.server.label.clone(),
            reached_by: self.server.reached_by(),
            health: state.health,
            last_error: state.last_error.clone(),
            protocol: state.protocol.clone(),
            tools: state.definitions.len(),
            problems: [&state.listing_problems[..], &state.problems[..]].concat(),
            last_seen_ms: state.last_seen_ms,
        }
    }

    /// Lists its tools, every page, straight from the server (no cached list): a listing that fails or
    /// comes back empty keeps the last good one and marks the server degraded (offline when it cannot
    /// be reached).
    pub(crate) async fn list(&self) {
        let listed = (self.with_session(|session| async move {
            self.on_time(list_all(&session, self.label())).await
        }))
        .await;
        match listed {
            Ok((tools, _)) if tools.is_empty() => {
                self.degraded("it listed no tools; the last good list is kept".to_owned());
            }
            Ok((tools, problems)) => {
                let mut state = self.state.locked();
                let changed = *state.definitions != *tools || state.health != Health::Online;
                if state.listing_problems != problems {
                    for problem in &problems {
                        tracing::warn!(target: "toolgate::remote", server = self.label(), "{problem}");
                    }
                    state.listing_problems = problems;
                }
                if *state.definitions != *tools {
                    // Replaced only when it changed: the registry keeps the tools it made of it.
                    state.definitions = tools.into();
                }
                state.listed = true;
                self.answered(&mut state);
                drop(state);
                if changed {
                    self.signal.bump();
                }
            }
            Err(Failure::Unreachable(error)) => self.offline(error).await,
            Err(refused) => {
                self.degraded(format!(
                    "its tool listing failed ({}); the last good list is kept",
                    refused.said()
                ));
            }
        }
    }

    /// Checks that it answers: `server/discover` on 2026-07-28, `ping` before; an error answer is an
    /// answer too. A server that answers while it is not online has its tools listed again.
    async fn check(&self) {
        let was = self.state.locked().health;
        let answered = (self.with_session(|session| async move {
            let request = if session.discovers {
                ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams {}))
            } else {
                ClientRequest::PingRequest(PingRequest::default())
            };
            let peer = session.service.peer();
            self.on_time(async {
                peer.send_request(request).await.map_err(Failure::from)?;
                Ok(())
            })
            .await
        }))
        .await;
        match answered {
            Err(Failure::Unreachable(error)) => self.offline(error).await,
            Ok(()) | Err(_) if was != Health::Online => self.list().await,
            Ok(()) | Err(_) => {
                self.state.locked().last_seen_ms = Some(crate::store::unix_ms());
            }
        }
    }

    /// Calls its tool `name` with `arguments`: progress is relayed to the caller, and a cancelled or
    /// timed-out call is cancelled on the server too.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Value,
        parts: CallParts<'static>,
    ) -> Result<ToolResult, ToolError> {
        let label = self.label();
        // A server that hangs holds at most its own share of calls; past it, a call is refused at once.
        let Ok(_running) = self.calls.try_acquire() else {
            return Err(ToolError::with_kind(
                ErrorKind::Unavailable,
                format!(
                    "The remote server `{label}` is running as many calls as it may ({}); nothing was sent. \
                     Try again shortly.",
                    self.server.max_concurrent
                ),
            ));
        };
        let called = if self.server.access.is_enforced_downstream() {
            let session = self.caller_session(&parts).await?;
            self.call_on(&session, name, &arguments, &parts).await
        } else {
            let (arguments, parts) = (&arguments, &parts);
            (self.with_session(|session| async move {
                self.call_on(&session, name, arguments, parts).await
            }))
            .await
        };
        match called {
            Ok(answer) => answer,
            Err(failure) => Err(self.failed_call(failure).await),
        }
    }

    /// Calls its tool `name` on `session`: the answer, or why the request failed.
    async fn call_on(
        &self,
        session: &Connection,
        name: &str,
        arguments: &Value,
        parts: &CallParts<'static>,
    ) -> Result<Result<ToolResult, ToolError>, Failure> {
        let label = self.label();
        let answers = parts.answers.as_deref();
        let carried = answers
            .and_then(|a| Some((a.given.get(RELAYED)?, a)))
            .filter(|(carry, _)| carry.get("signed_in").is_none());
        let mut waiting = match carried {
            Some((carry, answers)) if carry.get("held").is_some() => {
                // The answer to the question this server asked of a call it still holds open.
                let key = carry["held"].as_str().unwrap_or_default();
                let asked = carry["keys"][0].as_str().unwrap_or_default();
                let answer = answers.given.get(asked).cloned().unwrap_or_default();
                let Some(waiting) = self.held.resume(key, answer) else {
                    return Ok(Err(ToolError::new(format!(
                        "The remote tool `{name}` of `{label}` is no longer waiting for this answer: it \
                         waited {} minutes, or was asked through another replica. Call it again.",
                        HOLD_FOR.as_secs() / 60
                    ))));
                };
                waiting
            }
            carried => {
                let mut params = CallToolRequestParams::new(name.to_owned());
                params.arguments = arguments.as_object().cloned();
                if let Some((carry, answers)) = carried {
                    // The answers to the questions this server asked last round, with its state.
                    let keys = carry["keys"].as_array().into_iter().flatten();
                    let responses = keys
                        .filter_map(Value::as_str)
                        .filter_map(|key| Some((key.to_owned(), answers.given.get(key)?.clone())))
                        .collect();
                    params.input_responses = Some(responses);
                    params.request_state = carry["state"].as_str().map(str::to_owned);
                }
                let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
                let peer = session.service.peer();
                let listening = session.askers.listen();
                let handle = peer
                    .send_request_with_option(request, PeerRequestOptions::no_options())
                    .await;
                let handle = handle.map_err(Failure::from)?;
                let in_flight = InFlightCall::new(
                    &session.in_flight,
                    handle.progress_token.clone(),
                    handle.id.clone(),
                    parts.progress.is_listened().then(|| parts.progress.clone()),
                    peer.clone(),
                );
                Waiting::new(handle.await_response(), listening, in_flight)
            }
        };
        let support = answers.map_or(ClientSupport::ALL, |a| a.support);
        let response = loop {
            let heard = match &parts.cancellation {
                Some(token) => tokio::select! {
                    heard = waiting.next() => heard,
                    () = token.cancelled() => return Ok(Err(ToolError::with_kind(ErrorKind::Cancelled, "The call was cancelled."))),
                },
                None => waiting.next().await,
            };
            let question = match heard {
                Heard::Answer(response) => break *response,
                Heard::Question(question) => question,
            };
            let method = question.request["method"].as_str().unwrap_or_default();
            if support
                .answers(method)
                .is_none_or(|(_, supported)| !supported)
            {
                let _ = question
                    .reply
                    .send(Err("the caller cannot answer it".to_owned()));
                continue;
            }
            let mut requests = serde_json::Map::from_iter([(ASKED.to_owned(), question.request)]);
            labelled(label, &mut requests);
            match self.held.hold(waiting, question.reply) {
                Ok(key) => {
                    let carry = json!({ "held": key, "keys": [ASKED] });
                    return Ok(Err(relay(requests, support, carry)));
                }
                Err(back) => waiting = *back,
            }
        };
        Ok(match response.map_err(Failure::from)? {
            ServerResult::CallToolResult(result) => {
                sound_media(label, name, &result).map(|()| tool_result(result))
            }
            ServerResult::InputRequiredResult(asked) => {
                let requests = serde_json::to_value(asked.input_requests.unwrap_or_default());
                let Ok(Value::Object(mut requests)) = requests else {
                    return Ok(Err(ToolError::new(format!(
                        "The remote tool `{name}` of `{label}` asked for input it did not say."
                    ))));
                };
                labelled(label, &mut requests);
                let keys: Vec<&String> = requests.keys().collect();
                let carry = json!({ "state": asked.request_state, "keys": keys });
                Err(relay(requests, support, carry))
            }
            ServerResult::CreateTaskResult(_) => Err(ToolError::new(format!(
                "The remote tool `{name}` of `{label}` answered with a task, which toolgate does not \
                 follow yet."
            ))),
            _ => Err(ToolError::new(format!(
                "The remote server `{label}` answered the call with something that is no tool result; it \
                 may or may not have run."
            ))),
        })
    }

    /// The error of a call that failed on the way: a server that went away is marked offline.
    async fn failed_call(&self, failure: Failure) -> ToolError {
        let label = self.label();
        match failure {
            Failure::Unreachable(error) => {
                self.offline(error).await;
                ToolError::with_kind(
                    ErrorKind::Unavailable,
                    format!(
                        "The remote server `{label}` went away during the call; it may or may not have run. \
                         Try again later."
                    ),
                )
            }
            #[cfg(feature = "oauth")]
            Failure::SignIn(error) => ToolError::with_kind(
                ErrorKind::Unavailable,
                format!(
                    "The remote server `{label}` cannot be used now: {}",
                    capped(&shown(&error))
                ),
            ),
            refused => ToolError::new(format!(
                "The remote server `{label}` refused the call: {}",
                capped(&shown(&refused.said()))
            )),
        }
    }

    /// The session that carries `caller`'s own credential, for a server that checks each caller's rights.
    async fn caller_session(&self, parts: &CallParts<'_>) -> Result<Arc<Connection>, ToolError> {
        let (label, caller) = (self.label(), &parts.caller);
        let denied = |why: String| ToolError::with_kind(ErrorKind::Denied, why);
        #[cfg(feature = "oauth")]
        if let (Some(sign_in), super::server::Transport::Http { url, .. }) =
            (&self.sign_in, &self.server.transport)
            && sign_in.signs_in_each_person()
        {
            return self.person_session(sign_in, url, parts).await;
        }
        #[cfg(feature = "oauth")]
        let exchanges = match (&self.sign_in, &self.server.transport) {
            (Some(sign_in), super::server::Transport::Http { url, .. }) if sign_in.exchanges() => {
                Some((sign_in, url))
            }
            _ => None,
        };
        // What its sessions are kept by: the caller's own token to this gateway, where it is exchanged.
        #[cfg(feature = "oauth")]
        let key = match exchanges {
            Some(_) => Some(caller.subject_token().map(str::to_owned).ok_or_else(|| {
                denied(format!(
                    "The remote server `{label}` checks each caller's rights itself, and takes a token of \
                     yours made from the one you signed in here with; this call was not signed in with \
                     OAuth, so nothing was sent."
                ))
            })?),
            None => None,
        };
        #[cfg(not(feature = "oauth"))]
        let key: Option<String> = None;
        let key = match key {
            Some(key) => key,
            None => match &self.server.exchange {
                Some(exchange) => (exchange.0)(caller).await.map_err(|error| {
                    denied(format!(
                        "No credential for the remote server `{label}` could be made for you: {error}"
                    ))
                })?,
                None => caller.credential().map(str::to_owned).ok_or_else(|| {
                    denied(format!(
                        "The remote server `{label}` checks each caller's rights itself, and this call carries no \
                         credential of yours for it; nothing was sent."
                    ))
                })?,
            },
        };
        let mut sessions = self.per_caller.lock().await;
        if let Some(session) = sessions.get(&key).filter(|session| session.is_usable()) {
            return Ok(Arc::clone(session));
        }
        #[cfg(feature = "oauth")]
        let exchanged = match exchanges {
            Some((sign_in, url)) => {
                let token = sign_in.exchanged(label, url, &key).await.map_err(|why| {
                    denied(format!(
                        "No token of yours for the remote server `{label}` could be had: {}",
                        capped(&shown(&why))
                    ))
                })?;
                Some(token)
            }
            None => None,
        };
        #[cfg(feature = "oauth")]
        let (credential, renew_at) = match &exchanged {
            Some(token) => (Credential::of(token), Some(token.renew_at)),
            None => (Credential::Bearer(&key), None),
        };
        #[cfg(not(feature = "oauth"))]
        let (credential, renew_at) = (Credential::Bearer(&key), None);
        let opened = self.open(Some(credential)).await;
        let opened = opened.map_err(|failure| unreachable(label, &failure.said()))?;
        Ok(kept_for(&mut sessions, key, opened, renew_at))
    }

    /// The session that carries the calling person's own token, by the authorization they gave; a
    /// person who gave none is handed the address where they give it.
    #[cfg(feature = "oauth")]
    async fn person_session(
        &self,
        sign_in: &super::sign_in::ServiceSignIn,
        url: &str,
        parts: &CallParts<'_>,
    ) -> Result<Arc<Connection>, ToolError> {
        let label = self.label();
        let person = parts.caller.root();
        if person.is_anonymous() {
            return Err(ToolError::with_kind(
                ErrorKind::Denied,
                format!(
                    "The remote server `{label}` is reached as each person with their own authorization; \
                     sign in to this gateway first. Nothing was sent."
                ),
            ));
        }
        let key = format!("person:{}", person.id());
        let mut sessions = self.per_caller.lock().await;
        if let Some(session) = sessions.get(&key).filter(|session| session.is_usable()) {
            return Ok(Arc::clone(session));
        }
        let unavailable = |why: String| {
            ToolError::with_kind(
                ErrorKind::Unavailable,
                format!(
                    "The remote server `{label}` cannot be used now: {}",
                    capped(&shown(&why))
                ),
            )
        };
        let token = match sign_in.personal(label, url, person.id()).await {
            Ok(super::sign_in::Personal::Token(token)) => token,
            Ok(super::sign_in::Personal::SignIn(address)) => {
                return Err(signing_in(label, &address, parts.answers.as_deref()));
            }
            Err(why) => return Err(unavailable(why)),
        };
        let opened = self.open(Some(Credential::of(&token))).await;
        let opened = opened.map_err(|failure| unreachable(label, &failure.said()))?;
        Ok(kept_for(&mut sessions, key, opened, Some(token.renew_at)))
    }

    /// Runs `work` on the session; when the server challenges the gateway's credential and the gateway
    /// signs in to it, signs in again as the challenge asks and runs `work` once more on a new session,
    /// at most [`MAX_CHALLENGES`] times. A request the server refused at its door did not run.
    #[cfg_attr(not(feature = "oauth"), expect(clippy::never_loop))]
    async fn with_session<T, F: Future<Output = Result<T, Failure>>>(
        &self,
        work: impl Fn(Arc<Connection>) -> F,
    ) -> Result<T, Failure> {
        #[cfg(feature = "oauth")]
        let mut challenges = 0;
        loop {
            match work(self.session().await?).await {
                #[cfg(feature = "oauth")]
                Err(Failure::Challenged(challenge)) if challenges < MAX_CHALLENGES => {
                    challenges += 1;
                    self.sign_in_again(&challenge).await?;
                }
                done => return done,
            }
        }
    }

    /// Signs in again as `challenge` asks, and drops the session that carried the refused token: the
    /// next one carries the new token.
    #[cfg(feature = "oauth")]
    async fn sign_in_again(&self, challenge: &str) -> Result<(), Failure> {
        let (Some(sign_in), super::server::Transport::Http { url, .. }) =
            (&self.sign_in, &self.server.transport)
        else {
            return Err(Failure::Challenged(challenge.to_owned()));
        };
        let mut slot = self.session.lock().await;
        sign_in
            .token(self.label(), url, Some(challenge))
            .await
            .map_err(Failure::SignIn)?;
        *slot = None;
        Ok(())
    }

    /// The session, opened if there is none, the last one closed or its token is due; refused while
    /// the backoff after a failed attempt runs.
    async fn session(&self) -> Result<Arc<Connection>, Failure> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|session| session.is_usable()) {
            return Ok(Arc::clone(session));
        }
        *slot = None;
        {
            let state = self.state.locked();
            if let (Some(at), Some(failure)) = (state.retry_at, &state.backoff_failure)
                && Instant::now() < at
            {
                let next = format!("; the next attempt is in {:.1?}", at - Instant::now());
                return Err(match failure.clone() {
                    Failure::Unreachable(error) => Failure::Unreachable(error + &next),
                    #[cfg(feature = "oauth")]
                    Failure::SignIn(error) => Failure::SignIn(error + &next),
                    refused => Failure::Refused(refused.said() + &next),
                });
            }
        }
        let opened = self.open_as_gateway().await;
        let mut state = self.state.locked();
        match opened {
            Ok(session) => {
                state.failures = 0;
                state.retry_at = None;
                state.protocol.clone_from(&session.protocol);
                let session = Arc::new(session);
                *slot = Some(Arc::clone(&session));
                Ok(session)
            }
            Err(failure) => {
                state.failures = state.failures.saturating_add(1);
                let longest = match failure {
                    // What it waits for (an operator's sign-in, on any replica) is read from the records.
                    #[cfg(feature = "oauth")]
                    Failure::SignIn(_) => MAX_SIGN_IN_BACKOFF,
                    _ => MAX_BACKOFF,
                };
                let backoff = Duration::from_millis(250)
                    .saturating_mul(1 << state.failures.min(8))
                    .min(longest);
                state.retry_at = Some(Instant::now() + backoff);
                // What an attempt refused while the backoff runs says.
                state.backoff_failure = Some(failure.clone());
                Err(failure)
            }
        }
    }

    /// A new session as the gateway: for a server it signs in to, with the token kept, or none before
    /// the server first asks for one; signed in again as the server's challenge asks, at most
    /// [`MAX_CHALLENGES`] times.
    async fn open_as_gateway(&self) -> Result<Connection, Failure> {
        #[cfg(feature = "oauth")]
        if let (Some(sign_in), super::server::Transport::Http { url, .. }) =
            (&self.sign_in, &self.server.transport)
        {
            let mut challenge = None;
            for _ in 0..=MAX_CHALLENGES {
                let token = (sign_in.token(self.label(), url, challenge.as_deref()).await)
                    .map_err(Failure::SignIn)?;
                match self.open(token.as_ref().map(Credential::of)).await {
                    Ok(mut session) => {
                        session.renew_at = token.map(|token| token.renew_at);
                        return Ok(session);
                    }
                    Err(Failure::Challenged(again)) => challenge = Some(again),
                    Err(failure) => return Err(failure),
                }
            }
            return Err(Failure::Refused(format!(
                "it refused every token the gateway signed in for ({} attempts)",
                MAX_CHALLENGES + 1
            )));
        }
        self.open(None).await
    }

    /// A new session, as a caller with `credential` when given, unless opening it takes longer than the
    /// server's timeout.
    async fn open(&self, credential: Option<Credential<'_>>) -> Result<Connection, Failure> {
        let opening = connect(&self.server, Arc::clone(&self.list_changed), credential);
        self.on_time(opening).await
    }

    /// `work`, unless it takes longer than the server's timeout: then the server does not answer.
    async fn on_time<T>(
        &self,
        work: impl Future<Output = Result<T, Failure>>,
    ) -> Result<T, Failure> {
        let timeout = self.server.timeout;
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(Failure::Unreachable(format!(
                    "no answer within {timeout:?}"
                )))
            })
    }

    fn answered(&self, state: &mut Condition) {
        state.health = Health::Online;
        state.last_error = None;
        state.last_seen_ms = Some(crate::store::unix_ms());
    }

    /// It answers but is not well: its last good tools stay served.
    fn degraded(&self, error: String) {
        let mut state = self.state.locked();
        let changed = state.health != Health::Degraded;
        state.health = Health::Degraded;
        state.listed = false;
        state.last_seen_ms = Some(crate::store::unix_ms());
        if changed {
            tracing::warn!(target: "toolgate::remote", server = self.label(), error, "degraded");
        }
        state.last_error = Some(error);
        drop(state);
        if changed {
            self.signal.bump();
        }
    }

    /// It cannot be reached: its session is dropped and its tools hidden until it answers again.
    async fn offline(&self, error: String) {
        *self.session.lock().await = None;
        let mut state = self.state.locked();
        let changed = state.health != Health::Offline;
        state.health = Health::Offline;
        state.listed = false;
        if changed {
            tracing::error!(target: "toolgate::remote", server = self.label(), error, "offline");
        }
        state.last_error = Some(error);
        drop(state);
        if changed {
            self.signal.bump();
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        if let Some(task) = self.task.locked().take() {
            task.abort();
        }
    }
}

/// What keeps a server current; holds it only while it works, so that a removed server is dropped.
async fn run(remote: Weak<Remote>) {
    let Some(this) = remote.upgrade() else {
        return;
    };
    let (every, list_changed) = (this.server.health_every, Arc::clone(&this.list_changed));
    this.list().await;
    drop(this);
    let mut listed_at = tokio::time::Instant::now();
    loop {
        let changed = tokio::select! {
            () = tokio::time::sleep(every) => false,
            () = list_changed.notified() => true,
        };
        if changed {
            // However often it says so, it is listed at most once a second: what it said meanwhile is
            // the one notification this listing answers.
            tokio::time::sleep_until(listed_at + RELIST_EVERY).await;
        }
        let Some(this) = remote.upgrade() else {
            return;
        };
        if changed {
            this.list().await;
            listed_at = tokio::time::Instant::now();
        } else {
            this.check().await;
        }
    }
}
