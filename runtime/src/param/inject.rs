//! The injectable parameters: values the runtime supplies, which never appear in the input schema.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};

use super::{CallParts, Param, ParamKind, ParamSpec, Requirement, RequirementKind};

/// Shared application state (a database pool, an HTTP client), added once with
/// [`RegistryBuilder::state`](crate::RegistryBuilder::state) and cloned into each call that asks for it.
///
/// The registry refuses to build when a tool asks for state it was not given, naming the tool and type.
///
/// ```rust,standalone_crate
/// use std::sync::Arc;
/// use toolgate::prelude::*;
///
/// #[derive(Clone)]
/// struct Prices(Arc<Vec<(String, f64)>>);
///
/// /// The price of a product, in euros.
/// #[tool(public, read_only)]
/// async fn price(prices: State<Prices>, product: String) -> Result<f64, ToolError> {
///     let found = prices.0.0.iter().find(|(name, _)| *name == product);
///     found.map(|(_, price)| *price).ok_or_else(|| ToolError::new(format!("No product named {product}.")))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let prices = Prices(Arc::new(vec![("tea".into(), 3.5)]));
/// let registry = Registry::builder().state(prices).build().unwrap();
/// let outcome = registry.call(&Caller::anonymous(), "price", serde_json::json!({ "product": "tea" })).await;
/// assert_eq!(outcome.into_result().structured.as_deref(), Some(&serde_json::json!(3.5)));
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct State<T>(pub T);

impl<T> std::ops::Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// What a [`State<T>`] or an [`Extension<T>`] may hold: each call gets a clone of it, from any thread, so
/// it is `Clone + Send + Sync`, and cheap to clone (an `Arc`, a pool, a handle). Every such type is.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolgate::param::Shareable;
///
/// fn shareable<T: Shareable>() {}
/// shareable::<Arc<Mutex<u32>>>(); // a `Mutex<u32>` is not `Clone`: share it behind an `Arc`
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected: each call gets a clone of it, and `{Self}` is not `Clone + Send + Sync`",
    label = "each call would clone this `{Self}`",
    note = "share it behind an `Arc`: take `State<Arc<{Self}>>` and give the builder `.state(Arc::new(value))`"
)]
pub trait Shareable: Clone + Send + Sync + 'static {}

impl<T: Clone + Send + Sync + 'static> Shareable for T {}

/// Refuses a `State<T>` or `Extension<T>` parameter whose `T` each call could not clone, at the `T` that
/// `#[tool]` names.
#[doc(hidden)]
pub const fn check_shareable<T: Shareable>() {}

// Any `T`, not only a `Shareable` one: a `State<T>` parameter whose `T` is not is refused where `#[tool]`
// names it, with `Shareable`'s message, not as "not a parameter"; no such `T` can be in the state.
impl<T: Send + Sync + 'static> Param for State<T> {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        parts.state.cloned::<T>().map(State).ok_or_else(|| {
            ToolError::with_kind(
                ErrorKind::Internal,
                format!("no state of type `{}`", std::any::type_name::<T>()),
            )
        })
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::state::<T>())
    }
}

impl Param for Caller {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(parts.caller().clone())
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Nothing))
    }
}

/// Metadata of one call: the tool's name, the model's tool call id, the session, and W3C trace context.
/// Cloning is cheap (shared strings).
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
///
/// /// Which call is this?
/// #[tool(public, read_only)]
/// async fn which(invocation: Invocation) -> String {
///     format!("{} {:?} in {:?}", invocation.tool_name, invocation.tool_call_id, invocation.session_id)
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let call = Call::new("which", serde_json::json!({})).tool_call_id("call_7").session("chat-1");
/// let text = registry.run(&Caller::anonymous(), call).await.into_result().text_for_model();
/// assert_eq!(text, r#"which Some("call_7") in Some("chat-1")"#);
/// # });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Invocation {
    /// The tool being called.
    pub tool_name: Arc<str>,
    /// The model's id for this tool call, if the host passed one.
    pub tool_call_id: Option<Arc<str>>,
    /// The conversation or session, if any; `max_runs` counts per session.
    pub session_id: Option<Arc<str>>,
    /// W3C `traceparent`.
    pub traceparent: Option<Arc<str>>,
    /// W3C `tracestate`.
    pub tracestate: Option<Arc<str>>,
}

impl Invocation {
    /// A call of `tool` that carries no ids.
    pub(crate) fn of(tool: &Arc<str>) -> Self {
        Invocation {
            tool_name: Arc::clone(tool),
            ..Invocation::default()
        }
    }
}

impl Param for Invocation {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(parts.invocation().clone())
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Nothing))
    }
}

/// The tool's settings as set by the operator, deserialized into `T`. Missing settings read as `{}`.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct SearchSettings {
///     #[serde(default = "default_engine")]
///     engine: String,
/// }
///
/// fn default_engine() -> String {
///     "local".into()
/// }
///
/// /// Search the web.
/// #[tool(public, read_only)]
/// async fn web_search(settings: Settings<SearchSettings>, query: String) -> String {
///     format!("{} results for {query}", settings.0.engine)
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder()
///     .settings("web_search", serde_json::json!({ "engine": "brave" }))
///     .build()
///     .unwrap();
/// let outcome = registry.call(&Caller::anonymous(), "web_search", serde_json::json!({ "query": "rust" })).await;
/// assert_eq!(outcome.into_result().text_for_model(), "brave results for rust");
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings<T>(pub T);

