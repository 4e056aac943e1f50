//! Where an authorization server's key set, introspection and token endpoints are: read once from its metadata,
//! at RFC 8414's address, else at OpenID Connect's. Metadata that names another issuer is refused (a
//! mix-up).

use serde::Deserialize;
use tokio::sync::OnceCell;

use super::fetch::{Fetcher, fetchable, origin_and_path};

/// What this server reads of an authorization server's metadata.
#[derive(Deserialize)]
pub(crate) struct Endpoints {
    issuer: String,
    #[serde(default)]
    pub(crate) jwks_uri: Option<String>,
    #[serde(default)]
    pub(crate) introspection_endpoint: Option<String>,
    #[serde(default)]
    pub(crate) token_endpoint: Option<String>,
}

/// One authorization server, and its endpoints once found.
pub(crate) struct Discovery {
    issuer: String,
    /// Where its metadata may be: RFC 8414's address, then OpenID Connect's.
    metadata: [String; 2],
    fetcher: Fetcher,
    endpoints: OnceCell<Endpoints>,
}

impl Discovery {
    /// The authorization server `issuer`, asked through `fetcher`.
    ///
    /// # Errors
    /// When `issuer` is neither `https` nor on a loopback address.
    pub(crate) fn new(issuer: &str, fetcher: Fetcher) -> Result<Self, String> {
        let (origin, path) = origin_and_path(issuer)?;
        let metadata = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ];
        Ok(Discovery {
            issuer: issuer.to_owned(),
            metadata,
            fetcher,
            endpoints: OnceCell::new(),
        })
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
                Ok(endpoints) if endpoints.issuer != self.issuer => problems.push(format!(
                    "{address} names another issuer, `{}`",
                    crate::text::shown(&endpoints.issuer)
                )),
                Ok(endpoints) => {
                    let named = [
                        &endpoints.jwks_uri,
                        &endpoints.introspection_endpoint,
                        &endpoints.token_endpoint,
                    ];
                    for url in named.into_iter().flatten() {
                        fetchable(url)?;
                    }
                    return Ok(endpoints);
                }
                Err(problem) => problems.push(problem),
            }
        }
        Err(problems.join("; "))
    }
}
