//! What a server's `WWW-Authenticate` challenge says (RFC 6750 §3, RFC 9728 §5.1): whether the token
//! lacks a scope, the scope it asks for, and where its protected resource metadata is. Only the
//! `Bearer` challenge is read; a header that cannot be read says nothing, and a scope that is no scope
//! token (RFC 6749 §3.3) is not believed.

/// The most scopes a challenge is read for: a server that names more is not believed past them.
const MAX_SCOPES: usize = 32;

/// A server's `Bearer` challenge.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `error="insufficient_scope"`: the token is good, but not for this.
    pub(crate) insufficient_scope: bool,
    pub(crate) scope: Vec<String>,
    pub(crate) resource_metadata: Option<String>,
}

impl Challenge {
    pub(crate) fn parse(header: &str) -> Self {
        let mut challenge = Challenge::default();
        let mut bearer = false;
        let mut rest = header.trim_start();
        while !rest.is_empty() {
            let end = rest
                .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let name = &rest[..end];
            let after = rest[end..].trim_start();
            let Some(value) = after.strip_prefix('=') else {
                if !name.is_empty() {
                    bearer = name.eq_ignore_ascii_case("bearer");
                }
                // Past the scheme's name, or a stray separator.
                rest = after.strip_prefix(',').unwrap_or(after).trim_start();
                if name.is_empty() && rest.len() == after.len() {
                    rest = &rest[rest.chars().next().map_or(0, char::len_utf8)..];
                }
                continue;
            };
            let (value, next) = parameter(value.trim_start());
            if bearer {
                challenge.read(name, value);
            }
            rest = next.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
        challenge
    }

    fn read(&mut self, name: &str, value: String) {
        match name.to_ascii_lowercase().as_str() {
            "error" => self.insufficient_scope = value == "insufficient_scope",
            "scope" => {
                self.scope = value
                    .split_ascii_whitespace()
                    .filter(|scope| crate::store::is_scope(scope))
                    .take(MAX_SCOPES)
                    .map(str::to_owned)
                    .collect();
            }
            "resource_metadata" => self.resource_metadata = Some(value),
            _ => {}
        }
    }
}

/// A parameter's value at the start of `text`, a quoted string (its `\` escapes undone) or a token,
/// and what follows it.
fn parameter(text: &str) -> (String, &str) {
    let Some(quoted) = text.strip_prefix('"') else {
        let end = text
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(text.len());
        return (text[..end].to_owned(), &text[end..]);
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return (value, &quoted[at + 1..]),
            '\\' => value.extend(chars.next().map(|(_, escaped)| escaped)),
            c => value.push(c),
        }
    }
    (value, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_is_read_with_its_quoted_parameters() {
        let challenge = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp", error_description="needs \"write\"""#,
        );
        assert!(challenge.insufficient_scope);
        assert_eq!(challenge.scope, ["mcp:basic", "mcp:write"]);
        assert_eq!(
            challenge.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn only_the_bearer_challenge_counts_and_nothing_loops() {
        let challenge =
            Challenge::parse(r#"DPoP scope="other", Bearer scope=read , Basic realm="x""#);
        assert_eq!(challenge.scope, ["read"]);
        assert!(!challenge.insufficient_scope);
        for garbage in [
            "",
            ",,,",
            "=",
            "Bearer =",
            "Bearer scope=\"open",
            "\u{202e}==,,\"",
            "Basic abc==",
        ] {
            let _ = Challenge::parse(garbage);
        }
        let odd = Challenge::parse("Bearer scope=\"read \\\"x \u{202e}y write\"");
        assert_eq!(
            odd.scope,
            ["read", "write"],
            "no quotes, controls or bidi in a scope"
        );
        let long = format!("Bearer scope=\"{} read\"", "s".repeat(200));
        assert_eq!(Challenge::parse(&long).scope, ["read"]);
        let many = format!("Bearer scope=\"{}\"", "s ".repeat(10_000));
        assert_eq!(Challenge::parse(&many).scope.len(), MAX_SCOPES);
    }
}
