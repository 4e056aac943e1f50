//! [`RemoteServer`]: how to reach a remote MCP server, and what the operator decided about its tools.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::caller::Caller;
use crate::tool::Rights;

/// A remote MCP server whose tools the registry serves under its own policy, each named
/// `<label>_<remote name>`.
///
/// Until an operator decides who may run a remote tool, it is listed to no one: give the server a default
/// [`ability`](Self::ability), mark it [`public`](Self::public), decide per tool with
/// [`tool`](Self::tool), or require an ability on the tool's record (`toolgate require`).
///
/// ```
/// use std::time::Duration;
/// use toolgate::remote::{RemoteServer, RemoteTool};
///
/// let files = RemoteServer::stdio("files", "python3")
///     .args(["-m", "files_server"])
///     .env("FILES_ROOT", "/srv/files")
///     .ability("files.read");
/// let github = RemoteServer::http("github", "http://127.0.0.1:9000/mcp")
///     .bearer_env("GITHUB_TOKEN")             // read when connecting, never stored
///     .tool("create_issue", RemoteTool::new().ability("github.write"))
///     .approve_writes()                       // writes wait for a person's approval
///     .timeout(Duration::from_secs(20));
/// assert_eq!((files.label(), github.label()), ("files", "github"));
/// assert!(github.to_string().contains("http://127.0.0.1:9000/mcp"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteServer {
    pub(crate) label: String,
    pub(crate) transport: Transport,
    pub(crate) access: Rights,
    pub(crate) trusted: bool,
    pub(crate) approve_writes: bool,
    pub(crate) timeout: Duration,
    pub(crate) health_every: Duration,
    /// How many of its calls run at once at most.
    pub(crate) max_concurrent: usize,
    pub(crate) tools: BTreeMap<String, RemoteTool>,
    pub(crate) exchange: Option<Exchange>,
}

/// The future of a token exchange: the credential a caller's calls to a server carry, or why there is
/// none.
pub(crate) type ExchangeFuture = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// A token exchange the application supplies ([`RemoteServer::exchange`]).
#[derive(Clone)]
pub(crate) struct Exchange(pub(crate) Arc<dyn Fn(&Caller) -> ExchangeFuture + Send + Sync>);

impl PartialEq for Exchange {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Exchange")
    }
}

/// How a remote server is reached.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on its standard input and output.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// Variables passed on from this process's environment, by name.
        pass_env: Vec<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        url: String,
        /// The environment variable that holds the bearer token.
        bearer_env: Option<String>,
        /// Headers, each with the environment variable that holds its value.
        headers_env: BTreeMap<String, String>,
        /// How the gateway signs itself in at the server's authorization server, if it does.
        #[cfg(feature = "oauth")]
        sign_in: Option<Box<super::SignIn>>,
    },
}

/// The operator's decisions about one tool of a remote server, by its remote name.
///
/// ```
/// use toolgate::remote::{RemoteServer, RemoteTool};
///
/// let server = RemoteServer::http("search", "http://127.0.0.1:9000/mcp")
///     .tool("web", RemoteTool::new().public().read_only().capability("web_search"))
///     .tool("purge", RemoteTool::new().disabled());
/// # let _ = server;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RemoteTool {
    pub(crate) access: Rights,
    pub(crate) capability: Option<String>,
    pub(crate) read_only: Option<bool>,
    pub(crate) approve: Option<bool>,
    pub(crate) enabled: bool,
}

impl RemoteTool {
    /// No decision yet: the server's apply.
    pub fn new() -> Self {
        RemoteTool {
            enabled: true,
            ..RemoteTool::default()
        }
    }

    /// Anyone may run it.
    #[must_use]
    pub fn public(mut self) -> Self {
        self.access.public();
        self
    }

    /// Callers need `ability` (call again to require several), instead of the server's default.
    #[must_use]
    pub fn ability(mut self, ability: impl Into<String>) -> Self {
        self.access.ability(ability.into());
        self
    }

    /// The capability it fulfils, over the one its definition names.
    #[must_use]
    pub fn capability(mut self, capability: impl Into<String>) -> Self {
        self.capability = Some(capability.into());
        self
    }

    /// It only reads, whatever the server says.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = Some(true);
        self
    }

    /// Its calls wait for a person's approval (or, with `false`, do not, whatever the server's setting).
    #[must_use]
    pub fn approve(mut self, approve: bool) -> Self {
        self.approve = Some(approve);
        self
    }

    /// Listed to nobody, calls refused.
    #[must_use]
    pub fn disabled(mut self) -> Self {
        self.enabled = false;
        self
    }
}

