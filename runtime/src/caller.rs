//! [`Caller`]: who is calling, with a role label, the abilities they hold and the profile they carry.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// Who is calling: an id, an optional role label, and the abilities they hold. Cheap to clone.
///
/// ```
/// use toolgate::Caller;
///
/// let viewer = Caller::new("u-17").with_role("Viewer").with_abilities(["orders.view"]);
/// assert!(viewer.has("orders.view") && !viewer.has("orders.manage"));
/// assert_eq!(viewer.denial(), "Your role (Viewer) is not allowed to do this.");
/// assert_eq!(Caller::anonymous().denial(), "You are not allowed to do this.");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Caller(Arc<Inner>);

#[derive(Clone, PartialEq, Eq)]
struct Inner {
    id: String,
    role: Option<String>,
    abilities: BTreeSet<String>,
    profile: Option<String>,
}

impl Caller {
    /// A caller with an id and no abilities.
    pub fn new(id: impl Into<String>) -> Self {
        Caller(Arc::new(Inner {
            id: id.into(),
            role: None,
            abilities: BTreeSet::new(),
            profile: None,
        }))
    }

    /// A caller with no identity: only `public` tools are open to them.
    pub fn anonymous() -> Self {
        Self::new("anonymous")
    }

    /// Sets the role label used in denials ("Your role (Viewer) is not allowed to do this.").
    #[must_use]
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).role = Some(role.into());
        self
    }

    /// Adds abilities.
    #[must_use]
    pub fn with_abilities<I, S>(mut self, abilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Arc::make_mut(&mut self.0)
            .abilities
            .extend(abilities.into_iter().map(Into::into));
        self
    }

    /// Sets the profile the caller carries (an agent, a model, a team, an API key): it then sees only
    /// the tools an operator assigned to that profile in the records, on top of its abilities, and runs
    /// them with the assignment's settings. A profile the records do not have shows nothing but system
    /// tools.
    ///
    /// ```
    /// use toolgate::Caller;
    ///
    /// let bot = Caller::new("bot-3").with_profile("support-bot");
    /// assert_eq!(bot.profile(), Some("support-bot"));
    /// ```
    #[must_use]
    pub fn with_profile(mut self, profile: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).profile = Some(profile.into());
        self
    }

    /// The profile the caller carries, if any.
    pub fn profile(&self) -> Option<&str> {
        self.0.profile.as_deref()
    }

    /// The caller's id.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// The role label, if any.
    pub fn role(&self) -> Option<&str> {
        self.0.role.as_deref()
    }

    /// Whether the caller holds `ability`.
    pub fn has(&self, ability: &str) -> bool {
        self.0.abilities.contains(ability)
    }

    /// The abilities held, sorted.
    pub fn abilities(&self) -> impl Iterator<Item = &str> {
        self.0.abilities.iter().map(String::as_str)
    }

    /// The sentence a denied call returns, naming the role when there is one.
    pub fn denial(&self) -> String {
        match self.role() {
            Some(role) => format!("Your role ({role}) is not allowed to do this."),
            None => "You are not allowed to do this.".to_owned(),
        }
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Caller")
            .field("id", &self.0.id)
            .field("role", &self.0.role)
            .field("abilities", &self.0.abilities)
            .field("profile", &self.0.profile)
            .finish()
    }
}
