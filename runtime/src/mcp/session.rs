//! What the HTTP layer tells MCP about a request's session, in the request's extensions: the session it
//! was checked to belong to, and, for one that opens a session, where the session's handler leaves itself.

use std::sync::{Arc, Mutex};

use rmcp::{Peer, RoleServer};

use crate::sync::Locked;

/// The session a request was checked to belong to: its caller opened it. Set by the HTTP layer on the
/// request's parts; call ceilings count per bound session, and questions go to the client during a call
/// only on one.
#[derive(Debug, Clone)]
pub(crate) struct BoundSession(pub(crate) Arc<str>);

/// A session's own handler (its log level, the tools its searches found) and its client.
pub(crate) struct Opened<H> {
    pub(crate) handler: H,
    pub(crate) peer: Peer<RoleServer>,
}

/// Where the handler of a session being opened leaves itself and its client when it answers the
/// `initialize`: put in the opening request's parts, read after the answer.
pub(crate) struct Opening<H>(Arc<Mutex<Option<Arc<Opened<H>>>>>);

impl<H> Clone for Opening<H> {
    fn clone(&self) -> Self {
        Opening(Arc::clone(&self.0))
    }
}

impl<H> Opening<H> {
    pub(crate) fn new() -> Self {
        Opening(Arc::default())
    }

    /// Leaves the session's handler and client here.
    pub(crate) fn open(&self, handler: H, peer: Peer<RoleServer>) {
        *self.0.locked() = Some(Arc::new(Opened { handler, peer }));
    }

    pub(crate) fn take(&self) -> Option<Arc<Opened<H>>> {
        self.0.locked().take()
    }
}
