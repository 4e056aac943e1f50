//! Why a request was refused, and the challenge that tells its client what to do next (RFC 6750 §3,
//! with RFC 9728's `resource_metadata`): sign in, sign in again, or ask for more scopes.

use axum::response::{IntoResponse, Response};

/// The `_meta` key of a refused call's result that holds its challenge, where ChatGPT reads it to
/// start a sign-in. A `tools/call` a step-up refuses is answered `401` or `403` with the challenge in
/// `WWW-Authenticate`, and with a body a host that reads results understands:
///
/// ```json
/// {"jsonrpc": "2.0", "id": 1, "result": {"isError": true,
///  "content": [{"type": "text", "text": "the credentials lack the scopes this request needs: orders:write"}],
///  "_meta": {"mcp/www_authenticate": ["Bearer error=\"insufficient_scope\", scope=\"orders:write\", resource_metadata=\"…\""]}}}
/// ```
pub const META_WWW_AUTHENTICATE: &str = "mcp/www_authenticate";
use http::{HeaderValue, StatusCode, header};

/// Why an [`Authenticator`](super::Authenticator) did not let a request through.
///
/// ```
/// use toolgate::http::Refusal;
///
/// assert_eq!(Refusal::Missing.status(), 401);
/// assert_eq!(Refusal::SignIn(vec!["orders:read".into()]).status(), 401);
/// assert_eq!(Refusal::Invalid("expired".into()).status(), 401);
/// assert_eq!(Refusal::InsufficientScope(vec!["orders:write".into()]).status(), 403);
/// assert_eq!(Refusal::Unavailable("the issuer's keys are out of reach".into()).status(), 503);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The request carries no credentials: the client should sign in (`401`, a challenge without an
    /// error, as RFC 6750 asks for a request that did not try).
    Missing,
    /// The request carries no credentials, and what it asks for needs these scopes: the client should
    /// sign in, asking for them (`401`, a challenge without an error, with `scope`).
    SignIn(Vec<String>),
    /// Its credentials are not valid: malformed, unknown, forged, expired, or for another resource
    /// (`401`, `error="invalid_token"`). The reason is shown to the client; say nothing secret in it.
    Invalid(String),
    /// Its credentials are valid but lack these scopes, every one the request needs (`403`,
    /// `error="insufficient_scope"` with `scope`), so that the client asks for all of them at once.
    InsufficientScope(Vec<String>),
    /// Its credentials cannot be checked now, as when the issuer's keys are out of reach and none are
    /// kept (`503` with `Retry-After`, and no challenge: signing in again would not help). Never an
    /// accept.
    Unavailable(String),
}

impl Refusal {
    /// The HTTP status of the answer.
    pub fn status(&self) -> u16 {
        self.status_code().as_u16()
    }

    fn status_code(&self) -> StatusCode {
        match self {
            Refusal::InsufficientScope(_) => StatusCode::FORBIDDEN,
            Refusal::Missing | Refusal::SignIn(_) | Refusal::Invalid(_) => StatusCode::UNAUTHORIZED,
            Refusal::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// What the answer's body says.
    fn reason(&self) -> String {
        match self {
            Refusal::Missing => {
                "missing credentials: send `Authorization: Bearer <token>`".to_owned()
            }
            Refusal::SignIn(scopes) => format!(
                "missing credentials: sign in with the scopes this request needs: {}",
                scopes.join(" ")
            ),
            Refusal::Invalid(reason) => format!("invalid credentials: {reason}"),
            Refusal::InsufficientScope(scopes) => format!(
                "the credentials lack the scopes this request needs: {}",
                scopes.join(" ")
            ),
            Refusal::Unavailable(reason) => {
                format!("the credentials cannot be checked now: {reason}; try again shortly")
            }
        }
    }

    /// The `WWW-Authenticate` value: `Bearer`, the error and its description where there is one, the
    /// scopes to ask for, and where the resource's metadata is (`resource_metadata`), when known.
    fn challenge(&self, resource_metadata: Option<&str>) -> HeaderValue {
        let mut params = Vec::new();
        match self {
            Refusal::Missing | Refusal::Unavailable(_) => {}
            Refusal::SignIn(scopes) => params.push(("scope", scopes.join(" "))),
            Refusal::Invalid(reason) => {
                params.push(("error", "invalid_token".to_owned()));
                params.push(("error_description", reason.clone()));
            }
            Refusal::InsufficientScope(scopes) => {
                params.push(("error", "insufficient_scope".to_owned()));
                params.push(("scope", scopes.join(" ")));
            }
        }
        if let Some(url) = resource_metadata {
            params.push(("resource_metadata", url.to_owned()));
        }
        let params: Vec<String> = params
            .into_iter()
            .map(|(name, value)| format!("{name}=\"{}\"", quoted(&value)))
            .collect();
        let value = match params.is_empty() {
            true => "Bearer".to_owned(),
            false => format!("Bearer {}", params.join(", ")),
        };
        HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("Bearer"))
    }

    /// The answer that refuses the request: its status, its challenge, and the reason as text.
    /// The answer to the `tools/call` of request `id` that this refuses: the same status and challenge,
    /// and for a host that reads a refusal in the call's result (ChatGPT) a JSON-RPC result marked
    /// `isError`, whose `_meta["mcp/www_authenticate"]` holds the challenge.
    pub(super) fn answer_call(
        &self,
        resource_metadata: Option<&str>,
        id: &rmcp::model::RequestId,
    ) -> Response {
        if let Refusal::Unavailable(_) = self {
            return self.answer(resource_metadata);
        }
        let challenge = self.challenge(resource_metadata);
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {
                "content": [{ "type": "text", "text": self.reason() }],
                "isError": true,
                "_meta": { META_WWW_AUTHENTICATE: [challenge.to_str().unwrap_or("Bearer")] },
            },
        });
        let headers = [
            (header::WWW_AUTHENTICATE, challenge),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ];
        (self.status_code(), headers, body.to_string()).into_response()
    }

    pub(super) fn answer(&self, resource_metadata: Option<&str>) -> Response {
        if let Refusal::Unavailable(_) = self {
            let retry = [(header::RETRY_AFTER, HeaderValue::from_static("5"))];
            return (self.status_code(), retry, self.reason()).into_response();
        }
        let challenge = [(header::WWW_AUTHENTICATE, self.challenge(resource_metadata))];
        (self.status_code(), challenge, self.reason()).into_response()
    }
}

/// `text` as the inside of a quoted-string (RFC 9110 §5.6.4): every backslash and quote escaped, and
/// every character a header may not carry (controls, and anything past ASCII) left out, so that no
/// reason can end the parameter or the header.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars().take(512) {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_challenge_is_one_header_that_no_reason_can_break() {
        let metadata = Some("https://tools.example/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            Refusal::Missing.challenge(metadata),
            "Bearer resource_metadata=\"https://tools.example/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(Refusal::Missing.challenge(None), "Bearer");
        let forged = Refusal::Invalid("a \"quoted\" \\ reason\r\nSet-Cookie: x=1 \u{202e}é".into());
        assert_eq!(
            forged.challenge(None),
            r#"Bearer error="invalid_token", error_description="a \"quoted\" \\ reasonSet-Cookie: x=1 ""#
        );
        let scopes = Refusal::InsufficientScope(vec!["orders:read".into(), "orders:write".into()]);
        assert_eq!(
            scopes.challenge(metadata),
            "Bearer error=\"insufficient_scope\", scope=\"orders:read orders:write\", \
             resource_metadata=\"https://tools.example/.well-known/oauth-protected-resource/mcp\""
        );
    }
}
