//! Signing in with OAuth: the access tokens an authorization server issues for this server, checked
//! against the issuer's published keys or by asking the issuer, and the caller each makes.

mod claims;
mod introspect;
mod keys;
mod validated;

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::header::AUTHORIZATION;
use http::request::Parts;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, Header, Validation};

use super::auth::bearer;
use super::{AuthFuture, Authenticator, ProtectedResource, Refusal};
use crate::caller::Caller;
use crate::catalog::Grants;
use crate::oauth::{Client, Discovery, Fetcher};
use crate::registry::Registry;
use claims::Claims;
use introspect::Introspection;
use keys::IssuerKeys;
use validated::Validated;

/// The signature algorithms accepted: asymmetric ones only. Never `none`, and never an HMAC, whose key
/// this server would have to share with the issuer, or that an attacker would make from a public key.
const ACCEPTED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How far a token's `exp` and `nbf` may be off this server's clock, in seconds.
const LEEWAY: u64 = 30;

/// The longest token read; real access tokens are one to four kilobytes.
const MAX_TOKEN: usize = 16 * 1024;

/// How long an introspection's answer is trusted, by default: the longest a revoked token keeps working.
const TRUSTED_FOR: Duration = Duration::from_secs(60);

/// The least time between two fetches of an issuer's keys, by default.
const REFETCH_FLOOR: Duration = Duration::from_secs(30);

/// Accepts the access tokens that the resource's authorization servers issue for it, JWTs (RFC 9068)
/// and, with introspection, opaque ones, and makes each a [`Caller`]: `sub` its id (or `client_id`, for
/// a client's own token), abilities from the token's scopes (and roles) through the
/// [`ScopeMap`](crate::registry::ScopeMap) of the registry it serves, as the configuration file and the
/// operator's records change it, the client (`azp`, `client_id`) and the actors of an `act` chain kept
/// for the audit.
///
/// A token passes when its signature verifies with a key its issuer publishes (found through the
/// issuer's metadata; RS, PS and ES algorithms and EdDSA, never `none` or an HMAC), its issuer is one of
/// the resource's authorization servers, it is for this resource (`aud` names the resource's URL or an
/// [`audience`](Self::audience) of the provider's, or a `resource` claim names the URL), and it is within
/// its `exp` and `nbf`, give or take 30 seconds. A token that passed is kept with its caller until it
/// expires, so that the next call with it costs a lookup. The keys are fetched on first use and kept for
/// an hour; a token signed by a key the set lacks fetches them again at once (a rotation), at most once
/// per [floor](Self::key_refetch_floor); while the issuer is down the keys there are keep serving, and
/// before any could be fetched a request is refused as unavailable (`503`), never accepted.
///
/// A token that is not a JWT (an opaque one) is refused, unless [`introspect`](Self::introspect) names
/// this server's client at the authorization server: then the server is asked about it (RFC 7662), and
/// its answer is trusted until the token expires, for at most a minute.
///
/// ```
/// use toolgate::http::{HttpServer, ProtectedResource, TokenVerifier};
/// use toolgate::mcp::McpServer;
/// use toolgate::registry::ScopeMap;
/// use toolgate::Registry;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Registry::builder()
///     .scope_map(
///         ScopeMap::new()
///             .scope("orders:read", ["orders.view"])
///             .scope("orders:write", ["orders.view", "orders.manage"]),
///     )
///     .build()?;
/// let resource = ProtectedResource::new("https://tools.example.com/mcp")?
///     .authorization_server("https://login.example.com")
///     .scopes(["orders:read", "orders:write"]);
/// let verifier = TokenVerifier::new(&resource)?;
/// let server = HttpServer::new(McpServer::new(registry))
///     .protected_resource(resource)
///     .authenticator(verifier);
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
pub struct TokenVerifier {
    resource: String,
    /// Audiences a provider puts in its tokens instead of the resource's URL.
    audiences: Vec<String>,
    issuers: Vec<Issuer>,
    /// The registry served, whose scope map makes the callers.
    registry: OnceLock<Registry>,
    role_claim: Option<String>,
    floor: Duration,
    /// Whether a request without a token is let through as anonymous, to the public tools.
    anonymous: bool,
    /// The scopes a request without a token is asked to sign in with, if any.
    sign_in: Option<Vec<String>>,
    /// Where tokens that are not JWTs are checked, if anywhere.
    introspection: Option<Introspection>,
    /// How long an introspection's answer is trusted.
    trusted_for: Duration,
    validated: Validated,
}

