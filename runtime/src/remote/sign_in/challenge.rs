//! What a server's `WWW-Authenticate` challenge says (RFC 6750 §3, RFC 9728 §5.1): whether the token
//! lacks a scope, the scope it asks for, and where its protected resource metadata is. Only the
//! `Bearer` challenge is read, else the `DPoP` one (RFC 9449 §7.1), which asks for tokens bound to a key;
//! a header that cannot be read says nothing, and a scope that is no scope token (RFC 6749 §3.3) is not
//! believed.

/// The most scopes a challenge is read for: a server that names more is not believed past them.
const MAX_SCOPES: usize = 32;

/// A server's `Bearer` or `DPoP` challenge.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `error="insufficient_scope"`: the token is good, but not for this.
    pub(crate) insufficient_scope: bool,
    /// `error="use_dpop_nonce"`: the proof lacks the nonce the server's `DPoP-Nonce` header gives.
    pub(crate) use_dpop_nonce: bool,
    pub(crate) scope: Vec<String>,
    pub(crate) resource_metadata: Option<String>,
    /// It asks for a token bound to a key (a `DPoP` challenge, and no `Bearer` one).
    pub(crate) dpop: bool,
}

/// The challenge schemes read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Bearer,
    Dpop,
    Other,
}

impl Challenge {
    pub(crate) fn parse(header: &str) -> Self {
        let (mut bearer, mut dpop) = (None::<Challenge>, None::<Challenge>);
        let mut scheme = Scheme::Other;
        let mut rest = header.trim_start();
        while !rest.is_empty() {
            let end = rest
                .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
                .unwrap_or(rest.len());
            let name = &rest[..end];
            let after = rest[end..].trim_start();
            let Some(value) = after.strip_prefix('=') else {
                if !name.is_empty() {
                    scheme = match name {
                        _ if name.eq_ignore_ascii_case("bearer") => Scheme::Bearer,
                        _ if name.eq_ignore_ascii_case("dpop") => Scheme::Dpop,
                        _ => Scheme::Other,
                    };
                    match scheme {
                        Scheme::Bearer => bearer = bearer.or_else(|| Some(Challenge::default())),
                        Scheme::Dpop => dpop = dpop.or_else(|| Some(Challenge::default())),
                        Scheme::Other => {}
                    }
                }
                // Past the scheme's name, or a stray separator.
                rest = after.strip_prefix(',').unwrap_or(after).trim_start();
                if name.is_empty() && rest.len() == after.len() {
                    rest = &rest[rest.chars().next().map_or(0, char::len_utf8)..];
                }
                continue;
            };
            let (value, next) = parameter(value.trim_start());
            let read = match scheme {
                Scheme::Bearer => bearer.as_mut(),
                Scheme::Dpop => dpop.as_mut(),
                Scheme::Other => None,
            };
            if let Some(challenge) = read {
                challenge.read(name, value);
            }
            rest = next.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
        }
        match (bearer, dpop) {
            (Some(bearer), _) => bearer,
            (None, Some(dpop)) => Challenge { dpop: true, ..dpop },
            (None, None) => Challenge::default(),
        }
    }

    fn read(&mut self, name: &str, value: String) {
        match name.to_ascii_lowercase().as_str() {
            "error" => {
                self.insufficient_scope = value == "insufficient_scope";
                self.use_dpop_nonce = value == "use_dpop_nonce";
            }
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
    fn a_dpop_challenge_asks_for_a_bound_token_unless_bearer_is_offered_too() {
        let dpop = Challenge::parse(
            r#"DPoP error="use_dpop_nonce", resource_metadata="https://a.example/m", algs="ES256""#,
        );
        assert!(dpop.dpop && dpop.use_dpop_nonce);
        assert_eq!(
            dpop.resource_metadata.as_deref(),
            Some("https://a.example/m")
        );
        let both = Challenge::parse(r#"DPoP algs="ES256", Bearer scope=read"#);
        assert!(!both.dpop, "a server that takes bearer tokens is given one");
    }

    #[test]
    fn the_bearer_challenge_counts_first_and_nothing_loops() {
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
