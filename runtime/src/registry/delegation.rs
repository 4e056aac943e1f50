//! Delegated callers as tokens sealed under the registry's key ring, so that a sub-agent in another process
//! acts with exactly the rights it was handed.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::caller::{Caller, MAX_CHAIN, MAX_DELEGATION_TTL};
use crate::confirm::Confirmations;
use crate::confirm::{millis, unix_ms};
use crate::error::{ErrorKind, ToolError};
use crate::text::Ident;

/// How delegation tokens begin, so that a server tells them from its other bearer tokens.
///
/// ```
/// assert_eq!(toolgate::registry::DELEGATION_PREFIX, "tgd.");
/// ```
pub const DELEGATION_PREFIX: &str = "tgd.";

/// What the token seals: the caller at the root, then each delegation after it, root first.
#[derive(Serialize, Deserialize)]
struct Sealed {
    purpose: String,
    root: Link,
    delegations: Vec<Delegated>,
}

const PURPOSE: &str = "delegation";

/// One caller of the chain as the token carries it: its names are checked again as it is opened.
#[derive(Serialize, Deserialize)]
struct Link {
    id: Ident,
    role: Option<Ident>,
    abilities: BTreeSet<String>,
    profile: Option<Ident>,
}

#[derive(Serialize, Deserialize)]
struct Delegated {
    #[serde(flatten)]
    caller: Link,
    delegation: String,
    max_calls: Option<u32>,
    expires_ms: Option<u64>,
}

impl Link {
    /// A caller whose names were checked ([`Caller::check_names`]).
    fn of(caller: &Caller) -> Option<Self> {
        let name = |text: &str| Ident::new(text).ok();
        Some(Link {
            id: name(caller.id())?,
            role: match caller.role() {
                Some(role) => Some(name(role)?),
                None => None,
            },
            abilities: caller.abilities().map(str::to_owned).collect(),
            profile: match caller.profile() {
                Some(profile) => Some(name(profile)?),
                None => None,
            },
        })
    }
}

/// The token that carries the delegated `caller`, sealed under `confirmations`' keys: see
/// [`Registry::seal_delegation`](crate::Registry::seal_delegation).
pub(super) fn seal(confirmations: &Confirmations, caller: &Caller) -> Result<String, ToolError> {
    if !caller.is_delegated() {
        return Err(ToolError::with_kind(
            ErrorKind::InvalidArguments,
            "Only a delegated caller is sealed into a token: make one with `Caller::delegate`.",
        ));
    }
    caller.check_names().map_err(|problem| {
        ToolError::with_kind(
            ErrorKind::InvalidArguments,
            format!("This caller cannot be sealed into a delegation token: {problem}."),
        )
    })?;
    let latest = unix_ms().saturating_add(millis(MAX_DELEGATION_TTL));
    let mut delegations: Vec<Delegated> = caller
        .chain()
        .filter_map(|link| {
            let delegation = link.delegation()?;
            let expires = delegation.expires.map_or(latest, ms).min(latest);
            Some(Delegated {
                caller: Link::of(link)?,
                delegation: delegation.id.clone(),
                max_calls: delegation.max_calls,
                expires_ms: Some(expires),
            })
        })
        .collect();
    delegations.reverse();
    let sealed = Sealed {
        purpose: PURPOSE.to_owned(),
        root: Link::of(caller.root()).unwrap_or_else(|| unreachable!("checked above")),
        delegations,
    };
    let payload = serde_json::to_vec(&sealed).unwrap_or_default();
    let keys = confirmations.keys.load();
    Ok(format!("{DELEGATION_PREFIX}{}", keys.seal(&payload)))
}

/// The delegated caller a token from [`seal`] carries, if `confirmations`' keys open it: see
/// [`Registry::open_delegation`](crate::Registry::open_delegation).
pub(super) fn open(confirmations: &Confirmations, token: &str) -> Result<Caller, ToolError> {
    let refused = |why: &str| {
        ToolError::with_kind(
            ErrorKind::Denied,
            format!("This delegation token is not accepted: {why}."),
        )
    };
    let sealed: Sealed = token
        .strip_prefix(DELEGATION_PREFIX)
        .and_then(|sealed| confirmations.keys.load().open(sealed))
        .and_then(|payload| serde_json::from_slice(&payload).ok())
        .filter(|sealed: &Sealed| sealed.purpose == PURPOSE)
        .ok_or_else(|| {
            refused("it was altered, forged, or sealed with a key this server does not have")
        })?;
    if sealed.delegations.is_empty() {
        return Err(refused("it carries no delegation"));
    }
    if sealed.delegations.len() > MAX_CHAIN {
        return Err(refused("its chain of delegations is too long"));
    }
    let now = unix_ms();
    let mut caller = caller_of(sealed.root);
    let mut expires_before = u64::MAX;
    for link in sealed.delegations {
        let expires = link.expires_ms.unwrap_or(u64::MAX);
        if expires <= now {
            return Err(refused("it has expired; ask for a new one"));
        }
        if expires > expires_before {
            return Err(refused("a delegation outlives the one it came from"));
        }
        if let Some(extra) = link.caller.abilities.iter().find(|a| !caller.has(a)) {
            return Err(refused(&format!(
                "`{}` claims the ability `{extra}`, which `{}` did not hold",
                link.caller.id,
                caller.id()
            )));
        }
        expires_before = expires;
        let Link {
            id,
            role,
            abilities,
            profile,
        } = link.caller;
        let expires = link
            .expires_ms
            .map(|ms| UNIX_EPOCH + Duration::from_millis(ms));
        caller = Caller::redelegated(
            &caller,
            (
                id.into(),
                role.map(Into::into),
                abilities,
                profile.map(Into::into),
            ),
            (link.delegation, link.max_calls, expires),
        );
    }
    Ok(caller)
}