/// An issuer whose tokens are accepted: its keys, and the checks its tokens pass, one set per family of
/// algorithms (a key verifies the algorithms of its own family only).
struct Issuer {
    keys: Arc<IssuerKeys>,
    validations: Vec<Validation>,
}

impl Issuer {
    fn new(issuer: Arc<Discovery>) -> Self {
        let mut families: Vec<AlgorithmFamily> = Vec::new();
        for algorithm in ACCEPTED {
            if !families.contains(&algorithm.family()) {
                families.push(algorithm.family());
            }
        }
        let validations = families
            .into_iter()
            .map(|family| {
                let mut validation = Validation::new(Algorithm::RS256);
                validation.algorithms = ACCEPTED
                    .into_iter()
                    .filter(|algorithm| algorithm.family() == family)
                    .collect();
                validation.set_issuer(&[issuer.issuer()]);
                validation.set_required_spec_claims(&["exp", "iss"]);
                validation.validate_nbf = true;
                validation.validate_aud = false;
                validation.leeway = LEEWAY;
                validation
            })
            .collect();
        Issuer {
            keys: Arc::new(IssuerKeys::new(issuer)),
            validations,
        }
    }

    /// The checks of a token signed with `algorithm`, one this server accepts.
    fn validation(&self, algorithm: Algorithm) -> &Validation {
        self.validations
            .iter()
            .find(|validation| validation.algorithms.contains(&algorithm))
            .unwrap_or(&self.validations[0])
    }
}

impl TokenVerifier {
    /// Accepts tokens for `resource` from its authorization servers.
    ///
    /// # Errors
    /// When the resource names no authorization server, or one that is neither `https` nor on a
    /// loopback address.
    pub fn new(resource: &ProtectedResource) -> Result<Self, String> {
        if resource.authorization_servers().is_empty() {
            return Err(format!(
                "the protected resource `{}` names no authorization server whose tokens to accept; add \
                 one with `.authorization_server(\"https://login.example.com\")`",
                resource.resource()
            ));
        }
        let fetcher = Fetcher::new()?;
        let issuers = resource
            .authorization_servers()
            .iter()
            .map(|issuer| {
                Ok(Issuer::new(Arc::new(Discovery::new(
                    issuer,
                    fetcher.clone(),
                )?)))
            })
            .collect::<Result<_, String>>()?;
        Ok(TokenVerifier {
            resource: resource.resource().to_owned(),
            audiences: Vec::new(),
            issuers,
            registry: OnceLock::new(),
            role_claim: None,
            floor: REFETCH_FLOOR,
            anonymous: false,
            sign_in: None,
            introspection: None,
            trusted_for: TRUSTED_FOR,
            validated: Validated::default(),
        })
    }

