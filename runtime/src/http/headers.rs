//! The headers in which a 2026-07-28 request names its method and its tool, read by the direct path and
//! by the step-up that decides before a body is read.

use http::HeaderName;

/// The method the request's body calls.
pub(super) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");

/// The tool a `tools/call` names.
pub(super) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
