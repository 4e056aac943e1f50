//! A call to a remote server while it runs: its progress relayed, and its cancellation sent when the
//! caller stops waiting.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{CancelledNotificationParam, ProgressToken};

use crate::param::Progress;
use crate::sync::Locked;

/// The progress of the calls in flight, by the token their request carried.
pub(crate) type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, Progress>>>;

/// A call in flight: its progress relayed while it runs, and a `notifications/cancelled` sent when it is
/// dropped before its answer came (a timeout, a cancelled caller).
pub(super) struct InFlightCall {
    in_flight: ProgressRoutes,
    token: ProgressToken,
    relayed: bool,
    id: rmcp::model::RequestId,
    peer: rmcp::Peer<rmcp::RoleClient>,
    /// Set once the answer came: the call is not cancelled when it ends.
    pub(super) answered: bool,
}

impl InFlightCall {
    pub(super) fn new(
        in_flight: &ProgressRoutes,
        token: ProgressToken,
        id: rmcp::model::RequestId,
        progress: Option<crate::param::Progress>,
        peer: rmcp::Peer<rmcp::RoleClient>,
    ) -> Self {
        let relayed = progress.is_some();
        if let Some(progress) = progress {
            in_flight.locked().insert(token.clone(), progress);
        }
        InFlightCall {
            in_flight: Arc::clone(in_flight),
            token,
            relayed,
            id,
            peer,
            answered: false,
        }
    }
}

impl Drop for InFlightCall {
    fn drop(&mut self) {
        let runtime = tokio::runtime::Handle::try_current();
        match runtime {
            Ok(runtime) if self.answered && self.relayed => {
                // rmcp hands each notification to a task of its own, so the last progress may still be on
                // its way when the answer is here: let it through before the relay ends.
                let (in_flight, token) = (Arc::clone(&self.in_flight), self.token.clone());
                runtime.spawn(async move {
                    for _ in 0..8 {
                        tokio::task::yield_now().await;
                    }
                    in_flight.locked().remove(&token);
                });
            }
            Ok(runtime) if !self.answered => {
                self.in_flight.locked().remove(&self.token);
                let (peer, id) = (self.peer.clone(), self.id.clone());
                runtime.spawn(async move {
                    let reason = Some("the caller stopped waiting".to_owned());
                    let _ = peer
                        .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                        .await;
                });
            }
            _ => {
                self.in_flight.locked().remove(&self.token);
            }
        }
    }
}
