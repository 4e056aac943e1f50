//! Rate limits in the records: calls per time window, for every caller, for one tool, or for the callers
//! of one profile, set and removed by an operator while the server runs.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::record::{RecordError, RecordErrorKind};

/// The longest window a rate limit counts over: a day.
const LONGEST_WINDOW_SECS: u64 = 24 * 3600;

/// What a rate limit counts, written `caller`, `tool:NAME` or `profile:NAME`.
///
/// ```
/// use toolgate::store::Scope;
///
/// assert_eq!("tool:export_orders".parse::<Scope>()?, Scope::Tool("export_orders".into()));
/// assert_eq!(Scope::Caller.to_string(), "caller");
/// assert!("tools:x".parse::<Scope>().is_err());
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// Each caller's calls of any tool (a delegated caller's count against the person at its root).
    Caller,
    /// Each caller's calls of one tool.
    Tool(String),
    /// The calls of every caller carrying one profile, together (an agent, a team, an API key).
    Profile(String),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Caller => f.write_str("caller"),
            Scope::Tool(name) => write!(f, "tool:{name}"),
            Scope::Profile(name) => write!(f, "profile:{name}"),
        }
    }
}

impl std::str::FromStr for Scope {
    type Err = RecordError;

    fn from_str(text: &str) -> Result<Self, RecordError> {
        let scope = match text.split_once(':') {
            None if text == "caller" => Scope::Caller,
            Some(("tool", name)) if crate::tool::is_tool_name(name) => Scope::Tool(name.into()),
            Some(("profile", name)) if crate::text::Ident::check(name).is_ok() => {
                Scope::Profile(name.into())
            }
            _ => {
                return Err(RecordError::new(
                    RecordErrorKind::Invalid,
                    format!(
                        "`{}` is not what a rate limit counts: write `caller`, `tool:NAME` or `profile:NAME`",
                        crate::text::capped(&crate::text::shown(text))
                    ),
                ));
            }
        };
        Ok(scope)
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How many calls, per how many seconds.
///
/// ```
/// use toolgate::store::Rate;
///
/// let rate: Rate = "30/60s".parse()?;
/// assert_eq!((rate.calls, rate.per_secs), (30, 60));
/// assert_eq!(rate.to_string(), "30 calls a minute");
/// assert!("0/60s".parse::<Rate>().is_err());
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Rate {
    /// Calls allowed in one window.
    pub calls: u32,
    /// The window, in seconds (1 to a day).
    pub per_secs: u64,
}

impl Rate {
    /// `calls` per `per_secs` seconds.
    ///
    /// # Errors
    /// No calls, or a window of no time or of more than a day.
    pub fn new(calls: u32, per_secs: u64) -> Result<Self, RecordError> {
        if calls == 0 || per_secs == 0 || per_secs > LONGEST_WINDOW_SECS {
            return Err(RecordError::new(
                RecordErrorKind::Invalid,
                format!(
                    "a rate limit allows at least one call, over 1 to {LONGEST_WINDOW_SECS} seconds, not \
                     {calls} over {per_secs}"
                ),
            ));
        }
        Ok(Rate { calls, per_secs })
    }

    /// The window that `now_ms` falls in: its start and end, in milliseconds since the Unix epoch.
    /// Windows are aligned, so every replica counts in the same one.
    pub(crate) fn window(&self, now_ms: u64) -> (u64, u64) {
        let length = self.per_secs * 1000;
        let start = now_ms - now_ms % length;
        (start, start + length)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let calls = self.calls;
        let noun = if calls == 1 { "call" } else { "calls" };
        match self.per_secs {
            1 => write!(f, "{calls} {noun} a second"),
            60 => write!(f, "{calls} {noun} a minute"),
            3600 => write!(f, "{calls} {noun} an hour"),
            86_400 => write!(f, "{calls} {noun} a day"),
            secs => write!(f, "{calls} {noun} every {secs} seconds"),
        }
    }
}

impl std::str::FromStr for Rate {
    type Err = RecordError;

    /// `CALLS/WINDOW`, the window as `60s`, `1m`, `1h` or `1d`.
    fn from_str(text: &str) -> Result<Self, RecordError> {
        let invalid = || {
            RecordError::new(
                RecordErrorKind::Invalid,
                format!(
                    "`{}` is not a rate: write CALLS/WINDOW, like `30/1m` or `1000/1h`",
                    crate::text::capped(&crate::text::shown(text))
                ),
            )
        };
        let (calls, window) = text.split_once('/').ok_or_else(invalid)?;
        let calls = calls.trim().parse().map_err(|_| invalid())?;
        let window = window.trim();
        let (number, unit) = window.split_at(window.len().saturating_sub(1));
        let scale = match unit {
            "s" => 1,
            "m" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return Err(invalid()),
        };
        let number: u64 = if number.is_empty() {
            1
        } else {
            number.parse().map_err(|_| invalid())?
        };
        Rate::new(calls, number.checked_mul(scale).ok_or_else(invalid)?)
    }
}

/// One rate limit in the records.
///
/// ```
/// use toolgate::store::{LimitChange, LimitEdit, Rate, Scope};
///
/// let set = LimitEdit::new("ops", Scope::Tool("export".into()), 0, LimitChange::Set(Rate::new(5, 3600)?));
/// let limit = set.apply(None)?.unwrap();
/// assert_eq!(limit.rate.to_string(), "5 calls an hour");
/// assert_eq!(serde_json::to_value(&limit)?["scope"], "tool:export");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LimitRecord {
    /// What it counts.
    pub scope: Scope,
    /// How many calls, per how long.
    pub rate: Rate,
    /// Moves with every change; an edit names the version it was made against.
    pub version: u64,
}

/// What an operator does to a rate limit.
///
/// ```
/// use toolgate::store::{LimitChange, Rate};
///
/// let set: LimitChange = serde_json::from_str(r#"{"change": "set", "value": {"calls": 30, "per_secs": 60}}"#)?;
/// assert_eq!(set, LimitChange::Set(Rate::new(30, 60)?));
/// let remove: LimitChange = serde_json::from_str(r#"{"change": "remove"}"#)?;
/// assert_eq!(remove, LimitChange::Remove);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change", content = "value")]
#[non_exhaustive]
pub enum LimitChange {
    /// Set it (add or replace).
    Set(Rate),
    /// Remove it.
    Remove,
}

/// An operator's change of the rate limit of one scope, made against the version they read (0 for a
/// scope without one).
///
/// ```
/// use toolgate::store::{LimitChange, LimitEdit, Rate, Scope};
///
/// let edit = LimitEdit::new("ops", Scope::Caller, 0, LimitChange::Set(Rate::new(60, 60)?));
/// let limit = edit.apply(None)?.unwrap();
/// assert_eq!((limit.rate.calls, limit.version), (60, 1));
/// assert!(edit.apply(Some(&limit)).is_err(), "made against an older version");
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LimitEdit {
    /// Who makes the change.
    pub actor: String,
    /// The scope.
    pub scope: Scope,
    /// The version it was made against.
    pub version: u64,
    /// The change.
    pub change: LimitChange,
}

impl LimitEdit {
    /// `actor` makes `change` to the limit of `scope`, whose version they read.
    pub fn new(actor: impl Into<String>, scope: Scope, version: u64, change: LimitChange) -> Self {
        LimitEdit {
            actor: actor.into(),
            scope,
            version,
            change,
        }
    }

    /// The limit after the change, or `None` when it is removed.
    ///
    /// # Errors
    /// A conflict when the limit moved since the version read; not found when a limit that is not there
    /// is removed.
    pub fn apply(&self, current: Option<&LimitRecord>) -> Result<Option<LimitRecord>, RecordError> {
        let seen = current.map_or(0, |r| r.version);
        if seen != self.version {
            let what = format!("the rate limit of `{}`", self.scope);
            return Err(RecordError::moved(what, self.version, seen));
        }
        match &self.change {
            LimitChange::Set(rate) => Ok(Some(LimitRecord {
                scope: self.scope.clone(),
                rate: Rate::new(rate.calls, rate.per_secs)?,
                version: seen + 1,
            })),
            LimitChange::Remove if current.is_none() => Err(RecordError::new(
                RecordErrorKind::NotFound,
                format!(
                    "no rate limit of `{}` in the records; list them with `toolgate limits list`",
                    self.scope
                ),
            )),
            LimitChange::Remove => Ok(None),
        }
    }
}
