//! A remote server that signs its clients in with OAuth: the gateway finds where from the server's
//! challenge and metadata, becomes a client of its authorization server, and asks for tokens for it
//! (`resource`, RFC 8707) by the grant the operator chose: as a machine (client credentials, RFC 6749
//! §4.4 and MCP's client-credentials extension), or by an authorization code with PKCE. Tokens are kept
//! until shortly before they expire, renewed by their refresh token when there is one, and asked for
//! again, for wider scopes when the operator allows it, when the server refuses them.

mod challenge;
mod dpop;
mod grant;
mod operator;
mod registration;
mod resource;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Mutex;

use crate::oauth::{Discovery, Fetcher};
use challenge::Challenge;
use dpop::Dpop;
pub(crate) use grant::Token;
use grant::{Failure, Granted, Request};
use operator::Holder;
pub(crate) use operator::{Begun, Vault};

/// A person's own token for a server, or where they go to authorize the gateway to get one.
pub(crate) enum Personal {
    Token(Token),
    SignIn(String),
}
use registration::{Method, Registered};

/// The most scopes the gateway asks one server's authorization server for, however many its
/// challenges name.
const MAX_SCOPES: usize = 32;

/// How often a replica looks for the token another replica is renewing, and how many times.
const RENEWAL_POLL: std::time::Duration = std::time::Duration::from_millis(250);
const RENEWAL_WAITS: usize = 60;

/// How the gateway signs in to a remote server that asks for OAuth, given to
/// [`RemoteServer::sign_in`](super::RemoteServer::sign_in).
///
/// ```
/// use toolgate::remote::{ClientSecret, RemoteServer, SignIn};
///
/// // As a machine, with a client the operator registered:
/// let orders = RemoteServer::http("orders", "https://orders.example.com/mcp")
///     .sign_in(SignIn::client_credentials("tools-gateway", ClientSecret::env("ORDERS_SECRET")).scopes(["orders:read"]));
/// // By an authorization code, at a server that approves this client without asking a person:
/// let wiki = RemoteServer::http("wiki", "https://wiki.example.com/mcp")
///     .sign_in(SignIn::unattended("https://gateway.example.com/oauth/callback").step_up());
/// # let _ = (orders, wiki);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SignIn {
    grant: Grant,
    client: Option<(String, Option<ClientSecret>)>,
    metadata_document: Option<String>,
    scopes: Vec<String>,
    step_up: bool,
    /// Where each person's own authorization comes back to, for a server whose calls carry each
    /// person's own token.
    each_person: Option<String>,
}

/// How the gateway gets its tokens.
#[derive(Debug, Clone, PartialEq)]
enum Grant {
    ClientCredentials,
    /// A JWT the platform gives the workload, exchanged for a token (RFC 7523 §2.1).
    JwtBearer(ClientSecret),
    /// Each caller's own access token to this gateway exchanged for one of their own for the server
    /// (RFC 8693); the gateway lists its tools as itself, by the client credentials grant.
    TokenExchange,
    /// A person's ID token from their identity provider, exchanged there for an identity assertion
    /// grant, which is exchanged here for a token.
    Enterprise {
        idp_token_endpoint: String,
        idp_client_id: String,
        id_token: ClientSecret,
    },
    /// An authorization code the authorization server hands over without a person, coming back to
    /// this redirect URI.
    Unattended {
        redirect_uri: String,
    },
    /// An authorization code an operator's browser brings back to this redirect URI, once; its
    /// refresh token kept in the records.
    Operator {
        redirect_uri: String,
    },
}

impl SignIn {
    /// As a machine: the client credentials grant, with the client `client_id` an operator registered
    /// at the server's authorization server and its secret.
    pub fn client_credentials(client_id: impl Into<String>, secret: ClientSecret) -> Self {
        SignIn {
            grant: Grant::ClientCredentials,
            client: Some((client_id.into(), Some(secret))),
            metadata_document: None,
            scopes: Vec::new(),
            step_up: false,
            each_person: None,
        }
    }

    /// Each caller as themselves, for a server that checks each caller's rights
    /// ([`enforced_downstream`](super::RemoteServer::enforced_downstream)): the access token a caller
    /// signed in to this gateway with (through `TokenVerifier`) is exchanged at the server's
    /// authorization server for a token of their own for it (RFC 8693), by the gateway as the client
    /// `client_id`, and never sent on as it is. A caller without one is refused. The gateway lists the
    /// server's tools as itself, by the client credentials grant.
    pub fn token_exchange(client_id: impl Into<String>, secret: ClientSecret) -> Self {
        SignIn {
            grant: Grant::TokenExchange,
            ..SignIn::client_credentials(client_id, secret)
        }
    }

