//! What an operator sees of a remote server: its [`Health`] and its [`ServerStatus`].

use serde::Serialize;

/// How a remote server is doing.
///
/// ```
/// use toolgate::remote::Health;
///
/// assert_eq!(Health::Degraded.as_str(), "degraded");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Health {
    /// Not reached yet: no tools of it are listed.
    Pending,
    /// It answers, and its tools are served.
    Online,
    /// It answers, but its last listing failed or came back empty: the last good tools are served.
    Degraded,
    /// It does not answer: its tools are hidden and their calls refused, until it answers again.
    Offline,
}

impl Health {
    /// `pending`, `online`, `degraded` or `offline`.
    pub fn as_str(self) -> &'static str {
        match self {
            Health::Pending => "pending",
            Health::Online => "online",
            Health::Degraded => "degraded",
            Health::Offline => "offline",
        }
    }
}

/// One remote server as the registry sees it now.
///
/// ```
/// use toolgate::Registry;
/// use toolgate::remote::{Health, RemoteServer};
///
/// let registry = Registry::builder()
///     .remote(RemoteServer::stdio("files", "files-mcp").ability("files.read"))
///     .build()?;
/// let status = &registry.servers()[0];
/// assert_eq!((status.label.as_str(), status.health), ("files", Health::Pending));
/// assert_eq!(status.reached_by, "stdio: files-mcp");
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ServerStatus {
    /// Its label.
    pub label: String,
    /// How it is reached, without secrets: `stdio: <command> <args>` or `http: <url>`.
    pub reached_by: String,
    /// How it is doing.
    pub health: Health,
    /// The last error it gave, while it is not online.
    pub last_error: Option<String>,
    /// The protocol version it speaks, once reached.
    pub protocol: Option<String>,
    /// How many tools it advertises in its last good listing.
    pub tools: usize,
    /// Its tools that are not served, and why: a name that does not fit, or a clash with another tool.
    pub problems: Vec<String>,
    /// When it last answered (milliseconds since the Unix epoch).
    pub last_seen_ms: Option<u64>,
}
