//! [`Caller`]: who is calling, with a role label, the abilities they hold and the profile they carry; and
//! [`Delegation`], what a caller hands a sub-agent.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::text::Ident;

/// The longest a delegation token lives: a token carries its chain's rights as they were when it was
/// sealed, so it must end soon.
///
/// ```
/// assert_eq!(toolgate::registry::MAX_DELEGATION_TTL.as_secs(), 86_400);
/// ```
pub const MAX_DELEGATION_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The id of the caller with no identity.
const ANONYMOUS: &str = "anonymous";

/// The most delegations a chain may have, from the person at its root to the caller at its end.
pub(crate) const MAX_CHAIN: usize = 8;

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
    /// Whom a delegated caller acts for, and within what.
    delegated: Option<Arc<Delegated>>,
    /// Whether a profile or a delegation narrows what it sees: one check on the call path for both.
    scoped: bool,
    /// Its own credential, for backends that check each caller's rights themselves.
    credential: Option<Arc<str>>,
    /// The access token it signed in to this server with: exchanged for one of its own for a remote
    /// server (RFC 8693), never sent on as it is.
    #[cfg(feature = "oauth")]
    subject_token: Option<Arc<str>>,
    /// The client a signed-in caller calls through, and who acts for it.
    via: Option<Arc<Via>>,
}

/// Through what a signed-in caller calls: the client its token was issued to, and the actors of the
/// token's `act` chain (RFC 8693), nearest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Via {
    client: Option<String>,
    actors: Vec<String>,
}

/// What a delegated caller carries besides its own identity.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Delegated {
    /// The caller that delegated.
    pub(crate) parent: Caller,
    /// This delegation's id: its calls are counted under it, in every process its token reaches.
    pub(crate) id: String,
    /// What its tasks, sessions and questions belong to: `<` and the random id, which no caller's own
    /// id can be (an [`Ident`](crate::text::Ident) has no `<`), so two delegations never share one,
    /// whatever their sub-agents are named.
    owner: String,
    pub(crate) max_calls: Option<u32>,
    pub(crate) expires: Option<SystemTime>,
}

/// What a caller hands a sub-agent: [`Caller::delegate`] gives a caller that holds no more than this and
/// no more than the caller itself.
///
/// ```
/// use std::time::Duration;
/// use toolgate::{Caller, Delegation};
///
/// let person = Caller::new("ada").with_abilities(["orders.view", "orders.manage"]);
/// let agent = person.delegate(Delegation::to("planner").abilities(["orders.view", "billing.refund"]));
/// assert!(agent.has("orders.view"));
/// assert!(!agent.has("orders.manage"), "not asked for");
/// assert!(!agent.has("billing.refund"), "asked for, but the person does not hold it");
///
/// let helper = agent.delegate(Delegation::to("fetcher").abilities(["orders.view"]).max_calls(5).expires_in(Duration::from_secs(60)));
/// let chain: Vec<&str> = helper.chain().map(Caller::id).collect();
/// assert_eq!(chain, ["fetcher", "planner", "ada"]);
/// assert_eq!(helper.root().id(), "ada");
/// assert_eq!(helper.max_calls(), Some(5));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Delegation {
    id: String,
    role: Option<String>,
    abilities: Vec<String>,
    profile: Option<String>,
    max_calls: Option<u32>,
    expires_in: Option<Duration>,
}

impl Delegation {
    /// A delegation to the sub-agent `id`, holding nothing until [`abilities`](Self::abilities) asks.
    pub fn to(id: impl Into<String>) -> Self {
        Delegation {
            id: id.into(),
            ..Delegation::default()
        }
    }

    /// The role label of the sub-agent, for its denials.
    #[must_use]
    pub fn role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    /// The abilities asked for; the sub-agent gets those the delegating caller holds.
    #[must_use]
    pub fn abilities<I, S>(mut self, abilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.abilities.extend(abilities.into_iter().map(Into::into));
        self
    }

