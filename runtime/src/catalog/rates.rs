//! Rate limits: calls per time window, as the operator's records set them (see
//! [`Scope`](crate::store::Scope)), counted with the other counts (in memory, or in the store replicas
//! share) in windows aligned to the clock, so that every replica counts in the same one.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use rustc_hash::FxHashMap;

use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};
use crate::store::{Rate, Records, Scope};

use crate::policy::RunKey;
use crate::policy::ceiling::Ceilings;

/// The rate limits of one snapshot, by what they count, each with the name its count is kept under.
#[derive(Debug, Default)]
pub(crate) struct Rates {
    caller: Option<Rate>,
    tools: FxHashMap<Box<str>, Limit>,
    profiles: FxHashMap<Box<str>, Limit>,
}

#[derive(Debug)]
struct Limit {
    rate: Rate,
    /// `rate:tool:NAME` or `rate:profile:NAME`: no tool has such a name, so no run count shares it.
    counted_as: Box<str>,
}

/// What a limit a call is counted against is of, for its refusal.
#[derive(Clone, Copy)]
enum Of<'a> {
    Caller,
    Tool,
    Profile(&'a str),
}

/// The name every caller's own count is kept under.
const CALLER: &str = "rate:caller";

impl Rates {
    /// The limits the records set, if any.
    pub(crate) fn of(records: &Records) -> Option<Self> {
        if records.limits.is_empty() {
            return None;
        }
        let mut rates = Rates::default();
        for limit in records.limits.values() {
            let counted = Limit {
                rate: limit.rate,
                counted_as: format!("rate:{}", limit.scope).into(),
            };
            match &limit.scope {
                Scope::Caller => rates.caller = Some(limit.rate),
                Scope::Tool(name) => _ = rates.tools.insert(name.as_str().into(), counted),
                Scope::Profile(name) => _ = rates.profiles.insert(name.as_str().into(), counted),
            }
        }
        Some(rates)
    }

    /// [`take`](Self::take) when `ceilings` count in memory, where counting never waits: at once, so
    /// that a limited call keeps to the common path.
    pub(crate) fn take_now(
        &self,
        ceilings: &Ceilings,
        tool: &str,
        caller: &Caller,
    ) -> Result<(), ToolError> {
        let taking = pin!(self.take(ceilings, tool, caller));
        match taking.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(taken) => taken,
            Poll::Pending => unreachable!("counts in memory are taken without waiting"),
        }
    }

    /// Counts a call of `tool` by `caller` against every limit that applies: each caller's (by the person
    /// at the root of its chain), the tool's for that caller, and each profile's up the chain for all its
    /// callers together. When one is used up, none is counted, and the error says when to try again.
    pub(crate) async fn take(
        &self,
        ceilings: &Ceilings,
        tool: &str,
        caller: &Caller,
    ) -> Result<(), ToolError> {
        let now = crate::store::unix_ms();
        for (counted, (key, rate, of)) in self.applying(tool, caller).enumerate() {
            let (_, end) = rate.window(now);
            let refusal = match ceilings.count(key, rate.calls, end).await {
                Ok(true) => continue,
                Ok(false) => used_up(of, rate, tool, end - now),
                Err(error) => {
                    tracing::error!(target: "toolgate", error = error.message(), "the rate limits' counts cannot be reached");
                    ToolError::with_kind(
                        ErrorKind::Unavailable,
                        format!(
                            "`{tool}` is under a rate limit whose count cannot be reached, so it did not run. \
                             Try again shortly."
                        ),
                    )
                }
            };
            // The limits before this one counted the call: it did not happen.
            for (key, ..) in self.applying(tool, caller).take(counted) {
                ceilings.give_back_key(key).await;
            }
            return Err(refusal);
        }
        Ok(())
    }

    /// The limits a call of `tool` by `caller` counts against, in a fixed order: each with its count's
    /// key and rate.
    fn applying<'a>(
        &'a self,
        tool: &str,
        caller: &'a Caller,
    ) -> impl Iterator<Item = (RunKey<'a>, Rate, Of<'a>)> {
        let budget = caller.budget();
        let mine = move |counted_as| RunKey {
            caller: budget,
            session: None,
            tool: counted_as,
        };
        let profiles = caller.chain().filter_map(Caller::profile);
        [
            self.caller.map(|rate| (mine(CALLER), rate, Of::Caller)),
            self.tools
                .get(tool)
                .map(|limit| (mine(&limit.counted_as), limit.rate, Of::Tool)),
        ]
        .into_iter()
        .flatten()
        .chain(profiles.enumerate().filter_map(move |(at, profile)| {
            // A profile carried twice up the chain is counted once.
            let first = caller
                .chain()
                .filter_map(Caller::profile)
                .position(|p| p == profile);
            let limit = self.profiles.get(profile).filter(|_| first == Some(at))?;
            let key = RunKey {
                caller: "",
                session: None,
                tool: &limit.counted_as,
            };
            Some((key, limit.rate, Of::Profile(profile)))
        }))
    }
}

/// The error of a call past the limit `of` something, whose window ends in `left_ms`.
fn used_up(of: Of<'_>, rate: Rate, tool: &str, left_ms: u64) -> ToolError {
    let who = match of {
        Of::Caller => format!("You may make {rate}"),
        Of::Tool => format!("You may call `{tool}` {}", times(rate)),
        Of::Profile(profile) => {
            format!("The callers of the profile `{profile}` may make {rate} together")
        }
    };
    let seconds = left_ms.div_ceil(1000).max(1);
    ToolError::with_kind(
        ErrorKind::LimitReached,
        format!(
            "{who}, and that many were made. Nothing ran; try again in {seconds} second{}.",
            if seconds == 1 { "" } else { "s" }
        ),
    )
}

/// "30 times a minute", from "30 calls a minute".
fn times(rate: Rate) -> String {
    let text = rate.to_string();
    let (count, rest) = text.split_once(' ').unwrap_or((&text, ""));
    let rest = rest
        .strip_prefix("calls ")
        .or_else(|| rest.strip_prefix("call "))
        .unwrap_or(rest);
    let noun = if rate.calls == 1 { "time" } else { "times" };
    format!("{count} {noun} {rest}")
}
