//! Random bytes from the operating system, and the hex that ids and digests are written in.

use std::fmt::Write as _;

/// `N` bytes from the operating system's generator.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    if let Err(error) = getrandom::fill(&mut bytes) {
        // Without randomness no token can be trusted; there is no safe way to go on.
        panic!("the operating system gave no random bytes: {error}");
    }
    bytes
}

/// A new random id: 128 bits in hex.
pub(crate) fn random_id() -> String {
    hex(&random_bytes::<16>())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
