//! [`KeyRing`]: the keys that seal confirmations and request states.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The version tag every sealed token starts with.
const TAG: &str = "tg1";

/// The shortest secret accepted, in bytes.
const MIN_SECRET: usize = 32;

/// The keys that seal confirmations: one current key that seals, and previous ones that still open what they
/// sealed, so keys rotate without breaking pending confirmations. Replicas that share a ring accept each
/// other's confirmations.
///
/// A seal is an HMAC-SHA256 over the token's payload; the payload (tool, caller, arguments, expiry) is
/// readable by whoever holds the token but cannot be changed without the key.
///
/// ```
/// use toolgate::confirm::KeyRing;
///
/// // Rotation: "k2" seals from now on, "k1" still opens what it sealed.
/// let ring = KeyRing::new("k2", [7u8; 32])?.with_previous("k1", [9u8; 32])?;
/// assert_eq!(ring.current_id(), "k2");
///
/// // From the environment: `id:base64secret`, current key first.
/// let secret = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
/// let ring = KeyRing::parse(&format!("k2:{secret},k1:{secret}"))?;
/// assert_eq!(ring.current_id(), "k2");
/// # Ok::<(), toolgate::confirm::KeyError>(())
/// ```
#[derive(Clone)]
pub struct KeyRing {
    /// The newest key first.
    keys: Vec<Key>,
}

#[derive(Clone)]
struct Key {
    id: String,
    secret: Vec<u8>,
    /// It seals from this time on (milliseconds since the Unix epoch), and opens at once: a rotated key
    /// reaches every replica before any of them seals with it.
    seals_from_ms: u64,
}

/// A key that cannot be used: too short, a bad id, or bad base64.
///
/// ```
/// use toolgate::confirm::KeyRing;
///
/// let short = KeyRing::new("k1", b"hunter2").unwrap_err();
/// assert_eq!(short.to_string(), "the secret of key `k1` has 7 bytes; use at least 32 random bytes");
/// assert!(KeyRing::parse("k1=secret").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError(String);

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeyError {}

impl std::fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.keys.iter().map(|key| key.id.as_str()).collect();
        f.debug_struct("KeyRing")
            .field("keys", &ids)
            .finish_non_exhaustive()
    }
}

impl KeyRing {
    /// A ring whose current key is `secret` (at least 32 bytes), named `id` (letters, digits, `-`, `_`).
    ///
    /// # Errors
    /// When the secret is shorter than 32 bytes or the id is empty or has other characters.
    pub fn new(id: impl Into<String>, secret: impl AsRef<[u8]>) -> Result<Self, KeyError> {
        Ok(KeyRing {
            keys: vec![checked(id.into(), secret.as_ref(), 0)?],
        })
    }

    /// Adds a previous key: it no longer seals, but opens what it sealed until that expires.
    ///
    /// # Errors
    /// As for [`new`](Self::new), and when the id is already in the ring.
    pub fn with_previous(
        self,
        id: impl Into<String>,
        secret: impl AsRef<[u8]>,
    ) -> Result<Self, KeyError> {
        self.push(checked(id.into(), secret.as_ref(), 0)?)
    }

    fn push(mut self, key: Key) -> Result<Self, KeyError> {
        if self.keys.iter().any(|known| known.id == key.id) {
            return Err(KeyError(format!("the key id `{}` is used twice", key.id)));
        }
        self.keys.push(key);
        Ok(self)
    }

    /// A new random key for a database, with its id (`db-` and the secret's first bytes in hex).
    #[cfg(database)]
    pub(crate) fn fresh() -> (String, [u8; 32]) {
        let secret = crate::confirm::random_bytes::<32>();
        (format!("db-{}", crate::random::hex(&secret[..4])), secret)
    }

    /// A ring with one random key: confirmations die with the process and other replicas refuse them.
    pub fn random() -> Self {
        let secret = crate::confirm::random_bytes::<32>();
        KeyRing {
            keys: vec![Key {
                id: "random".to_owned(),
                secret: secret.to_vec(),
                seals_from_ms: 0,
            }],
        }
    }

