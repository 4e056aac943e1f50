//! Remote MCP servers as one more source of tools: each server's tools are served under the registry's
//! policy (abilities, previews, ceilings, hooks, audit), named `<label>_<remote name>`, with sessions
//! opened on first use, health checked on a schedule, and failures kept to their server.
//!
//! Add servers with [`RegistryBuilder::remote`](crate::RegistryBuilder::remote) or under `[servers.<label>]`
//! in the configuration file, and spawn [`Registry::watch`](crate::Registry::watch), which lists and
//! checks them.

mod client;
mod names;
mod result;
mod server;
mod session;
mod status;
mod tools;

use std::sync::Arc;

pub use names::SEPARATOR;
pub use result::tool_result;
pub(crate) use server::deserialize_servers;
pub use server::{RemoteServer, RemoteTool};
pub(crate) use session::{Remote, Served, Signal};
pub use status::{Health, ServerStatus};
pub(crate) use tools::{Offer, offers};

/// A registry's remote servers, and the signal they give when their tools or health change.
pub(crate) struct Remotes {
    pub(crate) servers: Vec<Arc<Remote>>,
    pub(crate) signal: Arc<Signal>,
}

impl Remotes {
    pub(crate) fn new(servers: Vec<RemoteServer>) -> Self {
        let signal = Arc::new(Signal::default());
        let servers = servers
            .into_iter()
            .map(|server| Arc::new(Remote::new(server, Arc::clone(&signal))))
            .collect();
        Remotes { servers, signal }
    }
}