impl<T: DeserializeOwned + JsonSchema + Send + 'static> Param for Settings<T> {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        let empty = serde_json::Value::Object(serde_json::Map::new());
        let value = parts.settings().unwrap_or(&empty);
        T::deserialize(value).map(Settings).map_err(|e| {
            ToolError::with_kind(
                ErrorKind::Internal,
                format!(
                    "the settings of `{}` are invalid: {e}",
                    parts.invocation.tool_name
                ),
            )
        })
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::settings::<T>())
    }
}

/// A value attached to the call by its caller or transport ([`Call::extension`](crate::Call::extension)),
/// cloned into the tool. Over MCP these include the client's `rmcp::Peer<RoleServer>`, for sampling and
/// elicitation, and over HTTP the request's `http::request::Parts`.
///
/// A call without one fails with a tool error naming the type, and the tool does not run.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
/// use toolgate::Extension;
///
/// /// The tenant the host resolved for this request.
/// #[derive(Clone)]
/// struct Tenant(&'static str);
///
/// /// Name this workspace.
/// #[tool(public, read_only)]
/// async fn workspace(tenant: Extension<Tenant>) -> String {
///     format!("Workspace of {}", tenant.0 .0)
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let call = Call::new("workspace", serde_json::json!({})).extension(Tenant("acme"));
/// let outcome = registry.run(&Caller::anonymous(), call).await;
/// assert_eq!(outcome.into_result().text_for_model(), "Workspace of acme");
///
/// let without = registry.call(&Caller::anonymous(), "workspace", serde_json::json!({})).await;
/// assert!(without.error().unwrap().message().contains("Tenant"));
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Extension<T>(pub T);

impl<T> std::ops::Deref for Extension<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

// Any `T`, as for `State<T>`.
impl<T: Send + Sync + 'static> Param for Extension<T> {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        parts
            .extensions
            .cloned::<T>()
            .map(Extension)
            .ok_or_else(|| {
                ToolError::new(format!(
                    "This tool needs `{}`, which this call does not carry.",
                    std::any::type_name::<T>()
                ))
            })
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Extension))
    }
}

/// The approval a write runs under: the id of the confirmation a person approved, the same on every run of
/// that approval, and whether this run resumes one whose process died. `None` when the call ran without
/// an approval (a tool without a preview, or one a policy let skip it).
///
/// A run is resumed after its replica died mid-write, and may have committed before it died. Keep the id
/// with the write, in the same transaction, and a resumed run can find that it already happened.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::param::Approval;
/// use toolgate::prelude::*;
///
/// /// Pay an invoice. Changes data.
/// #[tool(public, preview = preview_pay)]
/// async fn pay(approval: Approval, invoice: u32) -> String {
///     // A real tool writes `approval.id()` with the payment, as its idempotency key.
///     format!("Paid invoice {invoice} under {}.", approval.id().is_some())
/// }
///
/// async fn preview_pay(_approval: Approval, invoice: u32) -> Preview {
///     Preview::new(format!("Pay invoice {invoice}"))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let ada = Caller::new("ada");
/// let Outcome::NeedsConfirmation(pending) = registry.call(&ada, "pay", json!({ "invoice": 7 })).await else { unreachable!() };
/// let paid = registry.confirm(&ada, pending.confirmation()).await;
/// assert_eq!(paid.into_result().text_for_model(), "Paid invoice 7 under true.");
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct Approval {
    id: Option<Arc<str>>,
    resumed: bool,
}

impl Approval {
    /// The approval of confirmation `id`; `resumed` when an earlier run of it was abandoned.
    pub(crate) fn new(id: &str, resumed: bool) -> Self {
        Approval {
            id: Some(Arc::from(id)),
            resumed,
        }
    }

    /// The confirmation's id, unique to the previewed call: an idempotency key for the write.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Whether this run resumes an approval whose first run was abandoned (its process died).
    pub fn resumed(&self) -> bool {
        self.resumed
    }
}

impl Param for Approval {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(parts.extension::<Approval>().cloned().unwrap_or_default())
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Nothing))
    }
}

/// The call's cancellation token: cancelled when the caller cancels or the tool's timeout passes.
/// Long-running tools check it (`token.is_cancelled()`) or select on `token.cancelled()`.
///
/// ```rust,standalone_crate
/// use toolgate::prelude::*;
///
/// /// Crunch numbers until done or cancelled.
/// #[tool(public, read_only, timeout = "50ms")]
/// async fn crunch(cancellation: Cancellation) -> Result<u64, ToolError> {
///     let mut rounds = 0;
///     loop {
///         tokio::select! {
///             () = cancellation.cancelled() => return Err(ToolError::new("stopped")),
///             () = tokio::time::sleep(std::time::Duration::from_millis(10)) => rounds += 1,
///         }
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().unwrap();
/// let outcome = registry.call(&Caller::anonymous(), "crunch", serde_json::json!({})).await;
/// assert_eq!(outcome.error().unwrap().kind(), toolgate::ErrorKind::Timeout);
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cancellation(pub CancellationToken);

impl std::ops::Deref for Cancellation {
    type Target = CancellationToken;
    fn deref(&self) -> &CancellationToken {
        &self.0
    }
}

impl Param for Cancellation {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(Cancellation(parts.cancellation()))
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Nothing))
    }
}