/// How long a remote call may take when the registry sets no default timeout.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many calls one server runs at once unless set: well below the registry's slots, so that a server
/// that hangs holds few of them.
pub(crate) const DEFAULT_MAX_CONCURRENT: usize = 8;

impl RemoteServer {
    /// A server run as a child process, `command`, that speaks MCP on its standard input and output.
    pub fn stdio(label: impl Into<String>, command: impl Into<String>) -> Self {
        Self::new(
            label.into(),
            Transport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                pass_env: Vec::new(),
            },
        )
    }

    /// A server reached over Streamable HTTP at `url`.
    pub fn http(label: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            label.into(),
            Transport::Http {
                url: url.into(),
                bearer_env: None,
                headers_env: BTreeMap::new(),
                #[cfg(feature = "oauth")]
                sign_in: None,
            },
        )
    }

    fn new(label: String, transport: Transport) -> Self {
        RemoteServer {
            label,
            transport,
            access: Rights::default(),
            trusted: false,
            approve_writes: false,
            timeout: DEFAULT_TIMEOUT,
            health_every: Duration::from_secs(10),
            max_concurrent: DEFAULT_MAX_CONCURRENT,
            tools: BTreeMap::new(),
            exchange: None,
        }
    }

    /// Its label, the prefix of its tools' names.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Adds arguments of a child process.
    #[must_use]
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Self {
        if let Transport::Stdio { args: list, .. } = &mut self.transport {
            list.extend(args.into_iter().map(Into::into));
        }
        self
    }

    /// Sets an environment variable of a child process.
    #[must_use]
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.insert(name.into(), value.into());
        }
        self
    }

    /// Passes this process's environment variable `name` on to a child process, when it starts: for
    /// secrets, which are then written nowhere.
    #[must_use]
    pub fn pass_env(mut self, name: impl Into<String>) -> Self {
        if let Transport::Stdio { pass_env, .. } = &mut self.transport {
            pass_env.push(name.into());
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` over HTTP, the token read from the environment variable
    /// `name` when connecting.
    #[must_use]
    pub fn bearer_env(mut self, name: impl Into<String>) -> Self {
        if let Transport::Http { bearer_env, .. } = &mut self.transport {
            *bearer_env = Some(name.into());
        }
        self
    }

    /// Signs the gateway in to the server as `sign_in` says, at the authorization server the server
    /// names: the tokens it gets are sent as its bearer token, renewed before they expire and asked
    /// for again when the server refuses one. Only an HTTP server signs in; for a stdio one this does
    /// nothing.
    ///
    /// ```
    /// use toolgate::remote::{ClientSecret, RemoteServer, SignIn};
    ///
    /// let orders = RemoteServer::http("orders", "https://orders.example.com/mcp")
    ///     .sign_in(SignIn::client_credentials("tools-gateway", ClientSecret::env("ORDERS_CLIENT_SECRET")));
    /// # let _ = orders;
    /// ```
    #[cfg(feature = "oauth")]
    #[must_use]
    pub fn sign_in(mut self, sign_in: super::SignIn) -> Self {
        if let Transport::Http { sign_in: slot, .. } = &mut self.transport {
            *slot = Some(Box::new(sign_in));
        }
        self
    }

    /// Sends the header `header` over HTTP, its value read from the environment variable `name` when
    /// connecting (an API key).
    #[must_use]
    pub fn header_env(mut self, header: impl Into<String>, name: impl Into<String>) -> Self {
        if let Transport::Http { headers_env, .. } = &mut self.transport {
            headers_env.insert(header.into(), name.into());
        }
        self
    }

    /// Callers need `ability` for each of its tools the operator made no other decision about.
    #[must_use]
    pub fn ability(mut self, ability: impl Into<String>) -> Self {
        self.access.ability(ability.into());
        self
    }

    /// Anyone may run its tools the operator made no other decision about.
    #[must_use]
    pub fn public(mut self) -> Self {
        self.access.public();
        self
    }

    /// Trusts its tools' `readOnlyHint`: without it, every remote tool counts as a write.
    #[must_use]
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }

    /// Its writes wait for a person's approval: the first call returns a preview naming the server, the
    /// tool and the arguments, and the remote call runs once, when the confirmation comes back.
    #[must_use]
    pub fn approve_writes(mut self) -> Self {
        self.approve_writes = true;
        self
    }

    /// How long one of its calls may take (30 seconds unless set).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// It checks each caller's rights itself (Dolibarr's `RIGHTS_ENFORCED_DOWNSTREAM`): its tools need a
    /// caller with an identity, and each call carries that caller's own credential, never a shared
    /// token: the one its authenticator gave it ([`Caller::with_credential`]), or what
    /// [`exchange`](Self::exchange) makes of it. A token from [`bearer_env`](Self::bearer_env) is used
    /// only to list its tools and check its health. HTTP only.
    #[must_use]
    pub fn enforced_downstream(mut self) -> Self {
        self.access.enforced_downstream();
        self
    }

    /// How a caller's credential for this server is made, for a server whose rights are
    /// [enforced downstream](Self::enforced_downstream): a token exchange (RFC 8693, or the
    /// application's own). An error refuses the call with its message.
    ///
    /// ```
    /// use toolgate::remote::RemoteServer;
    ///
    /// let crm = RemoteServer::http("crm", "http://127.0.0.1:9000/mcp")
    ///     .enforced_downstream()
    ///     .exchange(|caller| {
    ///         let id = caller.id().to_owned();
    ///         async move { Ok(format!("crm-token-for-{id}")) }
    ///     });
    /// # let _ = crm;
    /// ```
    #[must_use]
    pub fn exchange<F, Fut>(mut self, exchange: F) -> Self
    where
        F: Fn(&Caller) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        self.access.enforced_downstream();
        self.exchange = Some(Exchange(Arc::new(move |caller| Box::pin(exchange(caller)))));
        self
    }

    /// How many of its calls run at once at most (8 unless set): past it, a call is refused at once as
    /// `unavailable`, so that a server that hangs holds few of the registry's slots.
    #[must_use]
    pub fn max_concurrent(mut self, calls: usize) -> Self {
        self.max_concurrent = calls.max(1);
        self
    }

    /// How often its health is checked (every 10 seconds unless set).
    #[must_use]
    pub fn health_every(mut self, every: Duration) -> Self {
        self.health_every = every;
        self
    }

    /// The operator's decisions about its tool `name` (the remote name, without the label).
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, tool: RemoteTool) -> Self {
        self.tools.insert(name.into(), tool);
        self
    }

    /// Why it cannot be served, if it cannot: a label that cannot prefix tool names, a URL that is no
    /// HTTP URL, a variable name that is empty.
    pub(crate) fn check(&self) -> Result<(), String> {
        let label = &self.label;
        let label_ok = label.len() <= 24
            && label.starts_with(|c: char| c.is_ascii_lowercase())
            && label
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
        if !label_ok {
            return Err(format!(
                "the server label `{label}` cannot prefix tool names: use 1 to 24 lowercase letters, digits \
                 and `-`, starting with a letter (the `_` separates the label from the tool's own name)"
            ));
        }
        if self.timeout.is_zero() || self.health_every.is_zero() {
            return Err(format!(
                "the server `{label}` needs a timeout and a health check interval above zero"
            ));
        }
        #[cfg(feature = "oauth")]
        if let Transport::Http {
            sign_in: Some(sign_in),
            ..
        } = &self.transport
            && (sign_in.exchanges_tokens() || sign_in.signs_in_each_person())
            && (!self.access.is_enforced_downstream() || self.exchange.is_some())
        {
            return Err(format!(
                "the server `{label}` gets each caller's own token, which is for a server that checks each \
                 caller's rights: mark it `enforced_downstream`, without an exchange of the application's"
            ));
        }
        if self.access.is_enforced_downstream() && matches!(self.transport, Transport::Stdio { .. })
        {
            return Err(format!(
                "the server `{label}` checks each caller's rights, which needs each caller's own credential \
                 with each call: only an HTTP server (`url`) takes one"
            ));
        }
        match &self.transport {
            Transport::Stdio { command, .. } if command.trim().is_empty() => {
                Err(format!("the server `{label}` needs a command to run"))
            }
            Transport::Http { url, .. } => check_url(label, url),
            Transport::Stdio { .. } => Ok(()),
        }
    }
}

