//! The admin API: the operator's commands as JSON over HTTP, under `/admin`, mounted on an HTTP server
//! ([`HttpServer::mount`](crate::http::HttpServer::mount)) behind its authenticator. A caller needs the ability [`ADMIN_ABILITY`], which nothing
//! grants by default: without it the answer is 403 and nothing changes. The API describes itself at
//! `/admin/openapi.json`. The operator's page over it is at `/admin`.
//!
//! ```
//! use toolgate::http::{BearerTokens, HttpServer};
//! use toolgate::mcp::McpServer;
//! use toolgate::operator::{ADMIN_ABILITY, AdminApi};
//! use toolgate::sqlite::SqliteStore;
//! use toolgate::{Caller, Registry};
//! use tower_service::Service;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Registry::builder().records(SqliteStore::in_memory()?).load().await?;
//! let tokens = BearerTokens::new()
//!     .token("ops-secret", Caller::new("ops").with_abilities([ADMIN_ABILITY]))
//!     .token("vera-secret", Caller::new("vera"));
//! let server = HttpServer::new(McpServer::new(registry)).authenticator(tokens).mount(AdminApi);
//! let mut router = server.router(toolgate::param::CancellationToken::new());
//! let get = |token: &str| {
//!     http::Request::get("/admin/tools")
//!         .header("host", "localhost")
//!         .header("authorization", format!("Bearer {token}"))
//!         .body(axum::body::Body::empty())
//!         .unwrap()
//! };
//! assert_eq!(router.call(get("ops-secret")).await.unwrap().status(), 200);
//! assert_eq!(router.call(get("vera-secret")).await.unwrap().status(), 403);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::param::CancellationToken;
use crate::registry::Registry;
use crate::store::{AuditQuery, KeyInfo};

use crate::http::{Guard, Mount, json_response, problem};

use super::commands::Operator;

mod page;
mod replies;

use replies::{actor, answer, edited, read_json, rejected};
#[cfg(signs_in)]
mod sign_in;

/// The ability a caller needs for the admin API. Grant it to operators only.
///
/// ```
/// assert_eq!(toolgate::operator::ADMIN_ABILITY, "toolgate.admin");
/// ```
pub const ADMIN_ABILITY: &str = "toolgate.admin";

/// The admin API and its page, to [mount](crate::http::HttpServer::mount) on an HTTP server. Without an
/// authenticator on the server every request to it is refused (403), since none could be told from
/// another; a caller needs the ability [`ADMIN_ABILITY`]; its writes must be JSON and come from no
/// browser or an allowed origin. The module's example mounts it.
///
/// ```
/// use toolgate::http::HttpServer;
/// use toolgate::mcp::McpServer;
/// use toolgate::operator::AdminApi;
///
/// let registry = toolgate::Registry::builder().build()?;
/// let server = HttpServer::new(McpServer::new(registry)).mount(AdminApi);
/// # let _ = server;
/// # Ok::<(), toolgate::BuildError>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AdminApi;

impl Mount for AdminApi {
    fn router(
        self: Box<Self>,
        registry: &Registry,
        guard: Guard,
        cancellation: CancellationToken,
    ) -> Router {
        router(registry.clone(), guard, cancellation)
    }
}

/// How long `/admin/changes` waits for a change before it answers with the revision it has.
const LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The API's routes over `registry`'s records, behind `guard`, and the page; its waits end when
/// `cancellation` is cancelled.
fn router(registry: Registry, guard: Guard, cancellation: CancellationToken) -> Router {
    let page = page::router(guard.clone());
    let router = Router::new()
        .route("/admin/openapi.json", get(openapi))
        .route("/admin/changes", get(changes))
        .route("/admin/calls", get(calls))
        .route("/admin/tools", get(list))
        .route("/admin/tools/{name}", get(show).delete(delete))
        .route("/admin/tools/{name}/edit", axum::routing::post(edit))
        .route("/admin/sync", get(plan).post(sync))
        .route("/admin/history", get(history))
        .route("/admin/profiles", get(profiles))
        .route("/admin/profiles/{name}", get(profile))
        .route(
            "/admin/profiles/{name}/edit",
            axum::routing::post(edit_profile),
        )
        .route("/admin/audit", get(audit))
        .route("/admin/keys", get(keys))
        .route("/admin/keys/rotate", axum::routing::post(rotate_key))
        .route("/admin/keys/{id}", axum::routing::delete(retire_key))
        .route("/admin/limits", get(limits))
        .route(
            "/admin/limits/{scope}/edit",
            axum::routing::post(edit_limit),
        )
        .route("/admin/grants", get(grants))
        .route(
            "/admin/grants/{claim}/edit",
            axum::routing::post(edit_grant),
        );
    #[cfg(feature = "remote")]
    let router = router.route("/admin/servers", get(servers)).route(
        "/admin/servers/{label}/edit",
        axum::routing::post(edit_server),
    );
    #[cfg(signs_in)]
    let router = router.route(
        "/admin/servers/{label}/sign-in",
        axum::routing::post(begin_sign_in),
    );
    #[cfg(signs_in)]
    let sign_in = sign_in::router(registry.clone());
    let router = router
        .with_state(registry)
        .layer(axum::Extension(cancellation))
        .layer(middleware::from_fn_with_state(Arc::new(guard), admit))
        .merge(page);
    // The browser an operator signed in with comes back here with no credential of the admin API: the
    // sign-in's state, which only that browser was given, is what lets it in, once.
    #[cfg(signs_in)]
    let router = router.merge(sign_in);
    router.layer(middleware::from_fn(page::secured))
}

