//! [`ConfirmationStore`]: where used confirmations are recorded, so that each one acts once.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::error::ToolError;
use crate::sync::Locked;

/// How long a store keeps a used confirmation past its expiry. A replica whose clock runs behind
/// another's, or a clock stepped back, still takes a token for a while after the store's clock says it
/// expired; keeping its record this much longer tolerates that much skew between the clocks involved.
///
/// ```
/// assert_eq!(toolgate::confirm::KEEP_USED.as_secs(), 3600);
/// ```
pub const KEEP_USED: Duration = Duration::from_secs(3600);

/// The error of a store that failed or cannot be reached: the write did not run. The model is told to
/// retry; the detail goes to the operator's log.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn store_failed(detail: &str) -> ToolError {
    tracing::error!(target: "toolgate::confirm", detail, "the confirmation store failed");
    ToolError::with_kind(
        crate::error::ErrorKind::Unavailable,
        "The store of approvals cannot be reached, so this write did not run and nothing was changed. \
         Try again shortly.",
    )
}

/// What a person decided about a previewed write.
///
/// ```
/// use toolgate::confirm::Decision;
///
/// assert_eq!(Decision::Decline.as_str(), "decline");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Approve,
    /// Never run it.
    Decline,
}

impl Decision {
    /// `approve` or `decline`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Decline => "decline",
        }
    }
}

/// What the store knew about a confirmation when it was claimed.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use toolgate::confirm::{Claimed, ConfirmationStore, Decision, MemoryStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let until = SystemTime::now() + Duration::from_secs(600);
/// assert_eq!(store.claim("c2", Decision::Decline, until).await?, Claimed::First);
/// assert_eq!(store.claim("c2", Decision::Approve, until).await?, Claimed::Declined);
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// First use: the decision is recorded now and the caller acts on it.
    First,
    /// It was approved before; `outcome` is the first run's recorded result, `None` while it runs (or if
    /// the process running it died).
    Approved {
        /// The recorded result, as JSON text.
        outcome: Option<String>,
    },
    /// It was declined before.
    Declined,
}

/// A boxed future of a store operation.
///
/// ```
/// use toolgate::confirm::StoreFuture;
///
/// fn nothing_to_do<'a>() -> StoreFuture<'a, ()> {
///     Box::pin(async { Ok(()) })
/// }
/// ```
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send + 'a>>;

/// Records used confirmations. Share one store between replicas (with a shared [`KeyRing`](crate::confirm::KeyRing))
/// and a confirmation acts once across all of them.
///
/// `claim` must be atomic: of two concurrent claims of one id, exactly one sees [`Claimed::First`].
///
/// A store that counts claims, in front of another:
///
/// ```rust,standalone_crate
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::SystemTime;
/// use serde_json::json;
/// use toolgate::confirm::{Claimed, ConfirmationStore, Decision, MemoryStore, StoreFuture};
/// use toolgate::prelude::*;
///
/// #[derive(Default)]
/// struct Counted {
///     inner: MemoryStore,
///     claims: AtomicUsize,
/// }
///
/// impl ConfirmationStore for Counted {
///     fn claim<'a>(&'a self, id: &'a str, decision: Decision, expires: SystemTime) -> StoreFuture<'a, Claimed> {
///         self.claims.fetch_add(1, Ordering::Relaxed);
///         self.inner.claim(id, decision, expires)
///     }
///
///     fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
///         self.inner.finish(id, outcome)
///     }
/// }
///
/// /// Send an invoice. Changes data.
/// #[tool(public, preview = preview_send)]
/// async fn send_invoice(number: u32) -> String {
///     format!("Invoice {number} sent.")
/// }
///
/// async fn preview_send(number: u32) -> Preview {
///     Preview::new(format!("Send invoice {number}"))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = Arc::new(Counted::default());
/// let registry = Registry::builder().confirmation_store(Arc::clone(&store)).build().unwrap();
/// let ada = Caller::new("ada");
/// let Outcome::NeedsConfirmation(pending) = registry.call(&ada, "send_invoice", json!({ "number": 12 })).await else { unreachable!() };
/// let first = registry.confirm(&ada, pending.confirmation()).await.into_result().text_for_model();
/// let retry = registry.confirm(&ada, pending.confirmation()).await.into_result().text_for_model();
/// assert_eq!((first.as_str(), retry.as_str()), ("Invoice 12 sent.", "Invoice 12 sent."));
/// assert_eq!(store.claims.load(Ordering::Relaxed), 2, "the retry was answered from the store");
/// # });
/// ```
pub trait ConfirmationStore: Send + Sync + 'static {
    /// Records `decision` for confirmation `id` unless one is recorded already, and says which.
    /// Keep each record for at least [`KEEP_USED`] past `expires`: until then a replica with a slower clock
    /// may still take the confirmation, and only the record stops it from acting twice.
    fn claim<'a>(
        &'a self,
        id: &'a str,
        decision: Decision,
        expires: SystemTime,
    ) -> StoreFuture<'a, Claimed>;

    /// Records the result of an approved write (JSON text), returned to retries.
    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()>;
}

/// A store shared by several registries (replicas in one process, or a test).
impl<S: ConfirmationStore> ConfirmationStore for std::sync::Arc<S> {
    fn claim<'a>(
        &'a self,
        id: &'a str,
        decision: Decision,
        expires: SystemTime,
    ) -> StoreFuture<'a, Claimed> {
        (**self).claim(id, decision, expires)
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        (**self).finish(id, outcome)
    }
}

/// A store in this process's memory: confirmations act once per process and are forgotten on restart.
/// Use [`SqliteStore`](crate::sqlite::SqliteStore) or your own store to keep them.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use toolgate::confirm::{Claimed, ConfirmationStore, Decision, MemoryStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let until = SystemTime::now() + Duration::from_secs(600);
/// assert_eq!(store.claim("c1", Decision::Approve, until).await?, Claimed::First);
/// store.finish("c1", r#"{"sent":true}"#.to_owned()).await?;
/// let again = store.claim("c1", Decision::Approve, until).await?;
/// assert_eq!(again, Claimed::Approved { outcome: Some(r#"{"sent":true}"#.to_owned()) });
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Each record with the time it may be forgotten.
    used: Mutex<HashMap<String, (Claimed, SystemTime)>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ConfirmationStore for MemoryStore {
    fn claim<'a>(
        &'a self,
        id: &'a str,
        decision: Decision,
        expires: SystemTime,
    ) -> StoreFuture<'a, Claimed> {
        let mut used = self.used.locked();
        let now = SystemTime::now();
        used.retain(|_, (_, until)| *until > now);
        let claimed = match used.get(id) {
            Some((before, _)) => before.clone(),
            None => {
                let record = match decision {
                    Decision::Approve => Claimed::Approved { outcome: None },
                    Decision::Decline => Claimed::Declined,
                };
                let forget = expires.checked_add(KEEP_USED).unwrap_or(expires);
                used.insert(id.to_owned(), (record, forget));
                Claimed::First
            }
        };
        Box::pin(std::future::ready(Ok(claimed)))
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        let mut used = self.used.locked();
        if let Some((record, _)) = used.get_mut(id) {
            *record = Claimed::Approved {
                outcome: Some(outcome),
            };
        }
        Box::pin(std::future::ready(Ok(())))
    }
}