    /// As a workload: the JWT its platform gives it (a Kubernetes service account's projected token, a
    /// cloud's workload identity), read from `assertion` each time a token is asked for and exchanged
    /// for one by the JWT bearer grant (RFC 7523 §2.1, MCP's workload identity extension), as the
    /// public client `client_id`.
    pub fn jwt_bearer(client_id: impl Into<String>, assertion: ClientSecret) -> Self {
        SignIn {
            grant: Grant::JwtBearer(assertion),
            client: Some((client_id.into(), None)),
            metadata_document: None,
            scopes: Vec::new(),
            step_up: false,
            each_person: None,
        }
    }

    /// Managed by the enterprise's identity provider: the person's ID token there (read from
    /// `id_token` each time) is exchanged at its token endpoint `idp_token_endpoint`, as its client
    /// `idp_client_id`, for an identity assertion grant for the server's authorization server (RFC
    /// 8693), which gives the token for it (RFC 7523) to the gateway's [`client`](Self::client) there
    /// (MCP's enterprise-managed authorization).
    pub fn enterprise(
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
        id_token: ClientSecret,
    ) -> Self {
        SignIn {
            grant: Grant::Enterprise {
                idp_token_endpoint: idp_token_endpoint.into(),
                idp_client_id: idp_client_id.into(),
                id_token,
            },
            client: None,
            metadata_document: None,
            scopes: Vec::new(),
            step_up: false,
            each_person: None,
        }
    }

    /// By the authorization code grant with PKCE, at an authorization server that approves the gateway
    /// without asking a person (an identity provider that trusts this client, or the conformance
    /// suite's): the gateway asks at its authorization endpoint and reads the code from its redirect to
    /// `redirect_uri`. The gateway registers itself there unless given a [`client`](Self::client).
    pub fn unattended(redirect_uri: impl Into<String>) -> Self {
        SignIn {
            grant: Grant::Unattended {
                redirect_uri: redirect_uri.into(),
            },
            client: None,
            metadata_document: None,
            scopes: Vec::new(),
            step_up: false,
            each_person: None,
        }
    }

    /// By the authorization code grant with PKCE, authorized once by an operator: `toolgate servers
    /// sign-in LABEL` (or the admin page) gives the address where the operator signs in at the server's
    /// authorization server, whose redirect comes back to `redirect_uri`, the gateway's `/oauth/callback`
    /// (served with the admin API, `toolgate::operator::AdminApi`). The refresh token is kept in the
    /// records database, encrypted under the key ring, for every replica; the gateway registers itself
    /// there unless given a [`client`](Self::client). Needs a records database.
    pub fn authorization_code(redirect_uri: impl Into<String>) -> Self {
        SignIn {
            grant: Grant::Operator {
                redirect_uri: redirect_uri.into(),
            },
            client: None,
            metadata_document: None,
            scopes: Vec::new(),
            step_up: false,
            each_person: None,
        }
    }

    /// Signs in as the client `client_id` an operator registered, with its secret if it has one.
    #[must_use]
    pub fn client(mut self, client_id: impl Into<String>, secret: Option<ClientSecret>) -> Self {
        self.client = Some((client_id.into(), secret));
        self
    }

    /// Names the gateway by the client ID metadata document at `url` where the authorization server
    /// takes those (MCP 2025-11-25), rather than registering.
    #[must_use]
    pub fn metadata_document(mut self, url: impl Into<String>) -> Self {
        self.metadata_document = Some(url.into());
        self
    }

    /// Asks for `scopes`; without them, for what the server's challenge names, else for every scope
    /// its metadata lists.
    #[must_use]
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// When the server refuses a call for want of a scope (`403 insufficient_scope`), signs in again
    /// asking for it too. Without this, such a call fails with an error that names the scope.
    #[must_use]
    pub fn step_up(mut self) -> Self {
        self.step_up = true;
        self
    }

    /// Each person's calls to a server that checks each caller's rights
    /// ([`enforced_downstream`](super::RemoteServer::enforced_downstream)) carry a token of that person's
    /// own, which they authorize once at the server's authorization server (its consent page) and which
    /// comes back to `redirect_uri`, the gateway's `/oauth/callback`. A person without one is handed the
    /// address where they authorize, as a link their client opens (a URL-mode elicitation) where it can,
    /// else in the call's error; their grant is kept in the records database, encrypted under the key
    /// ring and bound to them and the server, and never used for anyone else. The gateway lists the
    /// server's tools as itself, by the grant this sign-in was made with. Needs a records database.
    #[must_use]
    pub fn each_person(mut self, redirect_uri: impl Into<String>) -> Self {
        self.each_person = Some(redirect_uri.into());
        self
    }

