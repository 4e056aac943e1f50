//! Serving a [`Registry`] over MCP, through rmcp: stdio and Streamable HTTP, every protocol era rmcp speaks
//! (initialize lifecycle 2025-03-26 to 2025-11-25, and the stateless 2026-07-28 with `server/discover`).
//!
//! The same registry, policy and call pipeline serve in-process calls and MCP clients. An
//! [`McpServer`] is the protocol: its identity, its tools, and stdio; over HTTP it is served by an
//! [`HttpServer`](crate::http::HttpServer), which composes it with the routes beside it.

mod call;
mod convert;
mod direct;
mod handler;
mod input;
mod listing;
mod logging;
mod notify;
mod relay;
mod server;
mod session;
mod tasks;
mod view;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use rmcp::ServerHandler;
use rmcp::model::{Implementation, ToolsCapability};

pub use crate::tool::META_CAPABILITY;
pub use convert::{
    META_ABILITIES, META_ALWAYS_LOAD, META_CATEGORIES, META_ERROR, META_SECURITY_SCHEMES,
};
pub use handler::{McpHandler, ToolsOnly};
pub use input::{META_CONFIRMATION, META_PREVIEW};
pub use notify::Notifier;
/// The rmcp release toolgate is built on, for prompts, resources, and the client `Peer` a tool can take as
/// `Extension<rmcp::Peer<rmcp::RoleServer>>` (sampling, elicitation).
pub use rmcp;
pub use view::{APP_MIME_TYPE, UI_EXTENSION, VIEW_URI};

pub(crate) use call::FromHttp;
pub(crate) use direct::{Answer, FastRequest, encode, negotiated_once};
pub(crate) use listing::declares_param_headers;
pub(crate) use session::{BoundSession, Opened, Opening};
#[cfg(admin)]
pub(crate) use view::DRAW;

use crate::caller::Caller;
use crate::registry::Registry;

/// An MCP server over a registry: its identity, who it serves, and stdio. Serve it over HTTP with an
/// [`HttpServer`](crate::http::HttpServer).
///
/// ```
/// use toolgate::mcp::McpServer;
/// use toolgate::mcp::rmcp::ServerHandler;
/// use toolgate::{Caller, Registry};
///
/// let server = McpServer::new(Registry::builder().build()?)
///     .name("shop")
///     .version("2.1.0")
///     .instructions("The back office of a shop: start with shop_overview.")
///     .default_caller(Caller::new("manager").with_abilities(["orders.view"]));
/// // `serve_stdio()` serves a desktop client; the handler is what every transport serves.
/// let info = server.handler().get_info();
/// assert_eq!(info.server_info.name, "shop");
/// assert!(info.instructions.unwrap().contains("shop_overview"));
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug)]
pub struct McpServer<H = ToolsOnly> {
    registry: Registry,
    name: String,
    version: String,
    title: Option<String>,
    instructions: Option<String>,
    default_caller: Caller,
    page_size: usize,
    refuse_unconfirmable_writes: bool,
    extras: H,
}

impl McpServer {
    /// A server of `registry`'s tools. Set its name and version: clients show them.
    pub fn new(registry: Registry) -> Self {
        McpServer {
            registry,
            name: "toolgate".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            instructions: None,
            default_caller: Caller::anonymous(),
            page_size: 200,
            refuse_unconfirmable_writes: false,
            extras: ToolsOnly,
        }
    }
}

impl<H: ServerHandler + Clone> McpServer<H> {
    /// The server's name, as clients show it.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server's version.
    #[must_use]
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// A display title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Instructions for the model: what the server is for, where to start.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The caller served over stdio, and over HTTP when no authenticator is set (default: anonymous).
    #[must_use]
    pub fn default_caller(mut self, caller: Caller) -> Self {
        self.default_caller = caller;
        self
    }

    /// How many tools one `tools/list` page holds (default 200); clients follow `nextCursor`.
    #[must_use]
    pub fn page_size(mut self, tools: usize) -> Self {
        self.page_size = tools.max(1);
        self
    }

    /// What a write with a preview does for a client that can show no approval prompt (neither a
    /// 2026-07-28 client declaring elicitation, nor an older one with elicitation on a session).
    /// By default it gets the preview and the sealed confirmation (in `_meta` under
    /// [`META_CONFIRMATION`]) to send back in the `_meta` of a retry; with `true` the write is refused.
    /// The default trusts the client application to show the preview to a person before it sends the
    /// confirmation back; refuse when that cannot be assumed.
    #[must_use]
    pub fn refuse_unconfirmable_writes(mut self, refuse: bool) -> Self {
        self.refuse_unconfirmable_writes = refuse;
        self
    }

