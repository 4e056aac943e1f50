//! Forwarding a call's progress and log messages to the client, in order.

use std::sync::{Arc, Mutex};

use rmcp::model::ProgressNotificationParam;
use rmcp::model::ProgressToken;
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::call::Call;
use crate::param::{LogEntry, ProgressUpdate};
use crate::sync::Locked;

use super::logging;

/// Forwards a call's progress and log messages to the client, in order. The forwarding task starts with the
/// first message, and a request that can receive neither costs nothing here.
pub(super) struct Relay(Option<Arc<Mutex<RelayState>>>);

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
    /// A relay of nothing: the call reports nothing the client hears.
    pub(super) fn none() -> Relay {
        Relay(None)
    }

    /// Attaches the progress and log sinks that the request asks for to `call`.
    pub(super) fn attach(
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
    pub(super) async fn flush(self) {
        let Some(state) = self.0 else { return };
        let running = state.locked().running.take();
        if let Some((sender, task)) = running {
            drop(sender);
            let _ = task.await;
        }
    }
}