    /// The address of the client ID metadata document it names, and the redirects its sign-ins come
    /// back to: what the gateway's document there says.
    #[cfg(admin)]
    pub(crate) fn document(&self) -> Option<(&str, Vec<&str>)> {
        let mut redirects: Vec<&str> = match &self.grant {
            Grant::Unattended { redirect_uri } | Grant::Operator { redirect_uri } => {
                vec![redirect_uri.as_str()]
            }
            _ => Vec::new(),
        };
        redirects.extend(self.each_person.as_deref());
        redirects.dedup();
        Some((self.metadata_document.as_deref()?, redirects))
    }

    /// Whether each person's calls carry a token of their own, which they authorize once.
    pub(crate) fn signs_in_each_person(&self) -> bool {
        self.each_person.is_some()
    }

    /// Whether each caller's token is exchanged for the server.
    pub(crate) fn exchanges_tokens(&self) -> bool {
        self.grant == Grant::TokenExchange
    }

    /// How the operator reads it: the grant and the client.
    pub(crate) fn described(&self) -> String {
        let client = self.client.as_ref().map(|(id, _)| id.as_str());
        let gateway = match (&self.grant, client) {
            (Grant::ClientCredentials, client) => {
                format!("signed in as OAuth client {}", client.unwrap_or_default())
            }
            (Grant::JwtBearer(_), client) => {
                format!("signed in as workload {}", client.unwrap_or_default())
            }
            (Grant::TokenExchange, client) => format!(
                "each caller's token exchanged by OAuth client {}",
                client.unwrap_or_default()
            ),
            (
                Grant::Enterprise {
                    idp_token_endpoint, ..
                },
                _,
            ) => {
                format!("signed in through the identity provider at {idp_token_endpoint}")
            }
            (Grant::Unattended { .. }, Some(client)) => {
                format!("signed in by authorization code as OAuth client {client}")
            }
            (Grant::Unattended { .. }, None) => "signed in by authorization code".to_owned(),
            (Grant::Operator { .. }, _) => "signed in by an operator".to_owned(),
        };
        match self.each_person {
            Some(_) => format!("{gateway}; each person's calls by their own authorization"),
            None => gateway,
        }
    }
}

/// Where the secret of the gateway's client at a server's authorization server is: in an environment
/// variable, read each time a token is asked for (what the configuration file names), or given by the
/// application (from its own vault). Never printed. A shared secret is sent to the token endpoint; a
/// [`private_key`](Self::private_key) only signs an assertion, and never leaves the gateway.
///
/// ```
/// use toolgate::remote::ClientSecret;
///
/// let given = ClientSecret::value("s3cret");
/// assert!(!format!("{given:?}").contains("s3cret"));
/// assert_eq!(format!("{:?}", ClientSecret::env("ORDERS_SECRET")), "ClientSecret::Env(\"ORDERS_SECRET\")");
/// let key = ClientSecret::env("ORDERS_KEY_PEM").private_key("ES256");
/// assert_eq!(format!("{key:?}"), "ClientSecret::Env(\"ORDERS_KEY_PEM\").private_key(\"ES256\")");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret {
    source: Secret,
    /// The algorithm of a private key that signs assertions, for a secret that is one.
    signs: Option<String>,
}

#[derive(Clone, PartialEq, Eq)]
enum Secret {
    Env(String),
    File(std::path::PathBuf),
    Value(String),
}

impl ClientSecret {
    /// The secret in the environment variable `name`, read when a token is asked for.
    pub fn env(name: impl Into<String>) -> Self {
        ClientSecret {
            source: Secret::Env(name.into()),
            signs: None,
        }
    }

    /// The secret in the file at `path`, read when a token is asked for (a token the platform rotates
    /// there, a mounted secret); surrounding whitespace is not part of it.
    pub fn file(path: impl Into<std::path::PathBuf>) -> Self {
        ClientSecret {
            source: Secret::File(path.into()),
            signs: None,
        }
    }

    /// The secret itself, as the application read it.
    pub fn value(secret: impl Into<String>) -> Self {
        ClientSecret {
            source: Secret::Value(secret.into()),
            signs: None,
        }
    }

    /// The secret is a private key in PEM (PKCS#8) that signs, with `algorithm` (`ES256`, `RS256`,
    /// `EdDSA`…), the assertion the gateway proves itself with at the token endpoint
    /// (`private_key_jwt`, RFC 7523 §2.2), rather than a secret the two share.
    #[must_use]
    pub fn private_key(mut self, algorithm: impl Into<String>) -> Self {
        self.signs = Some(algorithm.into());
        self
    }

