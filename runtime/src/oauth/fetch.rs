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

    /// The JSON document at `url`, read as a `T`, or none when the server says there is none for this
    /// client there (a `4xx`).
    #[cfg(feature = "remote")]
    pub(crate) async fn json_if_there<T: DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<Option<T>, String> {
        let response = (self.0.get(url))
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| format!("{url} is out of reach: {}", without_url(&error)))?;
        if response.status().is_client_error() {
            return Ok(None);
        }
        self.document(url, response).await.map(Some)
    }

    /// What the endpoint at `url` answers a JSON document posted to it (a client's registration,
    /// RFC 7591), read as a `T`.
    #[cfg(feature = "remote")]
    pub(crate) async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        document: &serde_json::Value,
    ) -> Result<T, String> {
        self.read(url, self.0.post(url).json(document)).await
    }

    /// Where the authorization endpoint at `url` sends the person's browser: the `Location` of its
    /// redirect, which is not followed.
    #[cfg(feature = "remote")]
    pub(crate) async fn redirect(&self, url: &str) -> Result<String, String> {
        let shown = url.split('?').next().unwrap_or(url);
        let response = self
            .0
            .get(url)
            .send()
            .await
            .map_err(|error| format!("{shown} is out of reach: {}", without_url(&error)))?;
        if !response.status().is_redirection() {
            return Err(format!(
                "{shown} answered {}, not a redirect back to the gateway",
                response.status()
            ));
        }
        (response.headers().get(http::header::LOCATION))
            .and_then(|location| location.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| format!("{shown} redirected to no readable location"))
    }

    async fn read<T: DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<T, String> {
        let response = request
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|error| format!("{url} is out of reach: {}", without_url(&error)))?;
        self.document(url, response).await
    }

    /// The document `response` from `url` carries, read as a `T`.
    async fn document<T: DeserializeOwned>(
        &self,
        url: &str,
        response: reqwest::Response,
    ) -> Result<T, String> {
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let body = bounded(url, response).await?;
        serde_json::from_slice(&body)
            .map_err(|error| format!("{url} sent no valid document: {error}"))
    }
}

/// The body of `response` from `url`, refused past [`MAX_DOCUMENT`] bytes.
async fn bounded(url: &str, mut response: reqwest::Response) -> Result<Vec<u8>, String> {
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
    Ok(body)
}

/// Why a request `oauth2` made through a [`Fetcher`] failed.
#[cfg(feature = "remote")]
#[derive(Debug)]
pub(crate) struct FetchError(String);

#[cfg(feature = "remote")]
impl FetchError {
    pub(crate) fn new(why: String) -> Self {
        FetchError(why)
    }
}

#[cfg(feature = "remote")]
impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(feature = "remote")]
impl std::error::Error for FetchError {}

/// The token requests `oauth2` makes go through the same bounds as every other fetch.
#[cfg(feature = "remote")]
impl<'c> oauth2::AsyncHttpClient<'c> for Fetcher {
    type Error = FetchError;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<oauth2::HttpResponse, FetchError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let url = parts.uri.to_string();
            let response = (self.0.request(parts.method, &url))
                .headers(parts.headers)
                .body(body)
                .send()
                .await
                .map_err(|error| {
                    FetchError(format!("{url} is out of reach: {}", without_url(&error)))
                })?;
            let (status, headers) = (response.status(), response.headers().clone());
            if status.is_server_error() {
                // Down, not a refusal: what the token endpoint gave (a refresh token) is kept.
                return Err(FetchError(format!("{url} answered {status}")));
            }
            let mut answer =
                http::Response::new(bounded(&url, response).await.map_err(FetchError)?);
            *answer.status_mut() = status;
            *answer.headers_mut() = headers;
            Ok(answer)
        })
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
            "`{}` is neither `https` nor `http` on a loopback address; an authorization server is \
             only asked over TLS",
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
