//! Tokens from an authorization server's token endpoint, asked through `oauth2` for one resource
//! (RFC 8707): by the client credentials grant, by a refresh token, or by an authorization code the
//! gateway asked for with PKCE, its redirect checked for the state sent and the issuer's `iss`
//! (RFC 9207) before the code is spent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oauth2::basic::{BasicClient, BasicTokenResponse, BasicTokenType};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, CsrfToken, EndpointNotSet, EndpointSet,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, Scope,
    TokenResponse, TokenUrl,
};

use super::dpop::{Dpop, Proving};
use super::registration::{Method, Registered};
use crate::oauth::Discovery;

/// How long a token is kept when its authorization server does not say.
const UNSAID_LIFETIME: Duration = Duration::from_secs(300);

/// The most of a token's life given up, to renew it before it expires.
const RENEW_MARGIN: Duration = Duration::from_secs(60);

/// The longest a token is kept, whatever its authorization server says (an `expires_in` past it would
/// keep a revoked grant's token, or overflow the clock).
const LONGEST_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// A token, and when to ask for the next.
#[derive(Clone)]
pub(crate) struct Token {
    pub(crate) value: String,
    pub(crate) renew_at: Instant,
    /// The key it is bound to, whose proof each request carries (DPoP), or none for a bearer token.
    pub(crate) proof: Option<Arc<Dpop>>,
}

impl Token {
    /// The HTTP client that presents it bound to its key, for a token bound to one.
    pub(crate) fn bound_client(&self) -> Option<Result<super::dpop::BoundClient, String>> {
        Some(self.proof.as_ref()?.client(&self.value))
    }
}

/// What a token endpoint gave.
pub(crate) struct Granted {
    pub(crate) token: Token,
    pub(crate) refresh: Option<String>,
}

/// Why no token came: the authorization server said no (a grant revoked, a client unknown), or it
/// could not be asked.
pub(crate) enum Failure {
    Refused(String),
    Unreachable(String),
}

impl From<Failure> for String {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::Refused(why) | Failure::Unreachable(why) => why,
        }
    }
}

impl From<String> for Failure {
    fn from(why: String) -> Self {
        Failure::Unreachable(why)
    }
}

type Client =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// An authorization asked for: where the person goes, and what its answer is checked and spent with.
pub(crate) struct Begun {
    pub(crate) url: String,
    pub(crate) state: String,
    pub(crate) verifier: String,
}

/// One token request's parts: who asks, where, and for what.
pub(crate) struct Request<'a> {
    pub(crate) issuer: &'a Discovery,
    pub(crate) client: &'a Registered,
    pub(crate) resource: &'a str,
    pub(crate) scopes: &'a [String],
    /// The key its tokens are bound to, for a server that asks for DPoP.
    pub(crate) proof: Option<&'a Arc<Dpop>>,
}

