//! [`ToolError`]: what a tool, or the pipeline, tells the model when a call does not succeed.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};

/// Why a call failed. The pipeline sets the kinds below [`ErrorKind::Internal`]; tools mostly use
/// [`ToolError::new`] (a message for the model) or `?` on any error type ([`ErrorKind::Internal`]).
///
/// These are failures only. A call that waits for a person or a client is no failure: it ends in its own
/// [`Outcome`](crate::Outcome) (`NeedsConfirmation`, `InputRequired`, `Declined`, `Unsupported`).
///
/// ```
/// use serde_json::json;
/// use toolgate::{Caller, DynamicTool, ErrorKind, Registry};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let refund = DynamicTool::new("kinds_refund", "Refund.", json!({ "type": "object", "properties": { "cents": { "type": "integer" } } }), |_, _| async { "ok" })
///     .ability("payments.refund");
/// let registry = Registry::builder().tool(refund).build()?;
/// let kind = |outcome: toolgate::Outcome| outcome.error().map(|e| e.kind());
/// let nobody = Caller::anonymous();
/// let clerk = Caller::new("clerk").with_abilities(["payments.refund"]);
///
/// // A caller who may not run a tool hears what they would for a name no tool has:
/// assert_eq!(kind(registry.call(&nobody, "kinds_refund", json!({})).await), Some(ErrorKind::UnknownTool));
/// assert_eq!(kind(registry.call(&clerk, "kinds_refund", json!({ "cents": "ten" })).await), Some(ErrorKind::InvalidArguments));
/// assert_eq!(kind(registry.call(&clerk, "kinds_nothing", json!({})).await), Some(ErrorKind::UnknownTool));
/// assert_eq!(ErrorKind::Confirmation.as_str(), "confirmation_refused");
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The tool refused or failed, with a message meant for the model.
    Failed,
    /// An error from deeper code (`?` on an I/O or database error, or a panic); its detail can be masked.
    Internal,
    /// The arguments do not match the tool's input schema.
    InvalidArguments,
    /// The caller may not run the tool (told so only with
    /// [`explain_denials`](crate::RegistryBuilder::explain_denials); the audit always sees it), or sent
    /// another caller's confirmation.
    Denied,
    /// No tool by that name exists for this caller.
    UnknownTool,
    /// The tool exists but is switched off, or hidden by read-only mode; or a write could not run
    /// because the store of approvals cannot be reached.
    Unavailable,
    /// The tool's call ceiling (`max_runs`) is reached for this session.
    LimitReached,
    /// The tool did not finish within its timeout.
    Timeout,
    /// The call was cancelled before the tool finished.
    Cancelled,
    /// A confirmation or request state was refused: forged, altered, expired, used, declined, or issued for
    /// another tool or other arguments. Nothing ran.
    Confirmation,
}

impl ErrorKind {
    /// The kind's stable snake_case name, as used in the structured form of an error.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Failed => "failed",
            ErrorKind::Internal => "internal",
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::Denied => "denied",
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::LimitReached => "limit_reached",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Confirmation => "confirmation_refused",
        }
    }
}

/// An error a model can understand and act on.
///
/// Its text form is `[ERROR] <message>` (the convention models are trained to read as "do not retry
/// blindly"); its structured form is `{"error": {"kind": ..., "message": ..., "data": ...}}`.
///
/// Any `std::error::Error` converts into a `ToolError` of kind [`ErrorKind::Internal`], so `?` works in tools.
/// The error itself is kept as the [`source`](Self::source), with its chain, for operators (logs, audit
/// sinks); the model reads only the message, or a generic one when internal errors are masked.
/// `ToolError` itself deliberately does not implement `std::error::Error`, as with `anyhow::Error`.
///
/// ```
/// use toolgate::{ErrorKind, ToolError};
///
/// let e = ToolError::new("Order RO-00012 is already shipped.");
/// assert_eq!(e.to_text(), "[ERROR] Order RO-00012 is already shipped.");
///
/// let io: ToolError = std::io::Error::other("disk full").into();
/// assert_eq!(io.kind(), ErrorKind::Internal);
/// let cause = io.source().and_then(|s| s.downcast_ref::<std::io::Error>()).unwrap();
/// assert_eq!(cause.kind(), std::io::ErrorKind::Other);
/// ```
#[derive(Debug, Clone)]
pub struct ToolError {
    kind: ErrorKind,
    message: String,
    data: Option<Value>,
    source: Option<Arc<dyn Error + Send + Sync>>,
}

