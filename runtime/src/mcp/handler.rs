//! [`McpHandler`]: the rmcp `ServerHandler` that serves a [`Registry`]'s tools, composed with the user's own
//! handler for prompts, resources and completion, and what its sessions share.

use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{Cursor, PaginatedRequestParams, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::caller::Caller;
use crate::registry::Registry;
use crate::sync::Locked;

use super::listing::{MAX_PAGE_BYTES, ToolsPage, all_definitions, serves_view};
use super::logging;
use super::notify::{Clients, Notifier};

/// A handler with nothing to add: the server offers tools only.
///
/// ```
/// use toolgate::mcp::rmcp::ServerHandler;
/// use toolgate::mcp::{McpServer, ToolsOnly};
/// use toolgate::Registry;
///
/// /// Prompts and resources of your own, served beside the tools.
/// #[derive(Clone)]
/// struct Extras;
///
/// impl ServerHandler for Extras {}
///
/// let tools_only: McpServer<ToolsOnly> = McpServer::new(Registry::builder().build()?);
/// let with_extras: McpServer<Extras> = tools_only.with_handler(Extras);
/// # let _ = with_extras;
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolsOnly;

impl ServerHandler for ToolsOnly {}

/// What every session of one server shares.
pub(crate) struct Shared {
    pub(crate) registry: Registry,
    pub(crate) info: ServerConfig,
    pub(crate) default_caller: Caller,
    pub(crate) page_size: usize,
    /// How long a question during a call waits for the client's answer.
    pub(crate) question_timeout: Duration,
    pub(crate) draining: AtomicBool,
    /// Refuse writes for clients that cannot show an approval prompt, instead of returning the preview.
    pub(crate) refuse_unconfirmable_writes: bool,
    /// The clients that hear of changes.
    pub(crate) clients: Arc<Clients>,
}

/// The rmcp [`ServerHandler`] of a toolgate server: tools from the registry, everything else from `H`.
///
/// Starts a server's shutdown, from the HTTP server that serves it.
pub(crate) struct Draining(Arc<Shared>);

impl Draining {
    /// From now on, new calls are refused.
    pub(crate) fn start(&self) {
        self.0
            .draining
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One handler serves one session (stdio connection or HTTP session); clones share the registry.
///
/// ```
/// use toolgate::mcp::rmcp::ServerHandler;
/// use toolgate::mcp::McpServer;
/// use toolgate::Registry;
///
/// let handler = McpServer::new(Registry::builder().build()?).name("shop").version("2.1.0").handler();
/// let info = handler.get_info();
/// assert_eq!((info.server_info.name.as_str(), info.server_info.version.as_str()), ("shop", "2.1.0"));
/// assert_eq!(info.capabilities.tools.unwrap().list_changed, Some(true));
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Clone)]
pub struct McpHandler<H = ToolsOnly> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) extras: H,
    /// What this session has set and found, shared by its clones.
    pub(super) session: Arc<SessionState>,
}

/// A session's own state, in one allocation.
#[derive(Debug)]
pub(super) struct SessionState {
    /// The minimum level of log messages sent to this session (`logging/setLevel`).
    pub(super) log_level: AtomicU8,
    /// The deferred tools this session's searches found, listed to it from then on.
    pub(super) found: Mutex<Vec<Arc<str>>>,
}

impl<H> std::fmt::Debug for McpHandler<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHandler")
            .field("server", &self.shared.info.server_info.name)
            .finish_non_exhaustive()
    }
}

impl<H: Clone> McpHandler<H> {
    pub(crate) fn new(shared: Arc<Shared>, extras: H) -> Self {
        McpHandler {
            shared,
            extras,
            session: Arc::new(SessionState {
                log_level: AtomicU8::new(logging::DEFAULT_RANK),
                found: Mutex::default(),
            }),
        }
    }

    /// A handler for a new session: same server, its own log level.
    pub(crate) fn for_session(&self) -> Self {
        Self::new(Arc::clone(&self.shared), self.extras.clone())
    }

    /// What starts the server's shutdown: from then on, new calls are refused.
    pub(crate) fn draining(&self) -> Draining {
        Draining(Arc::clone(&self.shared))
    }

    /// A handle that tells connected clients when the tool list changed.
    pub fn notifier(&self) -> Notifier {
        Notifier(Arc::clone(&self.shared.clients))
    }

    /// Tells every connected client that the tool list changed (see [`Notifier`]).
    pub async fn notify_tools_changed(&self) {
        self.notifier().tools_changed().await;
    }

    /// The page of `tools/list` that `request` asks for, of the tools its caller may see.
    pub(crate) fn page(
        &self,
        request: Option<PaginatedRequestParams>,
        caller: &Caller,
    ) -> Result<ToolsPage<'_>, ErrorData> {
        let start = match request.and_then(|r| r.cursor) {
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ErrorData::invalid_params(format!("invalid cursor `{cursor}`"), None)
            })?,
            None => 0,
        };
        let page_size = self.shared.page_size;
        let snapshot = self.shared.registry.snapshot();
        let listing = self.shared.registry.listing(&snapshot, caller);
        let visible = {
            let found = self.session.found.locked();
            listing.with(|i| found.contains(&snapshot.tool(i).tool.name))
        };
        // The page kept in place, in the vector of every visible tool: at most `page_size` tools, and no
        // more than `MAX_PAGE_BYTES` of definitions after the first, so that a page of long definitions
        // stays readable to every client.
        let mut tools = visible;
        tools.drain(..start.min(tools.len()));
        let spans = all_definitions(&snapshot).map_or(&[][..], |d| &d.spans[..]);
        let (mut taken, mut bytes) = (0, 0);
        for &i in tools.iter().take(page_size) {
            bytes += spans.get(i.index()).map_or(0, ExactSizeIterator::len);
            if taken > 0 && bytes > MAX_PAGE_BYTES {
                break;
            }
            taken += 1;
        }
        let next = (tools.len() > taken).then(|| Cursor::from((start + taken).to_string()));
        tools.truncate(taken);
        Ok(ToolsPage {
            snapshot,
            tools,
            next,
        })
    }

    /// Whether the registry's current tools need the App.
    pub(super) fn serves_view(&self) -> bool {
        serves_view(&self.shared.registry.snapshot())
    }

    /// The caller of a request: set by the authentication layer over HTTP, the default one otherwise.
    pub(crate) fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
            .unwrap_or_else(|| self.shared.default_caller.clone())
    }
}
