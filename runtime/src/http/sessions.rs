//! The sessions of a stateful HTTP server, each bound to the caller who opened it.
//!
//! rmcp's [`LocalSessionManager`] keeps the sessions; [`BoundSessions`] wraps it to learn when one opens
//! and when one closes (by `DELETE`, idling out or shutdown), and keeps who owns each. The HTTP layer asks
//! it before a request reaches a session: a request for a session from anyone but its owner is answered
//! as an unknown session is, so the session's existence is not revealed.
//!
//! It also keeps each session's own handler and client, once its `initialize` is answered, for the
//! direct path to answer the session's hot requests with; and since those requests never reach rmcp's
//! session, it decides itself when a session has idled out, counting every request, rather than
//! leaving that to rmcp's session worker.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use crate::caller::Caller;
use crate::mcp::{Opened, Opening};
use crate::registry::Registry;
use crate::sync::Locked;

/// Why a new session was not bound to its caller.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Unbound {
    /// The caller has as many sessions open as it may.
    TooMany,
    /// The session closed before it could be bound.
    Gone,
}

struct SessionEntry<H> {
    /// Who owns it ([`Caller::owner`]), and whose sessions it counts among ([`Caller::budget`]); `None`
    /// until the `initialize` that opened it is answered.
    owner: Option<(Arc<str>, Arc<str>)>,
    served: Option<Arc<Opened<H>>>,
    /// When a request last came for it.
    seen: Instant,
}

struct Table<H> {
    sessions: HashMap<Arc<str>, SessionEntry<H>>,
    /// How many sessions each caller has open.
    open: HashMap<Arc<str>, usize>,
}

/// rmcp's session manager, with every session bound to the caller who opened it.
pub(super) struct BoundSessions<H> {
    inner: LocalSessionManager,
    table: Mutex<Table<H>>,
    registry: Registry,
    per_caller: usize,
    /// How long a session may go without a request before it is closed.
    idle: Duration,
    /// Whether the idle sweep runs; it starts with the first session.
    sweeping: AtomicBool,
    /// Itself, for the sweep to hold without keeping it alive.
    me: Weak<Self>,
}

impl<H: Send + Sync + 'static> BoundSessions<H> {
    pub(crate) fn new(registry: Registry, per_caller: usize, idle: Duration) -> Arc<Self> {
        let mut inner = LocalSessionManager::default();
        // Idling out is decided here, where every request is seen, including those rmcp never gets.
        inner.session_config.keep_alive = None;
        Arc::new_cyclic(|me| BoundSessions {
            inner,
            table: Mutex::new(Table {
                sessions: HashMap::new(),
                open: HashMap::new(),
            }),
            registry,
            per_caller,
            idle,
            sweeping: AtomicBool::new(false),
            me: Weak::clone(me),
        })
    }

    /// Whether session `id` is open and `caller` opened it; a request for it counts as activity.
    pub(crate) fn owned_by(&self, id: &str, caller: &Caller) -> bool {
        let mut table = self.table.locked();
        let Some(session) = table.sessions.get_mut(id) else {
            return false;
        };
        let owned = session
            .owner
            .as_ref()
            .is_some_and(|(owner, _)| **owner == *caller.owner());
        if owned {
            session.seen = Instant::now();
        }
        owned
    }

    /// The handler and client session `id` is served with, once its `initialize` is answered.
    pub(crate) fn served(&self, id: &str) -> Option<Arc<Opened<H>>> {
        let table = self.table.locked();
        table.sessions.get(id)?.served.clone()
    }

    /// Binds a session just opened by `caller`'s `initialize` to `caller`, with the handler and client
    /// that answered it.
    pub(crate) fn bind(
        &self,
        id: &str,
        caller: &Caller,
        opening: Option<&Opening<H>>,
    ) -> Result<(), Unbound> {
        let mut table = self.table.locked();
        let Table { sessions, open } = &mut *table;
        let session = sessions.get_mut(id).ok_or(Unbound::Gone)?;
        if session.owner.is_some() {
            return Err(Unbound::Gone);
        }
        let budget: Arc<str> = Arc::from(caller.budget());
        let count = open.entry(Arc::clone(&budget)).or_default();
        if *count >= self.per_caller {
            return Err(Unbound::TooMany);
        }
        *count += 1;
        session.owner = Some((Arc::from(caller.owner()), budget));
        session.served = opening.and_then(Opening::take);
        session.seen = Instant::now();
        Ok(())
    }

    /// Forgets a closed session, its owner's count and its call ceilings.
    fn forget(&self, id: &str) {
        let owner = {
            let mut table = self.table.locked();
            let owner = table.sessions.remove(id).and_then(|s| s.owner);
            if let Some((_, budget)) = &owner
                && let Some(count) = table.open.get_mut(budget)
            {
                *count -= 1;
                if *count == 0 {
                    table.open.remove(budget);
                }
            }
            owner
        };
        if owner.is_some() {
            self.registry.end_session(id);
        }
    }

    /// Sessions that have gone `idle` without a request.
    fn idle_ones(&self) -> Vec<Arc<str>> {
        let table = self.table.locked();
        let now = Instant::now();
        table
            .sessions
            .iter()
            .filter(|(_, s)| now.duration_since(s.seen) >= self.idle)
            .map(|(id, _)| Arc::clone(id))
            .collect()
    }
}

