//! Call ceilings (`max_runs`): runs counted per caller and session, in bounded memory.
//!
//! A count is keyed by the caller's id, the session (when the call has one) and the tool's name, so two callers
//! never share a count, whatever session name they give. Over MCP the session is one the server issued and
//! bound to its caller; counts of a session are forgotten when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::caller::Caller;
use crate::sync::Locked;

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

impl Key {
    fn new(caller: &Caller, session: Option<&Arc<str>>, tool: &Arc<str>) -> Self {
        Key {
            caller: caller.id().into(),
            session: session.cloned(),
            tool: Arc::clone(tool),
        }
    }
}

/// The run counts of one registry.
#[derive(Debug, Default)]
pub(crate) struct Ceilings {
    counts: Mutex<HashMap<Key, u32>>,
}

impl Ceilings {
    /// Refuses when the ceiling is reached already, counting nothing.
    pub(crate) fn check(
        &self,
        caller: &Caller,
        session: Option<&Arc<str>>,
        tool: &Arc<str>,
        max: u32,
    ) -> Result<(), Refused> {
        let counts = self.counts.locked();
        match counts.get(&Key::new(caller, session, tool)) {
            Some(&done) if done >= max => Err(Refused::Reached),
            _ => Ok(()),
        }
    }

    /// Counts one run, refusing when the ceiling is reached or the counts are full.
    pub(crate) fn take(
        &self,
        caller: &Caller,
        session: Option<&Arc<str>>,
        tool: &Arc<str>,
        max: u32,
    ) -> Result<(), Refused> {
        let mut counts = self.counts.locked();
        let full = counts.len() >= MAX_COUNTS;
        let key = Key::new(caller, session, tool);
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

    /// Takes back a run that turned out not to be one (a round that only asked the client).
    pub(crate) fn give_back(&self, caller: &Caller, session: Option<&Arc<str>>, tool: &Arc<str>) {
        let mut counts = self.counts.locked();
        let key = Key::new(caller, session, tool);
        if let Some(done) = counts.get_mut(&key) {
            *done -= 1;
            if *done == 0 {
                counts.remove(&key);
            }
        }
    }

    /// Forgets every count of a session.
    pub(crate) fn end_session(&self, session: &str) {
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

    #[test]
    fn a_count_given_back_frees_its_run_and_an_ended_session_its_memory() {
        let ceilings = Ceilings::default();
        let ada = Caller::new("ada");
        let session: Arc<str> = Arc::from("s-1");
        ceilings.take(&ada, Some(&session), &tool(3), 1).unwrap();
        ceilings.give_back(&ada, Some(&session), &tool(3));
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
