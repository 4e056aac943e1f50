//! Remote MCP servers as one more source of tools: each server's tools are served under the registry's
//! policy (abilities, previews, ceilings, hooks, audit), named `<label>_<remote name>`, with sessions
//! opened on first use, health checked on a schedule, and failures kept to their server.
//!
//! Add servers with [`RegistryBuilder::remote`](crate::RegistryBuilder::remote) or under `[servers.<label>]`
//! in the configuration file, and spawn [`Registry::watch`](crate::Registry::watch), which lists and
//! checks them.

mod asked;
mod client;
mod failure;
mod flight;
mod listing;
mod names;
mod result;
mod server;
mod session;
mod shallow;
#[cfg(feature = "oauth")]
mod sign_in;
mod status;
mod tools;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::sync::Locked;

pub(crate) use listing::MAX_TOOLS;
pub use names::SEPARATOR;
pub use result::tool_result;
pub(crate) use rmcp::model::Tool as RemoteDefinition;
pub use server::{RemoteServer, RemoteTool};
pub(crate) use server::{deserialize_servers, server_from_entry};
pub(crate) use session::{Changes, Listed, Remote};
#[cfg(feature = "oauth")]
pub(crate) use sign_in::{Begun, Vault};
#[cfg(feature = "oauth")]
pub use sign_in::{ClientSecret, SignIn};

/// Where a registry keeps its sign-ins to remote servers; nothing without the `oauth` feature.
#[cfg(not(feature = "oauth"))]
#[derive(Clone)]
pub(crate) enum Vault {}
pub use status::{Health, ServerStatus};
pub(crate) use tools::{Offer, offers};

/// A registry's remote servers, and the signal they give when their tools or health change.
pub(crate) struct Remotes {
    /// The servers the code and the configuration file declare.
    declared: Vec<RemoteServer>,
    /// Those, and the ones operators added, as served now.
    servers: Mutex<Arc<[Arc<Remote>]>>,
    pub(crate) signal: Arc<Changes>,
    /// Whether the registry is watched, so that a server added later is kept current too.
    watching: AtomicBool,
    /// Where the servers' sign-ins are kept, for a registry with a records database.
    vault: Option<Vault>,
}

impl Remotes {
    pub(crate) fn new(declared: Vec<RemoteServer>, vault: Option<Vault>) -> Self {
        let signal = Arc::new(Changes::default());
        let servers = declared
            .iter()
            .map(|server| {
                Arc::new(Remote::new(
                    server.clone(),
                    Arc::clone(&signal),
                    vault.as_ref(),
                ))
            })
            .collect();
        Remotes {
            declared,
            servers: Mutex::new(servers),
            signal,
            watching: AtomicBool::new(false),
            vault,
        }
    }

    /// Where the servers' sign-ins are kept.
    #[cfg(feature = "oauth")]
    pub(crate) fn vault(&self) -> Option<&Vault> {
        self.vault.as_ref()
    }

    /// The gateway's client ID metadata document served at `path`, for the servers that name one
    /// there: its id is the address they name, and it comes back to their redirects; none when no
    /// server names one.
    #[cfg(all(feature = "oauth", admin))]
    pub(crate) fn client_metadata(&self, path: &str) -> Option<serde_json::Value> {
        let servers = self.servers();
        let named: Vec<(&str, Vec<&str>)> = (servers.iter())
            .filter_map(|remote| match &remote.server.transport {
                server::Transport::Http {
                    sign_in: Some(sign_in),
                    ..
                } => sign_in.document(),
                _ => None,
            })
            .filter(|(url, _)| url.parse::<http::Uri>().is_ok_and(|uri| uri.path() == path))
            .collect();
        let client_id = named.first()?.0;
        let mut redirects: Vec<&str> = named
            .iter()
            .flat_map(|(_, redirects)| redirects.iter().copied())
            .collect();
        redirects.sort_unstable();
        redirects.dedup();
        Some(serde_json::json!({
            "client_id": client_id,
            "client_name": "toolgate gateway",
            "redirect_uris": redirects,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
    }

    /// The servers as served now.
    pub(crate) fn servers(&self) -> Arc<[Arc<Remote>]> {
        Arc::clone(&self.servers.locked())
    }

    /// Whether there are none, and none can be added (the declared ones).
    pub(crate) fn is_empty(&self) -> bool {
        self.declared.is_empty()
    }

    /// Starts keeping every server's tools and health current, and those added later.
    pub(crate) fn watch(&self) {
        self.watching.store(true, Ordering::Release);
        for server in self.servers().iter() {
            server.start();
        }
    }

    /// Serves the declared servers and `added` (an operator's, from the records; a label the code
    /// declares keeps the code's): a server whose entry is unchanged keeps its session and tools, a
    /// changed or new one starts afresh, a removed one stops.
    pub(crate) fn reconcile(&self, added: Vec<RemoteServer>) {
        let mut wanted = self.declared.clone();
        for server in added {
            if wanted.iter().any(|w| w.label == server.label) {
                tracing::warn!(target: "toolgate::remote", server = server.label, "the records add a server the code declares; the code's is served");
            } else {
                wanted.push(server);
            }
        }
        let mut servers = self.servers.locked();
        let same = servers.len() == wanted.len()
            && servers.iter().zip(&wanted).all(|(r, w)| r.server == *w);
        if same {
            return;
        }
        let next: Arc<[Arc<Remote>]> = wanted
            .into_iter()
            .map(|server| {
                let kept = servers.iter().find(|r| r.server == server);
                kept.map_or_else(
                    || {
                        let remote = Arc::new(Remote::new(
                            server,
                            Arc::clone(&self.signal),
                            self.vault.as_ref(),
                        ));
                        if self.watching.load(Ordering::Acquire) {
                            remote.start();
                        }
                        remote
                    },
                    Arc::clone,
                )
            })
            .collect();
        *servers = next;
        drop(servers);
        self.signal.bump();
    }
}
