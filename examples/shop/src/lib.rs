//! A shop back office as toolgate tools, on an embedded SQLite database seeded with demo data.
//!
//! The tools live in [`tools`]; [`registry`] builds the registry the binary serves and the tests call.

pub mod agent;
pub mod db;
pub mod telemetry;
pub mod tools;

use toolgate::confirm::KeyRing;
use toolgate::http::{BearerTokens, HttpServer, ProtectedResource, TokenVerifier};
use toolgate::mcp::McpServer;
use toolgate::operator::AdminApi;
use toolgate::registry::{BuiltIn, Config};
use toolgate::store::Database;
use toolgate::{Caller, Registry};

pub use db::Db;

// ANCHOR: registry
/// The registry of the shop's tools, overview first, reading and writing `db`, with the operator's
/// `config` applied over the code's choices. Confirmations, the audit trail and the operator's records of
/// the tools are kept in `store` (SQLite, or PostgreSQL for replicas); confirmations are sealed with the keys in `TOOLGATE_KEYS`
/// (`id:base64secret,...`, current first) when it is set, else with the keys kept in `store`.
///
/// # Errors
/// When the tools are inconsistent (a duplicate name, missing state): a bug caught at start-up; or when
/// the keys or the records cannot be read; or when `config` names a tool the shop does not have.
pub async fn registry(
    db: Db,
    store: &Database,
    config: Config,
) -> Result<Registry, Box<dyn std::error::Error>> {
    let mut builder = Registry::builder()
        .state(db)
        .first(["shop_overview"])
        .built_in(BuiltIn::ShowTable)
        .built_in(BuiltIn::DrawChart)
        .database(store)
        .config(config);
    // Without it, the keys kept in `store` seal, and an operator's `toolgate keys rotate` is taken up live.
    if let Ok(text) = std::env::var("TOOLGATE_KEYS") {
        builder = builder.keys(KeyRing::parse(&text)?);
    }
    Ok(builder.load().await?)
}
// ANCHOR_END: registry

// ANCHOR: callers
/// A person who may look at orders.
pub fn viewer() -> Caller {
    Caller::new("vera@shop.example")
        .with_role("Viewer")
        .with_abilities(["orders.view"])
}

/// A person who may also confirm and ship them.
pub fn manager() -> Caller {
    Caller::new("max@shop.example")
        .with_role("Manager")
        .with_abilities(["orders.view", "orders.manage", "orders.ship"])
}

/// The support chat's model: it may look at orders, but sees only the tools an operator assigns to the
/// profile `support` (none until then).
pub fn support_bot() -> Caller {
    Caller::new("support-bot@shop.example")
        .with_role("Support bot")
        .with_abilities(["orders.view"])
        .with_profile("support")
}
// ANCHOR_END: callers

// ANCHOR: server
/// The shop as an MCP server: its identity and instructions; stdio serves the manager.
pub fn server(registry: Registry) -> McpServer {
    McpServer::new(registry)
        .name("example-shop")
        .version(env!("CARGO_PKG_VERSION"))
        .title("Shop back office")
        .instructions(
            "The back office of an online shop. Start broad questions with shop_overview, find orders with \
             search_orders; confirm_order and ship_order change data and need a person's approval.",
        )
        .default_caller(manager())
}

/// The shop's `server` over HTTP: the bearer tokens it accepts, the admin API and page beside MCP, and
/// `/delegations`, where a caller may hand a sub-agent less than it holds.
pub fn http_server(server: McpServer) -> HttpServer {
    let tokens = BearerTokens::new()
        .token("viewer-token", viewer())
        .token("manager-token", manager())
        .token("bot-token", support_bot())
        .token("admin-token", operator());
    HttpServer::new(server)
        .authenticator(tokens)
        .mount(AdminApi)
        .accept_delegations()
}

/// The person who runs the shop's server: the admin API's caller, who runs no tool.
pub fn operator() -> Caller {
    Caller::new("olga@shop.example")
        .with_role("Operator")
        .with_abilities([toolgate::operator::ADMIN_ABILITY])
}
// ANCHOR_END: server

// ANCHOR: signed_in
/// The shop's `server` over HTTP for people who sign in at the authorization server `issuer`, with
/// `public_url` the MCP endpoint's address as they reach it: the access tokens it issues for that
/// address are checked against its keys, and the server's metadata tells a client where to sign in.
/// What each scope grants is the operator's: `[grants]` in the configuration file
/// (`deploy/signed-in.toml`) and `toolgate grants`; without them a signed-in person runs public tools
/// only. A person signs in as a viewer first (`orders:read`), and is asked for `orders:write` when
/// they first call a write. The admin API and `/delegations` are beside MCP, as with
/// [`http_server`].
///
/// # Errors
/// When `public_url` is not an absolute `http(s)` URL, or `issuer` is neither `https` nor on a loopback
/// address.
pub fn signed_in_http_server(
    server: McpServer,
    issuer: &str,
    public_url: &str,
) -> Result<HttpServer, String> {
    let resource = ProtectedResource::new(public_url)?
        .authorization_server(issuer)
        .scopes(["orders:read", "orders:write", "shop:admin"])
        .name("Shop back office");
    let verifier = TokenVerifier::new(&resource)?.sign_in_scopes(["orders:read"]);
    Ok(HttpServer::new(server)
        .protected_resource(resource)
        .authenticator(verifier)
        .mount(AdminApi)
        .accept_delegations())
}
// ANCHOR_END: signed_in
