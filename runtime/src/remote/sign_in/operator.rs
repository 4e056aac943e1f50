//! An operator signs the gateway in to a server once: the gateway asks the server's authorization
//! server for an authorization code with PKCE, the operator's browser brings it back to the gateway's
//! callback, and the refresh token it is spent for is kept in the records database, encrypted under
//! the key ring, for every replica. A sign-in begun waits ten minutes and is finished once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use serde::{Deserialize, Serialize};

use crate::confirm::KeyRing;
use crate::store::SignInStore;

use super::grant::Token;
use super::registration::{Method, Registered};

/// How long a sign-in begun waits for the operator to come back.
const BEGUN_FOR: Duration = Duration::from_secs(600);

/// How long a person's grant is kept without being renewed (without their calling the server).
const PERSON_IDLE: Duration = Duration::from_secs(90 * 24 * 3600);

/// How long one replica may take to renew a sign-in before another may: longer than a token request.
const RENEWING_FOR: Duration = Duration::from_secs(10);

/// Where a registry keeps its sign-ins: the records database, and the key ring that encrypts them.
#[derive(Clone)]
pub(crate) struct Vault {
    pub(crate) store: Arc<dyn SignInStore>,
    pub(crate) keys: Arc<ArcSwap<KeyRing>>,
}

/// A sign-in begun, kept until the operator comes back: everything the code is spent with.
#[derive(Serialize, Deserialize)]
pub(crate) struct Begun {
    pub(super) issuer: String,
    pub(super) legacy: bool,
    pub(super) resource: String,
    pub(super) client: Option<Client>,
    pub(super) state: String,
    pub(super) verifier: String,
    pub(super) scopes: Vec<String>,
    /// The person who signs in for their own calls, or none for an operator's sign-in.
    #[serde(default)]
    pub(super) person: Option<String>,
}

impl Begun {
    /// Whether a person began it, for their own calls.
    pub(crate) fn is_personal(&self) -> bool {
        self.person.is_some()
    }
}

/// Whose grant the records keep: the gateway's, by an operator's sign-in, or a person's own.
pub(super) enum Holder<'a> {
    Operator,
    Person(&'a str),
}

impl Holder<'_> {
    /// The key its grant is kept under: the server's label, or the label and the digest of the person's
    /// id (a label has no `#`).
    pub(super) fn key(&self, label: &str) -> String {
        match self {
            Holder::Operator => label.to_owned(),
            Holder::Person(id) => format!("{label}#{}", digest(id)),
        }
    }

    pub(super) fn who(&self) -> &'static str {
        match self {
            Holder::Operator => "an operator",
            Holder::Person(_) => "you",
        }
    }

    pub(super) fn whose(&self) -> &'static str {
        match self {
            Holder::Operator => "the operator's",
            Holder::Person(_) => "your",
        }
    }

    /// What to do when its grant is gone.
    pub(super) fn again(&self, label: &str) -> String {
        match self {
            Holder::Operator => format!(
                "an operator must sign the gateway in again (`toolgate servers sign-in {label}`)"
            ),
            Holder::Person(_) => {
                "call the tool again to be given the address where you sign in again".to_owned()
            }
        }
    }
}

/// An operator's sign-in to a server, as kept: the authorization server, the client the gateway
/// registered there (none when the operator named one), the grant, and the last token it gave with
/// when to renew it, so that every replica uses it and one renews it.
#[derive(Serialize, Deserialize)]
pub(super) struct Grant {
    pub(super) issuer: String,
    pub(super) legacy: bool,
    pub(super) resource: String,
    pub(super) client: Option<Client>,
    pub(super) refresh: String,
    pub(super) scopes: Vec<String>,
    pub(super) access: Option<String>,
    pub(super) renew_at_ms: u64,
}

impl Grant {
    /// Its token, while it is not due.
    pub(super) fn token(&self) -> Option<Token> {
        let now = crate::store::unix_ms();
        let access = self.access.as_ref().filter(|_| now < self.renew_at_ms)?;
        Some(Token {
            value: access.clone(),
            renew_at: Instant::now() + Duration::from_millis(self.renew_at_ms - now),
            proof: None,
        })
    }

    /// Keeps `token` as its token.
    pub(super) fn keep_token(&mut self, token: &Token) {
        let left = token.renew_at.saturating_duration_since(Instant::now());
        self.access = Some(token.value.clone());
        self.renew_at_ms = crate::store::unix_ms() + u64::try_from(left.as_millis()).unwrap_or(0);
    }
}

