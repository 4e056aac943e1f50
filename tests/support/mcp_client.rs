//! An MCP client of a toolgate server over an in-memory pipe, as over stdio, that counts the
//! `tools/list_changed` notifications it receives.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::service::{NotificationContext, RunningService};
use rmcp::{RoleClient, ServiceExt};
use toolgate::mcp::McpServer;

/// Counts the `tools/list_changed` notifications a client receives.
#[derive(Clone, Default)]
pub(crate) struct Changes(Arc<AtomicUsize>);

impl Changes {
    /// How many notifications came.
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl rmcp::ClientHandler for Changes {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A client connected to `server`, and its count of notifications.
pub(crate) async fn connect(server: McpServer) -> (RunningService<RoleClient, Changes>, Changes) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let handler = server.handler();
    tokio::spawn(async move {
        let running = handler.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let changes = Changes::default();
    (changes.clone().serve(client_io).await.unwrap(), changes)
}
