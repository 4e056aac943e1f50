//! `tools/list`: the MCP definitions of a snapshot's tools, made once per snapshot, and the pages a
//! caller is listed.

use std::ops::Range;
use std::sync::OnceLock;

use bytes::Bytes;
use rmcp::model::{Cursor, Tool as McpTool};

use crate::registry::{Current, Snapshot, ToolId};

use super::convert;

/// The MCP definitions of a snapshot's tools, in its order, made once per snapshot: as the JSON text of
/// a listing of every tool, which such a listing shares and any other copies its tools from, instead of
/// serializing every schema again; and as rmcp's type only when rmcp's own paths first ask (its listing,
/// its `Mcp-Param-*` checks), so that a server whose requests all take the hot path keeps one copy of
/// each schema, its registry's.
pub(super) struct Definitions {
    /// The `result` of a listing of every tool on one page.
    pub(super) listing: Bytes,
    /// Where each tool's definition is in `listing`.
    pub(super) spans: Vec<Range<usize>>,
    tools: OnceLock<Vec<McpTool>>,
    /// Whether some definition may ask for `Mcp-Param-*` headers.
    param_headers: bool,
}

/// The most bytes of tool definitions one `tools/list` page holds after its first tool: half the 1 MiB
/// event the official Python SDK reads at most.
pub(super) const MAX_PAGE_BYTES: usize = 512 * 1024;

/// What a listing's `result` starts with, before its first tool.
const LISTING_START: &[u8] = br#"{"tools":["#;

pub(super) fn all_definitions(snapshot: &Snapshot) -> Option<&Definitions> {
    snapshot.derived(|s: &Snapshot| {
        let mut listing = LISTING_START.to_vec();
        let mut spans = Vec::with_capacity(s.tools.len());
        let mut param_headers = false;
        let scopes = signs_in(s);
        for (n, registered) in s.tools.iter().enumerate() {
            if n > 0 {
                listing.push(b',');
            }
            let json = serde_json::to_string(&convert::tool(&registered.tool, scopes))
                .expect("a tool definition serializes");
            param_headers |= json.contains(r#""x-mcp-header""#);
            spans.push(listing.len()..listing.len() + json.len());
            listing.extend_from_slice(json.as_bytes());
        }
        listing.extend_from_slice(b"]}");
        Definitions {
            // Without the room the vector grew by, which the listing would otherwise hold as long as
            // its snapshot lives.
            listing: listing.into_boxed_slice().into(),
            spans,
            tools: OnceLock::new(),
            param_headers,
        }
    })
}

/// The scope map of `snapshot`, when it grants something: then its tools say how a host signs their
/// callers in.
fn signs_in(snapshot: &Snapshot) -> Option<&crate::registry::ScopeMap> {
    Some(&snapshot.grants.map).filter(|map| !map.is_empty())
}

/// Whether some tool of `snapshot` may have an argument its client must also send as an `Mcp-Param-*`
/// header (an `x-mcp-header` in its input schema), which rmcp checks on 2026-07-28 calls.
pub(crate) fn declares_param_headers(snapshot: &Snapshot) -> bool {
    all_definitions(snapshot).is_none_or(|d| d.param_headers)
}

/// The MCP definition of each tool of `snapshot`, in its order, as rmcp's type.
pub(super) fn definitions(snapshot: &Snapshot) -> &[McpTool] {
    all_definitions(snapshot).map_or(&[], |d| {
        d.tools.get_or_init(|| {
            snapshot
                .tools
                .iter()
                .map(|r| convert::tool(&r.tool, signs_in(snapshot)))
                .collect()
        })
    })
}

/// One page of a `tools/list`: the indices of the tools listed, and the cursor of the next page.
pub(crate) struct ToolsPage<'a> {
    pub(crate) snapshot: Current<'a>,
    pub(crate) tools: Vec<ToolId>,
    pub(crate) next: Option<Cursor>,
}

