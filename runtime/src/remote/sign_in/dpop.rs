//! Tokens bound to a key of the gateway's own (DPoP, RFC 9449), for a server that asks for them (its
//! challenge is a `DPoP` one, or its metadata says `dpop_bound_access_tokens_required`): each token
//! request and each request to the server carries a fresh proof, signed with the key, of its method and
//! address (and of the token), so that a token read on the way is of no use without the key.
//!
//! A server or authorization server that wants a nonce in the proofs answers `use_dpop_nonce` with one
//! in its `DPoP-Nonce` header; the request is made once more with it. rmcp's transport does not hand on
//! the headers of a refusal, so a server's nonce is learnt with a `ping`, which changes nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::{HeaderName, HeaderValue};
use jsonwebtoken::{Algorithm, EncodingKey, Header, jwk::Jwk};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use crate::oauth::{FetchError, Fetcher, origin_and_path};
use crate::sync::Locked;

use super::challenge::Challenge;

/// The header a proof travels in, and the one a nonce comes in.
const DPOP: &str = "dpop";
const DPOP_NONCE: &str = "dpop-nonce";

/// The most origins whose nonce is kept, and the longest nonce believed.
const MAX_ORIGINS: usize = 16;
const MAX_NONCE: usize = 256;

/// The gateway's key for one sign-in, and the nonces the servers it proves itself to asked for.
pub(crate) struct Dpop {
    key: EncodingKey,
    jwk: Jwk,
    nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dpop")
    }
}

impl Dpop {
    /// A new P-256 key (ES256, which every DPoP server takes).
    pub(crate) fn new() -> Result<Self, String> {
        use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| "no key for DPoP proofs could be made".to_owned())?;
        let key = EncodingKey::from_ec_der(pkcs8.as_ref());
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)
            .map_err(|error| format!("the DPoP key has no public form: {error}"))?;
        Ok(Dpop {
            key,
            jwk,
            nonces: Mutex::default(),
        })
    }

    /// A fresh proof for a request of `method` to `url`, presenting `token` when given, with the nonce
    /// the server at `url` last asked for.
    fn proof(&self, method: &str, url: &str, token: Option<&str>) -> Result<String, String> {
        use base64::Engine as _;
        let (origin, path) = origin_and_path(url)?;
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        let mut claims = serde_json::json!({
            "jti": crate::random::random_id(),
            "htm": method,
            "htu": format!("{origin}{path}"),
            "iat": crate::store::unix_ms() / 1000,
        });
        if let Some(token) = token {
            let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes());
            let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            claims["ath"] = ath.into();
        }
        if let Some(nonce) = self.nonces.locked().get(&origin) {
            claims["nonce"] = nonce.clone().into();
        }
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|error| format!("a DPoP proof cannot be signed: {error}"))
    }

    /// Keeps the nonce the server at `url` sent in `headers`; whether there was one.
    fn learn(&self, url: &str, headers: &http::HeaderMap) -> bool {
        let nonce = (headers.get(DPOP_NONCE))
            .and_then(|nonce| nonce.to_str().ok())
            .filter(|nonce| nonce.len() <= MAX_NONCE && !nonce.is_empty());
        let (Some(nonce), Ok((origin, _))) = (nonce, origin_and_path(url)) else {
            return false;
        };
        let mut nonces = self.nonces.locked();
        if nonces.len() >= MAX_ORIGINS && !nonces.contains_key(&origin) {
            nonces.clear();
        }
        nonces.insert(origin, nonce.to_owned());
        true
    }

    /// The transport's HTTP client for a server, presenting `token` bound to this key.
    pub(crate) fn client(self: &Arc<Self>, token: &str) -> Result<BoundClient, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| format!("no HTTP client: {error}"))?;
        Ok(BoundClient {
            http,
            dpop: Arc::clone(self),
            token: Arc::from(token),
        })
    }
}

/// The token requests of a sign-in, with a proof when its tokens are bound to a key.
pub(crate) struct Proving<'a> {
    pub(crate) fetcher: &'a Fetcher,
    pub(crate) dpop: Option<&'a Dpop>,
}