    /// The secret now, for the server `label`.
    fn read(&self, label: &str) -> Result<String, String> {
        match &self.source {
            Secret::Value(secret) => Ok(secret.clone()),
            Secret::File(path) => std::fs::read_to_string(path)
                .map(|text| text.trim().to_owned())
                .map_err(|error| {
                    format!(
                        "the server `{label}` signs in with the secret in {}, which cannot be read: {error}",
                        path.display()
                    )
                }),
            Secret::Env(name) => std::env::var(name).map_err(|_| {
                format!(
                    "the server `{label}` signs in with the secret in `{name}`, which is not set"
                )
            }),
        }
    }
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.source {
            Secret::Env(name) => write!(f, "ClientSecret::Env({name:?})")?,
            Secret::File(path) => write!(f, "ClientSecret::File({path:?})")?,
            Secret::Value(_) => f.write_str("ClientSecret::Value(..)")?,
        }
        match &self.signs {
            Some(algorithm) => write!(f, ".private_key({algorithm:?})"),
            None => Ok(()),
        }
    }
}

/// The gateway's sign-in to one server: its token, kept while it is good, and the authorization
/// server that gave it with the gateway's client there, kept until the server names another.
pub(crate) struct ServiceSignIn {
    config: SignIn,
    kept: Mutex<Kept>,
    /// Where an operator's sign-in is kept, for a registry with a records database.
    vault: Option<Vault>,
}

#[derive(Default)]
struct Kept {
    token: Option<Token>,
    issuer: Option<Issuer>,
    /// The scopes asked for so far: a step-up asks for them and more.
    asked: BTreeSet<String>,
}

/// The server's authorization server, as the gateway knows it.
struct Issuer {
    discovery: Discovery,
    resource: String,
    scopes_supported: Vec<String>,
    client: Option<Registered>,
    refresh: Option<String>,
    /// The gateway's key, for a server that takes only tokens bound to one (DPoP).
    proof: Option<Arc<Dpop>>,
}

impl ServiceSignIn {
    pub(crate) fn new(config: SignIn, vault: Option<Vault>) -> Self {
        ServiceSignIn {
            config,
            kept: Mutex::default(),
            vault,
        }
    }

    /// The token to send the server `label` at `url`: the one kept while it is good, a new one when
    /// it is due or the server refused it with `challenge`, or none before the server first asks (its
    /// challenge says where to sign in, and for what).
    ///
    /// # Errors
    /// Why no token could be had, for the server's status and the call's error: metadata out of reach
    /// or naming another resource or issuer, a secret not set, a grant refused, a scope the gateway may
    /// not ask for.
    pub(crate) async fn token(
        &self,
        label: &str,
        url: &str,
        challenge: Option<&str>,
    ) -> Result<Option<Token>, String> {
        let mut kept = self.kept.lock().await;
        let challenge = challenge.map(Challenge::parse);
        match &challenge {
            None => {
                if let Some(token) = kept.token.as_ref().filter(|t| Instant::now() < t.renew_at) {
                    return Ok(Some(token.clone()));
                }
                if kept.issuer.is_none() {
                    return Ok(None);
                }
            }
            Some(challenge) if challenge.insufficient_scope && kept.token.is_some() => {
                self.step_up(label, &mut kept, &challenge.scope)?;
            }
            Some(challenge) => {
                if kept.asked.is_empty() {
                    kept.asked
                        .extend(challenge.scope.iter().take(MAX_SCOPES).cloned());
                }
            }
        }
        kept.token = None;
        if let Some(challenge) = &challenge {
            // Where to sign in is found again: the server may have moved to another authorization server.
            self.find_issuer(&mut kept, url, challenge).await?;
        }
        let token = self.granted(label, &mut kept).await?;
        Ok(Some(kept.token.insert(token).clone()))
    }

    /// Asks for `scopes` too, when the operator allows it and they are new: a server that refuses the
    /// scopes it was given is not asked again.
    fn step_up(&self, label: &str, kept: &mut Kept, scopes: &[String]) -> Result<(), String> {
        let wanted: Vec<&String> = scopes.iter().filter(|s| !kept.asked.contains(*s)).collect();
        let named = || scopes.join(" ");
        if wanted.is_empty() {
            return Err(format!(
                "the server `{label}` still refuses the gateway with the scopes it asked for ({}); \
                 it is not asked again",
                named()
            ));
        }
        if matches!(self.config.grant, Grant::Operator { .. }) {
            kept.asked.extend(wanted.into_iter().cloned());
            return Err(format!(
                "the server `{label}` asks for the scopes `{}`, beyond what the operator signed the gateway \
                 in for; an operator must sign it in again, asking for them: `toolgate servers sign-in {label}`",
                named()
            ));
        }
        if !self.config.step_up {
            return Err(format!(
                "the server `{label}` asks for the scopes `{}`, beyond what the gateway signs in for; \
                 an operator can allow it to ask for them (step-up)",
                named()
            ));
        }
        if kept.asked.len() + wanted.len() > MAX_SCOPES {
            return Err(format!(
                "the server `{label}` asks for more than {MAX_SCOPES} scopes"
            ));
        }
        kept.asked.extend(wanted.into_iter().cloned());
        // A refresh would only renew the scopes already granted.
        if let Some(issuer) = &mut kept.issuer {
            issuer.refresh = None;
        }
        Ok(())
    }