/// The filter of `/admin/changes`: the revision the page has.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct After {
    after: Option<u64>,
}

/// Answers once the registry serves a revision other than `after`, or a remote server's tools changed, or
/// after [`LONGEST_WAIT`]: `{"revision"}`, for a page that shows changes made elsewhere (the CLI,
/// another replica) without a reload.
async fn changes(
    State(registry): State<Registry>,
    axum::Extension(cancellation): axum::Extension<CancellationToken>,
    params: Result<Query<After>, QueryRejection>,
) -> Response {
    let after = match params {
        Ok(Query(After { after })) => after,
        Err(error) => return rejected(&error),
    };
    if after.is_none_or(|after| after == registry.revision()) {
        tokio::select! {
            _ = registry.changed() => {}
            () = tokio::time::sleep(LONGEST_WAIT) => {}
            () = cancellation.cancelled() => {}
        }
    }
    json_response(
        StatusCode::OK,
        json!({ "revision": registry.revision() }).to_string(),
    )
}

/// The window of `/admin/calls`, in hours back from now.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Hours {
    hours: Option<u32>,
}

/// How many calls each tool had over the last `hours` (24 by default, at most a week), most called first,
/// and as a bar chart of the twenty most called.
async fn calls(
    State(registry): State<Registry>,
    params: Result<Query<Hours>, QueryRejection>,
) -> Response {
    let hours = match params {
        Ok(Query(Hours { hours })) => hours.unwrap_or(24).clamp(1, 24 * 7),
        Err(error) => return rejected(&error),
    };
    let since_ms = crate::store::unix_ms().saturating_sub(u64::from(hours) * 3_600_000);
    answer(
        async {
            let counts = registry.store()?.calls_per_tool(since_ms).await?;
            let top = &counts[..counts.len().min(20)];
            let title = format!("Calls per tool, last {hours} h");
            #[allow(clippy::cast_precision_loss)] // counts far below 2^52
            let chart = crate::output::Chart::new(crate::output::ChartKind::Bar, title)
                .labels(top.iter().map(|c| c.tool.clone()))
                .dataset("calls", top.iter().map(|c| c.calls as f64));
            Ok(json!({ "since_ms": since_ms, "tools": counts, "chart": chart }))
        }
        .await,
    )
}

/// The remote servers as this process serves them now, and the records of those operators added.
#[cfg(feature = "remote")]
async fn servers(State(registry): State<Registry>) -> Response {
    let servers = registry.servers();
    let records = match registry.records() {
        Some(_) => registry.server_records().await.map(Some),
        None => Ok(None),
    };
    answer(records.map(|records| json!({ "servers": servers, "records": records })))
}

#[cfg(feature = "remote")]
async fn edit_server(
    State(registry): State<Registry>,
    Path(label): Path<String>,
    request: Request,
) -> Response {
    let hint = r#"{"version": N, "change": {"change": "put", "value": {"url": "http://...", "ability": "..."}}}"#;
    edited(&registry, request, hint, async |operator, seen, change| {
        let revision = operator.edit_server(&label, seen, change).await?;
        let server = registry.servers().into_iter().find(|s| s.label == label);
        Ok(json!({ "revision": revision, "server": server }))
    })
    .await
}

