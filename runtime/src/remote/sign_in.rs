//! A remote server that signs its clients in with OAuth, reached as a machine: the gateway is a client
//! of the server's authorization server and asks it for tokens by the client credentials grant (RFC 6749
//! §4.4, and MCP's client-credentials extension). The server's protected resource metadata (RFC 9728)
//! names the authorization server, whose metadata names its token endpoint; each token is asked for this
//! server (`resource`, RFC 8707), and kept until shortly before it expires.

use std::time::{Duration, Instant};

use serde::Deserialize;
use tokio::sync::Mutex;

use crate::oauth::{Client, Discovery, Fetcher, origin_and_path};

/// How long a token is kept when its authorization server does not say.
const UNSAID_LIFETIME: Duration = Duration::from_secs(300);

/// The most of a token's life given up, to renew it before it expires.
const RENEW_MARGIN: Duration = Duration::from_secs(60);

/// The longest a token is kept, whatever its authorization server says (an `expires_in` past it would
/// keep a revoked grant's token, or overflow the clock).
const LONGEST_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// How the gateway signs in to one server: its client at the server's authorization server, the
/// client's secret, and the scopes it asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClientCredentials {
    pub(crate) client_id: String,
    pub(crate) secret: ClientSecret,
    pub(crate) scopes: Vec<String>,
}

/// Where the secret of the gateway's client at a server's authorization server is: in an environment
/// variable, read each time a token is asked for (what the configuration file names), or given by the
/// application (from its own vault). Never printed.
///
/// ```
/// use toolgate::remote::ClientSecret;
///
/// let given = ClientSecret::value("s3cret");
/// assert!(!format!("{given:?}").contains("s3cret"));
/// assert_eq!(format!("{:?}", ClientSecret::env("ORDERS_SECRET")), "ClientSecret::Env(\"ORDERS_SECRET\")");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(Secret);

#[derive(Clone, PartialEq, Eq)]
enum Secret {
    Env(String),
    Value(String),
}

impl ClientSecret {
    /// The secret in the environment variable `name`, read when a token is asked for.
    pub fn env(name: impl Into<String>) -> Self {
        ClientSecret(Secret::Env(name.into()))
    }

    /// The secret itself, as the application read it.
    pub fn value(secret: impl Into<String>) -> Self {
        ClientSecret(Secret::Value(secret.into()))
    }

    /// The secret now, for the server `label`.
    fn read(&self, label: &str) -> Result<String, String> {
        match &self.0 {
            Secret::Value(secret) => Ok(secret.clone()),
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
        match &self.0 {
            Secret::Env(name) => write!(f, "ClientSecret::Env({name:?})"),
            Secret::Value(_) => f.write_str("ClientSecret::Value(..)"),
        }
    }
}

/// A token, and when to ask for the next.
#[derive(Clone)]
pub(crate) struct Token {
    pub(crate) value: String,
    pub(crate) renew_at: Instant,
}

/// The gateway's sign-in to one server: its token, kept while it is good, and the authorization
/// server that gave it, kept until the server refuses a token.
pub(crate) struct ServiceSignIn {
    grant: ClientCredentials,
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    token: Option<Token>,
    /// The authorization server the server's metadata named, its endpoints read once.
    issuer: Option<Discovery>,
}

/// What the gateway reads of a server's protected resource metadata.
#[derive(Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
}

/// What the gateway reads of a token endpoint's answer.
#[derive(Deserialize)]
struct Granted {
    access_token: String,
    token_type: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

impl ServiceSignIn {
    pub(crate) fn new(grant: ClientCredentials) -> Self {
        ServiceSignIn {
            grant,
            kept: Mutex::default(),
        }
    }