    /// Finds the server's authorization server from its metadata; a new one forgets the client and the
    /// grant the gateway had at the last (they are not shown to another).
    async fn find_issuer(
        &self,
        kept: &mut Kept,
        url: &str,
        challenge: &Challenge,
    ) -> Result<(), String> {
        let fetcher = match &kept.issuer {
            Some(issuer) => issuer.discovery.fetcher().clone(),
            None => Fetcher::new()?,
        };
        let found =
            resource::protected(&fetcher, url, challenge.resource_metadata.as_deref()).await?;
        let bound = challenge.dpop || found.bound;
        if bound && matches!(self.config.grant, Grant::Operator { .. }) {
            return Err(
                "the server takes only tokens bound to a key (DPoP), which an operator's sign-in, shared \
                 by every replica, does not make yet"
                    .to_owned(),
            );
        }
        if let Some(issuer) = kept
            .issuer
            .as_mut()
            .filter(|i| i.discovery.issuer() == found.issuer)
        {
            issuer.resource = found.resource;
            issuer.scopes_supported = found.scopes_supported;
            if bound && issuer.proof.is_none() {
                // Tokens bound from now on: a refresh token of bearer tokens is not used for them.
                issuer.proof = Some(Arc::new(Dpop::new()?));
                issuer.refresh = None;
            }
            return Ok(());
        }
        let discovery = Discovery::of(&found.issuer, found.legacy, fetcher)?;
        kept.issuer = Some(Issuer {
            discovery,
            resource: found.resource,
            scopes_supported: found.scopes_supported,
            client: None,
            refresh: None,
            proof: bound.then(Dpop::new).transpose()?.map(Arc::new),
        });
        Ok(())
    }

    /// Finds the server's authorization server, unless it is known already.
    async fn known_issuer(&self, kept: &mut Kept, url: &str) -> Result<(), String> {
        match kept.issuer {
            Some(_) => Ok(()),
            None => (self.find_issuer(kept, url, &Challenge::default())).await,
        }
    }

    /// A new token: by the refresh token kept, else by the grant the operator chose.
    async fn granted(&self, label: &str, kept: &mut Kept) -> Result<Token, String> {
        let scopes = self.scopes(kept).await;
        let issuer = kept.issuer(label)?;
        if let Grant::Operator { .. } = self.config.grant {
            return self.by_operator(label, issuer).await;
        }
        let client = self.registered(label, issuer).await?;
        // The fields apart: the refresh token is taken while the request reads the rest.
        let request = Request {
            issuer: &issuer.discovery,
            client: &client,
            resource: &issuer.resource,
            scopes: &scopes,
            proof: issuer.proof.as_ref(),
        };
        if let Some(refresh) = issuer.refresh.take() {
            match request.refresh(&refresh).await {
                Ok(granted) => return Ok(keep(issuer, granted)),
                Err(Failure::Unreachable(why)) => {
                    issuer.refresh = Some(refresh);
                    return Err(why);
                }
                Err(Failure::Refused(why)) => {
                    tracing::warn!(target: "toolgate::remote", server = label, why, "a refresh was refused");
                }
            }
        }
        let granted = self.granted_anew(label, &request).await;
        match granted {
            Ok(granted) => Ok(keep(issuer, granted)),
            Err(failure) => {
                if matches!(failure, Failure::Refused(_)) && self.config.client.is_none() {
                    // A registration the server no longer knows is made again next time.
                    issuer.client = None;
                }
                Err(failure.into())
            }
        }
    }

    /// A new token by the grant the operator chose, but an operator's own sign-in (renewed from the
    /// records).
    async fn granted_anew(&self, label: &str, request: &Request<'_>) -> Result<Granted, Failure> {
        match &self.config.grant {
            Grant::ClientCredentials | Grant::TokenExchange => request.client_credentials().await,
            Grant::JwtBearer(assertion) => {
                let assertion = assertion.read(label).map_err(Failure::Refused)?;
                request.jwt_bearer(&assertion).await
            }
            Grant::Enterprise {
                idp_token_endpoint,
                idp_client_id,
                id_token,
            } => {
                let idp_client = Registered {
                    id: idp_client_id.clone(),
                    secret: None,
                    method: Method::None,
                };
                let id_token = id_token.read(label).map_err(Failure::Refused)?;
                let exchanged =
                    request.identity_assertion(idp_token_endpoint, &idp_client, &id_token);
                request.jwt_bearer(&exchanged.await?).await
            }
            Grant::Unattended { redirect_uri } => request.unattended(redirect_uri).await,
            Grant::Operator { .. } => Err(Failure::Refused(format!(
                "the server `{label}` is signed in to by an operator"
            ))),
        }
    }