impl ToolsPage<'_> {
    /// The `result` of the listing as JSON text, made once per snapshot, when the page lists every tool:
    /// the same value rmcp's `ListToolsResult` serializes to, shared rather than copied.
    pub(crate) fn shared_json(&self) -> Option<Bytes> {
        // The indices are distinct, so a page of as many as the snapshot has lists every tool.
        let whole = self.next.is_none() && self.tools.len() == self.snapshot.tools.len();
        whole
            .then(|| all_definitions(&self.snapshot))
            .flatten()
            .map(|d| d.listing.clone())
    }

    /// The `result` of the listing as JSON text, with each tool's text copied from the listing of every
    /// tool: the same value rmcp's `ListToolsResult` serializes to.
    pub(crate) fn result_json(&self, out: &mut Vec<u8>) {
        let (listing, spans) = all_definitions(&self.snapshot)
            .map_or((&[][..], &[][..]), |d| (&d.listing[..], &d.spans[..]));
        let json = |i: ToolId| &listing[spans[i.index()].clone()];
        // Sized once for the whole page, rather than grown as each tool's text is copied in.
        out.reserve(self.tools.iter().map(|&i| json(i).len() + 1).sum::<usize>() + 64);
        out.extend_from_slice(LISTING_START);
        for (n, &i) in self.tools.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(json(i));
        }
        out.push(b']');
        if let Some(next) = &self.next {
            out.extend_from_slice(br#","nextCursor":"#);
            serde_json::to_writer(&mut *out, next).expect("a cursor serializes");
        }
        out.push(b'}');
    }
}

/// Whether some tool of `snapshot` links the App, which is then served as a resource.
pub(crate) fn serves_view(snapshot: &Snapshot) -> bool {
    snapshot.tools.iter().any(|r| r.tool.shows_view())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::DynamicTool;
    use crate::Registry;

    #[test]
    fn a_listing_of_every_tool_shares_its_text_a_page_copies_it_and_only_rmcps_paths_make_its_type()
    {
        let schema = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
        let tools = ["find", "count", "sum"].map(|name| {
            DynamicTool::new(name, "Reads.", schema.clone(), |_, _| async { "done" }).public()
        });
        let registry = tools
            .into_iter()
            .fold(Registry::builder(), |builder, tool| builder.tool(tool))
            .build()
            .unwrap();
        let page = |tools: Vec<usize>, next: Option<&str>| ToolsPage {
            tools: tools.into_iter().map(ToolId::at).collect(),
            snapshot: registry.snapshot(),
            next: next.map(Cursor::from),
        };
        let json = |page: &ToolsPage<'_>| {
            let mut listed = Vec::new();
            page.result_json(&mut listed);
            serde_json::from_slice::<serde_json::Value>(&listed).unwrap()
        };

        let every = page(vec![0, 1, 2], None);
        let shared = every
            .shared_json()
            .expect("a listing of every tool is shared");
        let made = all_definitions(&every.snapshot).unwrap();
        assert_eq!(
            shared.as_ptr(),
            made.listing.as_ptr(),
            "the listing was copied"
        );
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&shared).unwrap(),
            json(&every)
        );
        assert!(made.tools.get().is_none(), "a listing made rmcp's type");

        let some = page(vec![0, 2], Some("2"));
        assert!(
            some.shared_json().is_none(),
            "a page of some tools shares the listing of all"
        );
        let last = page(vec![2], None);
        assert!(
            last.shared_json().is_none(),
            "the last page shares the listing of all"
        );

        // rmcp's own listing: the same definitions, as its type, made once.
        let rmcp = serde_json::to_value(definitions(&every.snapshot)).unwrap();
        assert_eq!(json(&every), json!({ "tools": rmcp }));
        assert_eq!(
            json(&some),
            json!({ "tools": [rmcp[0], rmcp[2]], "nextCursor": "2" })
        );
        assert_eq!(json(&last), json!({ "tools": [rmcp[2]] }));
        assert!(made.tools.get().is_some());
    }
}