fn check_url(label: &str, url: &str) -> Result<(), String> {
    if url.starts_with("https://") && !cfg!(feature = "remote-tls") {
        return Err(format!(
            "the server `{label}` is at an https URL, which needs toolgate's `remote-tls` feature"
        ));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!(
            "the server `{label}` needs an http:// or https:// URL, not `{url}`"
        ));
    }
    Ok(())
}

impl RemoteServer {
    /// How it is reached, without any secret: `stdio: <command> <args>` or `http: <url>`.
    pub(crate) fn reached_by(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut line = format!("stdio: {command}");
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            #[cfg(feature = "oauth")]
            Transport::Http {
                url,
                sign_in: Some(sign_in),
                ..
            } => format!("http: {url}, {}", sign_in.described()),
            Transport::Http { url, .. } => format!("http: {url}"),
        }
    }
}

impl fmt::Display for RemoteServer {
    /// What an operator reads: the label and how it is reached.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.label, self.reached_by())
    }
}

/// The server `label` an operator's record holds, checked as the configuration file's are.
/// The rights an operator's file gives a server or one of its tools: public, or one ability.
fn rights(public: bool, ability: Option<String>) -> Rights {
    let mut rights = Rights::default();
    if public {
        rights.public();
    }
    ability
        .into_iter()
        .for_each(|ability| rights.ability(ability));
    rights
}