    /// A token by the operator's sign-in, as the records keep it.
    async fn by_operator(&self, label: &str, issuer: &Issuer) -> Result<Token, String> {
        let kept = self.kept_grant(label, &Holder::Operator, issuer).await;
        kept.map_err(String::from)?.ok_or_else(|| {
            format!(
                "no operator has signed the gateway in to `{label}` yet: run `toolgate servers sign-in \
                 {label}`, or use the admin page"
            )
        })
    }

    /// A token by the grant `holder` gave, as the records keep it, or none when they gave none yet: the
    /// token another replica renewed, while it is good; else renewed here by its refresh token, by one
    /// replica at a time (the others wait for its token). A grant the authorization server refuses is
    /// forgotten: its holder must sign in again (a refusal says so).
    async fn kept_grant(
        &self,
        label: &str,
        holder: &Holder<'_>,
        issuer: &Issuer,
    ) -> Result<Option<Token>, Failure> {
        let vault = self.vault(label)?;
        let key = holder.key(label);
        for _ in 0..RENEWAL_WAITS {
            let Some(grant) = vault.grant(&key).await? else {
                return Ok(None);
            };
            if grant.issuer != issuer.discovery.issuer() {
                return Err(Failure::Refused(format!(
                    "{} signed in to `{label}` at {}, and it now names {}: {}",
                    holder.who(),
                    grant.issuer,
                    issuer.discovery.issuer(),
                    holder.again(label)
                )));
            }
            if let Some(token) = grant.token() {
                return Ok(Some(token));
            }
            if !vault.lease(&key).await? {
                tokio::time::sleep(RENEWAL_POLL).await;
                continue;
            }
            // Read again under the lease: another replica may have renewed it since the read above, and
            // its refresh token, spent, would now be refused (and the grant forgotten).
            let Some(mut grant) = vault.grant(&key).await? else {
                return Ok(None);
            };
            if let Some(token) = grant.token() {
                vault.keep(&key, Some(&grant)).await?;
                return Ok(Some(token));
            }
            let client = match &grant.client {
                Some(client) => (client.registered())
                    .ok_or_else(|| Failure::from("a kept client cannot be read".to_owned()))?,
                None => self.client(label, &issuer.discovery).await?,
            };
            let request = Request {
                issuer: &issuer.discovery,
                client: &client,
                resource: &grant.resource,
                scopes: &grant.scopes,
                proof: None,
            };
            let renewed = request.refresh(&grant.refresh).await;
            return match renewed {
                Ok(granted) => {
                    grant.refresh = granted.refresh.unwrap_or(grant.refresh);
                    grant.keep_token(&granted.token);
                    vault.keep(&key, Some(&grant)).await?;
                    Ok(Some(granted.token))
                }
                Err(Failure::Unreachable(why)) => {
                    vault.keep(&key, Some(&grant)).await?;
                    Err(Failure::Unreachable(why))
                }
                Err(Failure::Refused(why)) => {
                    vault.keep(&key, None).await?;
                    tracing::warn!(target: "toolgate::remote", server = label, why, "a sign-in was refused, and is forgotten");
                    Err(Failure::Refused(format!(
                        "{} sign-in to `{label}` was revoked or has expired: {}; {why}",
                        holder.whose(),
                        holder.again(label)
                    )))
                }
            };
        }
        Err(Failure::Unreachable(format!(
            "another replica has been renewing the sign-in to `{label}` for too long; it is tried again \
             later"
        )))
    }

    fn vault(&self, label: &str) -> Result<&Vault, String> {
        self.vault.as_ref().ok_or_else(|| {
            format!(
                "the server `{label}` is signed in to by an operator, which needs a records database to \
                 keep the sign-in"
            )
        })
    }

    /// Begins an operator's sign-in to the server `label` at `url`: where the operator goes to sign
    /// in. It waits ten minutes for them to come back.
    ///
    /// # Errors
    /// When the server does not sign in by an operator's authorization, or its authorization server
    /// cannot be found or registered at.
    pub(crate) async fn begin(&self, label: &str, url: &str) -> Result<String, String> {
        self.begin_for(label, url, &Holder::Operator).await
    }

    /// Begins the sign-in of `holder` to the server `label` at `url`: where they go to sign in.
    async fn begin_for(
        &self,
        label: &str,
        url: &str,
        holder: &Holder<'_>,
    ) -> Result<String, String> {
        let redirect_uri = self.redirect_for(label, holder)?;
        let vault = self.vault(label)?;
        let mut kept = self.kept.lock().await;
        match holder {
            // An operator's sign-in finds it anew: the server may have moved.
            Holder::Operator => {
                self.find_issuer(&mut kept, url, &Challenge::default())
                    .await?
            }
            Holder::Person(_) => self.known_issuer(&mut kept, url).await?,
        }
        let scopes = self.scopes(&mut kept).await;
        let issuer = kept.issuer(label)?;
        let client = self.registered(label, issuer).await?;
        let request = issuer.request(&client, &scopes);
        let asked = request.authorization(redirect_uri).await?;
        let begun = operator::Begun {
            issuer: issuer.discovery.issuer().to_owned(),
            legacy: issuer.discovery.is_legacy(),
            resource: issuer.resource.clone(),
            client: self.config.client.is_none().then(|| (&client).into()),
            state: asked.state,
            verifier: asked.verifier,
            scopes,
            person: match holder {
                Holder::Operator => None,
                Holder::Person(id) => Some((*id).to_owned()),
            },
        };
        vault.begin(label, &begun).await?;
        Ok(asked.url)
    }