    /// A profile for the sub-agent. It sees the tools of this profile that every profile up the chain
    /// allows as well, so it is as narrow as the delegating caller's or narrower.
    #[must_use]
    pub fn profile(mut self, profile: impl Into<String>) -> Self {
        self.profile = Some(profile.into());
        self
    }

    /// At most `calls` calls through this delegation, counted in the registry's ceiling store (shared by
    /// replicas when they have one); the delegating caller's own ceiling still counts them too.
    #[must_use]
    pub fn max_calls(mut self, calls: u32) -> Self {
        self.max_calls = Some(calls);
        self
    }

    /// The delegation ends after `ttl`, or when the delegating caller's does, whichever is first.
    #[must_use]
    pub fn expires_in(mut self, ttl: Duration) -> Self {
        self.expires_in = Some(ttl);
        self
    }
}

impl Caller {
    /// A caller with an id and no abilities.
    pub fn new(id: impl Into<String>) -> Self {
        Caller(Arc::new(Inner {
            id: id.into(),
            role: None,
            abilities: BTreeSet::new(),
            profile: None,
            delegated: None,
            scoped: false,
            credential: None,
            #[cfg(feature = "oauth")]
            subject_token: None,
            via: None,
        }))
    }

    /// A caller with no identity: only `public` tools are open to them.
    pub fn anonymous() -> Self {
        Self::new(ANONYMOUS)
    }

    /// Whether it has no identity ([`anonymous`](Self::anonymous)): no tool whose rights are
    /// [enforced downstream](crate::Tool::is_enforced_downstream) is open to it.
    pub fn is_anonymous(&self) -> bool {
        self.0.id == ANONYMOUS
    }