impl Request<'_> {
    /// How its token requests go out: with a proof of the key, when tokens are bound to one.
    fn http(&self) -> Proving<'_> {
        Proving {
            fetcher: self.issuer.fetcher(),
            dpop: self.proof.map(|proof| &**proof),
        }
    }

    /// The authorization server's token endpoint.
    async fn token_endpoint(&self) -> Result<String, Failure> {
        let endpoints = self.issuer.endpoints().await?;
        let issuer = self.issuer.issuer();
        Ok((endpoints.token_endpoint.clone())
            .ok_or_else(|| format!("the authorization server {issuer} names no token endpoint"))?)
    }

    async fn client(&self) -> Result<Client, Failure> {
        let endpoint = TokenUrl::new(self.token_endpoint().await?)
            .map_err(|error| format!("its token endpoint is no URL: {error}"))?;
        let mut client = BasicClient::new(ClientId::new(self.client.id.clone()))
            .set_token_uri(endpoint)
            .set_auth_type(match self.client.method {
                Method::Basic => AuthType::BasicAuth,
                Method::Post | Method::None | Method::PrivateKeyJwt(_) => AuthType::RequestBody,
            });
        if let (Some(secret), Method::Basic | Method::Post) =
            (&self.client.secret, self.client.method)
        {
            client = client.set_client_secret(oauth2::ClientSecret::new(secret.clone()));
        }
        Ok(client)
    }

    /// What each token request carries beside its grant: the resource, and the client's signed
    /// assertion when it proves itself with one.
    fn extra(&self) -> Result<Vec<(&'static str, String)>, Failure> {
        let mut extra = vec![("resource", self.resource.to_owned())];
        let Method::PrivateKeyJwt(algorithm) = self.client.method else {
            return Ok(extra);
        };
        let pem = self.client.secret.as_deref().unwrap_or_default().as_bytes();
        let key = match algorithm.family() {
            jsonwebtoken::AlgorithmFamily::Ec => jsonwebtoken::EncodingKey::from_ec_pem(pem),
            jsonwebtoken::AlgorithmFamily::Rsa => jsonwebtoken::EncodingKey::from_rsa_pem(pem),
            jsonwebtoken::AlgorithmFamily::Ed => jsonwebtoken::EncodingKey::from_ed_pem(pem),
            jsonwebtoken::AlgorithmFamily::Hmac => {
                return Err(Failure::Refused(format!(
                    "{algorithm:?} is no private key's algorithm"
                )));
            }
        }
        .map_err(|_| {
            Failure::Refused(format!(
                "the client's key is no {algorithm:?} private key in PEM"
            ))
        })?;
        let now = crate::store::unix_ms() / 1000;
        let claims = serde_json::json!({
            "iss": self.client.id,
            "sub": self.client.id,
            "aud": self.issuer.issuer(),
            "iat": now,
            "exp": now + 60,
            "jti": crate::random::random_id(),
        });
        let assertion = jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), &claims, &key)
            .map_err(|error| {
                Failure::Refused(format!("the client's assertion cannot be signed: {error}"))
            })?;
        extra.push((
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
        ));
        extra.push(("client_assertion", assertion));
        Ok(extra)
    }

    fn scopes(&self) -> impl Iterator<Item = Scope> + use<'_> {
        self.scopes.iter().cloned().map(Scope::new)
    }

    /// A token by the client credentials grant (RFC 6749 §4.4).
    pub(crate) async fn client_credentials(&self) -> Result<Granted, Failure> {
        let client = self.client().await?;
        let mut request = client
            .exchange_client_credentials()
            .add_scopes(self.scopes());
        for (name, value) in self.extra()? {
            request = request.add_extra_param(name, value);
        }
        self.granted(request.request_async(&self.http()).await)
    }

    /// A token for the JWT `assertion` a workload was given, or an identity provider issued for this
    /// server's authorization server (RFC 7523 §2.1).
    pub(crate) async fn jwt_bearer(&self, assertion: &str) -> Result<Granted, Failure> {
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
            ),
            ("assertion", assertion.to_owned()),
        ];
        if !self.scopes.is_empty() {
            form.push(("scope", self.scopes.join(" ")));
        }
        self.extension_grant(form).await
    }

    /// A token for the caller whose access token to this gateway is `subject`, exchanged at the
    /// authorization server (RFC 8693): a token of their own for the server, never theirs sent on.
    pub(crate) async fn token_exchange(&self, subject: &str) -> Result<Granted, Failure> {
        const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            ("subject_token", subject.to_owned()),
            ("subject_token_type", ACCESS_TOKEN.to_owned()),
            ("requested_token_type", ACCESS_TOKEN.to_owned()),
        ];
        if !self.scopes.is_empty() {
            form.push(("scope", self.scopes.join(" ")));
        }
        self.extension_grant(form).await
    }

    /// A token for a grant `oauth2` does not make: its `form` posted to the token endpoint with the
    /// resource and the client's proof.
    async fn extension_grant(&self, mut form: Vec<(&str, String)>) -> Result<Granted, Failure> {
        let endpoint = self.token_endpoint().await?;
        form.extend(self.extra()?);
        let answer = match post(&self.http(), &endpoint, self.client, form).await {
            Err(error) => Err(RequestTokenError::Request(error)),
            Ok(response) if response.status().is_success() => {
                serde_json::from_slice(response.body())
                    .map_err(|_| RequestTokenError::Other("no token".to_owned()))
            }
            Ok(response) => Err(serde_json::from_slice(response.body()).map_or_else(
                |_| RequestTokenError::Other("no token".to_owned()),
                RequestTokenError::ServerResponse,
            )),
        };
        self.granted(answer)
    }

    /// An identity assertion grant for this server's authorization server (an ID-JAG), exchanged for
    /// the person's `id_token` at their identity provider's token endpoint `idp` as its client
    /// `idp_client` (RFC 8693; MCP's enterprise-managed authorization).
    pub(crate) async fn identity_assertion(
        &self,
        idp: &str,
        idp_client: &Registered,
        id_token: &str,
    ) -> Result<String, Failure> {
        const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
        crate::oauth::fetchable(idp)?;
        let mut form = vec![
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange".to_owned(),
            ),
            ("requested_token_type", ID_JAG.to_owned()),
            ("subject_token", id_token.to_owned()),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token".to_owned(),
            ),
            ("audience", self.issuer.issuer().to_owned()),
            ("resource", self.resource.to_owned()),
        ];
        if !self.scopes.is_empty() {
            form.push(("scope", self.scopes.join(" ")));
        }
        let response = (post(
            &Proving {
                fetcher: self.issuer.fetcher(),
                dpop: None,
            },
            idp,
            idp_client,
            form,
        )
        .await)
            .map_err(|error| Failure::Unreachable(error.to_string()))?;
        let answer: serde_json::Value = serde_json::from_slice(response.body()).unwrap_or_default();
        if !response.status().is_success() {
            return Err(Failure::Refused(format!(
                "the identity provider {idp} refused the exchange: {}",
                crate::text::shown(answer["error"].as_str().unwrap_or("no reason given"))
            )));
        }
        match (
            answer["access_token"].as_str(),
            answer["issued_token_type"].as_str(),
        ) {
            (Some(grant), Some(ID_JAG)) => Ok(grant.to_owned()),
            _ => Err(Failure::Refused(format!(
                "the identity provider {idp} answered the exchange with no identity assertion grant"
            ))),
        }
    }

    /// A token for the grant `refresh`.
    pub(crate) async fn refresh(&self, refresh: &str) -> Result<Granted, Failure> {
        let client = self.client().await?;
        let refresh = RefreshToken::new(refresh.to_owned());
        let mut request = client.exchange_refresh_token(&refresh);
        for (name, value) in self.extra()? {
            request = request.add_extra_param(name, value);
        }
        let mut granted = self.granted(request.request_async(&self.http()).await)?;
        // A server that does not rotate refresh tokens keeps the one it gave.
        granted.refresh.get_or_insert_with(|| refresh.into_secret());
        Ok(granted)
    }

    /// A token by the authorization code grant with PKCE, from an authorization server that approves
    /// without a person: the gateway asks at its authorization endpoint, reads the code from its
    /// redirect to `redirect_uri`, and spends it.
    pub(crate) async fn unattended(&self, redirect_uri: &str) -> Result<Granted, Failure> {
        let begun = self.authorization(redirect_uri).await?;
        let location = self.issuer.fetcher().redirect(&begun.url).await?;
        let location = oauth2::url::Url::parse(&location).map_err(|_| {
            Failure::Refused("the authorization server redirected to no URL".into())
        })?;
        let expected = oauth2::url::Url::parse(redirect_uri).map_err(|error| error.to_string())?;
        if location.origin() != expected.origin() || location.path() != expected.path() {
            return Err(Failure::Refused(
                "the authorization server redirected somewhere other than the gateway".into(),
            ));
        }
        let code = self
            .code(&begun.state, location.query().unwrap_or_default())
            .await?;
        self.exchange(redirect_uri, code, begun.verifier).await
    }

    /// Where to send a person to authorize the gateway, coming back to `redirect_uri`: the URL, with
    /// the state and the PKCE verifier it was made with.
    pub(crate) async fn authorization(&self, redirect_uri: &str) -> Result<Begun, Failure> {
        let endpoints = self.issuer.endpoints().await?;
        let authorize = endpoints.authorization_endpoint.as_deref().ok_or_else(|| {
            format!(
                "the authorization server {} names no authorization endpoint",
                self.issuer.issuer()
            )
        })?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state) = (self.redirected(redirect_uri).await?)
            .set_auth_uri(
                AuthUrl::new(authorize.to_owned())
                    .map_err(|error| format!("its authorization endpoint is no URL: {error}"))?,
            )
            .authorize_url(CsrfToken::new_random)
            .add_scopes(self.scopes())
            .set_pkce_challenge(challenge)
            .add_extra_param("resource", self.resource)
            .url();
        Ok(Begun {
            url: url.into(),
            state: state.into_secret(),
            verifier: verifier.into_secret(),
        })
    }

    /// The code in the authorization response `query` to the request made with `state`, checked
    /// against the issuer's `iss` (RFC 9207).
    pub(crate) async fn code(&self, state: &str, query: &str) -> Result<String, Failure> {
        let endpoints = self.issuer.endpoints().await?;
        code_in(
            query,
            state,
            &endpoints.issuer,
            endpoints.authorization_response_iss_parameter_supported,
        )
        .map_err(Failure::Refused)
    }

    /// A token for the authorization `code`, spent with the `verifier` of its request.
    pub(crate) async fn exchange(
        &self,
        redirect_uri: &str,
        code: String,
        verifier: String,
    ) -> Result<Granted, Failure> {
        let client = self.redirected(redirect_uri).await?;
        let mut request = (client.exchange_code(AuthorizationCode::new(code)))
            .set_pkce_verifier(PkceCodeVerifier::new(verifier));
        for (name, value) in self.extra()? {
            request = request.add_extra_param(name, value);
        }
        self.granted(request.request_async(&self.http()).await)
    }

    /// The client, coming back to `redirect_uri`: `https`, or `http` on a loopback address, where a
    /// code sent cannot be read on the way.
    async fn redirected(&self, redirect_uri: &str) -> Result<Client, Failure> {
        if crate::oauth::fetchable(redirect_uri).is_err() {
            return Err(Failure::Refused(format!(
                "the redirect `{}` is neither `https` nor `http` on a loopback address: a code sent there \
                 could be read on the way",
                crate::text::shown(redirect_uri)
            )));
        }
        let redirect = RedirectUrl::new(redirect_uri.to_owned())
            .map_err(|error| format!("the redirect `{redirect_uri}` is no URL: {error}"))?;
        Ok(self.client().await?.set_redirect_uri(redirect))
    }

    fn granted<E: std::error::Error>(
        &self,
        answer: Result<BasicTokenResponse, RequestTokenError<E, oauth2::basic::BasicErrorResponse>>,
    ) -> Result<Granted, Failure> {
        let issuer = self.issuer.issuer();
        let answer = answer.map_err(|error| match error {
            RequestTokenError::ServerResponse(refusal) => Failure::Refused(format!(
                "the authorization server {issuer} refused: {}{}",
                refusal.error(),
                refusal
                    .error_description()
                    .map(|why| format!(" ({})", crate::text::capped(&crate::text::shown(why))))
                    .unwrap_or_default()
            )),
            RequestTokenError::Request(error) => Failure::Unreachable(error.to_string()),
            RequestTokenError::Parse(..) | RequestTokenError::Other(_) => Failure::Refused(
                format!("the authorization server {issuer} answered with no token"),
            ),
        })?;
        let proof = match (answer.token_type(), self.proof) {
            (BasicTokenType::Bearer, _) => None,
            (BasicTokenType::Extension(kind), Some(proof)) if kind.eq_ignore_ascii_case("dpop") => {
                Some(proof)
            }
            (kind, proof) => {
                return Err(Failure::Refused(format!(
                    "the authorization server {issuer} gave a `{}` token, not a bearer token{}",
                    crate::text::shown(kind.as_ref()),
                    if proof.is_some() {
                        " or one bound to the gateway's key"
                    } else {
                        ""
                    }
                )));
            }
        };
        Ok(Granted {
            token: Token {
                value: answer.access_token().secret().clone(),
                renew_at: Instant::now()
                    + kept_for(answer.expires_in().map(|lifetime| lifetime.as_secs())),
                proof: proof.cloned(),
            },
            refresh: answer
                .refresh_token()
                .map(|refresh| refresh.secret().clone()),
        })
    }
}

