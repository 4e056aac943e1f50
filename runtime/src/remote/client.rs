//! Connecting to a remote server with rmcp's client: the child process or the HTTP transport, the
//! protocol era it speaks, and what the client hears from it (progress, changed tool lists).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation,
    ProgressNotificationParam, ProtocolVersion, SubscriptionFilter,
};
use rmcp::service::ClientInitializeError;
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::sync::Locked;

use super::asked::Askers;
use super::failure::Failure;
use super::flight::ProgressRoutes;
use super::server::{RemoteServer, Transport};
use super::shallow::Shallow;

/// What toolgate's client does with what a remote server sends it unasked.
pub(crate) struct Client {
    in_flight: ProgressRoutes,
    askers: Askers,
    list_changed: Arc<Notify>,
}

impl ClientHandler for Client {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let progress = self.in_flight.locked().get(&params.progress_token).cloned();
        if let Some(progress) = progress {
            progress.report(params.progress, params.total, params.message.as_deref());
        }
    }

    /// A server of an older protocol asks a person in the middle of a call: the caller answers.
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.askers.ask("elicitation/create", request).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    /// What an `initialize` handshake says: the newest version that has one (2026-07-28 negotiates
    /// with `server/discover` instead), and that the questions of a call reach its caller.
    fn get_info(&self) -> ClientConfig {
        let asks = serde_json::json!({ "elicitation": { "form": {} } });
        ClientConfig::new(
            serde_json::from_value::<ClientCapabilities>(asks).unwrap_or_default(),
            Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }
}

/// An open session with a remote server.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, Client>,
    pub(crate) in_flight: ProgressRoutes,
    /// Its calls that wait for their answers, where a question of the server goes.
    pub(crate) askers: Askers,
    /// Whether it speaks 2026-07-28, where `server/discover` replaces `ping`.
    pub(crate) discovers: bool,
    pub(crate) protocol: Option<String>,
    /// When the token it was opened with is to be renewed, for a server the gateway signs in to.
    pub(crate) renew_at: Option<std::time::Instant>,
    /// Reads the child's standard error into the log, and the 2026-07-28 listen stream.
    tasks: Vec<JoinHandle<()>>,
    /// A child process's handle: dropping it kills the process.
    _child: Option<tokio::process::Child>,
}

