//! The gateway as a client of one authorization server: pre-registered by the operator, named by a
//! client ID metadata document (its URL is the client's id) where the server accepts those, else
//! registered dynamically (RFC 7591). A registration belongs to its authorization server and is never
//! shown to another.

use serde::Deserialize;
use serde_json::json;

use crate::oauth::{Discovery, Fetcher};

/// The longest client id or secret a registration is believed for.
const MAX_CREDENTIAL: usize = 4096;

/// How the client proves itself at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// HTTP Basic authentication with its secret (`client_secret_basic`).
    Basic,
    /// Its secret in the form (`client_secret_post`).
    Post,
    /// A public client: its id alone (`none`), PKCE binding the code to it.
    None,
    /// An assertion its private key signs with this algorithm (`private_key_jwt`, RFC 7523).
    PrivateKeyJwt(jsonwebtoken::Algorithm),
}

impl Method {
    pub(super) fn name(self) -> &'static str {
        match self {
            Method::Basic => "client_secret_basic",
            Method::Post => "client_secret_post",
            Method::None => "none",
            Method::PrivateKeyJwt(_) => "private_key_jwt",
        }
    }

    pub(super) fn named(name: &str) -> Option<Self> {
        [Method::Basic, Method::Post, Method::None]
            .into_iter()
            .find(|method| method.name() == name)
    }

    /// The one a client with a secret (or without) uses at a server that supports `supported`
    /// (`client_secret_basic` when it does not say, RFC 8414 §2).
    pub(crate) fn chosen(supported: Option<&[String]>, secret: bool) -> Self {
        let supports = |method: Method| {
            supported.map_or(method == Method::Basic, |names| {
                names.iter().any(|name| name == method.name())
            })
        };
        match secret {
            true if !supports(Method::Basic) && supports(Method::Post) => Method::Post,
            true => Method::Basic,
            false => Method::None,
        }
    }
}

/// The gateway's client at one authorization server.
#[derive(Clone)]
pub(crate) struct Registered {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
    pub(crate) method: Method,
}

/// What the gateway reads of a registration's answer.
#[derive(Deserialize)]
struct Answer {
    client_id: String,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// The gateway's client at `issuer`, for the server `label`, coming back to `redirect_uri`: the one
/// its metadata document names when `issuer` takes those, else one registered now.
///
/// # Errors
/// When `issuer` takes neither, or refuses the registration or answers it badly.
pub(crate) async fn register(
    issuer: &Discovery,
    label: &str,
    metadata_document: Option<&str>,
    redirect_uri: &str,
) -> Result<Registered, String> {
    let endpoints = issuer.endpoints().await?;
    if let Some(url) = metadata_document.filter(|_| endpoints.client_id_metadata_document_supported)
    {
        return Ok(Registered {
            id: url.to_owned(),
            secret: None,
            method: Method::None,
        });
    }
    let Some(endpoint) = endpoints.registration_endpoint.as_deref() else {
        return Err(format!(
            "the authorization server {} registers no clients and takes no client ID metadata \
             documents; give the gateway a client registered there",
            issuer.issuer()
        ));
    };
    let supported = endpoints.token_endpoint_auth_methods_supported.as_deref();
    let asked = match supported.is_some_and(|names| names.iter().any(|n| n == "none")) {
        true => Method::None,
        false => Method::chosen(supported, true),
    };
    // A gateway that comes back to a loopback address runs on the operator's machine (RFC 8252).
    let loopback =
        crate::oauth::fetchable(redirect_uri).is_ok_and(|uri| uri.scheme_str() == Some("http"));
    let request = json!({
        "client_name": format!("toolgate gateway ({label})"),
        "application_type": if loopback { "native" } else { "web" },
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": asked.name(),
    });
    let answer: Answer = Fetcher::post_json(issuer.fetcher(), endpoint, &request).await?;
    let too_long = |value: &str| value.is_empty() || value.len() > MAX_CREDENTIAL;
    if too_long(&answer.client_id) || answer.client_secret.as_deref().is_some_and(too_long) {
        return Err(format!(
            "{endpoint} answered the registration with an empty or oversized client"
        ));
    }
    let method = match (
        answer.token_endpoint_auth_method.as_deref(),
        &answer.client_secret,
    ) {
        (Some(name), _) => Method::named(name).ok_or_else(|| {
            format!(
                "{endpoint} registered the gateway for `{}`, which it cannot do",
                crate::text::shown(name)
            )
        })?,
        (None, Some(_)) if asked != Method::None => asked,
        (None, _) => Method::None,
    };
    if method != Method::None && answer.client_secret.is_none() {
        return Err(format!(
            "{endpoint} registered the gateway for `{}` but gave it no secret",
            method.name()
        ));
    }
    Ok(Registered {
        id: answer.client_id,
        secret: answer.client_secret.filter(|_| method != Method::None),
        method,
    })
}

#[cfg(test)]
mod tests {
    use super::Method;

    #[test]
    fn a_client_with_a_secret_uses_what_the_server_supports() {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(Method::chosen(None, true), Method::Basic);
        assert_eq!(
            Method::chosen(Some(&names(&["client_secret_post"])), true),
            Method::Post
        );
        assert_eq!(
            Method::chosen(
                Some(&names(&["client_secret_post", "client_secret_basic"])),
                true
            ),
            Method::Basic
        );
        assert_eq!(Method::chosen(Some(&names(&["none"])), false), Method::None);
    }
}
