//! Profiles: named sets of tools an operator assigns, such as an agent, a model, a team or an API key. A
//! caller that carries a profile sees only its tools, on top of its abilities; an assignment may carry
//! settings of its own over the tool's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::{RecordError, RecordErrorKind, ToolRecord};
use crate::schema;

/// One profile: its tools, each with the settings the assignment adds over the tool's.
///
/// ```
/// use toolgate::store::{Profile, ProfileChange, ProfileEdit, ToolRecord};
///
/// let new = ProfileEdit::create("ana", "support-bot", "The support chat's model");
/// let profile = new.apply(None, None)?.expect("made");
/// let assign = ProfileEdit::new("ana", &profile, ProfileChange::Assign { tool: "search_orders".into(), settings: None });
/// let mut tool = ToolRecord::example();
/// tool.name = "search_orders".into();
/// let profile = assign.apply(Some(&profile), Some(&tool))?.expect("kept");
/// assert!(profile.tools.contains_key("search_orders"));
/// assert_eq!(profile.version, 2);
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Profile {
    /// Its name, as a caller carries it.
    pub name: String,
    /// What or whom it is for.
    pub description: String,
    /// The tools assigned, by name.
    pub tools: BTreeMap<String, Assignment>,
    /// Moves with every change, so that a second operator who read an older one is refused.
    pub version: u64,
}

/// A tool's place in a profile.
///
/// ```
/// use toolgate::store::Assignment;
///
/// let plain = Assignment::default();
/// assert_eq!(plain.settings, None, "the tool's own settings");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Assignment {
    /// Settings merged over the tool's own for this profile's callers (an API key, a result count).
    pub settings: Option<Value>,
}

/// What an operator changes in a profile. Its JSON form is what the records' history shows.
///
/// ```
/// use toolgate::store::ProfileChange;
///
/// let change = ProfileChange::Unassign { tool: "ship_order".into() };
/// assert_eq!(serde_json::json!(change), serde_json::json!({ "change": "unassign", "value": { "tool": "ship_order" } }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "change", content = "value")]
#[non_exhaustive]
pub enum ProfileChange {
    /// Make the profile, empty.
    Create {
        /// What or whom it is for.
        description: String,
    },
    /// Assign a tool, or replace its assignment's settings.
    Assign {
        /// The tool.
        tool: String,
        /// Settings over the tool's own; merged, they must match its settings schema.
        settings: Option<Value>,
    },
    /// Take a tool out of the profile.
    Unassign {
        /// The tool.
        tool: String,
    },
    /// Delete the profile: its callers then see nothing but system tools.
    Delete,
}

/// One operator's change of one profile, made against the profile's version (0: it does not exist yet).
///
/// ```
/// use toolgate::store::{ProfileChange, ProfileEdit, RecordErrorKind};
///
/// let made = ProfileEdit::create("ana", "nightly-reports", "").apply(None, None)?.unwrap();
/// let stale = ProfileEdit::for_profile("ben", "nightly-reports", 0, ProfileChange::Delete);
/// assert_eq!(stale.apply(Some(&made), None).unwrap_err().kind(), RecordErrorKind::Conflict);
/// # Ok::<(), toolgate::store::RecordError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProfileEdit {
    /// Who makes it.
    pub actor: String,
    /// The profile.
    pub profile: String,
    /// The version the operator saw; 0 to create it.
    pub version: u64,
    /// The change.
    pub change: ProfileChange,
}

impl ProfileEdit {
    /// `actor`'s `change` of `profile`, as it is now.
    pub fn new(actor: impl Into<String>, profile: &Profile, change: ProfileChange) -> Self {
        Self::for_profile(actor, &profile.name, profile.version, change)
    }

    /// `actor`'s making of profile `name`.
    pub fn create(
        actor: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let description = description.into();
        ProfileEdit {
            actor: actor.into(),
            profile: name.into(),
            version: 0,
            change: ProfileChange::Create { description },
        }
    }

