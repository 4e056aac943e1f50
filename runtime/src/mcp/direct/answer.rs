//! An answer as the direct loops write it: mostly text of its own, but a listing of every tool shares the
//! text its snapshot keeps, so that a long listing is written out without being copied first.

use bytes::{Buf, Bytes};

/// An answer as JSON text: what was written of it and, for a listing of every tool, the listing's
/// `result` as its snapshot keeps it, which the answer's closing brace follows.
pub(crate) struct Answer {
    written: Vec<u8>,
    shared: Option<Bytes>,
}

impl Answer {
    /// The answer whose start is `written`, up to its `result`, and whose `result` is `shared`.
    pub(crate) fn around(written: Vec<u8>, shared: Bytes) -> Answer {
        Answer {
            written,
            shared: Some(shared),
        }
    }

    /// The answer in as many pieces as it has, for a writer that takes several at once.
    pub(crate) fn pieces(&self) -> impl Buf + '_ {
        let (shared, end): (&[u8], &[u8]) = match &self.shared {
            Some(shared) => (shared, b"}"),
            None => (&[], &[]),
        };
        self.written.as_slice().chain(shared).chain(end)
    }

    /// The answer in one piece.
    pub(crate) fn into_vec(self) -> Vec<u8> {
        let Some(shared) = self.shared else {
            return self.written;
        };
        let mut whole = self.written;
        whole.reserve_exact(shared.len() + 1);
        whole.extend_from_slice(&shared);
        whole.push(b'}');
        whole
    }
}

impl From<Vec<u8>> for Answer {
    /// An answer written whole.
    fn from(written: Vec<u8>) -> Answer {
        Answer {
            written,
            shared: None,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::IoSlice;

    use super::*;

    #[test]
    fn a_listing_goes_out_as_its_own_piece_between_the_envelope_and_the_brace() {
        let listing = Bytes::from_static(br#"{"tools":[]}"#);
        let answer = Answer::around(
            br#"{"jsonrpc":"2.0","id":7,"result":"#.to_vec(),
            listing.clone(),
        );
        {
            let pieces = answer.pieces();
            let mut slices = [IoSlice::new(&[]); 4];
            assert_eq!(pieces.chunks_vectored(&mut slices), 3);
            assert_eq!(
                slices[1].as_ptr(),
                listing.as_ptr(),
                "the listing was copied"
            );
        }
        let whole = answer.into_vec();
        let parsed: serde_json::Value = serde_json::from_slice(&whole).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}})
        );
    }
}