/// What the token endpoint at `endpoint` answers the grant `form`, sent as `client` proves itself.
async fn post(
    http: &Proving<'_>,
    endpoint: &str,
    client: &Registered,
    mut form: Vec<(&str, String)>,
) -> Result<oauth2::HttpResponse, crate::oauth::FetchError> {
    let mut request = http::Request::post(endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json");
    let secret = client.secret.clone().unwrap_or_default();
    match client.method {
        Method::Basic => {
            use base64::Engine as _;
            let encode = |text: &str| {
                oauth2::url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>()
            };
            let pair = format!("{}:{}", encode(&client.id), encode(&secret));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            request = request.header(http::header::AUTHORIZATION, format!("Basic {basic}"));
        }
        Method::Post => form.extend([("client_id", client.id.clone()), ("client_secret", secret)]),
        Method::None | Method::PrivateKeyJwt(_) => form.push(("client_id", client.id.clone())),
    }
    let body = oauth2::url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let request = (request.body(body.into_bytes()))
        .map_err(|error| crate::oauth::FetchError::new(error.to_string()))?;
    oauth2::AsyncHttpClient::call(http, request).await
}

/// The code in the authorization response `query`, when it answers the request made with `state` and
/// names the issuer: `iss` is required when the issuer says it sends it, and compared as a plain string
/// whenever it is there (RFC 9207 §2.4).
fn code_in(query: &str, state: &str, issuer: &str, iss_required: bool) -> Result<String, String> {
    let parameter = |name: &str| {
        oauth2::url::form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
    };
    if let Some(error) = parameter("error") {
        let why = parameter("error_description").unwrap_or_default();
        return Err(format!(
            "the authorization server refused the sign-in: {} {}",
            crate::text::shown(&error),
            crate::text::capped(&crate::text::shown(&why))
        ));
    }
    if parameter("state").as_deref() != Some(state) {
        return Err(
            "the authorization server's answer carries another state; it was not for this sign-in"
                .into(),
        );
    }
    match parameter("iss") {
        Some(iss) if iss != issuer => Err(format!(
            "the authorization response names the issuer `{}`, not {issuer} (a mix-up); its code is not spent",
            crate::text::shown(&iss)
        )),
        None if iss_required => Err(format!(
            "{issuer} says it names itself in its authorization responses, and this one does not; its \
             code is not spent"
        )),
        _ => {
            parameter("code").ok_or_else(|| "the authorization server's answer has no code".into())
        }
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

    #[test]
    fn an_authorization_response_is_spent_only_with_its_state_and_issuer() {
        let issuer = "https://as.example";
        let code = |query: &str, required| code_in(query, "s1", issuer, required);
        assert_eq!(code("code=c&state=s1", false).unwrap(), "c");
        assert_eq!(
            code("code=c&state=s1&iss=https%3A%2F%2Fas.example", true).unwrap(),
            "c"
        );
        assert!(
            code("code=c&state=s2", false)
                .unwrap_err()
                .contains("another state")
        );
        assert!(
            code("code=c&state=s1", true)
                .unwrap_err()
                .contains("does not")
        );
        assert!(
            code("code=c&state=s1&iss=https%3A%2F%2Fevil.example", false)
                .unwrap_err()
                .contains("mix-up")
        );
        assert!(
            code("code=c&state=s1&iss=https%3A%2F%2Fas.example%2F", true)
                .unwrap_err()
                .contains("mix-up"),
            "no normalization"
        );
        assert!(
            code("error=access_denied&state=s1", false)
                .unwrap_err()
                .contains("access_denied")
        );
    }
}