/// Begins an operator's sign-in to a remote server: `{"server", "url"}`, the address to open.
#[cfg(signs_in)]
async fn begin_sign_in(State(registry): State<Registry>, Path(label): Path<String>) -> Response {
    let url = registry.begin_sign_in(&label).await;
    answer(url.map(|url| json!({ "server": label, "url": url })))
}

/// The rate limits in the records.
async fn limits(State(registry): State<Registry>) -> Response {
    answer(
        async {
            let limits = registry.store()?.load().await?.limits;
            Ok(json!(limits.into_values().collect::<Vec<_>>()))
        }
        .await,
    )
}

async fn edit_limit(
    State(registry): State<Registry>,
    Path(scope): Path<String>,
    request: Request,
) -> Response {
    let hint =
        r#"{"version": N, "change": {"change": "set", "value": {"calls": 30, "per_secs": 60}}}"#;
    edited(&registry, request, hint, async |operator, seen, change| {
        let (revision, limit) = operator.edit_limit(scope.parse()?, seen, change).await?;
        Ok(json!({ "revision": revision, "limit": limit }))
    })
    .await
}

/// What scopes and roles grant, in the records.
async fn grants(State(registry): State<Registry>) -> Response {
    answer(
        async {
            let grants = registry.store()?.load().await?.grants;
            Ok(json!(grants.into_values().collect::<Vec<_>>()))
        }
        .await,
    )
}

async fn edit_grant(
    State(registry): State<Registry>,
    Path(claim): Path<String>,
    request: Request,
) -> Response {
    let hint = r#"{"version": N, "change": {"change": "set", "value": ["orders.view"]}}"#;
    edited(&registry, request, hint, async |operator, seen, change| {
        let (revision, grant) = operator.edit_grant(claim.parse()?, seen, change).await?;
        Ok(json!({ "revision": revision, "grant": grant }))
    })
    .await
}

/// 403 for a host the server does not answer for (DNS rebinding), 401 without valid credentials, 403
/// without the admin ability; the caller reaches the handlers as an extension.
async fn admit(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if !guard.authenticates() {
        // Every request would be the default caller: anyone who reaches the port could edit.
        return problem(
            StatusCode::FORBIDDEN,
            "forbidden",
            "the admin API is served only behind an authenticator (`HttpServer::authenticator`), so \
             that it knows who asks; nothing was changed",
        );
    }
    let (mut parts, body) = request.into_parts();
    let caller = match guard.admit(&parts).await {
        Ok(caller) => caller,
        Err(refusal) => return refusal,
    };
    if !caller.has(ADMIN_ABILITY) {
        let message =
            format!("the admin API needs the ability `{ADMIN_ABILITY}`; nothing was changed");
        return problem(StatusCode::FORBIDDEN, "forbidden", &message);
    }
    parts.extensions.insert(caller);
    next.run(Request::from_parts(parts, body)).await
}

/// The records, each with what the registry serves now: the remote server a tool comes from (`server`),
/// and the settings it runs with (`effective_settings`).
async fn list(State(registry): State<Registry>) -> Response {
    answer(
        async {
            let records = registry.store()?.load().await?;
            let tools: Vec<Value> = records
                .tools
                .into_values()
                .map(|record| {
                    let server = registry
                        .get(&record.name)
                        .and_then(|tool| match tool.source() {
                            crate::tool::Source::Remote { server, .. } => Some(server.to_string()),
                            _ => None,
                        });
                    let effective = registry.settings_of(&record.name);
                    let mut entry = json!(record);
                    if let Some(server) = server {
                        entry["server"] = Value::String(server);
                    }
                    if let Some(settings) = effective {
                        entry["effective_settings"] = Value::clone(&settings);
                    }
                    entry
                })
                .collect();
            Ok(json!({ "revision": records.revision, "tools": tools }))
        }
        .await,
    )
}

async fn show(State(registry): State<Registry>, Path(name): Path<String>) -> Response {
    answer(
        Operator::new(&registry, String::new())
            .tool(&name)
            .await
            .map(|record| json!(record)),
    )
}

async fn edit(
    State(registry): State<Registry>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let hint = r#"{"version": N, "change": {"change": "disable"}}"#;
    edited(&registry, request, hint, async |operator, seen, change| {
        let (revision, record) = operator.edit_tool(&name, seen, change).await?;
        Ok(json!({ "revision": revision, "tool": record }))
    })
    .await
}