impl Connection {
    /// Whether it can carry a request: open, and its token not due.
    pub(crate) fn is_usable(&self) -> bool {
        !self.service.is_closed()
            && self
                .renew_at
                .is_none_or(|at| std::time::Instant::now() < at)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What a session with a server over HTTP is opened with.
#[derive(Clone, Copy)]
pub(crate) enum Credential<'a> {
    /// A bearer token (RFC 6750).
    Bearer(&'a str),
    /// A token bound to the gateway's key, each request with a fresh proof of it (DPoP, RFC 9449).
    #[cfg(feature = "oauth")]
    Bound(&'a super::sign_in::Token),
}

#[cfg(feature = "oauth")]
impl<'a> Credential<'a> {
    /// What a session is opened with to present `token`: bound to its key when it is.
    pub(crate) fn of(token: &'a super::sign_in::Token) -> Self {
        match &token.proof {
            Some(_) => Credential::Bound(token),
            None => Credential::Bearer(&token.value),
        }
    }
}

/// Opens a session with `server`, negotiating 2026-07-28 where it speaks it and the `initialize`
/// handshake otherwise, as a caller with `credential` when given (over HTTP). A changed tool list is
/// told to `list_changed`, by either era's means. A server that answers the 2026-07-28 probe with
/// something other than what it asks for (an empty result, say) is met again with `initialize` alone.
pub(crate) async fn connect(
    server: &RemoteServer,
    list_changed: Arc<Notify>,
    credential: Option<Credential<'_>>,
) -> Result<Connection, Failure> {
    let probing = ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    };
    match attempt(server, Arc::clone(&list_changed), credential, probing).await {
        Err(Attempt::Misunderstood(_)) => {
            let legacy = ClientLifecycleMode::Initialize;
            (attempt(server, list_changed, credential, legacy).await).map_err(Attempt::failure)
        }
        opened => opened.map_err(Attempt::failure),
    }
}

/// Why an attempt to open a session failed: the server answered the handshake with something else
/// than it asks for, or anything else.
enum Attempt {
    Misunderstood(String),
    Failed(Failure),
}

impl Attempt {
    fn failure(self) -> Failure {
        match self {
            Attempt::Misunderstood(error) => Failure::Unreachable(error),
            Attempt::Failed(failure) => failure,
        }
    }
}

impl From<String> for Attempt {
    fn from(error: String) -> Self {
        Attempt::Failed(Failure::Unreachable(error))
    }
}

/// One attempt of [`connect`], with the handshake `lifecycle`.
async fn attempt(
    server: &RemoteServer,
    list_changed: Arc<Notify>,
    credential: Option<Credential<'_>>,
    lifecycle: ClientLifecycleMode,
) -> Result<Connection, Attempt> {
    let in_flight = ProgressRoutes::default();
    let askers = Askers::default();
    let client = Client {
        in_flight: Arc::clone(&in_flight),
        askers: askers.clone(),
        list_changed: Arc::clone(&list_changed),
    };
    let label = server.label.clone();
    let mut tasks = Vec::new();
    // What a child process said last on its standard error: why it died, when it dies at start-up.
    let last_words = Arc::new(Mutex::new(None::<String>));
    let mut stderr_task = None;
    // The child process, killed when the session is dropped.
    let mut child = None;
    let service = match &server.transport {
        Transport::Stdio {
            command,
            args,
            env,
            pass_env,
        } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args)
                .envs(env)
                .kill_on_drop(true)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for name in pass_env {
                cmd.env(name, read_env(&label, name)?);
            }
            let mut spawned = cmd
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let (Some(stdin), Some(stdout)) = (spawned.stdin.take(), spawned.stdout.take()) else {
                return Err(format!("cannot talk to `{command}`: no pipes").into());
            };
            let stderr = spawned.stderr.take();
            child = Some(spawned);
            let transport = (Shallow::new(stdout), stdin);
            if let Some(stderr) = stderr {
                let (label, last_words) = (label.clone(), Arc::clone(&last_words));
                stderr_task = Some(tokio::spawn(async move {
                    let mut lines = BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = lines.next_line().await {
                        tracing::debug!(target: "toolgate::remote", server = label, "{line}");
                        if !line.trim().is_empty() {
                            *last_words.locked() = Some(line);
                        }
                    }
                }));
            }
            client.serve_with_lifecycle(transport, lifecycle).await
        }
        Transport::Http {
            url,
            bearer_env,
            headers_env,
            ..
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            match credential {
                Some(Credential::Bearer(token)) => config = config.auth_header(token),
                #[cfg(feature = "oauth")]
                Some(Credential::Bound(_)) => {}
                None => {
                    if let Some(name) = bearer_env {
                        config = config.auth_header(read_env(&label, name)?);
                    }
                }
            }
            let mut headers = HashMap::new();
            for (header, name) in headers_env {
                let value = read_env(&label, name)?;
                let header = http::HeaderName::try_from(header.as_str())
                    .map_err(|e| format!("the header `{header}` cannot be sent: {e}"))?;
                let value = http::HeaderValue::try_from(value).map_err(|e| {
                    format!("the value of `{name}` cannot be sent as a header: {e}")
                })?;
                headers.insert(header, value);
            }
            if !headers.is_empty() {
                config = config.custom_headers(headers);
            }
            #[cfg(feature = "oauth")]
            if let Some(Credential::Bound(token)) = credential
                && let Some(bound) = token.bound_client()
            {
                let transport = StreamableHttpClientTransport::with_client(bound?, config);
                client.serve_with_lifecycle(transport, lifecycle).await
            } else {
                let transport = StreamableHttpClientTransport::from_config(config);
                client.serve_with_lifecycle(transport, lifecycle).await
            }
            #[cfg(not(feature = "oauth"))]
            {
                let transport = StreamableHttpClientTransport::from_config(config);
                client.serve_with_lifecycle(transport, lifecycle).await
            }
        }
    };
    let service = match service {
        Ok(service) => service,
        Err(error) => {
            let mut said = String::new();
            if let Some(task) = stderr_task.as_mut() {
                // A process that died has closed its standard error: read to its end, briefly.
                let _ = tokio::time::timeout(std::time::Duration::from_millis(500), task).await;
                if let Some(line) = last_words.locked().take() {
                    said = format!("; it last said on its standard error: {line}");
                }
            }
            if let Some(challenge) = error.auth_challenge() {
                return Err(Attempt::Failed(Failure::Challenged(challenge.to_owned())));
            }
            let misunderstood = matches!(
                error,
                ClientInitializeError::ExpectedInitResult(_)
                    | ClientInitializeError::ExpectedInitResponse(_)
            );
            let error = format!("the MCP handshake failed: {error}{said}");
            return Err(match misunderstood {
                true => Attempt::Misunderstood(error),
                false => Attempt::Failed(Failure::Unreachable(error)),
            });
        }
    };
    tasks.extend(stderr_task);
    let protocol = service
        .peer()
        .peer_info()
        .map(|info| info.protocol_version.to_string());
    let discovers = protocol.as_deref() == Some(ProtocolVersion::V_2026_07_28.as_str());
    if discovers {
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        if let Ok(mut subscription) = service.peer().listen(filter).await {
            tasks.push(tokio::spawn(async move {
                while let Ok(Some(_)) = subscription.next().await {
                    list_changed.notify_one();
                }
            }));
        }
    }
    Ok(Connection {
        service,
        in_flight,
        askers,
        discovers,
        protocol,
        renew_at: None,
        tasks,
        _child: child,
    })
}

/// The environment variable `name` the server `label` needs, or the error that says it is not set. Its
/// value is never logged.
fn read_env(label: &str, name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| {
        format!("the environment variable `{name}`, which the server `{label}` needs, is not set")
    })
}