impl<'c> oauth2::AsyncHttpClient<'c> for Proving<'_> {
    type Error = FetchError;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<oauth2::HttpResponse, FetchError>> + Send + 'c>,
    >;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let Some(dpop) = self.dpop else {
                return self.fetcher.call(request).await;
            };
            let (parts, body) = request.into_parts();
            let url = parts.uri.to_string();
            let mut answered = None;
            for _ in 0..2 {
                let proof = dpop.proof(parts.method.as_str(), &url, None);
                let proof = HeaderValue::try_from(proof.map_err(FetchError::new)?)
                    .map_err(|error| FetchError::new(error.to_string()))?;
                let mut request = http::Request::new(body.clone());
                *request.method_mut() = parts.method.clone();
                *request.uri_mut() = parts.uri.clone();
                *request.headers_mut() = parts.headers.clone();
                request.headers_mut().insert(DPOP, proof);
                let response = self.fetcher.call(request).await?;
                let asked = dpop.learn(&url, response.headers())
                    && response.status() == http::StatusCode::BAD_REQUEST
                    && serde_json::from_slice::<serde_json::Value>(response.body())
                        .is_ok_and(|refusal| refusal["error"] == "use_dpop_nonce");
                answered = Some(response);
                if !asked {
                    break;
                }
            }
            answered.ok_or_else(|| FetchError::new("no answer".to_owned()))
        })
    }
}

/// rmcp's HTTP client, each request carrying the token bound to the key (`Authorization: DPoP`) and
/// a fresh proof; a server that asks for a nonce gets the request once more with it.
#[derive(Clone)]
pub(crate) struct BoundClient {
    http: reqwest::Client,
    dpop: Arc<Dpop>,
    token: Arc<str>,
}

type Headers = HashMap<HeaderName, HeaderValue>;
type Failed = StreamableHttpError<reqwest::Error>;
type Events = futures_util::stream::BoxStream<'static, Result<Sse, SseError>>;

impl BoundClient {
    /// `headers` with the token and a proof for a request of `method` to `uri`.
    fn proved(&self, method: &str, uri: &str, mut headers: Headers) -> Result<Headers, Failed> {
        let unsendable = |why: String| StreamableHttpError::UnexpectedServerResponse(why.into());
        let proof = self.dpop.proof(method, uri, Some(&self.token));
        let proof = HeaderValue::try_from(proof.map_err(unsendable)?)
            .map_err(|error| unsendable(error.to_string()))?;
        let token = HeaderValue::try_from(format!("DPoP {}", self.token))
            .map_err(|error| unsendable(error.to_string()))?;
        headers.insert(http::header::AUTHORIZATION, token);
        headers.insert(HeaderName::from_static(DPOP), proof);
        Ok(headers)
    }

    /// What `send` gives with the token and a proof for a request of `method` to `uri`; once more, with
    /// the server's nonce, when it asks for one.
    async fn proving<T, F: Future<Output = Result<T, Failed>>>(
        &self,
        method: &str,
        uri: &str,
        headers: Headers,
        send: impl Fn(Headers) -> F,
    ) -> Result<T, Failed> {
        match send(self.proved(method, uri, headers.clone())?).await {
            Err(failed) if self.asks_nonce(&failed, uri, &headers).await => {
                send(self.proved(method, uri, headers)?).await
            }
            sent => sent,
        }
    }

    /// Whether `failed` is a server's `use_dpop_nonce`, and its nonce could be learnt, so that the
    /// request is worth making once more.
    async fn asks_nonce(&self, failed: &Failed, uri: &str, headers: &Headers) -> bool {
        let StreamableHttpError::AuthRequired(refusal) = failed else {
            return false;
        };
        if !Challenge::parse(&refusal.www_authenticate_header).use_dpop_nonce {
            return false;
        }
        let Ok(headers) = self.proved("POST", uri, headers.clone()) else {
            return false;
        };
        let ping =
            serde_json::json!({ "jsonrpc": "2.0", "id": "toolgate-dpop-nonce", "method": "ping" });
        let mut probe = self.http.post(uri).json(&ping);
        for (name, value) in headers {
            probe = probe.header(name, value);
        }
        let probe = probe.header(http::header::ACCEPT, "application/json, text/event-stream");
        match probe.send().await {
            Ok(response) => self.dpop.learn(uri, response.headers()),
            Err(_) => false,
        }
    }
}

