//! Listing a remote server's tools: every page, each definition read on its own, the count bounded.

use rmcp::model::{
    ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool as RemoteDefinition,
};
use serde::Deserialize as _;
use serde_json::Value;

use crate::text::{capped, shown};

use super::client::Connection;
use super::failure::Failure;

/// How many of a server's tools are served at most; a listing of more is cut, and the cut reported.
pub(crate) const MAX_TOOLS: usize = 1_000;

/// Every page of the server's tools, up to [`MAX_TOOLS`], with what was wrong with the listing: a
/// definition that is no valid MCP tool is left out and reported on its own, so that one bad tool never
/// takes its server's others down, and a listing past the bound is cut and the cut reported.
pub(super) async fn list_all(
    session: &Connection,
    label: &str,
) -> Result<(Vec<RemoteDefinition>, Vec<String>), Failure> {
    let peer = session.service.peer();
    let (mut tools, mut problems) = (Vec::new(), Vec::new());
    let mut cursor = None;
    loop {
        let page = PaginatedRequestParams::default().with_cursor(cursor);
        let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(page));
        let next = match peer.send_request(request).await? {
            ServerResult::ListToolsResult(page) => {
                tools.extend(page.tools);
                page.next_cursor
            }
            // A page rmcp could not read as a listing: read it one tool at a time.
            ServerResult::CustomResult(page) => {
                let Some(listed) = page.0.get("tools").and_then(Value::as_array) else {
                    return Err(Failure::Refused(
                        "an answer to tools/list that has no `tools` list".into(),
                    ));
                };
                for tool in listed {
                    match RemoteDefinition::deserialize(tool) {
                        Ok(tool) => tools.push(tool),
                        Err(error) => problems.push(format!(
                            "the tool `{}` of the server `{label}` is not served: its definition is not a \
                             valid MCP tool ({})",
                            capped(&shown(tool["name"].as_str().unwrap_or("?"))),
                            capped(&shown(&error.to_string()))
                        )),
                    }
                }
                page.0
                    .get("nextCursor")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }
            _ => {
                return Err(Failure::Refused(
                    "an answer to tools/list that lists no tools".into(),
                ));
            }
        };
        if tools.len() > MAX_TOOLS {
            problems.push(format!(
                "the server `{label}` lists more than {MAX_TOOLS} tools: only the first {MAX_TOOLS} are \
                 served"
            ));
            tools.truncate(MAX_TOOLS);
            return Ok((tools, problems));
        }
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok((tools, problems)),
        }
    }
}
