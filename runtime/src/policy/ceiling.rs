//! Call ceilings (`max_runs`): runs counted per caller and session, in bounded memory or, for replicas, in
//! one [`CeilingStore`] they share.
//!
//! A count is keyed by the caller's id, the session (when the call has one) and the tool's name, so two callers
//! never share a count, whatever session name they give. Over MCP the session is one the server issued and
//! bound to its caller; counts of a session are forgotten when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::caller::Caller;
use crate::confirm::StoreFuture;
use crate::error::{ErrorKind, ToolError};
use crate::sync::Locked;

/// Whose runs of which tool one count is.
///
/// ```
/// use toolgate::policy::RunKey;
///
/// let key = RunKey { caller: "ada", session: None, tool: "export_orders" };
/// assert_eq!(key.session.unwrap_or(""), "");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunKey<'a> {
    /// The caller's id.
    pub caller: &'a str,
    /// The session, when the call has one.
    pub session: Option<&'a str>,
    /// The tool's name.
    pub tool: &'a str,
}

/// Where call ceilings are counted when replicas must share them, so that a client cannot double its
/// budget by landing on two. [`Database`](crate::store::Database) is one, on SQLite or PostgreSQL; without
/// one, each registry counts in its own memory.
///
/// `take` must be atomic: of concurrent takes of one key, no more than `max` in all count.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use toolgate::confirm::StoreFuture;
/// use toolgate::policy::{CeilingStore, RunKey};
///
/// /// Counts in memory, keyed by caller and tool: the in-process counting, written as a store.
/// #[derive(Default)]
/// struct Counts(Mutex<HashMap<(String, String), u32>>);
///
/// impl CeilingStore for Counts {
///     fn take<'a>(&'a self, key: RunKey<'a>, max: u32) -> StoreFuture<'a, bool> {
///         let mut counts = self.0.lock().unwrap();
///         let runs = counts.entry((key.caller.to_owned(), key.tool.to_owned())).or_default();
///         let counted = *runs < max;
///         *runs += u32::from(counted);
///         Box::pin(std::future::ready(Ok(counted)))
///     }
///
///     fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()> {
///         if let Some(runs) = self.0.lock().unwrap().get_mut(&(key.caller.to_owned(), key.tool.to_owned())) {
///             *runs = runs.saturating_sub(1);
///         }
///         Box::pin(std::future::ready(Ok(())))
///     }
///
///     fn end_session<'a>(&'a self, _session: &'a str) -> StoreFuture<'a, ()> {
///         Box::pin(std::future::ready(Ok(())))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let counts = Counts::default();
/// let key = RunKey { caller: "ada", session: None, tool: "export_orders" };
/// assert!(counts.take(key, 1).await?);
/// assert!(!counts.take(key, 1).await?, "the ceiling of one run is reached");
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
pub trait CeilingStore: Send + Sync + 'static {
    /// Counts one run of `key` unless `max` are counted already; says whether it counted.
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32) -> StoreFuture<'a, bool>;

    /// Takes back a run that turned out not to be one (a round that only asked the client).
    fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()>;

    /// Forgets every count of a session.
    fn end_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}

/// The error of a shared store that could not count: `detail` for the operator's log. The pipeline tells
/// the model only that the count cannot be reached.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn count_failed(detail: impl std::fmt::Display) -> ToolError {
    ToolError::with_kind(ErrorKind::Unavailable, detail.to_string())
}

/// The most counts kept at once. Past it, calls of tools with a ceiling are refused (the ceiling fails
/// closed) until sessions end and free their counts.
pub(crate) const MAX_COUNTS: usize = 100_000;

/// [`Ceilings::check`] or [`Ceilings::take`].
pub(crate) type Count =
    fn(&Ceilings, &Caller, Option<&Arc<str>>, &Arc<str>, u32) -> Result<(), Refused>;

/// Why a run was not counted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The caller's session has used all its runs of the tool.
    Reached,
    /// Too many counts are kept already.
    Full,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    caller: Box<str>,
    session: Option<Arc<str>>,
    tool: Arc<str>,
}

