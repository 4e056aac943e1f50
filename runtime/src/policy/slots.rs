//! Slots for the calls and tasks that run at once: a number for the whole server, and a share of it for
//! each caller (the person at the root of a delegated caller's chain), so that one caller holding many
//! slow calls never holds up everyone else's.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rustc_hash::FxBuildHasher;
use tokio::sync::{Notify, Semaphore, SemaphorePermit};

use crate::caller::Caller;
#[cfg(feature = "mcp")]
use crate::error::{ErrorKind, ToolError};
use crate::sync::Locked;

/// How many calls run at once by default, across every transport and task.
pub(crate) const DEFAULT_MAX_CONCURRENT: usize = 64;

/// The slots of one registry.
#[derive(Debug)]
pub(crate) struct Slots {
    global: Semaphore,
    per_caller: usize,
    /// How many slots each caller holds, by a hash of its budget key: no key is copied on the call path,
    /// and the map holds only callers with a call running. Two callers whose keys collide share a share.
    held: Mutex<HashMap<u64, usize>>,
    /// Woken when a caller gives a slot back, for callers waiting on their share.
    freed: Notify,
    /// How many callers wait on their share: a slot given back wakes no one when none does.
    waiting: AtomicUsize,
}

/// A slot held: given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot<'a> {
    slots: &'a Slots,
    _global: SemaphorePermit<'a>,
    caller: u64,
}

/// No slot came free within the call's timeout, after waiting this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Busy(pub(crate) Duration);

impl Busy {
    /// The call's error, for `tool`.
    #[cfg(feature = "mcp")]
    pub(crate) fn error(self, tool: &str) -> ToolError {
        ToolError::with_kind(
            ErrorKind::Timeout,
            format!(
                "`{tool}` did not start within {:?}: the server, or your share of it, is busy with other \
                 calls. Nothing ran; try again shortly.",
                self.0
            ),
        )
    }
}

impl Slots {
    /// `max` slots in all, at most `per_caller` (at least one) for one caller.
    pub(crate) fn new(max: usize, per_caller: usize) -> Self {
        let max = max.clamp(1, Semaphore::MAX_PERMITS);
        Slots {
            global: Semaphore::new(max),
            per_caller: per_caller.clamp(1, max),
            held: Mutex::default(),
            freed: Notify::new(),
            waiting: AtomicUsize::new(0),
        }
    }

    /// A slot for `caller`, waiting for its share and then for the server's, for at most `limit`.
    pub(crate) async fn take(
        &self,
        caller: &Caller,
        limit: Option<Duration>,
    ) -> Result<Slot<'_>, Busy> {
        let started = Instant::now();
        let taking = self.take_unbounded(caller);
        match limit {
            None => Ok(taking.await),
            Some(limit) => tokio::time::timeout(limit, taking)
                .await
                .map_err(|_| Busy(started.elapsed())),
        }
    }

    async fn take_unbounded(&self, caller: &Caller) -> Slot<'_> {
        let key = key_of(caller.budget());
        if !self.held_one_more(key) {
            let _waiting = Waiting::count(&self.waiting);
            loop {
                let freed = self.freed.notified();
                if self.held_one_more(key) {
                    break;
                }
                freed.await;
            }
        }
        // The share is held from here: given back if the wait below ends without a slot.
        let share = Share { slots: self, key };
        let global = self
            .global
            .acquire()
            .await
            .unwrap_or_else(|_| unreachable!("the semaphore is never closed"));
        std::mem::forget(share);
        Slot {
            slots: self,
            _global: global,
            caller: key,
        }
    }

    /// Counts one more slot for `key` unless it holds its share already.
    fn held_one_more(&self, key: u64) -> bool {
        let mut held = self.held.locked();
        let count = held.entry(key).or_default();
        if *count >= self.per_caller {
            return false;
        }
        *count += 1;
        true
    }

    fn give_back(&self, key: u64) {
        {
            let mut held = self.held.locked();
            if let Some(count) = held.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    held.remove(&key);
                }
            }
        }
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.freed.notify_waiters();
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.slots.give_back(self.caller);
    }
}

/// One caller waiting on its share, counted while it waits (abandoned or not).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicUsize) -> Self {
        waiting.fetch_add(1, Ordering::AcqRel);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A caller's share counted before its global slot is there: given back if that wait is abandoned.
struct Share<'a> {
    slots: &'a Slots,
    key: u64,
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        self.slots.give_back(self.key);
    }
}

fn key_of(budget: &str) -> u64 {
    FxBuildHasher.hash_one(budget)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_caller_holds_no_more_than_its_share_and_others_still_get_slots() {
        let slots = Slots::new(4, 2);
        let (greedy, other) = (Caller::new("greedy"), Caller::new("other"));
        let a = slots.take(&greedy, None).await.unwrap();
        let _b = slots.take(&greedy, None).await.unwrap();
        let short = Some(Duration::from_millis(20));
        assert!(slots.take(&greedy, short).await.is_err());
        let _c = slots.take(&other, short).await.unwrap();
        drop(a);
        let _d = slots.take(&greedy, short).await.unwrap();
        assert_eq!(slots.held.locked().len(), 2);
    }

    #[tokio::test]
    async fn a_delegated_callers_slots_count_against_the_person() {
        let slots = Slots::new(8, 1);
        let person = Caller::new("vera").with_abilities(["a"]);
        let helper = person.delegate(crate::Delegation::to("helper"));
        let _held = slots.take(&person, None).await.unwrap();
        let short = Some(Duration::from_millis(20));
        assert!(slots.take(&helper, short).await.is_err());
    }

    #[tokio::test]
    async fn an_abandoned_wait_gives_its_share_back() {
        let slots = Slots::new(1, 1);
        let (ada, bob) = (Caller::new("ada"), Caller::new("bob"));
        let held = slots.take(&ada, None).await.unwrap();
        let short = Some(Duration::from_millis(20));
        assert!(slots.take(&bob, short).await.is_err());
        assert!(!slots.held.locked().contains_key(&key_of("bob")));
        drop(held);
        assert!(slots.held.locked().is_empty());
        let _bobs = slots.take(&bob, short).await.unwrap();
    }
}
