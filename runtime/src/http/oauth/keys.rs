//! An issuer's signing keys (its JWKS), found through its metadata ([`Discovery`]): fetched on first
//! use, kept for an hour and then fetched again behind the calls they serve, fetched at once when a token
//! names a key the set lacks (a rotation), but never twice within a floor, and kept serving while the
//! issuer is down.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;
use tokio::sync::{Mutex, MutexGuard};

use crate::http::Refusal;
use crate::oauth::Discovery;

/// How long a fetched key set is used before it is fetched again.
const FRESH_FOR: Duration = Duration::from_secs(3600);

/// The most keys kept of one set (real sets hold two or three).
const MAX_KEYS: usize = 64;

/// The longest key id kept.
const MAX_KID: usize = 256;

/// A key that verifies tokens, and the one algorithm its set allows it, when the set says.
pub(super) struct Key {
    pub(super) decoding: DecodingKey,
    pub(super) algorithm: Option<Algorithm>,
}

/// One fetch's keys, by id; a key without an id is kept aside, for tokens that name none.
#[derive(Default)]
struct KeySet {
    by_id: HashMap<String, Arc<Key>>,
    unnamed: Vec<Arc<Key>>,
    /// When they were fetched; never, for the empty set kept before the first fetch.
    fetched: Option<Instant>,
}

impl KeySet {
    /// The key a token names, or the only unnamed key for a token that names none.
    fn find(&self, kid: Option<&str>) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => self.by_id.get(kid).cloned(),
            None => match self.unnamed.as_slice() {
                [only] => Some(only.clone()),
                _ => None,
            },
        }
    }

    /// The signing keys of a JWKS document. A key that cannot verify a signature this server accepts
    /// is left out: an encryption key, a symmetric key (a published secret is no secret), a key of an
    /// algorithm or type not supported, or one the crate cannot read.
    fn read(document: JwksDocument) -> Self {
        let mut set = KeySet::default();
        for value in document.keys.into_iter().take(MAX_KEYS) {
            let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
                continue;
            };
            if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption))
                || matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_))
            {
                continue;
            }
            let algorithm = match &jwk.common.key_algorithm {
                None => None,
                Some(named) => match named.to_string().parse::<Algorithm>() {
                    Ok(algorithm) if super::ACCEPTED.contains(&algorithm) => Some(algorithm),
                    _ => continue,
                },
            };
            let Ok(decoding) = DecodingKey::from_jwk(&jwk) else {
                continue;
            };
            let key = Arc::new(Key {
                decoding,
                algorithm,
            });
            match jwk.common.key_id {
                Some(kid) if kid.len() <= MAX_KID => {
                    set.by_id.insert(kid, key);
                }
                Some(_) => {}
                None => set.unnamed.push(key),
            }
        }
        set.fetched = Some(Instant::now());
        set
    }
}

#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<serde_json::Value>,
}

/// The keys of one issuer.
pub(super) struct IssuerKeys {
    /// Where the issuer's key set is.
    pub(super) discovery: Arc<Discovery>,
    keys: ArcSwap<KeySet>,
    /// When a fetch was last started; held while one runs, so that one runs at a time.
    last_fetch: Mutex<Option<Instant>>,
}

impl IssuerKeys {
    pub(super) fn new(discovery: Arc<Discovery>) -> Self {
        IssuerKeys {
            discovery,
            keys: ArcSwap::default(),
            last_fetch: Mutex::new(None),
        }
    }

    /// The key `kid` names. A stale set serves and is fetched again behind the call; a key the set
    /// lacks is fetched for at once, unless the last fetch was within `floor`.
    ///
    /// # Errors
    /// `Invalid` when the issuer does not publish the key; `Unavailable` when no key set could be
    /// fetched yet.
    pub(super) async fn key(
        self: &Arc<Self>,
        kid: Option<&str>,
        floor: Duration,
    ) -> Result<Arc<Key>, Refusal> {
        let keys = self.keys.load();
        if let Some(key) = keys.find(kid) {
            if keys
                .fetched
                .is_some_and(|fetched| fetched.elapsed() > FRESH_FOR)
            {
                let this = Arc::clone(self);
                tokio::spawn(async move {
                    if let Ok(last) = this.last_fetch.try_lock() {
                        this.refresh_under(last, floor).await;
                    }
                });
            }
            return Ok(key);
        }
        self.refresh(floor).await;
        let keys = self.keys.load();
        if keys.fetched.is_none() {
            return Err(Refusal::Unavailable(
                "the issuer's signing keys are out of reach".into(),
            ));
        }
        keys.find(kid).ok_or_else(|| {
            Refusal::Invalid(match kid {
                Some(_) => "the token is signed by a key its issuer does not publish".into(),
                None => "the token names no key (`kid`), and its issuer publishes several".into(),
            })
        })
    }

    /// Fetches the key set again unless a fetch started within `floor`, after the one running, if any;
    /// a fetch that fails keeps the keys there are.
    async fn refresh(&self, floor: Duration) {
        self.refresh_under(self.last_fetch.lock().await, floor)
            .await;
    }

    /// [`refresh`](Self::refresh), with the fetch's lock held.
    async fn refresh_under(&self, mut last: MutexGuard<'_, Option<Instant>>, floor: Duration) {
        if last.is_some_and(|started| started.elapsed() < floor) {
            return;
        }
        *last = Some(Instant::now());
        match self.fetch().await {
            Ok(keys) => self.keys.store(Arc::new(keys)),
            Err(problem) => tracing::warn!(
                issuer = %self.discovery.issuer(),
                "toolgate: cannot fetch the issuer's signing keys: {problem}"
            ),
        }
    }

    async fn fetch(&self) -> Result<KeySet, String> {
        let endpoints = self.discovery.endpoints().await?;
        let jwks_uri = (endpoints.jwks_uri.as_ref())
            .ok_or("the issuer's metadata names no key set (`jwks_uri`)")?;
        let document = (self.discovery.fetcher())
            .json::<JwksDocument>(jwks_uri)
            .await?;
        Ok(KeySet::read(document))
    }
}
