//! Counts with a ceiling: a tool's runs (`max_runs`), a delegation's calls (`max_calls`) and the
//! operator's rate limits, in bounded memory or, for replicas, in one [`CeilingStore`] they share.
//!
//! A count is keyed by the person at the root of the caller's chain (so that delegating never multiplies
//! a budget), the session (when the call has one, one the server issued and bound to its caller) and
//! what is counted, never by a name a client chose; a delegation's calls by its server-made id. Every
//! count expires: a run count after the registry's count window, a delegation's with the delegation, a
//! rate limit's at the end of its window; counts of a session are forgotten when it ends.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use rustc_hash::FxBuildHasher;
use std::time::Duration;

use crate::caller::Caller;
use crate::confirm::{StoreFuture, millis, unix_ms};
use crate::error::{ErrorKind, ToolError};
use crate::sync::Locked;

/// Whose count of what one count is.
///
/// ```
/// use toolgate::policy::RunKey;
///
/// let key = RunKey { caller: "ada", session: None, tool: "export_orders" };
/// assert_eq!(key.session.unwrap_or(""), "");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunKey<'a> {
    /// The person at the root of the caller's chain, or a delegation's server-made id.
    pub caller: &'a str,
    /// The session, when the call has one.
    pub session: Option<&'a str>,
    /// What is counted: the tool's name, or a name no tool has (`*` for a delegation's calls,
    /// `rate:…` for a rate limit).
    pub tool: &'a str,
}

/// Where call ceilings are counted when replicas must share them, so that a client cannot double its
/// budget by landing on two. [`Database`](crate::store::Database) is one, on SQLite or PostgreSQL; without
/// one, each registry counts in its own memory.
///
/// `take` must be atomic: of concurrent takes of one key, no more than `max` in all count. A count lasts
/// until the `expires_ms` given when it was first taken (milliseconds since the Unix epoch); a take after
/// that starts it over. A store forgets expired counts, and keeps a bounded number of them.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::Mutex;
/// use toolgate::confirm::StoreFuture;
/// use toolgate::policy::{CeilingStore, RunKey};
///
/// /// Counts in memory, keyed by caller and tool, each with its expiry: the in-process counting, written
/// /// as a store (without its bound).
/// #[derive(Default)]
/// struct Counts(Mutex<HashMap<(String, String), (u32, u64)>>);
///
/// impl CeilingStore for Counts {
///     fn take<'a>(&'a self, key: RunKey<'a>, max: u32, expires_ms: u64) -> StoreFuture<'a, bool> {
///         let mut counts = self.0.lock().unwrap();
///         let (runs, until) = counts.entry((key.caller.to_owned(), key.tool.to_owned())).or_insert((0, expires_ms));
///         if *until <= toolgate::store::unix_ms() {
///             (*runs, *until) = (0, expires_ms);
///         }
///         let counted = *runs < max;
///         *runs += u32::from(counted);
///         Box::pin(std::future::ready(Ok(counted)))
///     }
///
///     fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()> {
///         if let Some((runs, _)) = self.0.lock().unwrap().get_mut(&(key.caller.to_owned(), key.tool.to_owned())) {
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
/// let in_a_day = toolgate::store::unix_ms() + 86_400_000;
/// assert!(counts.take(key, 1, in_a_day).await?);
/// assert!(!counts.take(key, 1, in_a_day).await?, "the ceiling of one run is reached");
/// # Ok::<(), toolgate::ToolError>(())
/// # }).unwrap();
/// ```
pub trait CeilingStore: Send + Sync + 'static {
    /// Counts one of `key` unless `max` are counted already; says whether it counted. A new count (or
    /// one past its expiry) lasts until `expires_ms`.
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32, expires_ms: u64) -> StoreFuture<'a, bool>;

    /// Takes back a run that turned out not to be one (a round that only asked the client).
    fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()>;

    /// Forgets every count of a session.
    fn end_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}

/// The error of a shared store that could not count: `detail` for the operator's log. The pipeline tells
/// the model only that the count cannot be reached.
#[cfg(database)]
pub(crate) fn count_failed(detail: impl std::fmt::Display) -> ToolError {
    ToolError::with_kind(ErrorKind::Unavailable, detail.to_string())
}

