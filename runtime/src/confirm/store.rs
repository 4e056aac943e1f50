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
#[cfg(database)]
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

/// One claim of a confirmation: what a person decided, when the confirmation expires, and until when an
/// approved run holds it.
///
/// A run that has not recorded its result by the end of its hold was abandoned: the process running it
/// died. The next approval then takes the confirmation over ([`Claimed::Resumed`]) instead of refusing it,
/// so that a replica killed mid-run loses no approval. The pipeline holds a run for the tool's timeout
/// and [`HOLD_MARGIN`], past which a live run has ended; a tool without a timeout holds it for good.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use toolgate::confirm::{Claim, Decision, KEEP_USED};
///
/// let expires = SystemTime::now() + Duration::from_secs(600);
/// let claim = Claim::new(Decision::Approve, expires);
/// assert_eq!(claim.held_until, expires + KEEP_USED, "held until it is forgotten");
/// let held = claim.held_for(Duration::from_secs(30));
/// assert!(held.held_until < expires);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claim {
    /// What the person decided.
    pub decision: Decision,
    /// When the confirmation expires.
    pub expires: SystemTime,
    /// Until when an approved run holds the confirmation.
    pub held_until: SystemTime,
}

/// How long past a tool's timeout an approved run still holds its confirmation: the slack for clocks that
/// differ between replicas.
///
/// ```
/// assert_eq!(toolgate::confirm::HOLD_MARGIN.as_secs(), 5);
/// ```
pub const HOLD_MARGIN: Duration = Duration::from_secs(5);

impl Claim {
    /// A claim of `decision` for a confirmation that expires at `expires`, held until the store may forget it.
    pub fn new(decision: Decision, expires: SystemTime) -> Self {
        Claim {
            decision,
            expires,
            held_until: expires.checked_add(KEEP_USED).unwrap_or(expires),
        }
    }

    /// The same claim, held for `run` and [`HOLD_MARGIN`] from now.
    #[must_use]
    pub fn held_for(mut self, run: Duration) -> Self {
        let now = SystemTime::now();
        self.held_until = now
            .checked_add(run.saturating_add(HOLD_MARGIN))
            .unwrap_or(self.held_until);
        self
    }
}

/// What the store knew about a confirmation when it was claimed.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use toolgate::confirm::{Claim, Claimed, ConfirmationStore, Decision, MemoryStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let until = SystemTime::now() + Duration::from_secs(600);
/// assert_eq!(store.claim("c2", Claim::new(Decision::Decline, until)).await?, Claimed::First);
/// assert_eq!(store.claim("c2", Claim::new(Decision::Approve, until)).await?, Claimed::Declined);
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// First use: the decision is recorded now and the caller acts on it.
    First,
    /// It was approved before; `outcome` is the first run's recorded result, `None` while it runs.
    Approved {
        /// The recorded result, as JSON text.
        outcome: Option<String>,
    },
    /// It was approved before, but that run ended its hold with no result: its process died. This claim
    /// holds it now and the caller runs it.
    Resumed,
    /// It was declined before.
    Declined,
}

impl Claimed {
    /// What a record of `decision` (`approve` or `decline`) and `outcome` says to a later claim.
    #[cfg(database)]
    pub(crate) fn recorded(decision: String, outcome: Option<String>) -> Claimed {
        if decision == Decision::Decline.as_str() {
            Claimed::Declined
        } else {
            Claimed::Approved { outcome }
        }
    }
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
/// `claim` must be atomic: of two concurrent claims of one id, exactly one sees [`Claimed::First`], and of
/// two concurrent claims of an abandoned run, exactly one sees [`Claimed::Resumed`].
///
/// A store that counts claims, in front of another:
///
/// ```rust,standalone_crate
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use serde_json::json;
/// use toolgate::confirm::{Claim, Claimed, ConfirmationStore, MemoryStore, StoreFuture};
/// use toolgate::prelude::*;
///
/// #[derive(Default)]
/// struct Counted {
///     inner: MemoryStore,
///     claims: AtomicUsize,
/// }
///
/// impl ConfirmationStore for Counted {
///     fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed> {
///         self.claims.fetch_add(1, Ordering::Relaxed);
///         self.inner.claim(id, claim)
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
    /// Records the claim's decision for confirmation `id` unless one is recorded already, and says which.
    /// An approval recorded with no result past its hold is taken over by the next approval
    /// ([`Claimed::Resumed`]), which holds it until its own `held_until`.
    /// Keep each record for at least [`KEEP_USED`] past `expires`: until then a replica with a slower clock
    /// may still take the confirmation, and only the record stops it from acting twice.
    fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed>;

    /// Records the result of an approved write (JSON text), returned to retries.
    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()>;
}

/// A store shared by several registries (replicas in one process, or a test).
impl<S: ConfirmationStore> ConfirmationStore for std::sync::Arc<S> {
    fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed> {
        (**self).claim(id, claim)
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
/// use toolgate::confirm::{Claim, Claimed, ConfirmationStore, Decision, MemoryStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let until = SystemTime::now() + Duration::from_secs(600);
/// let approve = Claim::new(Decision::Approve, until);
/// assert_eq!(store.claim("c1", approve).await?, Claimed::First);
/// store.finish("c1", r#"{"sent":true}"#.to_owned()).await?;
/// let again = store.claim("c1", approve).await?;
/// assert_eq!(again, Claimed::Approved { outcome: Some(r#"{"sent":true}"#.to_owned()) });
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Each record with the time it may be forgotten and the end of its run's hold.
    used: Mutex<HashMap<String, Used>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

#[derive(Debug)]
struct Used {
    record: Claimed,
    forget: SystemTime,
    held_until: SystemTime,
}

impl ConfirmationStore for MemoryStore {
    fn claim<'a>(&'a self, id: &'a str, claim: Claim) -> StoreFuture<'a, Claimed> {
        let mut used = self.used.locked();
        let now = SystemTime::now();
        used.retain(|_, used| used.forget > now);
        let claimed = match used.get_mut(id) {
            Some(abandoned)
                if claim.decision == Decision::Approve
                    && abandoned.record == (Claimed::Approved { outcome: None })
                    && abandoned.held_until < now =>
            {
                abandoned.held_until = claim.held_until;
                Claimed::Resumed
            }
            Some(before) => before.record.clone(),
            None => {
                let record = match claim.decision {
                    Decision::Approve => Claimed::Approved { outcome: None },
                    Decision::Decline => Claimed::Declined,
                };
                let forget = claim
                    .expires
                    .checked_add(KEEP_USED)
                    .unwrap_or(claim.expires);
                let held_until = claim.held_until;
                used.insert(
                    id.to_owned(),
                    Used {
                        record,
                        forget,
                        held_until,
                    },
                );
                Claimed::First
            }
        };
        Box::pin(std::future::ready(Ok(claimed)))
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        let mut used = self.used.locked();
        if let Some(used) = used.get_mut(id) {
            used.record = Claimed::Approved {
                outcome: Some(outcome),
            };
        }
        Box::pin(std::future::ready(Ok(())))
    }
}
