//! What signing in costs a call: toolgate serving the same calls with a static bearer token, and with
//! a JWT access token that `TokenVerifier` checks against an issuer's keys. The issuer runs in the serving
//! process, on a loopback port of its own: its metadata (RFC 8414) and its key set, one ES256 key made
//! at start; the server prints the token it signed beside its port, and the load sends it.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::net::TcpListener;
use toolgate::Caller;
use toolgate::http::{BearerTokens, HttpServer, ProtectedResource, TokenVerifier};
use toolgate::registry::ScopeMap;

use crate::result;

/// How the load signs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignIn {
    /// A token from a static table (`BearerTokens`).
    StaticToken,
    /// A JWT access token from an issuer, checked by `TokenVerifier`.
    Jwt,
}

/// What the issuer's scope grants: the viewer's ability.
pub(crate) fn scope_map() -> ScopeMap {
    ScopeMap::new().scope("orders:read", ["orders.view"])
}

/// The static token.
const STATIC_TOKEN: &str = "bench-viewer-token";

impl SignIn {
    pub(crate) fn name(self) -> &'static str {
        match self {
            SignIn::StaticToken => "toolgate-static",
            SignIn::Jwt => "toolgate-jwt",
        }
    }

    /// `server` signed in this way, with `resource` its URL, and the token a client sends.
    pub(crate) async fn sign(
        self,
        server: HttpServer,
        resource: String,
    ) -> result::Result<(HttpServer, String)> {
        let viewer = || Caller::new("vera").with_abilities(["orders.view"]);
        match self {
            SignIn::StaticToken => Ok((
                server.authenticator(BearerTokens::new().token(STATIC_TOKEN, viewer())),
                STATIC_TOKEN.to_owned(),
            )),
            SignIn::Jwt => {
                let issuer = Issuer::start().await?;
                let resource = ProtectedResource::new(resource)?
                    .authorization_server(issuer.url.clone())
                    .scopes(["orders:read"]);
                let verifier = TokenVerifier::new(&resource)?;
                let token = issuer.token(resource.resource())?;
                Ok((
                    server.protected_resource(resource).authenticator(verifier),
                    token,
                ))
            }
        }
    }
}

/// An authorization server as far as a resource server reads it: metadata, keys, and tokens it signs.
struct Issuer {
    url: String,
    key: EncodingKey,
}

impl Issuer {
    /// Makes a key and serves the metadata and key set on a free loopback port.
    async fn start() -> result::Result<Issuer> {
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .map_err(|_| "cannot make a key")?;
        let key = EncodingKey::from_ec_der(pkcs8.as_ref());
        let mut jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)?;
        jwk.common.key_id = Some("bench".to_owned());
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let metadata = json!({ "issuer": url, "jwks_uri": format!("{url}/jwks") }).to_string();
        let keys = serde_json::to_string(&JwkSet { keys: vec![jwk] })?;
        let documents = Arc::new((metadata, keys));
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let documents = Arc::clone(&documents);
                let answer = move |request: Request<hyper::body::Incoming>| {
                    let body = match request.uri().path() {
                        "/jwks" => documents.1.clone(),
                        _ => documents.0.clone(),
                    };
                    let response = Response::builder()
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(body)))
                        .unwrap_or_default();
                    std::future::ready(Ok::<_, Infallible>(response))
                };
                tokio::spawn(
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service_fn(answer)),
                );
            }
        });
        Ok(Issuer { url, key })
    }

    /// A viewer's access token for `resource`, valid for an hour.
    fn token(&self, resource: &str) -> result::Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let claims = json!({
            "iss": self.url, "sub": "vera", "aud": resource, "client_id": "mcp-bench",
            "iat": now, "exp": now + 3600, "scope": "orders:read",
        });
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some("bench".to_owned());
        header.typ = Some("at+jwt".to_owned());
        Ok(jsonwebtoken::encode(&header, &claims, &self.key)?)
    }
}
