//! Text that a client or a remote server chose: [`Ident`], the one type for every name they give us
//! (callers, sub-agents, roles, profiles, abilities, tool names), and [`shown`], the one way what they
//! wrote is printed for people (previews, the operator's commands, errors and logs).
//!
//! Neither trusts the text: an identifier is refused at the door when it could hide what it says, and
//! what is shown writes every character that hides itself as a visible escape.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

/// The longest identifier, in bytes: MCP's limit for tool names.
///
/// ```
/// assert_eq!(toolgate::text::MAX_IDENT, 128);
/// ```
pub const MAX_IDENT: usize = 128;

/// A name a client or a remote server gave: 1 to [`MAX_IDENT`] bytes of printable text, with no control,
/// bidirectional or invisible format character, no leading or trailing space, and no `<` (which
/// separates a delegated caller from whom it acts for when they are printed: `max < vera`).
///
/// Every door where such a name comes in checks it with this type: `POST /delegations`, delegation
/// tokens, the caller an [`Authenticator`](crate::http::Authenticator) returns, and a remote server's
/// tool names. Deserializing one checks it too.
///
/// ```
/// use toolgate::text::Ident;
///
/// assert_eq!(Ident::new("max@shop.example")?.as_str(), "max@shop.example");
/// let forged = Ident::new("vera\ndone  max@shop.example  approve").unwrap_err();
/// assert_eq!(
///     forged.to_string(),
///     "`vera\\u{a}done  max@shop.example  approve` is not accepted as a name: it has the control \
///      character U+000A. A name is 1 to 128 bytes of printable text, without control, bidirectional \
///      or invisible characters, spaces at its ends, or `<`"
/// );
/// assert!(Ident::new("vera\u{202e}elpmaxe").is_err(), "a bidirectional override");
/// assert!(Ident::new("x".repeat(129)).is_err());
/// assert!(Ident::new("max < vera").is_err(), "the chain's separator");
/// # Ok::<(), toolgate::text::IdentError>(())
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Ident(Box<str>);

/// Why a text is not an [`Ident`]; it shows the text escaped and cut to a sane length.
///
/// ```
/// let error = toolgate::text::Ident::new("a\u{7}").unwrap_err();
/// assert!(error.to_string().starts_with("`a\\u{7}` is not accepted as a name: it has the control"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentError {
    shown: String,
    problem: Problem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    Empty,
    TooLong(usize),
    Hidden(char),
    Spaced,
    Separator,
}

impl Ident {
    /// `text` as an identifier.
    ///
    /// # Errors
    /// When it is empty or blank, longer than [`MAX_IDENT`] bytes, starts or ends with a space, or has a
    /// character that hides itself (see [`shown`]) or a `<`.
    pub fn new(text: impl Into<String>) -> Result<Self, IdentError> {
        let text = text.into();
        Self::check(&text)?;
        Ok(Ident(text.into_boxed_str()))
    }

    /// Whether `text` would make an identifier: [`new`](Self::new) without keeping it.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn check(text: &str) -> Result<(), IdentError> {
        let problem = if text.trim().is_empty() {
            Some(Problem::Empty)
        } else if text.len() > MAX_IDENT {
            Some(Problem::TooLong(text.len()))
        } else if let Some(c) = text.chars().find(|&c| hides_itself(c)) {
            Some(Problem::Hidden(c))
        } else if text.trim() != text {
            Some(Problem::Spaced)
        } else if text.contains('<') {
            Some(Problem::Separator)
        } else {
            None
        };
        match problem {
            None => Ok(()),
            Some(problem) => Err(IdentError {
                shown: capped(&shown(text)).into_owned(),
                problem,
            }),
        }
    }

    /// The identifier as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Ident {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Ident {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl TryFrom<String> for Ident {
    type Error = IdentError;

    fn try_from(text: String) -> Result<Self, IdentError> {
        Ident::new(text)
    }
}

impl From<Ident> for String {
    fn from(ident: Ident) -> String {
        ident.0.into_string()
    }
}

impl fmt::Display for IdentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not accepted as a name: ", self.shown)?;
        match self.problem {
            Problem::Empty => f.write_str("it is empty")?,
            Problem::TooLong(len) => write!(f, "it is {len} bytes long")?,
            Problem::Hidden(c) => {
                let kind = if c.is_control() {
                    "control"
                } else {
                    "invisible or bidirectional"
                };
                write!(f, "it has the {kind} character U+{:04X}", u32::from(c))?;
            }
            Problem::Spaced => f.write_str("it starts or ends with a space")?,
            Problem::Separator => f.write_str("it has a `<`")?,
        }
        write!(
            f,
            ". A name is 1 to {MAX_IDENT} bytes of printable text, without control, bidirectional or \
             invisible characters, spaces at its ends, or `<`"
        )
    }
}

