//! What this server asks an authorization server (its metadata, its key set, what it says of a token),
//! within bounds: a timeout, a size, no redirects, and only `https` addresses or loopback ones.

use std::time::Duration;

use serde::de::DeserializeOwned;

/// How long a fetch may take, connection included.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The largest document read; an authorization server's metadata or key set is a few kilobytes.
const MAX_DOCUMENT: usize = 256 * 1024;

/// A client for an authorization server's documents.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher(reqwest::Client);

impl Fetcher {
    pub(crate) fn new() -> Result<Self, String> {
        reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map(Fetcher)
            .map_err(|error| format!("cannot make an HTTP client to fetch signing keys: {error}"))
    }

    /// The JSON document at `url`, read as a `T`.
    pub(crate) async fn json<T: DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        self.read(url, self.0.get(url)).await
    }

    /// What the introspection endpoint at `url` says of `token` (RFC 7662), asked as `client`.
    pub(crate) async fn introspect<T: DeserializeOwned>(
        &self,
        url: &str,
        client: &Client,
        token: &str,
    ) -> Result<T, String> {
        let request = self
            .0
            .post(url)
            .basic_auth(&client.id, Some(&client.secret))
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        self.read(url, request).await
    }

    /// The JSON answer to `request`, sent to `url`, read as a `T`.
    /// What the token endpoint at `url` answers `client`'s request for a grant, the `form` its
    /// parameters.
    #[cfg(feature = "remote")]
    pub(crate) async fn grant<T: DeserializeOwned>(
        &self,
        url: &str,
        client: &Client,
        form: &[(&str, &str)],
    ) -> Result<T, String> {
        let request = self
            .0
            .post(url)
            .basic_auth(&client.id, Some(&client.secret))
            .form(form);
        self.read(url, request).await
    }

    async fn read<T: DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, String> {
        let mut response = request
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| format!("{url} is out of reach: {}", without_url(&error)))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|error| format!("{url} broke off: {}", without_url(&error)))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT {
                return Err(format!("{url} sent more than {MAX_DOCUMENT} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body)
            .map_err(|error| format!("{url} sent no valid document: {error}"))
    }
}

/// This server as a client of the authorization server, for introspection: its id and secret, sent
/// with HTTP Basic authentication (`client_secret_basic`).
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: String,
}

/// Why a request failed, without the address reqwest puts in its message (the caller names it once).
fn without_url(error: &reqwest::Error) -> &'static str {
    if error.is_timeout() {
        "no answer in time"
    } else if error.is_connect() {
        "no connection"
    } else {
        "the request failed"
    }
}

/// `url`, when it may be fetched: `https`, or `http` to a loopback address (a test's or a sidecar's).
pub(crate) fn fetchable(url: &str) -> Result<http::Uri, String> {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return Err(format!("`{}` is not a URL", crate::text::shown(url)));
    };
    let loopback = matches!(
        uri.host(),
        Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
    );
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if loopback => Ok(uri),
        _ => Err(format!(
            "`{}` is neither `https` nor `http` on a loopback address; signing keys are only fetched \
             over TLS",
            crate::text::shown(url)
        )),
    }
}

/// The origin and the path (without a trailing `/`) of `url`, one [`fetchable`] checks: what the
/// well-known addresses of its metadata are made from (RFC 8414 §3, RFC 9728 §3).
pub(crate) fn origin_and_path(url: &str) -> Result<(String, String), String> {
    let uri = fetchable(url)?;
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("https"),
        uri.authority().map_or("", |authority| authority.as_str())
    );
    Ok((origin, uri.path().trim_end_matches('/').to_owned()))
}
