//! What an access token's scopes and roles grant, in the records: set and removed by an operator while
//! the server runs, each over what the code's [`ScopeMap`](crate::registry::ScopeMap) says of the same
//! scope or role.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::record::{RecordError, RecordErrorKind};
use crate::text::{Ident, capped, shown};

/// The longest scope or role name.
const MAX_NAME: usize = 128;

/// The most abilities one grant holds.
const MAX_ABILITIES: usize = 64;

/// What a token carries that grants abilities, written `scope:NAME` or `role:NAME`.
///
/// ```
/// use toolgate::store::Claim;
///
/// assert_eq!("scope:orders:read".parse::<Claim>()?, Claim::Scope("orders:read".into()));
/// assert_eq!(Claim::Role("manager".into()).to_string(), "role:manager");
/// assert!("scope:two words".parse::<Claim>().is_err(), "a scope has no space (RFC 6749 §3.3)");
/// assert!("group:x".parse::<Claim>().is_err());
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Claim {
    /// A scope of the token (`scope`, `scp`).
    Scope(String),
    /// A role in the token's role claim.
    Role(String),
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Claim::Scope(name) => write!(f, "scope:{name}"),
            Claim::Role(name) => write!(f, "role:{name}"),
        }
    }
}

impl std::str::FromStr for Claim {
    type Err = RecordError;

    fn from_str(text: &str) -> Result<Self, RecordError> {
        let claim = match text.split_once(':') {
            Some(("scope", name)) if is_scope(name) => Claim::Scope(name.into()),
            Some(("role", name)) if name.len() <= MAX_NAME && Ident::check(name).is_ok() => {
                Claim::Role(name.into())
            }
            _ => {
                return Err(RecordError::new(
                    RecordErrorKind::Invalid,
                    format!(
                        "`{}` is not what a token grants by: write `scope:NAME` (printable, no spaces or \
                         quotes) or `role:NAME`, at most {MAX_NAME} characters",
                        capped(&shown(text))
                    ),
                ));
            }
        };
        Ok(claim)
    }
}

/// Whether `name` is a scope token (RFC 6749 §3.3: printable ASCII but space, `"` and `\`).
pub(crate) fn is_scope(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

impl Serialize for Claim {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Claim {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What one scope or role grants, in the records: it replaces what the code's map says of it, so an
/// empty list takes away what the code grants.
///
/// ```
/// use toolgate::store::{Claim, GrantChange, GrantEdit};
///
/// let edit = GrantEdit::new("ops", Claim::Scope("orders:read".into()), 0, GrantChange::Set(vec!["orders.view".into()]));
/// let grant = edit.apply(None)?.unwrap();
/// assert_eq!(serde_json::to_value(&grant)?, serde_json::json!({
///     "claim": "scope:orders:read", "abilities": ["orders.view"], "version": 1
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GrantRecord {
    /// The scope or role.
    pub claim: Claim,
    /// The abilities it grants, sorted.
    pub abilities: Vec<String>,
    /// Moves with every change; an edit names the version it was made against.
    pub version: u64,
}

/// What an operator does to a grant.
///
/// ```
/// use toolgate::store::GrantChange;
///
/// let set: GrantChange = serde_json::from_str(r#"{"change": "set", "value": ["orders.view"]}"#)?;
/// assert_eq!(set, GrantChange::Set(vec!["orders.view".into()]));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change", content = "value")]
#[non_exhaustive]
pub enum GrantChange {
    /// Grant exactly these abilities (none takes away what the code grants).
    Set(Vec<String>),
    /// Remove the record: the code's map decides again.
    Remove,
}

/// An operator's change of what one scope or role grants, made against the version they read (0 for
/// one without a record).
///
/// ```
/// use toolgate::store::{Claim, GrantChange, GrantEdit};
///
/// let manager = Claim::Role("manager".into());
/// let set = GrantEdit::new("ops", manager.clone(), 0, GrantChange::Set(vec!["orders.manage".into(), "orders.view".into()]));
/// let grant = set.apply(None)?.unwrap();
/// assert!(set.apply(Some(&grant)).is_err(), "made against an older version");
/// let bad = GrantEdit::new("ops", manager, 0, GrantChange::Set(vec!["a\u{202e}b".into()]));
/// assert!(bad.apply(None).is_err(), "an ability that hides a character");
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct GrantEdit {
    /// Who makes the change.
    pub actor: String,
    /// The scope or role.
    pub claim: Claim,
    /// The version it was made against.
    pub version: u64,
    /// The change.
    pub change: GrantChange,
}

impl GrantEdit {
    /// `actor` makes `change` to what `claim` grants, whose version they read.
    pub fn new(actor: impl Into<String>, claim: Claim, version: u64, change: GrantChange) -> Self {
        GrantEdit {
            actor: actor.into(),
            claim,
            version,
            change,
        }
    }

    /// The grant after the change, or `None` when it is removed.
    ///
    /// # Errors
    /// A conflict when the grant moved since the version read; invalid abilities (more than 64, or one
    /// that is not an identifier); not found when a grant that is not there is removed.
    pub fn apply(&self, current: Option<&GrantRecord>) -> Result<Option<GrantRecord>, RecordError> {
        let seen = current.map_or(0, |r| r.version);
        if seen != self.version {
            let what = format!("what `{}` grants", self.claim);
            return Err(RecordError::moved(what, self.version, seen));
        }
        match &self.change {
            GrantChange::Set(abilities) => {
                if abilities.len() > MAX_ABILITIES {
                    return Err(RecordError::new(
                        RecordErrorKind::Invalid,
                        format!("a grant holds at most {MAX_ABILITIES} abilities"),
                    ));
                }
                for ability in abilities {
                    Ident::check(ability).map_err(|error| {
                        RecordError::new(
                            RecordErrorKind::Invalid,
                            format!("not an ability: {error}"),
                        )
                    })?;
                }
                let mut abilities = abilities.clone();
                abilities.sort();
                abilities.dedup();
                Ok(Some(GrantRecord {
                    claim: self.claim.clone(),
                    abilities,
                    version: seen + 1,
                }))
            }
            GrantChange::Remove if current.is_none() => Err(RecordError::new(
                RecordErrorKind::NotFound,
                format!(
                    "no grant of `{}` in the records; list them with `toolgate grants list`",
                    self.claim
                ),
            )),
            GrantChange::Remove => Ok(None),
        }
    }
}