    /// Serves prompts, resources and completion from your own rmcp handler, beside the tools.
    pub fn with_handler<E: ServerHandler + Clone>(self, extras: E) -> McpServer<E> {
        McpServer {
            registry: self.registry,
            name: self.name,
            version: self.version,
            title: self.title,
            instructions: self.instructions,
            default_caller: self.default_caller,
            page_size: self.page_size,
            refuse_unconfirmable_writes: self.refuse_unconfirmable_writes,
            extras,
        }
    }

    /// The registry served.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The caller served when a transport tells no other.
    pub(crate) fn caller_by_default(&self) -> &Caller {
        &self.default_caller
    }

    /// The rmcp handler, to serve on a transport of your own (`handler.serve(transport)`).
    pub fn handler(&self) -> McpHandler<H> {
        let mut info = self.extras.get_info();
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(true);
        info.capabilities.tools = Some(tools);
        info.capabilities
            .logging
            .get_or_insert_with(Default::default);
        if self
            .registry
            .tools()
            .iter()
            .any(|t| t.task_support() != crate::tool::TaskSupport::Forbidden)
        {
            info.capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(rmcp::model::TASKS_EXTENSION_ID.into(), Default::default());
        }
        if listing::serves_view(&self.registry.snapshot()) {
            info.capabilities
                .resources
                .get_or_insert_with(Default::default);
            info.capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(view::UI_EXTENSION.into(), Default::default());
        }
        let mut implementation = Implementation::new(&self.name, &self.version);
        if let Some(title) = &self.title {
            implementation = implementation.with_title(title);
        }
        info.server_info = implementation;
        if self.instructions.is_some() {
            info.instructions.clone_from(&self.instructions);
        }
        let shared = handler::Shared {
            registry: self.registry.clone(),
            info,
            default_caller: self.default_caller.clone(),
            page_size: self.page_size,
            question_timeout: self.registry.pipeline().confirmations().ttl,
            draining: AtomicBool::new(false),
            refuse_unconfirmable_writes: self.refuse_unconfirmable_writes,
            clients: Arc::default(),
        };
        let shared = Arc::new(shared);
        // Outside a runtime there is no client to tell, and nothing to spawn on; fixed tools never change.
        if let Ok(runtime) = tokio::runtime::Handle::try_current()
            && let Some(revisions) = self.registry.subscribe()
        {
            runtime.spawn(notify::relay_changes(
                Arc::downgrade(&shared.clients),
                revisions,
            ));
        }
        McpHandler::new(shared, self.extras.clone())
    }

    /// Serves one client over stdin and stdout until it disconnects. Log to stderr only.
    ///
    /// When both are pipes, as when a client launches the server, they are read and written on the
    /// runtime's reactor; otherwise (a terminal, a file) through Tokio's blocking handles. On Linux the
    /// pipe to the client is made to hold 1 MiB, so that a long answer (a listing of many tools, a big
    /// result) is written at once and the server reads on while its client takes it in.
    ///
    /// # Errors
    /// When the transport fails before the client initializes.
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        #[cfg(target_os = "linux")]
        direct::stdio::enlarge_stdout_pipe();
        let (input, output) = rmcp::transport::stdio_pipes();
        // On a worker of its own, not on the task that awaits it: that is often `main`'s `block_on`,
        // where every read would first wake the worker that polls the reactor, and then this thread.
        let serving = tokio::spawn(direct::stdio::serve(self.handler(), input, output));
        serving.await.map_err(std::io::Error::other)?
    }

    /// Serves one client over any pair of byte streams, as [`serve_stdio`](Self::serve_stdio) does over
    /// stdin and stdout: newline-delimited JSON-RPC read from `input`, answers written to `output`, until
    /// the client closes `input`. For a Unix socket, a child's pipes, or an in-memory pipe in a test:
    ///
    /// ```
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    /// use toolgate::mcp::McpServer;
    /// use toolgate::Registry;
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let (client, server) = tokio::io::duplex(1 << 16);
    /// let (input, output) = tokio::io::split(server);
    /// let serving = tokio::spawn(McpServer::new(Registry::builder().build()?).serve_io(input, output));
    /// let (reader, mut writer) = tokio::io::split(client);
    /// writer.write_all(concat!(
    ///     r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","#,
    ///     r#""capabilities":{},"clientInfo":{"name":"doc","version":"0"}}}"#, "\n",
    ///     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, "\n",
    ///     r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "\n",
    /// ).as_bytes()).await?;
    /// let mut lines = BufReader::new(reader).lines();
    /// assert!(lines.next_line().await?.unwrap().contains("serverInfo"));
    /// assert_eq!(lines.next_line().await?.unwrap(), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    /// writer.shutdown().await?;
    /// serving.await??;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// When the streams fail before the client initializes, or writing an answer fails.
    pub async fn serve_io<R, W>(self, input: R, output: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin,
        W: tokio::io::AsyncWrite + Unpin,
    {
        direct::stdio::serve(self.handler(), input, output).await
    }
}