/// The most counts kept at once, in memory and in a store's table. Expired counts are forgotten first;
/// past it, a new count is refused (its ceiling fails closed) until old ones expire. Keys are the root
/// caller's id (an [`Ident`](crate::text::Ident) at every door, so at most 128 bytes), a server-made
/// session or delegation id and a tool's name, so this bounds the bytes too.
///
/// ```
/// assert_eq!(toolgate::policy::MAX_COUNTS, 100_000);
/// ```
pub const MAX_COUNTS: usize = 100_000;

/// How long a run count lasts unless its session ends first: a day. Without a session, `max_runs`
/// counts a caller's runs in such a window.
pub(crate) const DEFAULT_COUNT_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// How often the memory's counts are swept for expired ones when they are full.
const SWEEP_EVERY_MS: u64 = 1_000;

/// How often a database's counts are swept of expired ones, at most.
#[cfg(database)]
const SWEEP_STORE_EVERY_MS: u64 = 10_000;

/// When a database's counts are next swept of expired ones, and whether they were full then: a store
/// sweeps at most every ten seconds, and while full counts only what it keeps already (a new count is
/// refused), so that its table is bounded like the memory's.
#[cfg(database)]
#[derive(Debug, Default)]
pub(crate) struct Sweep {
    next_ms: std::sync::atomic::AtomicU64,
    full: std::sync::atomic::AtomicBool,
}

#[cfg(database)]
impl Sweep {
    /// Whether a sweep is due at `now` (one caller of many gets `true`).
    pub(crate) fn due(&self, now: u64) -> bool {
        use std::sync::atomic::Ordering;
        let next = self.next_ms.load(Ordering::Acquire);
        now >= next
            && self
                .next_ms
                .compare_exchange(
                    next,
                    now + SWEEP_STORE_EVERY_MS,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
    }

    /// Notes how many counts a sweep left.
    pub(crate) fn swept(&self, rows: i64) {
        let full = usize::try_from(rows).unwrap_or(usize::MAX) >= MAX_COUNTS;
        self.full.store(full, std::sync::atomic::Ordering::Release);
    }

    /// Whether the last sweep left the table full.
    pub(crate) fn full(&self) -> bool {
        self.full.load(std::sync::atomic::Ordering::Acquire)
    }
}

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

/// A count's key as the table keeps it. It hashes as the [`RunKey`] of the same parts does, so that a
/// count is found from borrowed parts, and only a new one is copied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    caller: Box<str>,
    session: Option<Arc<str>>,
    tool: Arc<str>,
}

impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.caller.hash(state);
        self.session.as_deref().hash(state);
        self.tool.hash(state);
    }
}

impl hashbrown::Equivalent<Key> for RunKey<'_> {
    fn equivalent(&self, key: &Key) -> bool {
        self.caller == &*key.caller
            && self.session == key.session.as_deref()
            && self.tool == &*key.tool
    }
}

/// One count, and when it is forgotten (milliseconds since the Unix epoch).
#[derive(Debug, Clone, Copy)]
struct Counted {
    runs: u32,
    expires_ms: u64,
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
}

/// The key of `caller`'s runs of `tool` in `session`.
fn run_key<'a>(caller: &'a Caller, session: Option<&'a Arc<str>>, tool: &'a str) -> RunKey<'a> {
    RunKey {
        caller: caller.budget(),
        session: session.map(|s| &**s),
        tool,
    }
}

/// The counts of one registry, in its memory unless a shared store counts them.
pub(crate) struct Ceilings {
    counts: Mutex<Table>,
    /// The store replicas share; when set, it alone counts.
    pub(crate) shared: Option<Arc<dyn CeilingStore>>,
    /// How long a run count lasts.
    window: Duration,
}

#[derive(Default)]
struct Table {
    counts: hashbrown::HashMap<Key, Counted, FxBuildHasher>,
    /// When the counts may next be swept for expired ones.
    next_sweep_ms: u64,
}

impl Default for Ceilings {
    fn default() -> Self {
        Ceilings::new(None, DEFAULT_COUNT_WINDOW)
    }
}

