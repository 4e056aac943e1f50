//! The sessions of a stateful HTTP server, each bound to the caller who opened it.
//!
//! rmcp's [`LocalSessionManager`] keeps the sessions; [`BoundSessions`] wraps it to learn when one opens
//! and when one closes (by `DELETE`, idling out or shutdown), and keeps who owns each. The HTTP layer asks
//! it before a request reaches a session: a request for a session from anyone but its owner is answered
//! as an unknown session is, so the session's existence is not revealed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};

use crate::caller::Caller;
use crate::registry::Registry;
use crate::sync::Locked;

/// The session a request was checked to belong to: its caller opened it. Set by the HTTP layer on the
/// request's parts; call ceilings count per bound session, and questions go to the client during a call
/// only on one.
#[derive(Debug, Clone)]
pub(crate) struct BoundSession(pub(crate) Arc<str>);

/// Why a new session was not bound to its caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unbound {
    /// The caller has as many sessions open as it may.
    TooMany,
    /// The session closed before it could be bound.
    Gone,
}

#[derive(Default)]
struct Table {
    /// Each open session and its owner's id; `None` until the `initialize` that opened it is answered.
    owners: HashMap<Arc<str>, Option<Arc<str>>>,
    /// How many sessions each caller has open.
    open: HashMap<Arc<str>, usize>,
}

/// rmcp's session manager, with every session bound to the caller who opened it.
pub(crate) struct BoundSessions {
    inner: LocalSessionManager,
    table: Mutex<Table>,
    registry: Registry,
    per_caller: usize,
}

impl BoundSessions {
    pub(crate) fn new(registry: Registry, per_caller: usize) -> Self {
        BoundSessions {
            inner: LocalSessionManager::default(),
            table: Mutex::default(),
            registry,
            per_caller,
        }
    }

    /// Whether session `id` is open and `caller` opened it.
    pub(crate) fn owned_by(&self, id: &str, caller: &Caller) -> bool {
        self.table
            .locked()
            .owners
            .get(id)
            .is_some_and(|owner| owner.as_deref() == Some(caller.key()))
    }

    /// Binds a session just opened by `caller`'s `initialize` to `caller`.
    pub(crate) fn bind(&self, id: &str, caller: &Caller) -> Result<(), Unbound> {
        let mut table = self.table.locked();
        let Table { owners, open } = &mut *table;
        let owner = owners.get_mut(id).ok_or(Unbound::Gone)?;
        if owner.is_some() {
            return Err(Unbound::Gone);
        }
        let count = open.entry(Arc::from(caller.key())).or_default();
        if *count >= self.per_caller {
            return Err(Unbound::TooMany);
        }
        *count += 1;
        *owner = Some(Arc::from(caller.key()));
        Ok(())
    }

    /// Forgets a closed session, its owner's count and its call ceilings.
    fn forget(&self, id: &str) {
        let owner = {
            let mut table = self.table.locked();
            let owner = table.owners.remove(id).flatten();
            if let Some(owner) = &owner
                && let Some(count) = table.open.get_mut(owner)
            {
                *count -= 1;
                if *count == 0 {
                    table.open.remove(owner);
                }
            }
            owner
        };
        if owner.is_some() {
            self.registry.end_session(id);
        }
    }
}

impl SessionManager for BoundSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.table.locked().owners.insert(Arc::clone(&id), None);
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

    /// Called for a `DELETE` by the owner, and by rmcp whenever a session's service ends.
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
        let sessions = BoundSessions::new(registry.clone(), 1);
        let ada = Caller::new("ada");
        let (id, _transport) = sessions.create_session().await.unwrap();
        sessions.bind(&id, &ada).unwrap();
        assert!(sessions.owned_by(&id, &ada));
        assert!(!sessions.owned_by(&id, &Caller::new("eve")));
        let (other, _) = sessions.create_session().await.unwrap();
        assert_eq!(sessions.bind(&other, &ada), Err(Unbound::TooMany));

        let call = || Call::new("once", json!({})).session(Arc::clone(&id));
        assert!(registry.run(&ada, call()).await.error().is_none());
        assert!(registry.run(&ada, call()).await.error().is_some());
        sessions.close_session(&id).await.unwrap();
        assert!(!sessions.owned_by(&id, &ada));
        assert!(
            registry.run(&ada, call()).await.error().is_none(),
            "the session's count went with it"
        );
        sessions.bind(&other, &ada).unwrap();
    }
}