    /// Where the sign-in of `holder` comes back to.
    fn redirect_for(&self, label: &str, holder: &Holder<'_>) -> Result<&str, String> {
        match (holder, &self.config.grant, &self.config.each_person) {
            (Holder::Operator, Grant::Operator { redirect_uri }, _)
            | (Holder::Person(_), _, Some(redirect_uri)) => Ok(redirect_uri),
            (Holder::Operator, ..) => Err(format!(
                "the server `{label}` is not signed in to by an operator"
            )),
            (Holder::Person(_), ..) => {
                Err(format!("the server `{label}` does not sign each person in"))
            }
        }
    }

    /// Finishes the sign-in `begun` to the server `label` with the authorization response `query` the
    /// browser brought back: the code is spent, and the grant kept for whoever began it (an operator,
    /// for the gateway; a person, for their own calls).
    ///
    /// # Errors
    /// When the response is refused (another state, another issuer, an error), or the code is.
    pub(crate) async fn finish(
        &self,
        label: &str,
        begun: operator::Begun,
        query: &str,
    ) -> Result<(), String> {
        let holder = match &begun.person {
            Some(id) => Holder::Person(id),
            None => Holder::Operator,
        };
        let redirect_uri = self.redirect_for(label, &holder)?;
        let vault = self.vault(label)?;
        let fetcher = Fetcher::new()?;
        let discovery = Discovery::of(&begun.issuer, begun.legacy, fetcher)?;
        let client = match &begun.client {
            Some(client) => client.registered().ok_or("a kept client cannot be read")?,
            None => self.client(label, &discovery).await?,
        };
        let request = Request {
            issuer: &discovery,
            client: &client,
            resource: &begun.resource,
            scopes: &begun.scopes,
            proof: None,
        };
        let code = request.code(&begun.state, query).await?;
        let granted = request.exchange(redirect_uri, code, begun.verifier).await?;
        let refresh = granted.refresh.ok_or_else(|| {
            format!(
                "{} gave no refresh token, so the gateway could not stay signed in: let this client have \
                 refresh tokens (`offline_access`)",
                begun.issuer
            )
        })?;
        let mut grant = operator::Grant {
            issuer: begun.issuer,
            legacy: begun.legacy,
            resource: begun.resource.clone(),
            client: begun.client,
            refresh,
            scopes: begun.scopes.clone(),
            access: None,
            renew_at_ms: 0,
        };
        grant.keep_token(&granted.token);
        vault.keep(&holder.key(label), Some(&grant)).await?;
        if let Holder::Person(_) = holder {
            vault.forget_idle(label).await?;
            return Ok(());
        }
        let mut kept = self.kept.lock().await;
        kept.asked.extend(begun.scopes);
        kept.token = Some(granted.token);
        kept.issuer = Some(Issuer {
            discovery,
            resource: begun.resource,
            scopes_supported: Vec::new(),
            client: Some(client),
            refresh: None,
            proof: None,
        });
        Ok(())
    }

    /// The token of the person `person` for the server `label` at `url`, by the authorization they
    /// gave, kept in the records; or, when they gave none (or it was revoked), where they go to give it.
    ///
    /// # Errors
    /// When the server's authorization server cannot be found, or a kept grant cannot be renewed now.
    pub(crate) async fn personal(
        &self,
        label: &str,
        url: &str,
        person: &str,
    ) -> Result<Personal, String> {
        let holder = Holder::Person(person);
        {
            let mut kept = self.kept.lock().await;
            self.known_issuer(&mut kept, url).await?;
            let issuer = kept.issuer(label)?;
            match self.kept_grant(label, &holder, issuer).await {
                Ok(Some(token)) => return Ok(Personal::Token(token)),
                // None given yet, or revoked: they give it (again).
                Ok(None) | Err(Failure::Refused(_)) => {}
                Err(Failure::Unreachable(why)) => return Err(why),
            }
        }
        self.begin_for(label, url, &holder)
            .await
            .map(Personal::SignIn)
    }

    /// Whether each caller's token is exchanged for the server.
    pub(crate) fn exchanges(&self) -> bool {
        self.config.exchanges_tokens()
    }

