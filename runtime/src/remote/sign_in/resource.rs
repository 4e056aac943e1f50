//! Which authorization server signs clients in to a server, and for which resource: its protected
//! resource metadata (RFC 9728), at the address its challenge names on its own origin, else at the
//! well-known address followed by the endpoint's path, else at the bare one. A server of MCP's
//! 2025-03-26 revision, which has none there, is its own authorization server.

use serde::Deserialize;

use crate::oauth::{Fetcher, origin_and_path};

/// What the gateway reads of a server's protected resource metadata.
#[derive(Deserialize)]
struct Metadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    #[serde(default)]
    dpop_bound_access_tokens_required: bool,
}

/// Where to sign in to a server.
pub(crate) struct Protected {
    /// What tokens are asked for (RFC 8707): the resource its metadata names, which covers its URL.
    pub(crate) resource: String,
    /// Its authorization server.
    pub(crate) issuer: String,
    /// It publishes no metadata: its origin is its authorization server (MCP 2025-03-26).
    pub(crate) legacy: bool,
    pub(crate) scopes_supported: Vec<String>,
    /// It takes only tokens bound to a key (DPoP).
    pub(crate) bound: bool,
}

/// Where to sign in to the server at `url`, whose challenge named its metadata at `named`, if it did.
///
/// # Errors
/// When the metadata named cannot be read, or names another resource or no authorization server.
pub(crate) async fn protected(
    fetcher: &Fetcher,
    url: &str,
    named: Option<&str>,
) -> Result<Protected, String> {
    let (origin, path) = origin_and_path(url)?;
    // An address elsewhere is not fetched: a server does not send the gateway to fetch another's.
    let named = named.filter(|named| {
        origin_and_path(named).is_ok_and(|(named, _)| named.eq_ignore_ascii_case(&origin))
    });
    let addresses = match named {
        Some(named) => vec![named.to_owned()],
        None => vec![
            format!("{origin}/.well-known/oauth-protected-resource{path}"),
            format!("{origin}/.well-known/oauth-protected-resource"),
        ],
    };
    let mut problems = Vec::new();
    for address in &addresses {
        let metadata = match fetcher.json_if_there::<Metadata>(address).await {
            Ok(Some(metadata)) => metadata,
            Ok(None) => {
                problems.push(format!("{address} has no metadata"));
                continue;
            }
            Err(problem) => return Err(problem),
        };
        if !covers(&metadata.resource, url) {
            return Err(format!(
                "{address} is the metadata of another resource, `{}`; no token is asked for it",
                crate::text::shown(&metadata.resource)
            ));
        }
        let issuer = (metadata.authorization_servers.into_iter().next())
            .ok_or_else(|| format!("{address} names no authorization server"))?;
        return Ok(Protected {
            resource: metadata.resource,
            issuer,
            legacy: false,
            scopes_supported: (metadata.scopes_supported.into_iter())
                .filter(|scope| crate::store::is_scope(scope))
                .collect(),
            bound: metadata.dpop_bound_access_tokens_required,
        });
    }
    if named.is_some() {
        return Err(problems.join("; "));
    }
    Ok(Protected {
        resource: url.to_owned(),
        issuer: origin,
        legacy: true,
        scopes_supported: Vec::new(),
        bound: false,
    })
}

/// Whether the resource `resource` covers the server at `url`: the same origin, and a path that is
/// `url`'s or one of its parents.
fn covers(resource: &str, url: &str) -> bool {
    let (Ok((origin, path)), Ok((url_origin, url_path))) =
        (origin_and_path(resource), origin_and_path(url))
    else {
        return false;
    };
    origin.eq_ignore_ascii_case(&url_origin)
        && url_path
            .strip_prefix(&path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::covers;

    #[test]
    fn a_resource_covers_its_own_url_and_those_below_it_only() {
        assert!(covers(
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(covers("http://localhost:3000", "http://localhost:3000/mcp"));
        assert!(covers(
            "http://localhost:3000/",
            "http://localhost:3000/mcp"
        ));
        assert!(!covers(
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcpx"
        ));
        assert!(!covers(
            "http://localhost:3000/other",
            "http://localhost:3000/mcp"
        ));
        assert!(!covers(
            "http://localhost:3001/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(!covers(
            "https://evil.example/mcp",
            "http://localhost:3000/mcp"
        ));
    }
}
