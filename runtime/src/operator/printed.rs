//! How the command line prints: one line per record, profile or audit row, with every name another
//! party chose escaped and cut to a bounded length, so that no name forges a line; JSON with every
//! character that hides itself escaped.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::store::{AuditRecord, Profile, ToolRecord};
use crate::text::{capped, hides_itself, shown};

/// An audit row in one line: when, who (a delegated caller with whom it acted for; the actors of a
/// signed-in caller's token before it, and the client after it), what, how it ended, under which
/// revision. Every field is [shown](shown) escaped, so that no name forges a line.
pub(super) fn audit_line(row: &AuditRecord) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(row.at_ms);
    let revision = row
        .revision
        .map_or_else(|| "-".to_owned(), |r| r.to_string());
    format!(
        "{}  {:<24} {:<8} {:<24} {:<20} r{revision}\n",
        humantime::format_rfc3339_millis(at),
        signed_in(row),
        cell(&row.action),
        cell(&row.tool),
        cell(&row.outcome),
    )
}

/// A caller as the operator reads it: its id, then whom it acts for up to the person at the root
/// (`max@shop.example < vera@shop.example`).
fn who(caller: &str, on_behalf_of: &[String]) -> String {
    std::iter::once(caller)
        .chain(on_behalf_of.iter().map(String::as_str))
        .map(cell)
        .collect::<Vec<_>>()
        .join(" < ")
}

/// Who an audit row names: [`who`], with the actors of its token acting for it first (`agent-7 <
/// rita`), and the client it called through (`rita via claude`).
fn signed_in(row: &AuditRecord) -> String {
    let mut who = who(&row.caller, &row.on_behalf_of);
    if !row.actors.is_empty() {
        let actors: Vec<Cow<'_, str>> = row.actors.iter().map(|a| cell(a)).collect();
        who = format!("{} < {who}", actors.join(" < "));
    }
    if let Some(client) = &row.client {
        let _ = write!(who, " via {}", cell(client));
    }
    who
}

/// A name another party chose, as one field of a line the operator reads: escaped, and cut to a
/// bounded length.
pub(super) fn cell(text: &str) -> Cow<'_, str> {
    match capped(text) {
        Cow::Borrowed(text) => shown(text),
        Cow::Owned(cut) => Cow::Owned(shown(&cut).into_owned()),
    }
}

/// A message another party wrote (a remote server's error), as one line the operator reads: escaped,
/// and cut to a few hundred characters.
pub(super) fn message(text: &str) -> Cow<'_, str> {
    const LONGEST: usize = 400;
    let text = match text.char_indices().nth(LONGEST) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &text[..cut])),
        None => Cow::Borrowed(text),
    };
    match text {
        Cow::Borrowed(text) => shown(text),
        Cow::Owned(cut) => Cow::Owned(shown(&cut).into_owned()),
    }
}

/// `value` as one line of JSON: see [`json_text`].
pub(super) fn json_line(value: &Value) -> String {
    json_text(&value.to_string())
}

/// `value` as JSON over several lines: see [`json_text`].
pub(super) fn json_pretty(value: &impl serde::Serialize) -> String {
    json_text(&serde_json::to_string_pretty(value).unwrap_or_default())
}

/// JSON `text` in which every character that hides itself is a `\uXXXX` escape, so that a terminal
/// shows it as text, followed by a newline: the same value to a JSON reader.
pub(super) fn json_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if hides_itself(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out.push('\n');
    out
}

/// A time in milliseconds since the Unix epoch, as RFC 3339 to the second.
pub(super) fn rfc3339(ms: u64) -> humantime::Rfc3339Timestamp {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(ms))
}

/// A profile in one line: name, its tools (with a `*` where the assignment has settings), description.
pub(super) fn profile_line(profile: &Profile) -> String {
    let tools: Vec<String> = profile
        .tools
        .iter()
        .map(|(tool, a)| format!("{tool}{}", if a.settings.is_some() { "*" } else { "" }))
        .collect();
    format!(
        "{:<24} {:<48} {}\n",
        cell(&profile.name),
        cell(&tools.join(",")),
        message(&profile.description)
    )
}

/// A record in one line: name, switch, status, the abilities it needs, its settings.
pub(super) fn line(record: &ToolRecord) -> String {
    let mut abilities: Vec<&str> = record
        .declared_abilities
        .iter()
        .map(String::as_str)
        .collect();
    abilities.extend(record.required_abilities.iter().map(String::as_str));
    let abilities = if record.public && record.required_abilities.is_empty() {
        "public".to_owned()
    } else {
        abilities.join(",")
    };
    let settings = record
        .settings
        .as_ref()
        .map_or_else(String::new, Value::to_string);
    format!(
        "{:<28} {:<4} {:<8} {:<32} {}",
        cell(&record.name),
        if record.enabled { "on" } else { "off" },
        record.status.as_str(),
        shown(&abilities),
        shown(&settings),
    )
    .trim_end()
    .to_owned()
}
