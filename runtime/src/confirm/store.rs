//! [`ConfirmationStore`]: where used confirmations are recorded, so that each one acts once.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::ToolError;

/// What a person decided about a previewed write.
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// First use: the decision is recorded now and the caller acts on it.
    Fresh,
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
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, ToolError>> + Send + 'a>>;

/// Records used confirmations. Share one store between replicas (with a shared [`KeyRing`](crate::KeyRing))
/// and a confirmation acts once across all of them.
///
/// `claim` must be atomic: of two concurrent claims of one id, exactly one sees [`Claimed::Fresh`].
pub trait ConfirmationStore: Send + Sync + 'static {
    /// Records `decision` for confirmation `id` unless one is recorded already, and says which.
    /// Records may be forgotten after `expires`, when the confirmation is refused anyway.
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
#[derive(Debug, Default)]
pub struct MemoryStore {
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
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let now = SystemTime::now();
        used.retain(|_, (_, until)| *until > now);
        let claimed = match used.get(id) {
            Some((before, _)) => before.clone(),
            None => {
                let record = match decision {
                    Decision::Approve => Claimed::Approved { outcome: None },
                    Decision::Decline => Claimed::Declined,
                };
                used.insert(id.to_owned(), (record, expires));
                Claimed::Fresh
            }
        };
        Box::pin(std::future::ready(Ok(claimed)))
    }

    fn finish<'a>(&'a self, id: &'a str, outcome: String) -> StoreFuture<'a, ()> {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((record, _)) = used.get_mut(id) {
            *record = Claimed::Approved {
                outcome: Some(outcome),
            };
        }
        Box::pin(std::future::ready(Ok(())))
    }
}