    /// `actor`'s `change` of profile `name` at `version`, as read elsewhere (an API request).
    pub fn for_profile(
        actor: impl Into<String>,
        name: &str,
        version: u64,
        change: ProfileChange,
    ) -> Self {
        ProfileEdit {
            actor: actor.into(),
            profile: name.to_owned(),
            version,
            change,
        }
    }

    /// The tool the change names, which must have a record.
    pub fn tool(&self) -> Option<&str> {
        match &self.change {
            ProfileChange::Assign { tool, .. } | ProfileChange::Unassign { tool } => Some(tool),
            ProfileChange::Create { .. } | ProfileChange::Delete => None,
        }
    }

    /// The profile after this edit (`None`: deleted), given the profile and the record of the tool it
    /// names as they are now; or why it is refused.
    ///
    /// # Errors
    /// A [`RecordError`]: `NotFound` for an unknown profile or tool, `Conflict` when the profile moved
    /// since it was read (or already exists), `Invalid` for a bad name or settings that do not match the
    /// tool's schema. Nothing is changed.
    pub fn apply(
        &self,
        current: Option<&Profile>,
        tool: Option<&ToolRecord>,
    ) -> Result<Option<Profile>, RecordError> {
        let found = current.map_or(0, |p| p.version);
        if found != self.version {
            return Err(match (current, self.version) {
                (None, _) => unknown_profile(&self.profile),
                (Some(_), 0) => RecordError::new(
                    RecordErrorKind::Conflict,
                    format!("a profile `{}` exists already", self.profile),
                ),
                (Some(_), _) => {
                    let what = format!("profile `{}`", self.profile);
                    RecordError::moved(what, self.version, found)
                }
            });
        }
        let mut next = match (&self.change, current) {
            (ProfileChange::Create { description }, _) => {
                if !is_profile_name(&self.profile) {
                    return Err(RecordError::new(
                        RecordErrorKind::Invalid,
                        format!(
                            "`{}` is not a profile name: use letters, digits, `-`, `_` and `.`, at most 64",
                            self.profile
                        ),
                    ));
                }
                Profile {
                    name: self.profile.clone(),
                    description: description.clone(),
                    tools: BTreeMap::new(),
                    version: 0,
                }
            }
            (ProfileChange::Delete, _) => return Ok(None),
            (_, Some(profile)) => profile.clone(),
            (_, None) => return Err(unknown_profile(&self.profile)),
        };
        if let Some(name) = self.tool() {
            let record = tool.ok_or_else(|| RecordError::unknown_tool(name))?;
            match &self.change {
                ProfileChange::Assign { settings, .. } => {
                    if let Some(settings) = settings {
                        check_assigned(record, settings)?;
                    }
                    let assignment = Assignment {
                        settings: settings.clone(),
                    };
                    next.tools.insert(name.to_owned(), assignment);
                }
                _ => {
                    next.tools.remove(name);
                }
            }
        }
        next.version = found + 1;
        Ok(Some(next))
    }
}

/// Whether the settings an assignment adds, merged over the tool's, match its settings schema.
fn check_assigned(record: &ToolRecord, settings: &Value) -> Result<(), RecordError> {
    let invalid = |message: String| RecordError::new(RecordErrorKind::Invalid, message);
    let Some(schema) = &record.settings_schema else {
        return Err(invalid(format!("`{}` takes no settings", record.name)));
    };
    let Value::Object(over) = settings else {
        return Err(invalid(
            "an assignment's settings are a JSON object".to_owned(),
        ));
    };
    let mut merged = record
        .settings
        .clone()
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    schema::merge_settings(&mut merged, Value::Object(over.clone()));
    let validator = schema::validator(schema).map_err(invalid)?;
    schema::settings_problems(&validator, &record.name, &merged).map_err(RecordError::settings)
}

/// Letters, digits, `-`, `_` and `.`, 1 to 64 of them.
fn is_profile_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

pub(crate) fn unknown_profile(name: &str) -> RecordError {
    RecordError::new(
        RecordErrorKind::NotFound,
        format!("no profile `{name}`; list them, or create it first"),
    )
}
