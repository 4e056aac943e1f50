//! Secrets kept sealed under the [`KeyRing`]: encrypted with AES-256-GCM under a key derived from the
//! ring's sealing key, bound to what they are for (so that one cannot be moved to another's place), and
//! opened by any key still in the ring.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use super::KeyRing;

/// The version tag every encrypted secret starts with.
const TAG: &str = "tge1";

/// What a ring's key is stretched with to make the encryption key: never the key that seals
/// confirmations itself.
pub(super) const PURPOSE: &[u8] = b"toolgate: secrets at rest, AES-256-GCM, v1";

impl KeyRing {
    /// `secret`, encrypted with the current key and bound to `context`: `tge1.<key id>.<nonce and
    /// ciphertext>`, URL-safe.
    pub(crate) fn encrypt(&self, secret: &[u8], context: &str) -> String {
        let (id, key) = self.sealing_key();
        let nonce = crate::random::random_bytes::<NONCE_LEN>();
        let mut sealed = secret.to_vec();
        cipher(&key)
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut sealed,
            )
            .unwrap_or_else(|_| unreachable!("AES-GCM seals any message this size"));
        let mut body = nonce.to_vec();
        body.extend_from_slice(&sealed);
        format!("{TAG}.{id}.{}", URL_SAFE_NO_PAD.encode(body))
    }

    /// The secret `encrypted` holds, when a key of this ring encrypted it for `context` and it was not
    /// altered.
    pub(crate) fn decrypt(&self, encrypted: &str, context: &str) -> Option<Vec<u8>> {
        let mut parts = encrypted.splitn(3, '.');
        let (version, id, body) = (parts.next()?, parts.next()?, parts.next()?);
        if version != TAG {
            return None;
        }
        let key = self.derived(id)?;
        let body = URL_SAFE_NO_PAD.decode(body).ok()?;
        let (nonce, sealed) = body.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let opened = cipher(&key)
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut sealed)
            .ok()?;
        Some(opened.to_vec())
    }
}

fn cipher(key: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(
        UnboundKey::new(&AES_256_GCM, key)
            .unwrap_or_else(|_| unreachable!("a 32-byte key is an AES-256 key")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_opens_only_for_its_context_unaltered_and_under_a_key_of_the_ring() {
        let old = KeyRing::new("k1", [1u8; 32]).unwrap();
        let sealed = old.encrypt(b"refresh-token", "sign-in:orders");
        assert!(!sealed.contains("refresh"));
        assert_eq!(
            old.decrypt(&sealed, "sign-in:orders").unwrap(),
            b"refresh-token"
        );
        assert!(
            old.decrypt(&sealed, "sign-in:wiki").is_none(),
            "moved to another server"
        );
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 2;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        assert!(
            old.decrypt(&String::from_utf8(altered).unwrap(), "sign-in:orders")
                .is_none()
        );
        let rotated = KeyRing::new("k2", [2u8; 32])
            .unwrap()
            .with_previous("k1", [1u8; 32])
            .unwrap();
        assert_eq!(
            rotated.decrypt(&sealed, "sign-in:orders").unwrap(),
            b"refresh-token"
        );
        assert!(
            KeyRing::new("k2", [2u8; 32])
                .unwrap()
                .decrypt(&sealed, "sign-in:orders")
                .is_none()
        );
        assert_ne!(
            old.encrypt(b"x", "c"),
            old.encrypt(b"x", "c"),
            "a fresh nonce each time"
        );
        for garbage in [
            "",
            "tge1",
            "tge1.k1",
            "tge1.k1.",
            "tge1.k1.AAAA",
            "tg1.k1.AAAA",
        ] {
            assert!(old.decrypt(garbage, "c").is_none());
        }
    }
}
