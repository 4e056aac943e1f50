//! A finished call's result, written byte for byte as rmcp writes it for the protocol versions the direct
//! loops serve, without building rmcp's types on the way: the structured value's JSON text, made once,
//! is both the first text block and `structuredContent`, and text is escaped in one pass. A structured
//! value held as the text its tool's data was written to keeps that text's field order in
//! `structuredContent`, where rmcp's `Value` would sort the fields.

use crate::output::result::structured_text;
use crate::output::{Content, ToolResult};

use super::super::convert;
use super::Era;

/// What `convert::call_result(Outcome::Done(result), structured_output)` answers, as JSON after the
/// envelope in `out`, in the shape rmcp writes for the request's `era`.
pub(super) fn write(out: &mut Vec<u8>, result: ToolResult, structured_output: bool, era: Era) {
    let ToolResult {
        content,
        structured,
        is_error,
        ..
    } = result;
    let text = structured_text(structured.as_ref(), &content);
    let start: &[u8] = match era {
        Era::PerRequest => br#"{"resultType":"complete","content":["#,
        Era::Session => br#"{"content":["#,
    };
    out.extend_from_slice(start);
    let mut first = true;
    let mut separate = |out: &mut Vec<u8>| {
        if !std::mem::take(&mut first) {
            out.push(b',');
        }
    };
    if let Some(text) = &text {
        separate(out);
        text_block(out, text);
    }
    for block in content {
        separate(out);
        match block {
            Content::Text { text } => text_block(out, &text),
            other => serde_json::to_writer(&mut *out, &convert::content(other))
                .expect("content blocks serialize"),
        }
    }
    out.push(b']');
    if let Some(value) = structured
        .as_ref()
        .filter(|value| structured_output && value.holds_object())
    {
        out.extend_from_slice(br#","structuredContent":"#);
        // The same value's JSON text, made once for the text block when there is one.
        out.extend_from_slice(text.unwrap_or_else(|| value.to_json()).as_bytes());
    }
    let end: &[u8] = if is_error {
        br#","isError":true}"#
    } else {
        br#","isError":false}"#
    };
    out.extend_from_slice(end);
}

/// A text block, as rmcp's `ContentBlock::text` serializes.
fn text_block(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(br#"{"type":"text","text":"#);
    string(out, text);
    out.push(b'}');
}

/// `text` as a JSON string, byte for byte as serde_json writes it: `"` and `\` after a backslash,
/// control characters as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00XX`, everything else as it is. The
/// bytes to escape are found eight at a time and the runs between them copied whole: for prose about a
/// quarter of serde_json's instructions, for JSON text (quotes every few bytes) about five sixths.
fn string(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    let mut rest = text.as_bytes();
    while let Some(at) = first_to_escape(rest) {
        let byte = rest[at];
        out.extend_from_slice(&rest[..at]);
        out.push(b'\\');
        match byte {
            b'"' | b'\\' => out.push(byte),
            b'\n' => out.push(b'n'),
            b'\r' => out.push(b'r'),
            b'\t' => out.push(b't'),
            0x08 => out.push(b'b'),
            0x0c => out.push(b'f'),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let (high, low) = (HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 15)]);
                out.extend_from_slice(&[b'u', b'0', b'0', high, low]);
            }
        }
        rest = &rest[at + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

/// Where the first byte JSON escapes (`"`, `\` or a control character) is in `bytes`. Eight bytes at a
/// time: each test flags the bytes that pass it in their high bit, and the lowest flag is exact (a
/// borrow only carries upward from a flagged byte).
fn first_to_escape(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = u64::from_le_bytes([0x80; 8]);
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH;
    let mut at = 0;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let flags = below(word, 0x20)
            | below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1);
        if flags != 0 {
            return Some(at + flags.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let escaped = |&b: &u8| b < 0x20 || b == b'"' || b == b'\\';
    bytes[at..].iter().position(escaped).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use rmcp::model::ServerResult;
    use serde_json::{Value, json};

    use super::*;
    use crate::error::ToolError;
    use crate::mcp::convert::CallAnswer;

    /// What rmcp writes for the same answer to a peer on 2026-07-28 (typed) or a version before it, as
    /// its dispatch shapes the result for each.
    fn as_rmcp_writes(result: ToolResult, structured_output: bool, era: Era) -> String {
        let answer = CallAnswer::Done {
            result,
            structured_output,
        };
        let mut result = ServerResult::from(answer.into_response());
        match era {
            Era::PerRequest => result.fill_missing_cache_hints(),
            Era::Session => {
                result.strip_result_type_for_legacy_peer();
                result.strip_non_object_output_for_legacy_peer();
            }
        }
        serde_json::to_string(&result).unwrap()
    }

    fn as_written(result: ToolResult, structured_output: bool, era: Era) -> String {
        let mut out = Vec::new();
        write(&mut out, result, structured_output, era);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_kind_of_result_is_written_as_rmcp_writes_it() {
        let awkward =
            "\"quoted\" \\ back\\slash\nnew line\ttab\r\u{8}\u{c}\u{1}\u{1f}\u{7f} é ✓ 𝄞 </script>";
        let rows = json!({
            "rows": [{ "name": awkward, "total": 194.7, "n": 3 }],
            "empty": {},
            "none": null,
        });
        let mut with_text = ToolResult::structured(rows.clone());
        with_text.content = vec![
            Content::text(awkward),
            Content::image([1, 2, 3], "image/png"),
        ];
        let mut failed = ToolResult::text(awkward);
        failed.is_error = true;
        let resource = ToolResult::success(vec![
            Content::resource_text("shop://orders/RO-1", "text/plain", awkward),
            Content::text(""),
        ]);
        let cases = [
            (ToolResult::structured(rows.clone()), true),
            (ToolResult::structured(rows), false),
            (ToolResult::structured(json!(42)), true),
            (ToolResult::structured(json!([awkward])), true),
            (ToolResult::structured(Value::Null), true),
            (with_text.clone(), true),
            (with_text, false),
            (failed, false),
            (ToolResult::error(&ToolError::new(awkward)), false),
            (resource, false),
            (ToolResult::success(Vec::new()), true),
            (ToolResult::text(awkward), true),
        ];
        for ((result, structured_output), era) in cases
            .into_iter()
            .flat_map(|case| [(case.clone(), Era::Session), (case, Era::PerRequest)])
        {
            let expected = as_rmcp_writes(result.clone(), structured_output, era);
            assert_eq!(as_written(result, structured_output, era), expected);
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = ["", "plain", "é✓𝄞\u{2028}", "a\"b\\c\nd"]
            .map(String::from)
            .into();
        texts.push((0u8..0x80).map(char::from).collect());
        // Every ASCII byte at every place in a word and the tail, and pairs of the bytes beside the tests'
        // edges, so that a flag or a borrow in the wrong place shows.
        for byte in (0u8..0x80).map(char::from) {
            for at in 0..18 {
                texts.push(format!("{}{byte}{}é", "x".repeat(at), "y".repeat(17 - at)));
            }
        }
        let edges = [
            '\0', '\u{1}', '\u{1f}', ' ', '!', '"', '#', '[', '\\', ']', '\u{7f}', 'é',
        ];
        for (first, second) in edges.iter().flat_map(|a| edges.iter().map(move |b| (a, b))) {
            for at in 0..9 {
                texts.push(format!(
                    "{}{first}{second}{}",
                    "x".repeat(at),
                    "z".repeat(9 - at)
                ));
            }
        }
        for text in texts {
            let mut out = Vec::new();
            string(&mut out, &text);
            assert_eq!(out, serde_json::to_vec(&text).unwrap(), "{text:?}");
        }
    }
}