/// The tool name a delegation's calls are counted under: no tool has it, so no run count shares it.
const CALLS: &str = "*";

/// The count of the calls made through delegation `id`.
fn calls_key(id: &str) -> RunKey<'_> {
    RunKey {
        caller: id,
        session: None,
        tool: CALLS,
    }
}

impl Key {
    fn of(key: RunKey<'_>) -> Self {
        Key {
            caller: key.caller.into(),
            session: key.session.map(Arc::from),
            tool: Arc::from(key.tool),
        }
    }

    fn new(caller: &Caller, session: Option<&Arc<str>>, tool: &Arc<str>) -> Self {
        Key {
            caller: caller.key().into(),
            session: session.cloned(),
            tool: Arc::clone(tool),
        }
    }
}

/// The run counts of one registry, in its memory unless a shared store counts them.
#[derive(Default)]
pub(crate) struct Ceilings {
    counts: Mutex<HashMap<Key, u32>>,
    /// The store replicas share; when set, it alone counts.
    pub(crate) shared: Option<Arc<dyn CeilingStore>>,
}

impl std::fmt::Debug for Ceilings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ceilings")
            .field("shared", &self.shared.is_some())
            .finish_non_exhaustive()
    }
}

impl Ceilings {
    /// Counts in `store` instead of in memory.
    pub(crate) fn shared(store: Arc<dyn CeilingStore>) -> Self {
        Ceilings {
            counts: Mutex::default(),
            shared: Some(store),
        }
    }

    /// Refuses when the ceiling is reached already, counting nothing. A shared store is not asked here:
    /// its take is the one check.
    pub(crate) fn check(
        &self,
        caller: &Caller,
        session: Option<&Arc<str>>,
        tool: &Arc<str>,
        max: u32,
    ) -> Result<(), Refused> {
        if self.shared.is_some() {
            return Ok(());
        }
        let counts = self.counts.locked();
        match counts.get(&Key::new(caller, session, tool)) {
            Some(&done) if done >= max => Err(Refused::Reached),
            _ => Ok(()),
        }
    }

    /// Counts one run, refusing when the ceiling is reached or the counts are full. A shared store is not
    /// asked here: the run's future takes its count first (see `call::run`).
    pub(crate) fn take(
        &self,
        caller: &Caller,
        session: Option<&Arc<str>>,
        tool: &Arc<str>,
        max: u32,
    ) -> Result<(), Refused> {
        if self.shared.is_some() {
            return Ok(());
        }
        self.take_key(Key::new(caller, session, tool), max)
    }

    fn take_key(&self, key: Key, max: u32) -> Result<(), Refused> {
        let mut counts = self.counts.locked();
        let full = counts.len() >= MAX_COUNTS;
        match counts.get_mut(&key) {
            Some(done) if *done >= max => Err(Refused::Reached),
            Some(done) => {
                *done += 1;
                Ok(())
            }
            None if full => Err(Refused::Full),
            None if max == 0 => Err(Refused::Reached),
            None => {
                counts.insert(key, 1);
                Ok(())
            }
        }
    }

    /// Counts one call through each delegation up `caller`'s chain that has a call ceiling, in the
    /// shared store when there is one; when one refuses, none is counted.
    pub(crate) async fn take_calls(&self, caller: &Caller) -> Result<(), ToolError> {
        let mut taken: Vec<&str> = Vec::new();
        let mut refusal = None;
        for delegation in caller.delegations() {
            let Some(max) = delegation.max_calls else {
                continue;
            };
            let key = calls_key(&delegation.id);
            let counted = match &self.shared {
                Some(store) => store.take(key, max).await,
                None => Ok(self.take_key(Key::of(key), max).is_ok()),
            };
            match counted {
                Ok(true) => taken.push(&delegation.id),
                Ok(false) => {
                    refusal = Some(ToolError::with_kind(
                        ErrorKind::LimitReached,
                        format!(
                            "This delegated access allows {max} calls, and they are used up. Nothing ran; \
                             answer with what you have."
                        ),
                    ));
                    break;
                }
                Err(error) => {
                    tracing::error!(target: "toolgate", error = error.message(), "the delegated calls' count cannot be reached");
                    refusal = Some(ToolError::with_kind(
                        ErrorKind::Unavailable,
                        "This delegated access has a limit on its calls, and their count cannot be reached, \
                         so nothing ran. Try again shortly.",
                    ));
                    break;
                }
            }
        }
        let Some(refusal) = refusal else {
            return Ok(());
        };
        for id in taken {
            self.give_back_key(calls_key(id)).await;
        }
        Err(refusal)
    }

