//! The names remote tools are served under: the server's label, `_`, then the remote name.

use crate::text::{capped, shown};
use crate::tool::is_tool_name;

/// What separates a server's label from its tool's own name; labels never contain it.
///
/// ```
/// assert_eq!(toolgate::remote::SEPARATOR, '_');
/// ```
pub const SEPARATOR: char = '_';

/// The longest name the model APIs take (OpenAI, Anthropic and Gemini alike).
pub(crate) const MAX_NAME: usize = 64;

/// The name `remote` of the server `label` is served under, or why it cannot be served.
pub(crate) fn served_name(label: &str, remote: &str) -> Result<String, String> {
    let name = format!("{label}{SEPARATOR}{remote}");
    // The remote's name as an operator reads it: its own text, escaped and bounded.
    let shown = capped(&shown(remote)).into_owned();
    if !is_tool_name(&name) {
        Err(format!(
            "the tool `{shown}` of the server `{label}` is not served: its name has characters outside \
             MCP's letters, digits, `_`, `-` and `.`"
        ))
    } else if name.len() > MAX_NAME {
        Err(format!(
            "the tool `{shown}` of the server `{label}` is not served: its served name is {} characters, \
             past the {MAX_NAME} the model APIs take; give the server a shorter label",
            name.len()
        ))
    } else {
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use super::served_name;

    #[test]
    fn names() {
        assert_eq!(
            served_name("hawki", "rag-search").unwrap(),
            "hawki_rag-search"
        );
        assert!(
            served_name("x", "has space")
                .unwrap_err()
                .contains("characters outside")
        );
        let long = "a".repeat(63);
        assert!(
            served_name("x", &long)
                .unwrap_err()
                .contains("is 65 characters")
        );
        assert!(served_name("x", &"a".repeat(62)).is_ok());
    }
}