async fn profiles(State(registry): State<Registry>) -> Response {
    answer(
        async {
            let records = registry.store()?.load().await?;
            let profiles: Vec<_> = records.profiles.into_values().collect();
            Ok(json!({ "revision": records.revision, "profiles": profiles }))
        }
        .await,
    )
}

async fn profile(State(registry): State<Registry>, Path(name): Path<String>) -> Response {
    let operator = Operator::new(&registry, String::new());
    answer(operator.profile(&name).await.map(|profile| json!(profile)))
}

async fn edit_profile(
    State(registry): State<Registry>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let hint = r#"{"version": N, "change": {"change": "assign", "value": {"tool": "...", "settings": null}}}"#;
    edited(&registry, request, hint, async |operator, seen, change| {
        let (revision, profile) = operator.edit_profile(&name, seen, change).await?;
        Ok(json!({ "revision": revision, "profile": profile }))
    })
    .await
}

/// The filters of an audit query, as query parameters.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AuditParams {
    caller: Option<String>,
    tool: Option<String>,
    outcome: Option<String>,
    since_ms: Option<u64>,
    until_ms: Option<u64>,
    limit: Option<usize>,
}

async fn audit(
    State(registry): State<Registry>,
    params: Result<Query<AuditParams>, QueryRejection>,
) -> Response {
    let Query(params) = match params {
        Ok(params) => params,
        Err(error) => return rejected(&error),
    };
    let query = AuditQuery {
        caller: params.caller,
        tool: params.tool,
        outcome: params.outcome,
        since_ms: params.since_ms,
        until_ms: params.until_ms,
        ..AuditQuery::newest(params.limit.unwrap_or(100).min(1000))
    };
    answer(async { Ok(json!(registry.store()?.audit_trail(&query).await?)) }.await)
}

async fn keys(State(registry): State<Registry>) -> Response {
    answer(
        async {
            let ring = registry.store()?.key_ring().await?;
            Ok(json!(KeyInfo::of(&ring)))
        }
        .await,
    )
}

/// The body of a rotation: how long until the new key seals.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RotateBody {
    after_ms: u64,
}

async fn rotate_key(State(registry): State<Registry>, request: Request) -> Response {
    let actor = actor(&request);
    let body: RotateBody = match read_json(request, r#"{"after_ms": 60000}"#).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let after = std::time::Duration::from_millis(body.after_ms);
    let rotated = Operator::new(&registry, actor).rotate_key(after).await;
    answer(rotated.map(|rotated| json!(rotated)))
}

async fn retire_key(
    State(registry): State<Registry>,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let actor = actor(&request);
    let retired = Operator::new(&registry, actor).retire_key(&id).await;
    answer(retired.map(|revision| json!({ "retired": id, "revision": revision })))
}

async fn delete(
    State(registry): State<Registry>,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let actor = actor(&request);
    let deleted = Operator::new(&registry, actor).delete_tool(&name).await;
    answer(deleted.map(|revision| json!({ "revision": revision, "deleted": name })))
}

async fn plan(State(registry): State<Registry>) -> Response {
    answer(
        registry
            .sync_plan()
            .await
            .map(|plan| plan_json(&plan, false)),
    )
}

async fn sync(State(registry): State<Registry>, request: Request) -> Response {
    let actor = actor(&request);
    answer(
        registry
            .sync(&actor)
            .await
            .map(|plan| plan_json(&plan, true)),
    )
}

/// How many rows to answer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Limit {
    limit: Option<usize>,
}

async fn history(
    State(registry): State<Registry>,
    params: Result<Query<Limit>, QueryRejection>,
) -> Response {
    let limit = match params {
        Ok(Query(Limit { limit })) => limit.unwrap_or(50).min(1000),
        Err(error) => return rejected(&error),
    };
    answer(async { Ok(json!(registry.store()?.history(limit).await?)) }.await)
}

async fn openapi() -> Response {
    json_response(StatusCode::OK, Bytes::from_static(OPENAPI.as_bytes()))
}

fn plan_json(plan: &crate::store::SyncPlan, applied: bool) -> Value {
    let new: Vec<&str> = plan.new.iter().map(|r| r.name.as_str()).collect();
    let changed: Vec<Value> = plan
        .changed
        .iter()
        .map(|d| json!({ "name": d.record.name, "what": d.what }))
        .collect();
    json!({ "applied": applied, "new": new, "changed": changed, "vanished": plan.vanished })
}

/// The OpenAPI document of the admin API.
pub(crate) const OPENAPI: &str = include_str!("openapi.json");
