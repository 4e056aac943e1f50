//! [`Progress`]: a tool's progress updates, for the caller to show.

use std::fmt;
use std::sync::Arc;

use crate::error::ToolError;

use super::{CallParts, Param, ParamKind, ParamSpec, Requirement, RequirementKind};

/// One progress update.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolgate::Progress;
/// use toolgate::param::ProgressUpdate;
///
/// let updates = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&updates);
/// let progress = Progress::new(move |update: ProgressUpdate| sink.lock().unwrap().push(update));
/// progress.report(3.0, Some(10.0), Some("3 of 10 files"));
/// let update = &updates.lock().unwrap()[0];
/// assert_eq!((update.progress, update.total, update.message.as_deref()), (3.0, Some(10.0), Some("3 of 10 files")));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProgressUpdate {
    /// Work done so far; never decreases within a call.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A short message.
    pub message: Option<String>,
}

type ProgressFn = dyn Fn(ProgressUpdate) + Send + Sync;

/// Reports progress to whoever made the call (an MCP client, a host's UI). Does nothing when nobody listens.
///
/// ```rust,standalone_crate
/// use std::sync::{Arc, Mutex};
/// use toolgate::prelude::*;
///
/// /// Import rows, reporting progress and logging each batch.
/// #[tool(public)]
/// async fn import(progress: Progress, log: Log) -> &'static str {
///     for batch in 1..=2 {
///         progress.report(f64::from(batch), Some(2.0), Some("importing"));
///         log.info(format!("batch {batch} done"));
///     }
///     "imported"
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let (progress, logs) = (Arc::clone(&seen), Arc::clone(&seen));
/// let call = Call::new("import", serde_json::json!({}))
///     .on_progress(move |u| progress.lock().unwrap().push(format!("{}/{}", u.progress, u.total.unwrap())))
///     .on_log(move |entry| logs.lock().unwrap().push(entry.message));
/// let registry = Registry::builder().build().unwrap();
/// assert!(registry.run(&Caller::anonymous(), call).await.is_done());
/// assert_eq!(*seen.lock().unwrap(), ["1/2", "batch 1 done", "2/2", "batch 2 done"]);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<ProgressFn>>);

impl Progress {
    /// A reporter that hands each update to `sink`.
    pub fn new(sink: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        Progress(Some(Arc::new(sink)))
    }

    /// Reports `progress` out of an optional `total`, with an optional message.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.0 {
            sink(ProgressUpdate {
                progress,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Whether anybody receives the updates.
    pub fn is_listened(&self) -> bool {
        self.0.is_some()
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Progress")
            .field(&self.is_listened())
            .finish()
    }
}

impl Param for Progress {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(parts.progress.clone())
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Reports))
    }
}