    /// Carries the caller's own credential (a token its authenticator received or issued), which a
    /// remote server that checks each caller's rights gets with its calls. Never printed.
    ///
    /// ```
    /// use toolgate::Caller;
    ///
    /// let ada = Caller::new("ada").with_credential("ada-token");
    /// assert_eq!(ada.credential(), Some("ada-token"));
    /// assert!(!format!("{ada:?}").contains("ada-token"));
    /// ```
    #[must_use]
    pub fn with_credential(mut self, credential: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).credential = Some(credential.into().into());
        self
    }

    /// Its own credential, or that of the nearest caller up its chain that has one (a sub-agent calls with
    /// the person's).
    pub fn credential(&self) -> Option<&str> {
        self.chain()
            .find_map(|caller| caller.0.credential.as_deref())
    }

    /// Carries the access token it signed in with, for a token exchange.
    #[cfg(feature = "oauth")]
    #[must_use]
    pub(crate) fn with_subject_token(mut self, token: &str) -> Self {
        Arc::make_mut(&mut self.0).subject_token = Some(token.into());
        self
    }

    /// The access token it signed in to this server with.
    #[cfg(signs_in)]
    pub(crate) fn subject_token(&self) -> Option<&str> {
        self.0.subject_token.as_deref()
    }

    /// The client it calls through: an access token's `azp` or `client_id`, the application a person
    /// signed in to (Claude, an IDE, the company's own agent). Kept in the audit beside the caller.
    ///
    /// ```
    /// use toolgate::Caller;
    ///
    /// let rita = Caller::new("rita").with_client("claude").with_actors(["agent-7"]);
    /// assert_eq!((rita.client(), rita.actors()), (Some("claude"), &["agent-7".to_owned()][..]));
    /// ```
    #[must_use]
    pub fn with_client(mut self, client: impl Into<String>) -> Self {
        Arc::make_mut(Arc::make_mut(&mut self.0).via.get_or_insert_default()).client =
            Some(client.into());
        self
    }

    /// Who acts for it, nearest first: the actors of its token's `act` chain (RFC 8693), the services
    /// or agents it handed its authority to. Kept in the audit; they hold nothing of their own here.
    #[must_use]
    pub fn with_actors<I, S>(mut self, actors: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Arc::make_mut(Arc::make_mut(&mut self.0).via.get_or_insert_default()).actors =
            actors.into_iter().map(Into::into).collect();
        self
    }

    /// The client it calls through, if its authenticator knows it.
    pub fn client(&self) -> Option<&str> {
        self.0.via.as_ref()?.client.as_deref()
    }

    /// Who acts for it, nearest first; empty for most callers.
    pub fn actors(&self) -> &[String] {
        self.0.via.as_ref().map_or(&[], |via| &via.actors)
    }

    /// Sets the role label used in denials ("Your role (Viewer) is not allowed to do this.").
    #[must_use]
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.0).role = Some(role.into());
        self
    }

    /// Adds abilities. A delegated caller gets only those its delegating caller holds.
    #[must_use]
    pub fn with_abilities<I, S>(mut self, abilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let parent = self.on_behalf_of().cloned();
        let inner = Arc::make_mut(&mut self.0);
        let held = |ability: &String| parent.as_ref().is_none_or(|p| p.has(ability));
        inner
            .abilities
            .extend(abilities.into_iter().map(Into::into).filter(held));
        self
    }

    /// A caller for a sub-agent that acts on this caller's behalf with less: the abilities the
    /// delegation asks for that this caller holds, a profile within this caller's, and optionally a
    /// call ceiling and an expiry. Its calls are audited as the sub-agent's, on behalf of this caller
    /// and whomever this caller acts for. It cannot approve or decline a write: the person at the root
    /// of the chain does ([`root`](Self::root)).
    ///
    /// Over HTTP a sub-agent in another process carries it as a token:
    /// [`Registry::seal_delegation`](crate::Registry::seal_delegation).
    pub fn delegate(&self, delegation: Delegation) -> Caller {
        let expires = delegation
            .expires_in
            .map(|ttl| SystemTime::now() + ttl)
            .into_iter()
            .chain(self.expires_at())
            .min();
        let abilities = delegation
            .abilities
            .into_iter()
            .filter(|a| self.has(a))
            .collect();
        let fields = (
            delegation.id,
            delegation.role,
            abilities,
            delegation.profile,
        );
        let id = crate::random::random_id();
        Caller::redelegated(self, fields, (id, delegation.max_calls, expires))
    }

    /// The caller this one acts for, when it is delegated.
    pub fn on_behalf_of(&self) -> Option<&Caller> {
        self.0.delegated.as_ref().map(|d| &d.parent)
    }

    /// This caller, then whom it acts for, up to the person at the root.
    pub fn chain(&self) -> impl Iterator<Item = &Caller> {
        std::iter::successors(Some(self), |caller| caller.on_behalf_of())
    }

    /// This caller's id, then those of whom it acts for up to the person at the root, joined by ` < `:
    /// how the records' history and the operator's commands name it.
    ///
    /// ```
    /// use toolgate::{Caller, Delegation};
    ///
    /// let olga = Caller::new("olga@shop.example").with_abilities(["toolgate.admin"]);
    /// let agent = olga.delegate(Delegation::to("max@shop.example").abilities(["toolgate.admin"]));
    /// assert_eq!(agent.chain_label(), "max@shop.example < olga@shop.example");
    /// assert_eq!(olga.chain_label(), "olga@shop.example");
    /// ```
    pub fn chain_label(&self) -> String {
        self.chain().map(Caller::id).collect::<Vec<_>>().join(" < ")
    }

    /// The caller at the root of the chain: this one when it is not delegated.
    pub fn root(&self) -> &Caller {
        self.chain().last().unwrap_or(self)
    }

    /// Whether it acts for another caller.
    pub fn is_delegated(&self) -> bool {
        self.0.delegated.is_some()
    }

    /// When its delegation ends (the earliest of the chain's), if ever.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.0.delegated.as_ref().and_then(|d| d.expires)
    }

    /// The call ceiling of its own delegation, if any (each delegation up the chain counts its own).
    pub fn max_calls(&self) -> Option<u32> {
        self.0.delegated.as_ref().and_then(|d| d.max_calls)
    }

    /// Whether a profile or a delegation narrows what it may see and run.
    #[inline]
    pub(crate) fn is_scoped(&self) -> bool {
        self.0.scoped
    }

    /// Whether its delegation has ended.
    pub(crate) fn expired(&self) -> bool {
        self.expires_at().is_some_and(|at| at <= SystemTime::now())
    }

    /// Whose this caller's tasks, sessions and questions are: its id, or for a delegated caller its
    /// delegation's server-made id, so that a sibling delegation with the same name and fewer rights
    /// never reads them.
    pub(crate) fn owner(&self) -> &str {
        self.0.delegated.as_ref().map_or(&self.0.id, |d| &d.owner)
    }

    /// What this caller's budgets (runs of a tool, sessions, calls at once, calls a minute) count
    /// against: the person at the root of its chain, so that delegating never multiplies them.
    pub(crate) fn budget(&self) -> &str {
        self.root().owner()
    }

    /// Every name of its chain (ids, roles, profiles, clients, actors) as an
    /// [`Ident`](crate::text::Ident), and a chain no longer than [`MAX_CHAIN`] delegations or actors: what a door checks of a caller it did not make.
    ///
    /// # Errors
    /// The first name that is not an identifier, or the chain's length.
    pub(crate) fn check_names(&self) -> Result<(), String> {
        let depth = self.delegations().count();
        if depth > MAX_CHAIN {
            return Err(format!(
                "a chain of {depth} delegations is longer than the {MAX_CHAIN} this server takes"
            ));
        }
        if self.actors().len() > MAX_CHAIN {
            return Err(format!(
                "a chain of {} actors is longer than the {MAX_CHAIN} this server takes",
                self.actors().len()
            ));
        }
        for caller in self.chain() {
            let names = [Some(caller.id()), caller.role(), caller.profile()];
            let via = caller
                .client()
                .into_iter()
                .chain(caller.actors().iter().map(String::as_str));
            for name in names.into_iter().flatten().chain(via) {
                Ident::check(name).map_err(|error| error.to_string())?;
            }
        }
        Ok(())
    }

    /// Its own delegation, when it is delegated.
    pub(crate) fn delegation(&self) -> Option<&Delegated> {
        self.0.delegated.as_deref()
    }

    /// The delegations of the chain, nearest first.
    pub(crate) fn delegations(&self) -> impl Iterator<Item = &Delegated> {
        self.chain().filter_map(Caller::delegation)
    }

    /// A delegated caller with these fields under `parent`: made by `delegate`, and rebuilt from a token's.
    pub(crate) fn redelegated(
        parent: &Caller,
        fields: (String, Option<String>, BTreeSet<String>, Option<String>),
        delegation: (String, Option<u32>, Option<SystemTime>),
    ) -> Caller {
        let (id, role, abilities, profile) = fields;
        let (delegation_id, max_calls, expires) = delegation;
        let owner = format!("<{delegation_id}");
        Caller(Arc::new(Inner {
            id,
            role,
            abilities,
            profile,
            delegated: Some(Arc::new(Delegated {
                parent: parent.clone(),
                id: delegation_id,
                owner,
                max_calls,
                expires,
            })),
            scoped: true,
            credential: None,
            #[cfg(feature = "oauth")]
            subject_token: None,
            via: None,
        }))
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
        let inner = Arc::make_mut(&mut self.0);
        inner.profile = Some(profile.into());
        inner.scoped = true;
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
            .field("on_behalf_of", &self.on_behalf_of().map(Caller::id))
            .field("client", &self.client())
            .field("actors", &self.actors())
            .finish()
    }
}
