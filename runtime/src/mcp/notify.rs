//! Telling clients that the tool list changed: [`Notifier`], and the task that relays every snapshot the
//! registry swaps in.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use tokio::sync::watch;

use crate::sync::Locked;

/// How often clients are told at most that the tools changed: a storm of changes (a remote server that
/// relists again and again) is one notification a window.
const CHANGE_WINDOW: Duration = Duration::from_secs(1);

/// Tells every connected client when the registry swaps in new tools, at once and then at most once a
/// [`CHANGE_WINDOW`], until the server or the registry is gone.
pub(crate) async fn relay_changes(clients: Weak<Clients>, mut revisions: watch::Receiver<u64>) {
    while revisions.changed().await.is_ok() {
        let Some(clients) = clients.upgrade() else {
            return;
        };
        Notifier(clients).tools_changed().await;
        // Changes during the window are marked seen by the next `changed`, which then returns at once.
        tokio::time::sleep(CHANGE_WINDOW).await;
    }
}

/// Tells connected clients that the tool list changed: legacy sessions by `notifications/tools/list_changed`,
/// 2026-07-28 clients on their `subscriptions/listen` streams. Over MCP every call carries one, so a tool
/// can take it as `Extension<Notifier>`; [`McpHandler::notifier`](super::McpHandler::notifier) gives one to the application.
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
pub struct Notifier(pub(super) Arc<Clients>);

/// The clients of one server that hear of changes: sessions that began with `initialize`, and the
/// `subscriptions/listen` streams of 2026-07-28 clients that asked for `toolsListChanged`.
#[derive(Default)]
pub(crate) struct Clients {
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Each with a key of its own, so that a failed one can be removed after the lock was released.
    listeners: Mutex<Vec<(u64, SubscriptionSink)>>,
    next_listener: AtomicU64,
}

impl Clients {
    /// A session that began with `initialize`; those whose transport closed are forgotten.
    pub(crate) fn add_peer(&self, peer: Peer<RoleServer>) {
        let mut peers = self.peers.locked();
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }

    /// A stream that asked for `toolsListChanged`.
    pub(crate) fn add_listener(&self, sink: SubscriptionSink) {
        let key = self.next_listener.fetch_add(1, Ordering::Relaxed);
        self.listeners.locked().push((key, sink));
    }
}

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