impl std::fmt::Debug for Ceilings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ceilings")
            .field("shared", &self.shared.is_some())
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl Ceilings {
    /// Counts in `shared` when given, else in memory; a run count lasts `window`.
    pub(crate) fn new(shared: Option<Arc<dyn CeilingStore>>, window: Duration) -> Self {
        Ceilings {
            counts: Mutex::default(),
            shared,
            window,
        }
    }

    /// When a run count taken now expires.
    pub(crate) fn run_expiry(&self) -> u64 {
        unix_ms().saturating_add(millis(self.window))
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
        let table = self.counts.locked();
        match table.counts.get(&run_key(caller, session, tool)) {
            Some(c) if c.runs >= max && c.expires_ms > unix_ms() => Err(Refused::Reached),
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
        self.take_key(run_key(caller, session, tool), max, self.run_expiry())
    }

    /// Counts one of `key` in memory, lasting until `expires_ms` when it is new or past its expiry.
    fn take_key(&self, key: RunKey<'_>, max: u32, expires_ms: u64) -> Result<(), Refused> {
        let now = unix_ms();
        let mut table = self.counts.locked();
        if let Some(counted) = table.counts.get_mut(&key) {
            if counted.expires_ms <= now {
                *counted = Counted {
                    runs: 0,
                    expires_ms,
                };
            }
            if counted.runs >= max {
                return Err(Refused::Reached);
            }
            counted.runs += 1;
            return Ok(());
        }
        if max == 0 {
            return Err(Refused::Reached);
        }
        if table.counts.len() >= MAX_COUNTS && now >= table.next_sweep_ms {
            table.counts.retain(|_, c| c.expires_ms > now);
            table.next_sweep_ms = now + SWEEP_EVERY_MS;
        }
        if table.counts.len() >= MAX_COUNTS {
            return Err(Refused::Full);
        }
        table.counts.insert(
            Key::of(key),
            Counted {
                runs: 1,
                expires_ms,
            },
        );
        Ok(())
    }

    /// Counts one of `key`, lasting until `expires_ms`, unless `max` are counted: in the shared store
    /// when there is one, else here. Whether it counted; an error when the store cannot be reached.
    pub(crate) async fn count(
        &self,
        key: RunKey<'_>,
        max: u32,
        expires_ms: u64,
    ) -> Result<bool, ToolError> {
        match &self.shared {
            Some(store) => store.take(key, max, expires_ms).await,
            None => Ok(self.take_key(key, max, expires_ms).is_ok()),
        }
    }

    /// Counts one call through each delegation up `caller`'s chain that has a call ceiling, in the
    /// shared store when there is one; when one refuses, none is counted. Each count lasts as long as
    /// its delegation.
    pub(crate) async fn take_calls(&self, caller: &Caller) -> Result<(), ToolError> {
        let mut taken: Vec<&str> = Vec::new();
        let mut refusal = None;
        let longest = unix_ms().saturating_add(millis(crate::caller::MAX_DELEGATION_TTL));
        for delegation in caller.delegations() {
            let Some(max) = delegation.max_calls else {
                continue;
            };
            let expires = delegation.expires.map_or(longest, |at| {
                at.duration_since(std::time::UNIX_EPOCH).map_or(0, millis)
            });
            match self.count(calls_key(&delegation.id), max, expires).await {
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
            caller: caller.budget(),
            session: session.map(|s| &**s),
            tool,
        };
        self.give_back_key(key).await;
    }

    /// Takes back one of `key`'s counts.
    pub(crate) async fn give_back_key(&self, key: RunKey<'_>) {
        if let Some(store) = &self.shared {
            if let Err(error) = store.give_back(key).await {
                tracing::warn!(target: "toolgate", tool = key.tool, error = error.message(), "could not give back a counted run");
            }
            return;
        }
        let mut table = self.counts.locked();
        if let Some(counted) = table.counts.get_mut(&key) {
            counted.runs = counted.runs.saturating_sub(1);
            if counted.runs == 0 {
                table.counts.remove(&key);
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
            .counts
            .retain(|key, _| key.session.as_deref() != Some(session));
    }

    /// How many counts are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.counts.locked().counts.len()
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