impl std::error::Error for IdentError {}

/// `text` as people are shown it: every character that changes how text looks without showing itself
/// (C0 and C1 controls, newlines and the escape of terminal sequences among them; bidirectional
/// controls; zero-width, tag and other invisible format characters; line and paragraph separators)
/// written out as a `\u{..}` escape, so that the text cannot forge a line, recolour a terminal or read
/// as something it does not say. Ordinary text is returned as it is, without a copy.
///
/// ```
/// use toolgate::text::shown;
///
/// assert_eq!(shown("Send 9999 EUR to \u{202e}10LN"), "Send 9999 EUR to \\u{202e}10LN");
/// assert_eq!(shown("ok\u{1b}[2K\nmax approved"), "ok\\u{1b}[2K\\u{a}max approved");
/// assert_eq!(shown("Überweise 5 € an Zoë"), "Überweise 5 € an Zoë");
/// ```
pub fn shown(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hides_itself) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hides_itself(c) {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` cut to [`MAX_IDENT`] characters, with a digest of the whole after a `…` when it was longer:
/// what a record keeps of a name a client chose, so that no name grows a row, a log line or an
/// answer, and two long names that differ past the cut still differ.
///
/// ```
/// use toolgate::text::capped;
///
/// assert_eq!(capped("search_orders"), "search_orders");
/// let long = "x".repeat(1 << 20);
/// let kept = capped(&long);
/// assert!(kept.starts_with(&"x".repeat(128)) && kept.len() < 160, "{kept}");
/// assert_ne!(kept, capped(&format!("{long}y")));
/// ```
pub fn capped(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(MAX_IDENT) {
        None => Cow::Borrowed(text),
        Some((cut, _)) => {
            let digest = digest(text);
            Cow::Owned(format!("{}…{}", &text[..cut], &digest[..16]))
        }
    }
}

/// The SHA-256 of `text`, in hex: what stands for a text too long to keep, and the digest of a call's
/// canonical arguments.
pub(crate) fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::random::hex(&Sha256::digest(text.as_bytes()))
}

/// Whether `c` changes how text looks without showing itself: C0 and C1 controls, the soft hyphen,
/// bidirectional marks, embeddings, overrides and isolates, zero-width and other invisible format
/// characters, the line and paragraph separators, interlinear annotations and tag characters.
pub(crate) fn hides_itself(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{ad}'
                | '\u{34f}'
                | '\u{61c}'
                | '\u{115f}'..='\u{1160}'
                | '\u{17b4}'..='\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_kind_of_bad_name_is_refused_with_its_reason_and_good_ones_pass() {
        let refused = |text: &str| Ident::new(text).unwrap_err().to_string();
        assert!(refused("").contains("it is empty"));
        assert!(refused("   ").contains("it is empty"));
        assert!(refused(&"a".repeat(129)).contains("129 bytes long"));
        assert!(refused("max\u{1b}[2K").contains("control character U+001B"));
        assert!(refused("a\u{85}b").contains("control character U+0085"));
        assert!(refused("vera\u{202e}x").contains("bidirectional character U+202E"));
        assert!(refused("pay\u{200b}pal").contains("U+200B"));
        assert!(refused("tag\u{e0041}").contains("U+E0041"));
        assert!(refused(" max").contains("spaces at its ends"));
        assert!(refused("max < vera").contains("has a `<`"));
        for good in [
            "ada",
            "max@shop.example",
            "Zoë Ørsted",
            "agent-7.planner",
            &"a".repeat(128),
        ] {
            assert_eq!(Ident::new(good).unwrap().as_str(), good);
        }
    }

    #[test]
    fn a_refusal_shows_the_text_escaped_and_bounded() {
        let huge = format!("\u{1b}]0;pwned\u{7}{}", "x".repeat(60_000));
        let message = Ident::new(huge).unwrap_err().to_string();
        assert!(
            message.starts_with("`\\u{1b}]0;pwned\\u{7}xxx"),
            "{message}"
        );
        assert!(message.len() < 500, "{} bytes", message.len());
        assert!(!message.chars().any(hides_itself));
    }

    #[test]
    fn deserializing_checks_the_name() {
        let ok: Ident = serde_json::from_str(r#""helper""#).unwrap();
        assert_eq!(ok.as_str(), "helper");
        let error = serde_json::from_str::<Ident>(r#""a\nb""#).unwrap_err();
        assert!(error.to_string().contains("U+000A"), "{error}");
        assert_eq!(serde_json::to_string(&ok).unwrap(), r#""helper""#);
    }
}