    /// Reads `id:base64secret` entries separated by commas, the current key first, as kept in an
    /// environment variable or a secret manager.
    ///
    /// # Errors
    /// When an entry has no `:`, bad base64, or fails the checks of [`new`](Self::new).
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let mut keys = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (id, secret) = entry.split_once(':').ok_or_else(|| {
                KeyError(format!("`{}…` is not `id:base64secret`", prefix(entry)))
            })?;
            let secret = STANDARD
                .decode(secret.trim())
                .map_err(|e| KeyError(format!("the secret of key `{id}` is not base64: {e}")))?;
            keys.push((id.to_owned(), secret, 0));
        }
        Self::from_newest(keys)
    }

    /// A ring of `keys` (id, secret, and when it starts sealing), newest first, as a database or a
    /// secret keeps them.
    ///
    /// # Errors
    /// When there are none, or one fails the checks of [`with_previous`](Self::with_previous).
    pub(crate) fn from_newest(
        keys: impl IntoIterator<Item = (String, Vec<u8>, u64)>,
    ) -> Result<Self, KeyError> {
        let mut ring: Option<KeyRing> = None;
        for (id, secret, seals_from_ms) in keys {
            let key = checked(id, &secret, seals_from_ms)?;
            ring = Some(match ring {
                None => KeyRing { keys: vec![key] },
                Some(ring) => ring.push(key)?,
            });
        }
        ring.ok_or_else(|| KeyError("no key given".to_owned()))
    }

    /// The id of the key that seals now.
    pub fn current_id(&self) -> &str {
        &self.sealing().id
    }

    /// Every key, newest first: its id, and when it seals from (milliseconds since the Unix epoch; 0 for
    /// a key that always did).
    ///
    /// ```
    /// use toolgate::confirm::KeyRing;
    ///
    /// let ring = KeyRing::new("k2", [7u8; 32])?.with_previous("k1", [9u8; 32])?;
    /// assert_eq!(ring.keys().collect::<Vec<_>>(), [("k2", 0), ("k1", 0)]);
    /// # Ok::<(), toolgate::confirm::KeyError>(())
    /// ```
    pub fn keys(&self) -> impl Iterator<Item = (&str, u64)> {
        self.keys.iter().map(|k| (k.id.as_str(), k.seals_from_ms))
    }

    /// The newest key whose time to seal has come (the oldest key, if none has).
    fn sealing(&self) -> &Key {
        let now = crate::confirm::unix_ms();
        self.keys
            .iter()
            .find(|key| key.seals_from_ms <= now)
            .unwrap_or_else(|| &self.keys[self.keys.len() - 1])
    }

    /// Seals `payload` with the current key: `tg1.<key id>.<payload>.<mac>`, URL-safe.
    pub(crate) fn seal(&self, payload: &[u8]) -> String {
        let Key { id, secret, .. } = self.sealing();
        let body = format!("{TAG}.{id}.{}", URL_SAFE_NO_PAD.encode(payload));
        let mac = mac(secret, body.as_bytes()).finalize().into_bytes();
        format!("{body}.{}", URL_SAFE_NO_PAD.encode(mac))
    }

    /// The payload of a token sealed by a key of this ring; `None` when it is malformed, sealed by an unknown
    /// key, or altered.
    pub(crate) fn open(&self, token: &str) -> Option<Vec<u8>> {
        let (body, tag) = token.rsplit_once('.')?;
        let mut parts = body.splitn(3, '.');
        let (version, id, payload) = (parts.next()?, parts.next()?, parts.next()?);
        if version != TAG {
            return None;
        }
        let Key { secret, .. } = self.keys.iter().find(|key| key.id == id)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        mac(secret, body.as_bytes()).verify_slice(&tag).ok()?;
        URL_SAFE_NO_PAD.decode(payload).ok()
    }
}

#[cfg(signs_in)]
impl KeyRing {
    /// The current key's id, and the encryption key derived from it.
    pub(super) fn sealing_key(&self) -> (&str, [u8; 32]) {
        let key = self.sealing();
        (&key.id, derive(&key.secret))
    }

    /// The encryption key derived from the key `id` of this ring.
    pub(super) fn derived(&self, id: &str) -> Option<[u8; 32]> {
        let key = self.keys.iter().find(|key| key.id == id)?;
        Some(derive(&key.secret))
    }
}

/// An encryption key from a ring's key: HMAC-SHA256 of a purpose of its own (a key-derivation step,
/// as HKDF's expand is), so that no key does two jobs.
#[cfg(signs_in)]
fn derive(secret: &[u8]) -> [u8; 32] {
    mac(secret, super::cipher::PURPOSE)
        .finalize()
        .into_bytes()
        .into()
}

fn mac(secret: &[u8], body: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(body);
    mac
}

fn checked(id: String, secret: &[u8], seals_from_ms: u64) -> Result<Key, KeyError> {
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(KeyError(format!(
            "the key id `{id}` must be letters, digits, `-` or `_`"
        )));
    }
    if secret.len() < MIN_SECRET {
        return Err(KeyError(format!(
            "the secret of key `{id}` has {} bytes; use at least {MIN_SECRET} random bytes",
            secret.len()
        )));
    }
    Ok(Key {
        id,
        secret: secret.to_vec(),
        seals_from_ms,
    })
}

fn prefix(entry: &str) -> &str {
    entry.get(..entry.len().min(8)).unwrap_or("")
}