impl StreamableHttpClient for BoundClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: Headers,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let post = |headers| {
            let (uri, message, session_id) = (uri.clone(), message.clone(), session_id.clone());
            let http = &self.http;
            async move {
                http.post_message_with_response_limits(
                    uri, message, session_id, None, headers, limits,
                )
                .await
            }
        };
        self.proving("POST", &uri, custom_headers, post).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<(), Failed> {
        let delete = |headers| {
            let (uri, session_id) = (uri.clone(), session_id.clone());
            let http = &self.http;
            async move { http.delete_session(uri, session_id, None, headers).await }
        };
        self.proving("DELETE", &uri, custom_headers, delete).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: Headers,
    ) -> Result<Events, Failed> {
        let limit = StreamableHttpResponseLimits::default().max_sse_event_size;
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            limit,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: Headers,
        limit: usize,
    ) -> Result<Events, Failed> {
        let open = |headers| {
            let (uri, session_id, last) = (uri.clone(), session_id.clone(), last_event_id.clone());
            let http = &self.http;
            async move {
                http.get_stream_with_max_sse_event_size(uri, session_id, last, None, headers, limit)
                    .await
            }
        };
        self.proving("GET", &uri, custom_headers, open).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(proof: &str, dpop: &Dpop) -> serde_json::Value {
        let header = jsonwebtoken::decode_header(proof).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        let jwk = header.jwk.expect("the public key travels in the proof");
        let public = serde_json::to_value(&jwk).unwrap();
        assert!(public.get("d").is_none(), "never the private key");
        assert_eq!(jwk, dpop.jwk);
        let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        jsonwebtoken::decode::<serde_json::Value>(proof, &key, &validation)
            .expect("signed with the key it names")
            .claims
    }

    #[test]
    fn a_proof_names_the_request_and_the_token_and_is_never_the_same_twice() {
        let dpop = Dpop::new().unwrap();
        let url = "https://mcp.example/mcp?session=1#x";
        let first = claims(&dpop.proof("POST", url, Some("tok")).unwrap(), &dpop);
        assert_eq!(first["htm"], "POST");
        assert_eq!(
            first["htu"], "https://mcp.example/mcp",
            "no query or fragment"
        );
        assert_eq!(
            first["ath"], "GnZ0607njffhrEOak8P6jjyUV4TU3sn9jjARc4svHWI",
            "the token's SHA-256, base64url"
        );
        assert!(first.get("nonce").is_none());
        let second = claims(&dpop.proof("POST", url, Some("tok")).unwrap(), &dpop);
        assert_ne!(first["jti"], second["jti"]);
    }

    #[test]
    fn a_nonce_is_kept_for_its_origin_only_and_a_huge_one_is_not_believed() {
        let dpop = Dpop::new().unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert(DPOP_NONCE, HeaderValue::from_static("n-1"));
        assert!(dpop.learn("https://as.example/token", &headers));
        let at = |url| claims(&dpop.proof("POST", url, None).unwrap(), &dpop)["nonce"].clone();
        assert_eq!(at("https://as.example/other"), "n-1");
        assert_eq!(at("https://mcp.example/mcp"), serde_json::Value::Null);
        let huge = "n".repeat(MAX_NONCE + 1);
        headers.insert(DPOP_NONCE, HeaderValue::try_from(huge).unwrap());
        assert!(!dpop.learn("https://as.example/token", &headers));
        assert_eq!(at("https://as.example/token"), "n-1");
        for n in 0..100 {
            headers.insert(DPOP_NONCE, HeaderValue::from_static("m"));
            dpop.learn(&format!("https://h{n}.example/"), &headers);
        }
        assert!(dpop.nonces.locked().len() <= MAX_ORIGINS, "bounded");
    }
}