    /// An audience the provider puts in its tokens for this server instead of the resource's URL, as
    /// Entra ID's `api://…` application id or Auth0's API identifier; accepted beside the URL.
    #[must_use]
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audiences.push(audience.into());
        self
    }

    /// The claim that holds the caller's roles (a string or a list; a dotted path reaches into an
    /// object, as Keycloak's `realm_access.roles`): the first is the caller's role label, and each grants
    /// what the registry's [`ScopeMap`](crate::registry::ScopeMap) says of roles.
    #[must_use]
    pub fn role_claim(mut self, path: impl Into<String>) -> Self {
        self.role_claim = Some(path.into());
        self
    }

    /// The least time between two fetches of an issuer's keys (30 seconds by default): how often tokens
    /// that name unknown keys can make this server ask the issuer.
    #[must_use]
    pub fn key_refetch_floor(mut self, floor: Duration) -> Self {
        self.floor = floor;
        self
    }

    /// Lets requests without a token through as an anonymous caller, who sees and runs the public tools
    /// only; a call of any other tool is answered `401`, so that the client signs the person in. Claude
    /// calls this partial (or lazy) authentication.
    #[must_use]
    pub fn anonymous_access(mut self) -> Self {
        self.anonymous = true;
        self
    }

    /// The scopes a client is asked to sign in with when it comes without a token (the `scope` of that
    /// `401`'s challenge): the least a person needs to begin, as the viewer's read scope. Tools that need
    /// more ask for it when they are called (`403 insufficient_scope`, then the client signs in again
    /// with both), so that nobody holds a write scope they never use. Without it, a client asks for the
    /// resource's [`scopes`](super::ProtectedResource::scopes), all at once.
    #[must_use]
    pub fn sign_in_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sign_in = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Checks the tokens that are not JWTs (opaque ones) at the first authorization server's
    /// introspection endpoint (RFC 7662, found in its metadata), as its client `client_id` with
    /// `client_secret`. An answer is trusted until the token expires, and for at most
    /// [a minute](Self::introspection_trusted_for).
    #[must_use]
    pub fn introspect(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let client = Client {
            id: client_id.into(),
            secret: client_secret.into(),
        };
        let server = Arc::clone(&self.issuers[0].keys.discovery);
        self.introspection = Some(Introspection::new(server, client));
        self
    }

    /// How long an introspection's answer is trusted (a minute by default, never past the token's
    /// `exp`): the longest a token revoked at the authorization server keeps working here.
    #[must_use]
    pub fn introspection_trusted_for(mut self, trusted_for: Duration) -> Self {
        self.trusted_for = trusted_for;
        self
    }

    /// The caller `token` makes, checked in full.
    async fn verify(&self, token: &str, now: u64) -> Result<Caller, Refusal> {
        if token.len() > MAX_TOKEN {
            return Err(Refusal::Invalid(format!(
                "the token is longer than {MAX_TOKEN} bytes"
            )));
        }
        let (claims, until) = match (jsonwebtoken::decode_header(token), &self.introspection) {
            (Ok(header), _) => (self.checked_jwt(token, &header).await?, None),
            (Err(_), Some(introspection)) => {
                let claims = introspection.claims(token, now).await?;
                let trusted = now.saturating_add(self.trusted_for.as_secs());
                let until = claims.exp.map_or(trusted, |exp| exp.min(trusted));
                (claims, Some(until))
            }
            (Err(_), None) => {
                return Err(Refusal::Invalid(
                    "the token is not a JWT signed with an algorithm this server accepts".into(),
                ));
            }
        };
        if !claims.is_for(&self.resource, &self.audiences) {
            return Err(Refusal::Invalid("the token is for another resource".into()));
        }
        let until = until.or(claims.exp).unwrap_or(now);
        let grants = self.grants();
        let caller = claims
            .caller(&grants.map, self.role_claim.as_deref())
            .map_err(Refusal::Invalid)?
            .with_subject_token(token);
        let revision = self.registry.get().map(|_| grants.revision);
        self.validated
            .put(token, (caller.clone(), revision), until, now);
        Ok(caller)
    }

    /// What scopes and roles grant now: the scope map of the registry served, or nothing before one is.
    fn grants(&self) -> Arc<Grants> {
        static NONE: std::sync::LazyLock<Arc<Grants>> = std::sync::LazyLock::new(Arc::default);
        (self.registry.get()).map_or_else(|| Arc::clone(&NONE), Registry::grants)
    }

    /// The claims of a JWT, once its signature, issuer and times are checked.
    async fn checked_jwt(&self, token: &str, header: &Header) -> Result<Claims, Refusal> {
        if !ACCEPTED.contains(&header.alg) {
            return Err(Refusal::Invalid(format!(
                "the token is signed with {:?}, which this server does not accept",
                header.alg
            )));
        }
        let issuer = self.issuer_of(token)?;
        let key = issuer.keys.key(header.kid.as_deref(), self.floor).await?;
        if key
            .algorithm
            .is_some_and(|algorithm| algorithm != header.alg)
        {
            return Err(Refusal::Invalid(
                "the token's algorithm is not its key's".into(),
            ));
        }
        jsonwebtoken::decode::<Claims>(token, &key.decoding, issuer.validation(header.alg))
            .map(|data| data.claims)
            .map_err(|error| Refusal::Invalid(reason(error.kind())))
    }

    /// The issuer whose keys check `token`: the only one, or the one its `iss` names (then checked with
    /// the signature).
    fn issuer_of(&self, token: &str) -> Result<&Issuer, Refusal> {
        if let [only] = self.issuers.as_slice() {
            return Ok(only);
        }
        #[derive(serde::Deserialize)]
        struct Iss {
            iss: String,
        }
        let named = jsonwebtoken::dangerous::insecure_decode_claims::<Iss>(token)
            .map_err(|_| Refusal::Invalid("the token names no issuer (`iss`)".into()))?;
        self.issuers
            .iter()
            .find(|issuer| issuer.keys.discovery.issuer() == named.iss)
            .ok_or_else(|| Refusal::Invalid("the token is from another issuer".into()))
    }
}