    /// Takes back a run that turned out not to be one (a round that only asked the client).
    pub(crate) async fn give_back(
        &self,
        caller: &Caller,
        session: Option<&Arc<str>>,
        tool: &Arc<str>,
    ) {
        let key = RunKey {
            caller: caller.key(),
            session: session.map(|s| &**s),
            tool,
        };
        self.give_back_key(key).await;
    }

    async fn give_back_key(&self, key: RunKey<'_>) {
        if let Some(store) = &self.shared {
            if let Err(error) = store.give_back(key).await {
                tracing::warn!(target: "toolgate", tool = key.tool, error = error.message(), "could not give back a counted run");
            }
            return;
        }
        let mut counts = self.counts.locked();
        let key = Key::of(key);
        if let Some(done) = counts.get_mut(&key) {
            *done -= 1;
            if *done == 0 {
                counts.remove(&key);
            }
        }
    }

    /// Forgets every count of a session; in a shared store, in the background.
    pub(crate) fn end_session(&self, session: &str) {
        if let Some(store) = &self.shared {
            let (store, session) = (Arc::clone(store), session.to_owned());
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    if let Err(error) = store.end_session(&session).await {
                        tracing::warn!(target: "toolgate", error = error.message(), "could not forget a session's run counts");
                    }
                });
            }
            return;
        }
        self.counts
            .locked()
            .retain(|key, _| key.session.as_deref() != Some(session));
    }

    /// How many counts are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.counts.locked().len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn tool(i: usize) -> Arc<str> {
        Arc::from(format!("tool_{i}"))
    }

    #[test]
    fn callers_never_share_a_count_whatever_session_they_name() {
        let ceilings = Ceilings::default();
        let (alice, bob) = (Caller::new("alice"), Caller::new("bob"));
        let shared: Arc<str> = Arc::from("caller:alice");
        ceilings.take(&alice, None, &tool(0), 1).unwrap();
        assert_eq!(
            ceilings.take(&alice, None, &tool(0), 1),
            Err(Refused::Reached)
        );
        ceilings.take(&bob, Some(&shared), &tool(0), 1).unwrap();
        ceilings.take(&alice, Some(&shared), &tool(0), 1).unwrap();
        assert_eq!(
            ceilings.check(&bob, Some(&shared), &tool(0), 1),
            Err(Refused::Reached)
        );
    }

    #[tokio::test]
    async fn a_count_given_back_frees_its_run_and_an_ended_session_its_memory() {
        let ceilings = Ceilings::default();
        let ada = Caller::new("ada");
        let session: Arc<str> = Arc::from("s-1");
        ceilings.take(&ada, Some(&session), &tool(3), 1).unwrap();
        ceilings.give_back(&ada, Some(&session), &tool(3)).await;
        assert_eq!(ceilings.len(), 0);
        ceilings.take(&ada, Some(&session), &tool(3), 1).unwrap();
        ceilings.take(&ada, None, &tool(3), 1).unwrap();
        ceilings.end_session("s-1");
        assert_eq!(ceilings.len(), 1, "only the sessionless count is left");
    }

    #[test]
    fn the_counts_are_bounded_and_fail_closed_when_full() {
        let ceilings = Ceilings::default();
        let ada = Caller::new("ada");
        for i in 0..MAX_COUNTS {
            ceilings.take(&ada, None, &tool(i), 5).unwrap();
        }
        assert_eq!(
            ceilings.take(&ada, None, &tool(MAX_COUNTS), 5),
            Err(Refused::Full)
        );
        ceilings.take(&ada, None, &tool(0), 5).unwrap();
        assert_eq!(ceilings.len(), MAX_COUNTS);
    }
}