pub(crate) fn server_from_entry(
    label: &str,
    entry: &serde_json::Value,
) -> Result<RemoteServer, String> {
    let entry =
        ServerConfig::deserialize(entry).map_err(|e| format!("the server `{label}`: {e}"))?;
    entry.into_server(label)
}

/// The servers of a configuration file, each checked as it is read.
pub(crate) fn deserialize_servers<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, RemoteServer>, D::Error> {
    let entries = BTreeMap::<String, ServerConfig>::deserialize(deserializer)?;
    entries
        .into_iter()
        .map(|(label, entry)| {
            let server = entry
                .into_server(&label)
                .map_err(serde::de::Error::custom)?;
            Ok((label, server))
        })
        .collect()
}

/// A server as the configuration file writes it, under `[servers.<label>]`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ServerConfig {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Vec<String>,
    env: BTreeMap<String, String>,
    pass_env: Vec<String>,
    url: Option<String>,
    bearer_env: Option<String>,
    headers_env: BTreeMap<String, String>,
    ability: Option<String>,
    public: bool,
    trusted: bool,
    approve_writes: bool,
    enforced_downstream: bool,
    timeout_secs: Option<f64>,
    health_every_secs: Option<f64>,
    max_concurrent: Option<usize>,
    tools: BTreeMap<String, ToolConfig>,
    oauth: Option<OAuthConfig>,
}

/// How the gateway signs in to a server, as `oauth = { ... }` of its entry: by an operator's
/// authorization coming back to `redirect_uri`, or by the client credentials grant with the client's
/// id and the variable that holds its secret; with the scopes asked for.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct OAuthConfig {
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    client_secret_env: Option<String>,
    #[serde(default)]
    scopes: Vec<String>,
    /// The gateway's `/oauth/callback`, for an operator's sign-in by authorization code.
    #[serde(default)]
    redirect_uri: Option<String>,
    /// Signs in again for the scopes a server's `insufficient_scope` refusal names.
    #[serde(default)]
    step_up: bool,
    /// Exchanges each caller's token for one of their own for the server (RFC 8693).
    #[serde(default)]
    token_exchange: bool,
    /// Each person's calls carry their own token, which they authorize once, coming back to
    /// `redirect_uri`; the gateway lists the tools as the client of `client_id` (client credentials)
    /// or by an operator's sign-in.
    #[serde(default)]
    each_person: bool,
    /// The address of the gateway's client ID metadata document, `…/oauth/client-metadata.json`.
    #[serde(default)]
    metadata_document: Option<String>,
}

/// `server` signing in as its entry's `oauth` says, or why it cannot.
fn signed_in(
    server: RemoteServer,
    label: &str,
    oauth: OAuthConfig,
) -> Result<RemoteServer, String> {
    let Transport::Http { bearer_env, .. } = &server.transport else {
        return Err(format!(
            "the server `{label}` signs in with `oauth`, which only an HTTP server (`url`) does"
        ));
    };
    if bearer_env.is_some() {
        return Err(format!(
            "the server `{label}` has both `bearer_env` and `oauth`: a token of its own or one it signs \
             in for, not both"
        ));
    }
    #[cfg(feature = "oauth")]
    {
        let secret = oauth.client_secret_env.map(super::ClientSecret::env);
        if oauth.each_person && (oauth.token_exchange || oauth.redirect_uri.is_none()) {
            return Err(format!(
                "the server `{label}` signs each person in (`each_person`): give `redirect_uri`, the \
                 gateway's `/oauth/callback`, where their authorization comes back, and no \
                 `token_exchange`"
            ));
        }
        let each_person = oauth
            .each_person
            .then(|| oauth.redirect_uri.clone())
            .flatten();
        let sign_in = match (oauth.redirect_uri, oauth.client_id, secret) {
            // Each person signs in for their calls; the gateway lists the tools as a machine.
            (Some(_), Some(id), Some(secret)) if each_person.is_some() => {
                super::SignIn::client_credentials(id, secret)
            }
            (Some(redirect_uri), id, secret) => {
                let sign_in = super::SignIn::authorization_code(redirect_uri);
                match id {
                    Some(id) => sign_in.client(id, secret),
                    None => sign_in,
                }
            }
            (None, Some(id), Some(secret)) if oauth.token_exchange => {
                super::SignIn::token_exchange(id, secret)
            }
            (None, Some(id), Some(secret)) => super::SignIn::client_credentials(id, secret),
            (None, _, _) => {
                return Err(format!(
                    "the server `{label}` signs in with `oauth`: give `redirect_uri` (an operator signs \
                     the gateway in), or `client_id` and `client_secret_env` (the gateway signs in as a machine)"
                ));
            }
        };
        let sign_in = match each_person {
            Some(redirect_uri) => sign_in.each_person(redirect_uri),
            None => sign_in,
        };
        let sign_in = match oauth.metadata_document {
            Some(url) => sign_in.metadata_document(url),
            None => sign_in,
        }
        .scopes(oauth.scopes);
        Ok(server.sign_in(if oauth.step_up {
            sign_in.step_up()
        } else {
            sign_in
        }))
    }
    #[cfg(not(feature = "oauth"))]
    {
        let _ = oauth;
        Err(format!(
            "the server `{label}` signs in with `oauth`, which needs toolgate's `oauth` feature"
        ))
    }
}

