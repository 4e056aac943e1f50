//! What access tokens' scopes and roles grant: the code's [`ScopeMap`], the configuration file's
//! `[grants]` over it and the operator's records over both, as one map per snapshot that a token
//! verifier makes callers with and a listing publishes.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::store::{Claim, Records};

/// What each scope and each role an access token carries grants: the abilities of the server's tools.
/// A scope or role the map does not know grants nothing, and a registry without a map grants no
/// ability at all: a signed-in caller then runs public tools only.
///
/// The code's map is where a registry starts
/// ([`RegistryBuilder::scope_map`](crate::RegistryBuilder::scope_map)); the configuration file's
/// `[grants]` and an operator's grants in the records each replace what it says of one scope or role,
/// while the server runs.
///
/// ```
/// use toolgate::registry::ScopeMap;
///
/// let grants = ScopeMap::new()
///     .scope("orders:read", ["orders.view"])
///     .scope("orders:write", ["orders.view", "orders.manage"])
///     .role("manager", ["orders.manage", "refunds.issue"]);
/// # let _ = grants;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeMap(BTreeMap<Claim, Vec<String>>);

impl ScopeMap {
    /// A map that grants nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token with `scope` holds `abilities`.
    #[must_use]
    pub fn scope<I, S>(self, scope: impl Into<String>, abilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.granting(Claim::Scope(scope.into()), abilities)
    }

    /// A token whose role claim names `role` holds `abilities`.
    #[must_use]
    pub fn role<I, S>(self, role: impl Into<String>, abilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.granting(Claim::Role(role.into()), abilities)
    }

    fn granting<I, S>(mut self, claim: Claim, abilities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let granted = self.0.entry(claim).or_default();
        granted.extend(abilities.into_iter().map(Into::into));
        granted.sort();
        granted.dedup();
        self
    }

    /// `claim` grants exactly `abilities`, whatever the map said of it.
    pub(crate) fn replace(&mut self, claim: Claim, abilities: Vec<String>) {
        self.0.insert(claim, abilities);
    }

    /// Whether it grants nothing at all.
    #[cfg(feature = "mcp")]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The scopes that together grant every one of `abilities`, fewest first by a greedy cover (the
    /// scope granting most of what is left, then by name), or `None` when some ability no scope grants.
    #[cfg(any(feature = "mcp", feature = "oauth"))]
    pub(crate) fn scopes_granting(&self, abilities: &[String]) -> Option<Vec<String>> {
        let scopes: Vec<(&String, &Vec<String>)> = (self.0.iter())
            .filter_map(|(claim, granted)| match claim {
                Claim::Scope(scope) => Some((scope, granted)),
                Claim::Role(_) => None,
            })
            .collect();
        let mut left: Vec<&String> = abilities.iter().collect();
        let mut chosen = Vec::new();
        while !left.is_empty() {
            let (scope, granted) = (scopes.iter())
                .map(|&(scope, granted)| {
                    let covered = left.iter().filter(|a| granted.contains(a)).count();
                    ((scope, granted), covered)
                })
                .filter(|(_, covered)| *covered > 0)
                .max_by(|((a, _), x), ((b, _), y)| x.cmp(y).then_with(|| b.cmp(a)))?
                .0;
            left.retain(|ability| !granted.contains(ability));
            chosen.push(scope.clone());
        }
        Some(chosen)
    }

    /// The abilities `scopes` and `roles` grant.
    #[cfg(feature = "oauth")]
    pub(crate) fn abilities<'a>(
        &'a self,
        scopes: &[&str],
        roles: &[&str],
    ) -> std::collections::BTreeSet<&'a str> {
        let scoped = scopes.iter().map(|s| Claim::Scope((*s).to_owned()));
        let roled = roles.iter().map(|r| Claim::Role((*r).to_owned()));
        (scoped.chain(roled))
            .filter_map(|claim| self.0.get(&claim))
            .flatten()
            .map(String::as_str)
            .collect()
    }
}

/// The map of one snapshot, with the revision at which the configuration file's and the records'
/// grants over the code's last changed: a verifier keeps the callers it made until that moves.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Grants {
    /// The records' revision when the map last changed (0 before any).
    pub(crate) revision: u64,
    pub(crate) map: ScopeMap,
}

impl Grants {
    /// The map `configured` (the code's with the configuration file's over it) with the grants
    /// `records` hold over it: `previous` itself when it comes out the same, so that what was made of
    /// it stays good while other records change.
    pub(crate) fn of(
        records: &Records,
        configured: &Grants,
        previous: &Arc<Grants>,
    ) -> Arc<Grants> {
        let mut map = configured.map.clone();
        for grant in records.grants.values() {
            map.replace(grant.claim.clone(), grant.abilities.clone());
        }
        if map == previous.map {
            return Arc::clone(previous);
        }
        Arc::new(Grants {
            revision: records.revision,
            map,
        })
    }
}

#[cfg(all(test, feature = "oauth"))]
mod tests {
    use super::*;

    fn to(abilities: &[&str]) -> Vec<String> {
        abilities.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn the_fewest_scopes_that_grant_what_a_tool_needs() {
        let map = ScopeMap::new()
            .scope("orders:read", ["orders.view"])
            .scope("orders:write", ["orders.view", "orders.manage"])
            .scope("refunds", ["refunds.issue"])
            .role("manager", ["admin"]);
        assert_eq!(
            map.scopes_granting(&to(&["orders.view", "orders.manage"])),
            Some(to(&["orders:write"])),
            "one scope that grants both"
        );
        assert_eq!(
            map.scopes_granting(&to(&["orders.manage", "refunds.issue"])),
            Some(to(&["orders:write", "refunds"]))
        );
        assert_eq!(
            map.scopes_granting(&to(&["admin"])),
            None,
            "a role is no scope to ask for"
        );
        assert_eq!(
            map.abilities(&["orders:read", "unknown"], &["manager"]),
            ["admin", "orders.view"].into_iter().collect()
        );
    }
}