    /// Whether each person's calls carry a token of their own, which they authorize once.
    pub(crate) fn signs_in_each_person(&self) -> bool {
        self.config.signs_in_each_person()
    }

    /// A token of the caller's own for the server `label` at `url`, for their access token `subject`
    /// (RFC 8693). The server's authorization server is found once, as for the gateway's own sign-in.
    ///
    /// # Errors
    /// When it cannot be found, or refuses the exchange.
    pub(crate) async fn exchanged(
        &self,
        label: &str,
        url: &str,
        subject: &str,
    ) -> Result<Token, String> {
        let mut kept = self.kept.lock().await;
        self.known_issuer(&mut kept, url).await?;
        let scopes = self.scopes(&mut kept).await;
        let issuer = kept.issuer(label)?;
        let client = self.registered(label, issuer).await?;
        let request = issuer.request(&client, &scopes);
        request
            .token_exchange(subject)
            .await
            .map(|granted| granted.token)
            .map_err(String::from)
    }

    /// The gateway's client at `issuer`, as kept, else made now and kept.
    async fn registered(&self, label: &str, issuer: &mut Issuer) -> Result<Registered, String> {
        if let Some(client) = &issuer.client {
            return Ok(client.clone());
        }
        let client = self.client(label, &issuer.discovery).await?;
        Ok(issuer.client.insert(client).clone())
    }

    /// The gateway's client at `issuer`: the operator's, else its metadata document, else one it
    /// registers now.
    async fn client(&self, label: &str, issuer: &Discovery) -> Result<Registered, String> {
        let (id, secret) = match (&self.config.client, &self.config.grant) {
            (Some(client), _) => client,
            (None, Grant::Unattended { redirect_uri } | Grant::Operator { redirect_uri }) => {
                let document = self.config.metadata_document.as_deref();
                return registration::register(issuer, label, document, redirect_uri).await;
            }
            (
                None,
                Grant::ClientCredentials
                | Grant::TokenExchange
                | Grant::JwtBearer(_)
                | Grant::Enterprise { .. },
            ) => {
                return Err(format!(
                    "the server `{label}` signs in as a client no one named"
                ));
            }
        };
        let signs = secret.as_ref().and_then(|secret| secret.signs.as_deref());
        let secret = secret
            .as_ref()
            .map(|secret| secret.read(label))
            .transpose()?;
        let method = match signs {
            Some(algorithm) => Method::PrivateKeyJwt(algorithm.parse().map_err(|_| {
                format!("the server `{label}` signs in with a key for `{algorithm}`, which is no signing algorithm")
            })?),
            None => {
                let supported = (issuer.endpoints().await)
                    .ok()
                    .and_then(|endpoints| endpoints.token_endpoint_auth_methods_supported.clone());
                Method::chosen(supported.as_deref(), secret.is_some())
            }
        };
        Ok(Registered {
            id: id.clone(),
            method,
            secret,
        })
    }

    /// The scopes to ask for: the operator's and those the server's challenges named, else every scope
    /// its metadata lists; and `offline_access` for an authorization code, where the authorization
    /// server lists it, so that a refresh token comes with it.
    async fn scopes(&self, kept: &mut Kept) -> Vec<String> {
        kept.asked
            .extend(self.config.scopes.iter().take(MAX_SCOPES).cloned());
        let Some(issuer) = &kept.issuer else {
            return Vec::new();
        };
        let mut scopes: BTreeSet<String> = match kept.asked.is_empty() {
            true => issuer
                .scopes_supported
                .iter()
                .take(MAX_SCOPES)
                .cloned()
                .collect(),
            false => kept.asked.clone(),
        };
        let offline = matches!(
            self.config.grant,
            Grant::Unattended { .. } | Grant::Operator { .. }
        ) && (issuer.discovery.endpoints().await).is_ok_and(|endpoints| {
            endpoints
                .scopes_supported
                .iter()
                .any(|s| s == "offline_access")
        });
        if offline {
            scopes.insert("offline_access".to_owned());
        }
        scopes.into_iter().collect()
    }
}

impl Issuer {
    /// A token request to it, for its resource, as `client`, for `scopes`.
    fn request<'a>(&'a self, client: &'a Registered, scopes: &'a [String]) -> Request<'a> {
        Request {
            issuer: &self.discovery,
            client,
            resource: &self.resource,
            scopes,
            proof: self.proof.as_ref(),
        }
    }
}

impl Kept {
    /// The server's authorization server, once found.
    fn issuer(&mut self, label: &str) -> Result<&mut Issuer, String> {
        (self.issuer.as_mut())
            .ok_or_else(|| format!("the server `{label}` has not said where to sign in"))
    }
}

/// Keeps the refresh token `granted` came with, and gives its token.
fn keep(issuer: &mut Issuer, granted: Granted) -> Token {
    if granted.refresh.is_some() {
        issuer.refresh = granted.refresh;
    }
    granted.token
}
