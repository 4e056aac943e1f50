//! What a token says of its holder, and the caller it makes: `sub` the id, a role label from a claim
//! the server names, and abilities from the token's scopes and roles through the registry's
//! [`ScopeMap`].

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::caller::Caller;
use crate::catalog::ScopeMap;

/// The claims of an access token this server reads; the signature and the registered claims' times and
/// issuer are checked before.
#[derive(Deserialize)]
pub(super) struct Claims {
    #[serde(default)]
    sub: Option<String>,
    /// The client the token was issued to: the subject of a token a client holds for itself (client
    /// credentials) where `sub` is absent, as some introspection answers leave it.
    #[serde(default)]
    client_id: Option<String>,
    /// The client the token was issued to (OpenID Connect's authorized party).
    #[serde(default)]
    azp: Option<String>,
    /// Who acts for the subject (RFC 8693 §4.1), the current actor outermost.
    #[serde(default)]
    act: Option<Act>,
    /// Required of a JWT (checked before); optional in an introspection answer.
    #[serde(default)]
    pub(super) exp: Option<u64>,
    #[serde(default, deserialize_with = "one_or_many")]
    aud: Vec<String>,
    /// RFC 8707's resource, which some servers put in a claim of its own when `aud` names the client.
    #[serde(default, deserialize_with = "one_or_many")]
    resource: Vec<String>,
    /// Space-separated (RFC 9068, RFC 8693).
    #[serde(default)]
    scope: Option<String>,
    /// A list, or a space-separated string (Entra ID, Okta).
    #[serde(default, deserialize_with = "one_or_many")]
    scp: Vec<String>,
    /// The rest, where a configured role claim is looked for.
    #[serde(flatten)]
    other: serde_json::Map<String, Value>,
}

/// An actor of a token's `act` chain: its subject, and the actor before it.
#[derive(Deserialize)]
struct Act {
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    act: Option<Box<Act>>,
}

impl Claims {
    /// Whether the token is for `resource`: its `aud` names it or one of `audiences`, or its `resource`
    /// claim names it.
    pub(super) fn is_for(&self, resource: &str, audiences: &[String]) -> bool {
        self.aud
            .iter()
            .any(|aud| aud == resource || audiences.contains(aud))
            || self.resource.iter().any(|named| named == resource)
    }

    /// The caller the token makes, through `grants`, its role label and roles read from the claim at
    /// `role_claim` (a dotted path, as `realm_access.roles`).
    pub(super) fn caller(
        self,
        grants: &ScopeMap,
        role_claim: Option<&str>,
    ) -> Result<Caller, String> {
        let client = (self.azp.iter().chain(&self.client_id))
            .find(|client| !client.is_empty())
            .cloned();
        let sub = (self.sub.into_iter().chain(self.client_id))
            .find(|sub| !sub.is_empty())
            .ok_or("the token names no subject (`sub`)")?;
        // One more than a caller may have, so that a longer chain is refused rather than cut.
        let actors: Vec<String> =
            std::iter::successors(self.act.as_ref(), |act| act.act.as_deref())
                .take(crate::caller::MAX_CHAIN + 1)
                .map(|act| act.sub.clone().unwrap_or_default())
                .collect();
        let scopes: Vec<&str> = (self.scope.iter().flat_map(|scope| scope.split_whitespace()))
            .chain(self.scp.iter().flat_map(|scp| scp.split_whitespace()))
            .collect();
        let roles: Vec<&str> = match role_claim.and_then(|path| at_path(&self.other, path)) {
            Some(Value::String(role)) => vec![role.as_str()],
            Some(Value::Array(roles)) => roles.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut caller = Caller::new(sub).with_abilities(grants.abilities(&scopes, &roles));
        if let Some(role) = roles.first() {
            caller = caller.with_role(*role);
        }
        if let Some(client) = client {
            caller = caller.with_client(client);
        }
        if !actors.is_empty() {
            caller = caller.with_actors(actors);
        }
        Ok(caller)
    }
}

/// The value at a dotted `path` in `claims`.
fn at_path<'a>(claims: &'a serde_json::Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut names = path.split('.');
    let first = claims.get(names.next()?)?;
    names.try_fold(first, |value, name| value.get(name))
}

/// A claim that is one string or a list of them (`aud`, RFC 7519 §4.1.3), or a space-separated string.
fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(deserializer)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(value: Value) -> Claims {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn scopes_and_roles_grant_through_the_map_and_nothing_else() {
        let grants = ScopeMap::new()
            .scope("orders:read", ["orders.view"])
            .role("manager", ["orders.manage"]);
        let token = claims(json!({
            "sub": "rita", "exp": 1, "scope": "orders:read unknown:scope",
            "realm_access": {"roles": ["manager", "auditor"]},
        }));
        let rita = token.caller(&grants, Some("realm_access.roles")).unwrap();
        assert_eq!(rita.id(), "rita");
        assert_eq!(rita.role(), Some("manager"));
        assert_eq!(
            rita.abilities().collect::<Vec<_>>(),
            ["orders.manage", "orders.view"]
        );

        let listed = claims(json!({"sub": "sam", "exp": 1, "scp": ["orders:read"]}));
        assert!(listed.caller(&grants, None).unwrap().has("orders.view"));
        let nobody = claims(json!({"exp": 1, "scope": "orders:read"}));
        assert!(nobody.caller(&grants, None).is_err(), "no subject");
        let client = claims(json!({"client_id": "back-office", "scope": "orders:read"}));
        let back_office = client.caller(&grants, None).unwrap();
        assert_eq!(
            (back_office.id(), back_office.client()),
            ("back-office", Some("back-office"))
        );
        let acted = claims(json!({
            "sub": "rita", "azp": "claude", "scope": "orders:read",
            "act": {"sub": "agent-7", "act": {"sub": "gateway"}},
        }));
        let rita = acted.caller(&grants, None).unwrap();
        assert_eq!(rita.client(), Some("claude"));
        assert_eq!(rita.actors(), ["agent-7", "gateway"]);
        let mut deep = json!({"sub": "x"});
        for n in 0..20 {
            deep = json!({"sub": format!("a{n}"), "act": deep});
        }
        let nested = claims(json!({"sub": "rita", "act": deep}));
        let deep = nested.caller(&grants, None).unwrap();
        assert_eq!(deep.actors().len(), 9, "cut at one past the longest chain");
        let unmapped = claims(json!({"sub": "sam", "exp": 1, "scope": "orders:read"}));
        assert_eq!(
            unmapped
                .caller(&ScopeMap::new(), None)
                .unwrap()
                .abilities()
                .count(),
            0
        );
    }

    #[test]
    fn a_token_is_for_this_resource_by_its_audience_or_its_resource_claim() {
        let resource = "https://tools.example/mcp";
        let provider = ["api://tools".to_owned()];
        assert!(claims(json!({"exp": 1, "aud": resource})).is_for(resource, &[]));
        assert!(claims(json!({"exp": 1, "aud": ["client-1", resource]})).is_for(resource, &[]));
        assert!(
            claims(json!({"exp": 1, "aud": "client-1", "resource": resource}))
                .is_for(resource, &[])
        );
        assert!(claims(json!({"exp": 1, "aud": "api://tools"})).is_for(resource, &provider));
        assert!(
            !claims(json!({"exp": 1, "aud": "https://other.example/mcp"}))
                .is_for(resource, &provider)
        );
        assert!(!claims(json!({"exp": 1})).is_for(resource, &provider));
    }
}
