//! Where an authorization server's endpoints are, and what it supports: read once from its metadata (RFC
//! 8414), at its well-known addresses in the order MCP gives. Metadata that names another issuer is
//! refused (a mix-up).

use serde::Deserialize;
use tokio::sync::OnceCell;

use super::fetch::{Fetcher, fetchable, origin_and_path};

/// What toolgate reads of an authorization server's metadata.
#[derive(Deserialize, Default)]
pub(crate) struct Endpoints {
    /// The issuer it names: the one asked for, but for a server of MCP's 2025-03-26 revision.
    pub(crate) issuer: String,
    #[serde(default)]
    pub(crate) jwks_uri: Option<String>,
    #[serde(default)]
    pub(crate) introspection_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) authorization_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) registration_endpoint: Option<String>,
    #[cfg(feature = "remote")]
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
    #[cfg(feature = "remote")]
    #[serde(default)]
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[cfg(feature = "remote")]
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
    /// It puts `iss` in its authorization responses (RFC 9207): then one without is refused.
    #[cfg(feature = "remote")]
    #[serde(default)]
    pub(crate) authorization_response_iss_parameter_supported: bool,
}

/// One authorization server, and its endpoints once found.
pub(crate) struct Discovery {
    issuer: String,
    /// Where its metadata may be: RFC 8414's address, then OpenID Connect's (with the issuer's path
    /// inserted, then appended).
    metadata: Vec<String>,
    fetcher: Fetcher,
    endpoints: OnceCell<Endpoints>,
    /// A server of MCP's 2025-03-26 revision: its metadata is at its origin whatever issuer it names,
    /// and its endpoints are assumed there when it has none.
    legacy: bool,
}

impl Discovery {
    /// The authorization server `issuer`, asked through `fetcher`.
    ///
    /// # Errors
    /// When `issuer` is neither `https` nor on a loopback address.
    pub(crate) fn new(issuer: &str, fetcher: Fetcher) -> Result<Self, String> {
        let (origin, path) = origin_and_path(issuer)?;
        let mut metadata = vec![format!(
            "{origin}/.well-known/oauth-authorization-server{path}"
        )];
        if !path.is_empty() {
            metadata.push(format!("{origin}/.well-known/openid-configuration{path}"));
        }
        metadata.push(format!("{origin}{path}/.well-known/openid-configuration"));
        Ok(Discovery {
            issuer: issuer.to_owned(),
            metadata,
            fetcher,
            endpoints: OnceCell::new(),
            legacy: false,
        })
    }

    /// The MCP server at `origin` of the 2025-03-26 revision, which is its own authorization server:
    /// its metadata at its origin, else its endpoints where that revision says.
    #[cfg(feature = "remote")]
    fn legacy(origin: &str, fetcher: Fetcher) -> Self {
        Discovery {
            issuer: origin.to_owned(),
            metadata: vec![format!("{origin}/.well-known/oauth-authorization-server")],
            fetcher,
            endpoints: OnceCell::new(),
            legacy: true,
        }
    }

    /// The authorization server `issuer`, found as a server of MCP's 2025-03-26 revision when `legacy`.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    #[cfg(feature = "remote")]
    pub(crate) fn of(issuer: &str, legacy: bool, fetcher: Fetcher) -> Result<Self, String> {
        match legacy {
            true => Ok(Discovery::legacy(issuer, fetcher)),
            false => Discovery::new(issuer, fetcher),
        }
    }

    /// Whether it is a server of MCP's 2025-03-26 revision.
    #[cfg(feature = "remote")]
    pub(crate) fn is_legacy(&self) -> bool {
        self.legacy
    }

    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    pub(crate) fn fetcher(&self) -> &Fetcher {
        &self.fetcher
    }

    /// Its endpoints, read from its metadata on the first call that succeeds.
    pub(crate) async fn endpoints(&self) -> Result<&Endpoints, String> {
        self.endpoints.get_or_try_init(|| self.discover()).await
    }

    async fn discover(&self) -> Result<Endpoints, String> {
        let mut problems = Vec::new();
        for address in &self.metadata {
            match self.fetcher.json::<Endpoints>(address).await {
                Ok(endpoints) if endpoints.issuer != self.issuer && !self.legacy => {
                    problems.push(format!(
                        "{address} names another issuer, `{}`",
                        crate::text::shown(&endpoints.issuer)
                    ))
                }
                Ok(endpoints) => {
                    let named = [
                        &endpoints.jwks_uri,
                        &endpoints.introspection_endpoint,
                        &endpoints.token_endpoint,
                        &endpoints.authorization_endpoint,
                        &endpoints.registration_endpoint,
                    ];
                    for url in named.into_iter().flatten() {
                        fetchable(url)?;
                    }
                    return Ok(endpoints);
                }
                Err(problem) => problems.push(problem),
            }
        }
        if self.legacy {
            let origin = &self.issuer;
            return Ok(Endpoints {
                issuer: origin.clone(),
                authorization_endpoint: Some(format!("{origin}/authorize")),
                token_endpoint: Some(format!("{origin}/token")),
                registration_endpoint: Some(format!("{origin}/register")),
                ..Endpoints::default()
            });
        }
        Err(problems.join("; "))
    }
}