/// Equal when the model would read the same: the source is not compared.
impl PartialEq for ToolError {
    fn eq(&self, other: &Self) -> bool {
        (self.kind, &self.message, &self.data) == (other.kind, &other.message, &other.data)
    }
}

impl ToolError {
    /// A failure with a message for the model: say what went wrong and, if possible, what to do instead.
    pub fn new(message: impl Into<String>) -> Self {
        Self::with_kind(ErrorKind::Failed, message)
    }

    /// An error of a given kind.
    pub fn with_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
            data: None,
            source: None,
        }
    }

    /// Attaches structured detail, shown in the structured form of the error.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, without the `[ERROR]` prefix.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The structured detail, if any.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The error this one was converted from (by `?`), for operators; the model never sees it.
    pub fn source(&self) -> Option<&(dyn Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// A failure whose message is `signal`'s, carrying it typed as the source: how a tool that asks stops,
    /// through `?`, until the pipeline turns the signal into its outcome.
    pub(crate) fn signal(signal: impl Error + Send + Sync + 'static) -> Self {
        let message = signal.to_string();
        ToolError {
            source: Some(Arc::new(signal)),
            ..ToolError::new(message)
        }
    }

    /// The error of a tool that panicked, with the panic's message.
    pub(crate) fn panicked(message: &str) -> Self {
        ToolError {
            source: Some(Arc::new(Panicked(message.to_owned()))),
            ..ToolError::with_kind(ErrorKind::Internal, format!("the tool panicked: {message}"))
        }
    }

    /// Whether the tool panicked, rather than returned an error.
    pub(crate) fn is_panic(&self) -> bool {
        self.source.as_deref().is_some_and(|s| s.is::<Panicked>())
    }

    /// An internal error from a boxed one, which stays the source.
    pub(crate) fn from_boxed(error: Box<dyn Error + Send + Sync>) -> Self {
        let message = error.to_string();
        ToolError {
            source: Some(Arc::from(error)),
            ..ToolError::with_kind(ErrorKind::Internal, message)
        }
    }

    /// The source and its own sources, `: `-separated, for a log line.
    pub(crate) fn causes(&self) -> Option<String> {
        let mut next: Option<&(dyn Error + 'static)> = Some(self.source.as_deref()?);
        let mut causes = Vec::new();
        while let Some(error) = next {
            causes.push(error.to_string());
            next = error.source();
        }
        Some(causes.join(": "))
    }

    /// The text a model reads: `[ERROR] <message>`.
    pub fn to_text(&self) -> String {
        error_text(&self.message)
    }

    /// The structured form: `{"error": {"kind", "message", "data"?}}`.
    pub fn to_json(&self) -> Value {
        error_json(self.kind.as_str(), &self.message, self.data.as_ref())
    }

    /// This error with its message replaced by a generic one, for internal errors when masking is on.
    pub(crate) fn masked(&self) -> Self {
        ToolError {
            source: self.source.clone(),
            ..ToolError::with_kind(self.kind, "The tool failed because of an internal error.")
        }
    }
}

/// A tool's panic, kept as the source of its error.
#[derive(Debug)]
struct Panicked(String);

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "panicked: {}", self.0)
    }
}

impl Error for Panicked {}

/// The text form of an unsuccessful call: `[ERROR] <message>`.
pub(crate) fn error_text(message: &str) -> String {
    format!("[ERROR] {message}")
}

/// The structured form of an unsuccessful call: `{"error": {"kind", "message", "data"?}}`.
pub(crate) fn error_json(kind: &str, message: &str, data: Option<&Value>) -> Value {
    let mut error = json!({ "kind": kind, "message": message });
    if let Some(data) = data {
        error["data"] = data.clone();
    }
    json!({ "error": error })
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        ToolError::from_boxed(Box::new(error))
    }
}