/// A client the gateway registered, as kept.
#[derive(Serialize, Deserialize, Clone)]
pub(super) struct Client {
    id: String,
    secret: Option<String>,
    method: String,
}

impl From<&Registered> for Client {
    fn from(registered: &Registered) -> Self {
        Client {
            id: registered.id.clone(),
            secret: registered.secret.clone(),
            method: registered.method.name().to_owned(),
        }
    }
}

impl Client {
    pub(super) fn registered(&self) -> Option<Registered> {
        Some(Registered {
            id: self.id.clone(),
            secret: self.secret.clone(),
            method: Method::named(&self.method)?,
        })
    }
}

impl Vault {
    /// Keeps `begun` for the server `label` under the digest of its state.
    pub(super) async fn begin(&self, label: &str, begun: &Begun) -> Result<(), String> {
        let sealed = self.seal(&begun_context(label), begun)?;
        let expires = crate::store::unix_ms() + u64::try_from(BEGUN_FOR.as_millis()).unwrap_or(0);
        (self
            .store
            .begin_sign_in(&digest(&begun.state), label, &sealed, expires)
            .await)
            .map_err(|error| error.to_string())
    }

    /// The sign-in begun with `state`, taken once: its server's label, and what it was begun with.
    pub(crate) async fn finish(&self, state: &str) -> Result<(String, Begun), String> {
        let taken =
            (self.store.finish_sign_in(&digest(state)).await).map_err(|error| error.to_string())?;
        let Some((label, sealed)) = taken else {
            return Err(
                "this sign-in is unknown, was finished already, or waited too long; begin it again"
                    .into(),
            );
        };
        let begun: Begun = self.open(&begun_context(&label), &sealed)?;
        Ok((label, begun))
    }

    /// The grant kept for the server `label`.
    pub(super) async fn grant(&self, label: &str) -> Result<Option<Grant>, String> {
        let sealed = (self.store.sign_in(label).await).map_err(|error| error.to_string())?;
        sealed
            .map(|sealed| self.open(&grant_context(label), &sealed))
            .transpose()
    }

    /// Forgets the people's grants for the server `label` that none of their calls renewed for
    /// [`PERSON_IDLE`].
    pub(super) async fn forget_idle(&self, label: &str) -> Result<(), String> {
        let mut pattern = String::with_capacity(label.len() + 4);
        for c in label.chars() {
            if matches!(c, '\\' | '%' | '_') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern.push_str("#%");
        let before = crate::store::unix_ms()
            .saturating_sub(u64::try_from(PERSON_IDLE.as_millis()).unwrap_or(0));
        (self.store.forget_idle_sign_ins(&pattern, before).await).map_err(|error| error.to_string())
    }

    /// Takes the renewal of the sign-in to `label` for a while: whether no other replica holds it.
    pub(super) async fn lease(&self, label: &str) -> Result<bool, String> {
        let now = crate::store::unix_ms();
        let until = now + u64::try_from(RENEWING_FOR.as_millis()).unwrap_or(0);
        (self.store.lease_sign_in(label, until, now).await).map_err(|error| error.to_string())
    }

    /// Keeps `grant` for the server `label` (and gives its renewal back), or forgets it.
    pub(super) async fn keep(&self, label: &str, grant: Option<&Grant>) -> Result<(), String> {
        let sealed = grant
            .map(|grant| self.seal(&grant_context(label), grant))
            .transpose()?;
        (self.store.keep_sign_in(label, sealed.as_deref()).await).map_err(|error| error.to_string())
    }

    fn seal<T: Serialize>(&self, context: &str, value: &T) -> Result<String, String> {
        let text = serde_json::to_vec(value).map_err(|error| error.to_string())?;
        Ok(self.keys.load().encrypt(&text, context))
    }

    fn open<T: for<'de> Deserialize<'de>>(&self, context: &str, sealed: &str) -> Result<T, String> {
        let text = (self.keys.load().decrypt(sealed, context)).ok_or_else(|| {
            "a sign-in kept in the records cannot be opened: no key of the ring sealed it for this server"
                .to_owned()
        })?;
        serde_json::from_slice(&text).map_err(|error| error.to_string())
    }
}

/// What a grant is sealed for: its server, so that one cannot be moved to another's row.
fn grant_context(label: &str) -> String {
    format!("toolgate sign-in: {label}")
}

fn begun_context(label: &str) -> String {
    format!("toolgate sign-in begun: {label}")
}

/// The digest a sign-in begun is kept under: its state is a secret of the person's browser.
fn digest(state: &str) -> String {
    use sha2::Digest as _;
    crate::random::hex(&sha2::Sha256::digest(state.as_bytes()))
}
