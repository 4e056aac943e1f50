//! toolgate's MCP App (the `io.modelcontextprotocol/ui` extension): one self-contained HTML resource that
//! draws a result's chart or table, linked from every tool whose results can hold one.

use rmcp::model::{JsonObject, MetaObject, ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};

/// The URI of the App that draws charts and tables, in each such tool's `_meta.ui.resourceUri`.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::http::{HttpOptions, HttpServer};
/// use toolgate::mcp::{APP_MIME_TYPE, McpServer, VIEW_URI};
/// use toolgate::registry::BuiltIn;
/// use toolgate::Registry;
///
/// # async fn post(router: &mut axum::Router, body: serde_json::Value) -> serde_json::Value {
/// #     use tower_service::Service;
/// #     let request = http::Request::post("/mcp")
/// #         .header("host", "127.0.0.1")
/// #         .header("content-type", "application/json")
/// #         .header("accept", "application/json, text/event-stream")
/// #         .header("mcp-protocol-version", "2025-11-25")
/// #         .body(axum::body::Body::from(body.to_string()))
/// #         .unwrap();
/// #     let response = router.call(request).await.unwrap();
/// #     serde_json::from_slice(&axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap()).unwrap()
/// # }
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().built_in(BuiltIn::DrawChart).build().unwrap();
/// let server = HttpServer::new(McpServer::new(registry)).options(HttpOptions::default().stateless(true).json_response(true));
/// let mut router = server.router(toolgate::param::CancellationToken::new());
///
/// let listed = post(&mut router, json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" })).await;
/// assert_eq!(listed["result"]["tools"][0]["_meta"]["ui"]["resourceUri"], VIEW_URI);
///
/// let read = json!({ "jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": { "uri": VIEW_URI } });
/// let app = &post(&mut router, read).await["result"]["contents"][0];
/// assert_eq!(app["mimeType"], APP_MIME_TYPE);
/// assert!(app["text"].as_str().unwrap().contains("ui/notifications/tool-result"));
/// assert_eq!(app["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
/// # });
/// ```
pub const VIEW_URI: &str = "ui://toolgate/view.html";

/// The media type of an MCP App's HTML (read in the example of [`VIEW_URI`]).
///
/// ```
/// assert_eq!(toolgate::mcp::APP_MIME_TYPE, "text/html;profile=mcp-app");
/// ```
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The MCP Apps extension's identifier, declared in the server's capabilities when it serves the App.
///
/// ```
/// assert_eq!(toolgate::mcp::UI_EXTENSION, "io.modelcontextprotocol/ui");
/// ```
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The drawing of charts and tables, which the admin page loads too.
#[cfg(admin)]
pub(crate) const DRAW: &str = include_str!("view/draw.js");

/// The App: HTML, CSS and the drawing code in one file, built into the binary.
const HTML: &str = concat!(
    include_str!("view/head.html"),
    include_str!("view/draw.js"),
    include_str!("view/view.js"),
    "</script>\n</body>\n</html>\n"
);

/// The `_meta.ui` of a tool whose results the App draws.
pub(crate) fn tool_meta() -> Value {
    json!({ "resourceUri": VIEW_URI })
}

/// The App's `_meta.ui`: it fetches, connects to and frames nothing, so every domain list is empty.
fn resource_meta() -> MetaObject {
    let csp = json!({ "connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": [] });
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), json!({ "csp": csp, "prefersBorder": true }));
    MetaObject(meta)
}

/// The App as `resources/list` names it.
pub(crate) fn resource() -> Resource {
    let mut resource = Resource::new(VIEW_URI, "toolgate-view")
        .with_title("Charts and tables")
        .with_description("Draws the chart or table of a tool's result.")
        .with_mime_type(APP_MIME_TYPE);
    resource.meta = Some(resource_meta());
    resource
}

/// The App as `resources/read` returns it.
pub(crate) fn contents() -> ReadResourceResult {
    let contents = ResourceContents::text(HTML, VIEW_URI)
        .with_mime_type(APP_MIME_TYPE)
        .with_meta(resource_meta());
    ReadResourceResult::new(vec![contents])
}