/// What the client is told of a token that failed a check.
fn reason(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "the token has expired".into(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (`nbf`)".into(),
        ErrorKind::InvalidIssuer => "the token is from another issuer".into(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".into(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no `{claim}` claim"),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidKeyFormat => {
            "the token's algorithm is not its key's".into()
        }
        _ => "the token's claims are not ones this server can read".into(),
    }
}

impl Authenticator for TokenVerifier {
    fn authenticate<'a>(&'a self, request: &'a Parts) -> AuthFuture<'a> {
        let Some(token) = bearer(request) else {
            let anonymous = match self.anonymous && request.headers.get(AUTHORIZATION).is_none() {
                true => Ok(Caller::anonymous()),
                false => Err(self
                    .sign_in
                    .clone()
                    .map_or(Refusal::Missing, Refusal::SignIn)),
            };
            return Box::pin(std::future::ready(anonymous));
        };
        let now = jsonwebtoken::get_current_timestamp();
        let revision = self.registry.get().map(Registry::grants_revision);
        if let Some(caller) = self.validated.get(token, now, revision) {
            return Box::pin(std::future::ready(Ok(caller)));
        }
        Box::pin(self.verify(token, now))
    }

    /// A caller without a token signs in, asking for the scopes that grant `abilities` when some do;
    /// one whose scopes do not grant them is told the scopes that do, when some do.
    fn step_up(&self, caller: &Caller, abilities: &[String]) -> Option<Refusal> {
        let scopes = self.grants().map.scopes_granting(abilities);
        if caller.is_anonymous() {
            return Some(scopes.map_or(Refusal::Missing, Refusal::SignIn));
        }
        scopes.map(Refusal::InsufficientScope)
    }

    fn steps_up(&self) -> bool {
        true
    }

    fn serves(&self, registry: &Registry) {
        let _ = self.registry.set(registry.clone());
    }
}

impl fmt::Debug for TokenVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let issuers: Vec<&str> = (self.issuers.iter())
            .map(|i| i.keys.discovery.issuer())
            .collect();
        f.debug_struct("TokenVerifier")
            .field("resource", &self.resource)
            .field("issuers", &issuers)
            .field("audiences", &self.audiences)
            .finish_non_exhaustive()
    }
}