    /// A token for the server at `url`: the one kept, or a new one from its authorization server.
    ///
    /// # Errors
    /// Why no token could be had, for the server's status: its metadata or its authorization server's
    /// is out of reach or names another resource or issuer, the secret is not set, or the grant is
    /// refused.
    pub(crate) async fn token(&self, label: &str, url: &str) -> Result<Token, String> {
        let mut kept = self.kept.lock().await;
        if let Some(token) = kept.token.as_ref().filter(|t| Instant::now() < t.renew_at) {
            return Ok(token.clone());
        }
        let secret = self.grant.secret.read(label)?;
        let discovery = match kept.issuer.take() {
            Some(discovery) => discovery,
            None => {
                let fetcher = Fetcher::new()?;
                let issuer = authorization_server(&fetcher, url).await?;
                Discovery::new(&issuer, fetcher)?
            }
        };
        let discovery = kept.issuer.insert(discovery);
        let issuer = discovery.issuer();
        let endpoints = discovery.endpoints().await?;
        let endpoint = (endpoints.token_endpoint.as_deref())
            .ok_or_else(|| format!("the authorization server {issuer} names no token endpoint"))?;
        let client = Client {
            id: self.grant.client_id.clone(),
            secret,
        };
        let scope = self.grant.scopes.join(" ");
        let mut form = vec![("grant_type", "client_credentials"), ("resource", url)];
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        let granted: Granted = (discovery.fetcher())
            .grant(endpoint, &client, &form)
            .await?;
        if !granted.token_type.eq_ignore_ascii_case("bearer") {
            return Err(format!(
                "the authorization server {issuer} gave a `{}` token, not a bearer token",
                crate::text::shown(&granted.token_type)
            ));
        }
        let token = Token {
            value: granted.access_token,
            renew_at: Instant::now() + kept_for(granted.expires_in),
        };
        kept.token = Some(token.clone());
        Ok(token)
    }

    /// Forgets the token kept and where it came from, after the server refused it: the next
    /// connection finds its authorization server again and asks for a new one.
    pub(crate) async fn forget(&self) {
        *self.kept.lock().await = Kept::default();
    }
}

/// How long a token said to expire in `expires_in` seconds is kept: until a minute (or half its life)
/// before it expires, and a day at most.
fn kept_for(expires_in: Option<u64>) -> Duration {
    let lifetime = expires_in
        .map_or(UNSAID_LIFETIME, Duration::from_secs)
        .min(LONGEST_LIFETIME);
    lifetime - RENEW_MARGIN.min(lifetime / 2)
}

/// The authorization server the server at `url` names in its protected resource metadata: at the
/// well-known path followed by the endpoint's, then at the bare one. Metadata that names another
/// resource is refused: its tokens would be for another server.
async fn authorization_server(fetcher: &Fetcher, url: &str) -> Result<String, String> {
    let (origin, path) = origin_and_path(url)?;
    let addresses = [
        format!("{origin}/.well-known/oauth-protected-resource{path}"),
        format!("{origin}/.well-known/oauth-protected-resource"),
    ];
    let mut problems = Vec::new();
    for address in &addresses {
        match fetcher.json::<ResourceMetadata>(address).await {
            Ok(metadata) if metadata.resource != url => problems.push(format!(
                "{address} is the metadata of another resource, `{}`",
                crate::text::shown(&metadata.resource)
            )),
            Ok(metadata) => {
                return metadata
                    .authorization_servers
                    .into_iter()
                    .next()
                    .ok_or_else(|| format!("{address} names no authorization server"));
            }
            Err(problem) => problems.push(problem),
        }
    }
    Err(problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_renewed_before_it_expires_and_kept_a_day_at_most() {
        assert_eq!(kept_for(Some(3600)), Duration::from_secs(3540));
        assert_eq!(
            kept_for(Some(4)),
            Duration::from_secs(2),
            "half a short life"
        );
        assert_eq!(kept_for(None), Duration::from_secs(240));
        assert_eq!(kept_for(Some(0)), Duration::ZERO);
        assert_eq!(
            kept_for(Some(u64::MAX)),
            LONGEST_LIFETIME - RENEW_MARGIN,
            "an authorization server's lie neither overflows the clock nor keeps a token for ever"
        );
    }
}