/// One remote tool's entry in a [`ServerConfig`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ToolConfig {
    ability: Option<String>,
    public: bool,
    capability: Option<String>,
    read_only: Option<bool>,
    approve: Option<bool>,
    enabled: Option<bool>,
}

impl ServerConfig {
    /// The server labelled `label`, or what is wrong with the entry.
    fn into_server(self, label: &str) -> Result<RemoteServer, String> {
        let mut server = match (self.kind.as_deref(), self.command, self.url) {
            (Some("sse"), ..) => {
                return Err(format!(
                    "the server `{label}` is of type `sse`, the legacy HTTP+SSE transport, which toolgate's MCP \
                 client (rmcp 3.11) does not speak: run it behind a bridge that speaks stdio or Streamable \
                 HTTP (see the book's chapter on federating servers)"
                ));
            }
            (Some("stdio") | None, Some(command), None) => {
                RemoteServer::stdio(label, command).args(self.args)
            }
            (Some("http" | "streamable-http") | None, None, Some(url)) => {
                RemoteServer::http(label, url)
            }
            (Some(kind), ..) if !matches!(kind, "stdio" | "http" | "streamable-http") => {
                return Err(format!(
                    "the server `{label}` has an unknown `type` `{kind}`: use `stdio` or `http`"
                ));
            }
            _ => {
                return Err(format!(
                    "the server `{label}` needs either `command` (a child process over stdio) or `url` \
                 (Streamable HTTP), not both"
                ));
            }
        };
        if let Transport::Stdio { env, pass_env, .. } = &mut server.transport {
            *env = self.env;
            *pass_env = self.pass_env;
        }
        if let Transport::Http {
            bearer_env,
            headers_env,
            ..
        } = &mut server.transport
        {
            *bearer_env = self.bearer_env;
            *headers_env = self.headers_env;
        }
        if let Some(oauth) = self.oauth {
            server = signed_in(server, label, oauth)?;
        }
        server.access = rights(self.public, self.ability);
        if self.enforced_downstream {
            server.access.enforced_downstream();
        }
        server.trusted = self.trusted;
        server.approve_writes = self.approve_writes;
        let seconds = |key: &str, secs: f64| {
            crate::clock::positive_seconds(secs).ok_or_else(|| {
                format!(
                    "the server `{label}` has a `{key}` of {secs}, not a positive number of seconds"
                )
            })
        };
        if let Some(secs) = self.timeout_secs {
            server.timeout = seconds("timeout_secs", secs)?;
        }
        if let Some(secs) = self.health_every_secs {
            server.health_every = seconds("health_every_secs", secs)?;
        }
        match self.max_concurrent {
            Some(0) => {
                return Err(format!(
                    "the server `{label}` has a `max_concurrent` of 0: it would run no call; give it at \
                     least 1"
                ));
            }
            Some(calls) => server = server.max_concurrent(calls),
            None => {}
        }
        for (name, tool) in self.tools {
            let decided = RemoteTool {
                access: rights(tool.public, tool.ability),
                capability: tool.capability,
                read_only: tool.read_only,
                approve: tool.approve,
                enabled: tool.enabled.unwrap_or(true),
            };
            server.tools.insert(name, decided);
        }
        server.check()?;
        Ok(server)
    }
}