/// The root caller a token carries.
fn caller_of(link: Link) -> Caller {
    let mut caller = Caller::new(link.id).with_abilities(link.abilities);
    if let Some(role) = link.role {
        caller = caller.with_role(role);
    }
    if let Some(profile) = link.profile {
        caller = caller.with_profile(profile);
    }
    caller
}

fn ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, millis)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{Delegation, Registry};

    fn registry() -> Registry {
        Registry::builder().build().unwrap()
    }

    /// `sealed` as a token of `registry`, sealed with its keys as the server would.
    fn forge(registry: &Registry, sealed: &serde_json::Value) -> String {
        let keys = registry.pipeline().confirmations().keys.load();
        format!(
            "{DELEGATION_PREFIX}{}",
            keys.seal(sealed.to_string().as_bytes())
        )
    }

    fn refusal(registry: &Registry, token: &str) -> String {
        let error = registry.open_delegation(token).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Denied);
        error.message().to_owned()
    }

    fn link(id: &str, abilities: &[&str], expires_ms: Option<u64>) -> serde_json::Value {
        serde_json::json!({
            "id": id, "role": null, "abilities": abilities, "profile": null,
            "delegation": format!("d-{id}"), "max_calls": null, "expires_ms": expires_ms,
        })
    }

    #[test]
    fn a_token_that_claims_more_than_its_parent_held_is_refused_though_its_seal_is_good() {
        let registry = registry();
        let later = unix_ms() + 60_000;
        let root = serde_json::json!({ "id": "ada", "role": null, "abilities": ["orders.view"], "profile": null });
        let widened = serde_json::json!({
            "purpose": PURPOSE, "root": root,
            "delegations": [link("agent", &["orders.view", "orders.manage"], Some(later))],
        });
        assert_eq!(
            refusal(&registry, &forge(&registry, &widened)),
            "This delegation token is not accepted: `agent` claims the ability `orders.manage`, which `ada` \
             did not hold."
        );
        let outliving = serde_json::json!({
            "purpose": PURPOSE, "root": root,
            "delegations": [link("agent", &["orders.view"], Some(later)), link("helper", &[], Some(later + 1))],
        });
        assert!(refusal(&registry, &forge(&registry, &outliving)).contains("outlives"));
        let expired = serde_json::json!({
            "purpose": PURPOSE, "root": root, "delegations": [link("agent", &[], Some(unix_ms() - 1))],
        });
        assert!(refusal(&registry, &forge(&registry, &expired)).contains("expired"));
        let empty = serde_json::json!({ "purpose": PURPOSE, "root": root, "delegations": [] });
        assert!(refusal(&registry, &forge(&registry, &empty)).contains("no delegation"));
        let other = serde_json::json!({
            "purpose": "confirmation", "root": root, "delegations": [link("agent", &[], Some(later))],
        });
        assert!(refusal(&registry, &forge(&registry, &other)).contains("forged"));
        let fair = serde_json::json!({
            "purpose": PURPOSE, "root": root, "delegations": [link("agent", &["orders.view"], Some(later))],
        });
        assert!(
            registry
                .open_delegation(&forge(&registry, &fair))
                .unwrap()
                .has("orders.view")
        );
    }

    #[test]
    fn a_token_opens_only_under_the_keys_that_sealed_it_and_never_for_a_plain_caller() {
        let (one, two) = (registry(), registry());
        let agent = Caller::new("ada")
            .with_abilities(["a"])
            .delegate(Delegation::to("agent").abilities(["a"]).max_calls(3));
        let token = one.seal_delegation(&agent).unwrap();
        let opened = one.open_delegation(&token).unwrap();
        assert_eq!(opened.max_calls(), Some(3));
        assert_eq!(
            opened.owner(),
            agent.owner(),
            "the same delegation, whoever opens it"
        );
        assert_eq!(opened.budget(), "ada");
        assert!(
            opened.expires_at().unwrap() <= SystemTime::now() + MAX_DELEGATION_TTL,
            "a delegation without an expiry gets the longest a token lives"
        );
        assert!(refusal(&two, &token).contains("sealed with a key this server does not have"));
        assert!(refusal(&one, token.trim_start_matches(DELEGATION_PREFIX)).contains("forged"));
        assert_eq!(
            one.seal_delegation(&Caller::new("ada")).unwrap_err().kind(),
            ErrorKind::InvalidArguments
        );
    }
}