/// Closes idle sessions until the sessions are gone.
async fn sweep<H: Send + Sync + 'static>(sessions: Weak<BoundSessions<H>>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        for id in sessions.idle_ones() {
            let _ = sessions.close_session(&id).await;
        }
    }
}

impl<H: Send + Sync + 'static> SessionManager for BoundSessions<H> {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        if !self.sweeping.swap(true, Ordering::Relaxed) {
            let every = (self.idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(30));
            tokio::spawn(sweep(Weak::clone(&self.me), every));
        }
        let (id, transport) = self.inner.create_session().await?;
        let session = SessionEntry {
            owner: None,
            served: None,
            seen: Instant::now(),
        };
        self.table
            .locked()
            .sessions
            .insert(Arc::clone(&id), session);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    /// Called for a `DELETE` by the owner, by the idle sweep, and by rmcp whenever a session's service
    /// ends.
    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.forget(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::{Call, DynamicTool};

    #[tokio::test]
    async fn a_closed_session_frees_its_call_counts_and_its_owners_place() {
        let once = DynamicTool::new("once", "Once.", json!({ "type": "object" }), |_, _| async {
            "ran"
        })
        .public()
        .max_runs(1);
        let registry = Registry::builder().tool(once).build().unwrap();
        let sessions = BoundSessions::<()>::new(registry.clone(), 1, Duration::from_secs(300));
        let ada = Caller::new("ada");
        let (id, _transport) = sessions.create_session().await.unwrap();
        sessions.bind(&id, &ada, None).unwrap();
        assert!(sessions.owned_by(&id, &ada));
        assert!(!sessions.owned_by(&id, &Caller::new("eve")));
        let (other, _) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.bind(&other, &ada, None), Err(Unbound::TooMany));

        let call = || Call::new("once", json!({})).session(Arc::clone(&id));
        assert!(registry.run(&ada, call()).await.error().is_none());
        assert!(registry.run(&ada, call()).await.error().is_some());
        sessions.close_session(&id).await.unwrap();
        assert!(!sessions.owned_by(&id, &ada));
        assert!(
            registry.run(&ada, call()).await.error().is_none(),
            "the session's count went with it"
        );
        sessions.bind(&other, &ada, None).unwrap();
    }

    #[tokio::test]
    async fn a_session_without_requests_idles_out_and_one_with_them_does_not() {
        let registry = Registry::builder().build().unwrap();
        let idle = Duration::from_millis(400);
        let sessions = BoundSessions::<()>::new(registry, 8, idle);
        let ada = Caller::new("ada");
        let (quiet, _q) = sessions.create_session().await.unwrap();
        let (busy, _b) = sessions.create_session().await.unwrap();
        sessions.bind(&quiet, &ada, None).unwrap();
        sessions.bind(&busy, &ada, None).unwrap();
        let until = Instant::now() + idle * 3;
        while Instant::now() < until {
            assert!(sessions.owned_by(&busy, &ada), "requests keep it open");
            tokio::time::sleep(idle / 8).await;
        }
        assert!(!sessions.owned_by(&quiet, &ada), "closed after idling");
        assert!(!sessions.inner.has_session(&quiet).await.unwrap());
    }
}
