//! A child server's standard output, read with every JSON value nested deeper than [`MAX_DEPTH`]
//! replaced by `0`: a message nested past the parser's limit would otherwise be dropped whole (and its
//! request wait for its timeout), so that one tool with an absurd schema took its server's whole listing
//! down. Cut this way the message parses, and the tool whose schema was cut is refused on its own.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// The deepest a value in a message from a child server may nest: well above what a served tool's
/// schema may ([`MAX_SCHEMA_DEPTH`](super::tools::MAX_SCHEMA_DEPTH), so such a tool is refused with its
/// depth named), and well below serde_json's limit of 128.
pub(crate) const MAX_DEPTH: usize = 64;

/// Reads `inner`, newline-delimited JSON, cutting what nests too deep.
pub(crate) struct Shallow<R> {
    inner: R,
    scan: Scan,
}

impl<R> Shallow<R> {
    pub(crate) fn new(inner: R) -> Self {
        Shallow {
            inner,
            scan: Scan::default(),
        }
    }
}

/// Where the reading is in the current line.
#[derive(Debug, Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// The depth a value being cut started at.
    cutting: Option<usize>,
}

impl Scan {
    /// Cuts `bytes` in place; how many are kept. Never more than were read: a cut value of at least two
    /// bytes (`{}`) becomes one (`0`).
    fn cut(&mut self, bytes: &mut [u8]) -> usize {
        let mut kept = 0;
        for i in 0..bytes.len() {
            let byte = bytes[i];
            if byte == b'\n' {
                // Each message is one line: whatever the line held, the next one starts afresh.
                *self = Scan::default();
                bytes[kept] = byte;
                kept += 1;
                continue;
            }
            let keep = self.step(byte);
            if let Some(out) = keep {
                bytes[kept] = out;
                kept += 1;
            }
        }
        kept
    }

    /// What `byte` becomes: itself, `0` where a value too deep starts, or nothing while it is cut.
    fn step(&mut self, byte: u8) -> Option<u8> {
        let cutting = self.cutting.is_some();
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if byte == b'\\' {
                self.escaped = true;
            } else if byte == b'"' {
                self.in_string = false;
            }
            return (!cutting).then_some(byte);
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => {
                if !cutting && self.depth == MAX_DEPTH {
                    self.cutting = Some(self.depth);
                    self.depth += 1;
                    return Some(b'0');
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.cutting == Some(self.depth) {
                    self.cutting = None;
                    return None;
                }
            }
            _ => {}
        }
        (!cutting).then_some(byte)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Shallow<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let start = buf.filled().len();
        loop {
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let read = buf.filled().len() - start;
            if read == 0 {
                return Poll::Ready(Ok(()));
            }
            let kept = this.scan.cut(&mut buf.filled_mut()[start..]);
            buf.set_filled(start + kept);
            if kept > 0 {
                return Poll::Ready(Ok(()));
            }
            // Everything read was cut: read on, since no bytes would read as the end.
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn cut(text: &str) -> String {
        let mut scan = Scan::default();
        let mut bytes = text.as_bytes().to_vec();
        let kept = scan.cut(&mut bytes);
        String::from_utf8(bytes[..kept].to_vec()).unwrap()
    }

    #[test]
    fn values_past_the_depth_become_zero_and_the_rest_is_kept() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let line = format!(
            r#"{{"id":1,"result":{{"tools":[{{"name":"deep","s":{deep}}},{{"name":"fine"}}]}}}}"#
        );
        let both = cut(&format!("{line}\n{line}\n"));
        let mut lines = both.lines();
        for _ in 0..2 {
            let value: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            assert_eq!(value["result"]["tools"][1]["name"], "fine");
            assert_eq!(value["id"], 1);
        }
        let shallow = r#"{"a":[{"b":"[[[{{{ \" ]]"}],"c":{}}"#;
        assert_eq!(cut(shallow), shallow, "brackets in strings are text");
    }

    #[test]
    fn a_line_that_breaks_off_leaves_the_next_one_whole() {
        let broken = format!("{{\"a\":{}\n", "[".repeat(100));
        assert_eq!(
            cut(&format!("{broken}{{\"ok\":true}}\n")).lines().last(),
            Some(r#"{"ok":true}"#)
        );
    }
}
