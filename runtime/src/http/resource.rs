//! This server as an OAuth 2.1 protected resource (RFC 9728): its metadata, at both well-known paths a
//! client tries, naming the authorization servers that issue its tokens and the scopes it knows; and
//! the metadata's address, which every challenge carries.

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, Method, StatusCode, Uri, header};
use serde_json::json;

/// The well-known path of a protected resource's metadata (RFC 9728 §3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// What a client needs to sign in to this server: the server's public URL (the MCP endpoint as users
/// type it, behind any proxy), the authorization servers whose tokens it accepts, and the scopes it
/// knows. Served at `/.well-known/oauth-protected-resource` followed by the endpoint's path (where
/// clients look first) and at the bare well-known path, and named in every `401` and `403` challenge.
/// A server that only accepts static tokens has none, and serves no metadata: a client would start a
/// sign-in that cannot succeed.
///
/// ```
/// use toolgate::http::ProtectedResource;
///
/// let resource = ProtectedResource::new("https://tools.example.com/mcp")?
///     .authorization_server("https://login.example.com")
///     .scopes(["orders:read", "orders:write"]);
/// assert_eq!(
///     resource.metadata_url(),
///     "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
/// );
/// assert!(ProtectedResource::new("tools.example.com/mcp").is_err(), "no scheme");
/// assert!(ProtectedResource::new("https://tools.example.com/mcp#top").is_err(), "a fragment");
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone)]
pub struct ProtectedResource {
    /// The resource identifier: an absolute `http` or `https` URL without a fragment.
    resource: String,
    /// Its origin (`https://host:port`) and path, from which the metadata's address is made.
    origin: String,
    path: String,
    authorization_servers: Vec<String>,
    scopes: Vec<String>,
    name: Option<String>,
}

impl ProtectedResource {
    /// The resource at `url`: the MCP endpoint's public URL, as clients reach it (`https://host/mcp`).
    ///
    /// # Errors
    /// When `url` is not an absolute `http` or `https` URL, or carries a query or a fragment.
    pub fn new(url: impl Into<String>) -> Result<Self, String> {
        let resource = url.into();
        let refuse = |why: &str| {
            Err(format!(
                "the protected resource `{}` {why}; give the MCP endpoint's public URL, as \
                 `https://tools.example.com/mcp`",
                crate::text::shown(&resource)
            ))
        };
        if resource.contains('#') {
            return refuse("has a fragment");
        }
        let Ok(uri) = resource.parse::<Uri>() else {
            return refuse("is not a URL");
        };
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return refuse("is not an absolute URL");
        };
        if !matches!(scheme, "https" | "http") {
            return refuse("is neither `https` nor `http`");
        }
        if uri.query().is_some() {
            return refuse("has a query");
        }
        let path = uri.path().trim_end_matches('/').to_owned();
        Ok(ProtectedResource {
            origin: format!("{scheme}://{authority}"),
            path,
            resource,
            authorization_servers: Vec::new(),
            scopes: Vec::new(),
            name: None,
        })
    }

    /// An authorization server (its issuer URL) whose tokens this resource accepts; call again for
    /// several.
    #[must_use]
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes clients may ask for (`scopes_supported`): the fewest that cover the server's tools.
    #[must_use]
    pub fn scopes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, scopes: I) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// A name people read (`resource_name`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The resource identifier, which tokens for this server name as their audience.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The issuers whose tokens this resource accepts.
    #[cfg(feature = "oauth")]
    pub(super) fn authorization_servers(&self) -> &[String] {
        &self.authorization_servers
    }

    /// Where the metadata is, as challenges name it: the well-known path followed by the endpoint's.
    pub fn metadata_url(&self) -> String {
        format!("{}{WELL_KNOWN}{}", self.origin, self.path)
    }

    /// The metadata document.
    fn document(&self) -> serde_json::Value {
        let mut document = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes.is_empty() {
            document["scopes_supported"] = json!(self.scopes);
        }
        if let Some(name) = &self.name {
            document["resource_name"] = json!(name);
        }
        document
    }

    /// The metadata's routes: at the well-known path with the endpoint's path after it, and at the bare
    /// well-known path. Any origin may read them (they are public, and a browser client must read them
    /// before it has a token).
    pub(super) fn router(&self) -> Router {
        let body = self.document().to_string();
        let serve = move |method: Method| {
            let body = body.clone();
            async move { metadata_answer(&method, body) }
        };
        let mut router = Router::new().route(WELL_KNOWN, get(serve.clone()).options(serve.clone()));
        if !self.path.is_empty() {
            let suffixed = format!("{WELL_KNOWN}{}", self.path);
            router = router.route(&suffixed, get(serve.clone()).options(serve));
        }
        router
    }
}

/// The answer to a request for the metadata: the document to a `GET`, an empty `204` to a CORS
/// preflight; both readable from any origin.
fn metadata_answer(method: &Method, body: String) -> Response {
    let any = HeaderValue::from_static("*");
    let cors = [
        (header::ACCESS_CONTROL_ALLOW_ORIGIN, any.clone()),
        (
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("GET, OPTIONS"),
        ),
        (header::ACCESS_CONTROL_ALLOW_HEADERS, any),
    ];
    if method == Method::OPTIONS {
        return (StatusCode::NO_CONTENT, cors).into_response();
    }
    let json = [(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    )];
    (StatusCode::OK, cors, json, body).into_response()
}
