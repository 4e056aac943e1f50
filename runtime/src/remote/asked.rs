//! A server of an older protocol (before 2026-07-28) asks a person in the middle of a call
//! (`elicitation/create`): the question goes to the call that is waiting on
//! that session, the call is held open while the gateway's caller answers it in a round of its own, and
//! the answer goes back to the server when the caller resumes.
//!
//! Held calls are bounded (at most [`MAX_HELD`] per server) and expire after [`HOLD_FOR`]: the server
//! then hears that the question was cancelled, and the call is cancelled on it. A held call lives in the
//! process that opened it: a resume that reaches another replica, or comes after the expiry, is told to
//! call again.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use rmcp::model::ServerResult;
use rmcp::service::ServiceError;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::sync::Locked;

use super::flight::InFlightCall;

/// How long a question waits for its answer, and a call for its caller to resume.
pub(crate) const HOLD_FOR: Duration = Duration::from_secs(10 * 60);

/// How many calls of one server are held open for their callers' answers at most.
pub(crate) const MAX_HELD: usize = 32;

/// How many questions a call may have asked and not yet had relayed.
const QUEUED: usize = 4;

/// A question a server asked, and where its answer (or why there is none) goes.
pub(crate) struct Question {
    /// The MCP request as the caller reads it: `{"method": ..., "params": ...}`.
    pub(crate) request: Value,
    pub(crate) reply: oneshot::Sender<Result<Value, String>>,
}

/// The calls of one session that wait for their answers, each under a number of its own: where a
/// question goes.
#[derive(Clone, Default)]
pub(crate) struct Askers(Arc<Mutex<Waiters>>);

/// The calls that wait, by number, and the number the next one gets.
#[derive(Default)]
struct Waiters {
    next: u64,
    by_number: HashMap<u64, mpsc::Sender<Question>>,
}

impl Askers {
    /// Asks `method` with `params` of the call waiting on this session, and waits for its answer. A
    /// question is refused when no call waits, or when several do (an older protocol does not say which
    /// call asks).
    pub(crate) async fn ask<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: impl serde::Serialize,
    ) -> Result<T, ErrorData> {
        let refused = |why: &str| {
            tracing::warn!(target: "toolgate::remote", method, "a remote server asked for input in the middle of a call, which toolgate did not pass on: {why}");
            ErrorData::invalid_request(format!("toolgate does not pass this on: {why}"), None)
        };
        let asker = {
            let askers = &self.0.locked().by_number;
            match askers.len() {
                1 => askers.values().next().cloned(),
                0 => return Err(refused("no call of this session is waiting")),
                _ => {
                    return Err(refused(
                        "several calls of this session are waiting, and the question does not say whose it is",
                    ));
                }
            }
        };
        let params = serde_json::to_value(params).map_err(|e| refused(&e.to_string()))?;
        let (reply, answer) = oneshot::channel();
        let question = Question {
            request: json!({ "method": method, "params": params }),
            reply,
        };
        if asker.is_none_or(|asker| asker.try_send(question).is_err()) {
            return Err(refused("the call has too many questions waiting"));
        }
        match tokio::time::timeout(HOLD_FOR, answer).await {
            Ok(Ok(Ok(answer))) => serde_json::from_value(answer).map_err(|e| {
                ErrorData::invalid_params(format!("the caller's answer does not fit: {e}"), None)
            }),
            Ok(Ok(Err(why))) => Err(refused(&why)),
            Ok(Err(_)) | Err(_) => Err(refused("the caller did not answer in time")),
        }
    }

    /// Listens for the questions of a call about to be sent (before, since its server may ask at
    /// once), until the returned guard is dropped.
    pub(crate) fn listen(&self) -> Listening {
        let (sender, questions) = mpsc::channel(QUEUED);
        let mut waiters = self.0.locked();
        waiters.next += 1;
        let number = waiters.next;
        waiters.by_number.insert(number, sender);
        Listening {
            askers: self.clone(),
            number,
            questions,
        }
    }
}

/// A call's place among its session's [`Askers`], and the questions it hears, given up when dropped.
pub(crate) struct Listening {
    askers: Askers,
    number: u64,
    questions: mpsc::Receiver<Question>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.askers.0.locked().by_number.remove(&self.number);
    }
}

type Response = Pin<Box<dyn Future<Output = Result<ServerResult, ServiceError>> + Send>>;

/// A call sent to a server, waiting for its answer or its next question.
pub(crate) struct Waiting {
    response: Response,
    listening: Listening,
    in_flight: InFlightCall,
}

/// What a waiting call heard next.
pub(crate) enum Heard {
    Answer(Box<Result<ServerResult, ServiceError>>),
    Question(Question),
}

impl Waiting {
    pub(crate) fn new(
        response: impl Future<Output = Result<ServerResult, ServiceError>> + Send + 'static,
        listening: Listening,
        in_flight: InFlightCall,
    ) -> Self {
        Waiting {
            response: Box::pin(response),
            listening,
            in_flight,
        }
    }

    /// Waits for the server's answer, or its next question.
    pub(crate) async fn next(&mut self) -> Heard {
        tokio::select! {
            answer = &mut self.response => {
                self.in_flight.answered = true;
                Heard::Answer(Box::new(answer))
            }
            Some(question) = self.listening.questions.recv() => Heard::Question(question),
        }
    }
}

/// The calls of one server held open while their callers answer a question.
#[derive(Default)]
pub(crate) struct Held(Mutex<HashMap<String, HeldCall>>);

struct HeldCall {
    waiting: Waiting,
    reply: oneshot::Sender<Result<Value, String>>,
    until: Instant,
}

impl Held {
    /// Holds `waiting`, whose question is answered through `reply`: the key its caller resumes it with.
    /// When as many calls are held as may be, the question is refused and the call given back to wait on.
    pub(crate) fn hold(
        &self,
        waiting: Waiting,
        reply: oneshot::Sender<Result<Value, String>>,
    ) -> Result<String, Box<Waiting>> {
        let mut held = self.0.locked();
        let now = Instant::now();
        held.retain(|_, call| call.until > now && !call.reply.is_closed());
        if held.len() >= MAX_HELD {
            let _ = reply.send(Err(format!(
                "{MAX_HELD} calls of this server are already waiting for their callers"
            )));
            return Err(Box::new(waiting));
        }
        let key = crate::random::random_id();
        let until = now + HOLD_FOR;
        let call = HeldCall {
            waiting,
            reply,
            until,
        };
        held.insert(key.clone(), call);
        Ok(key)
    }

    /// The call held under `key` with its question answered by `answer`, or `None` when it is not held
    /// here (it expired, was resumed already, or was held by another replica).
    pub(crate) fn resume(&self, key: &str, answer: Value) -> Option<Waiting> {
        let call = self.0.locked().remove(key)?;
        if call.until <= Instant::now() {
            return None;
        }
        call.reply.send(Ok(answer)).ok()?;
        Some(call.waiting)
    }
}
