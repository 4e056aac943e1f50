//! Rate limits: calls per time window, as the operator's records set them (see
//! [`Scope`](crate::store::Scope)), counted with the other counts (in memory, or in the store replicas
//! share) in windows aligned to the clock, so that every replica counts in the same one.

use rustc_hash::FxHashMap;

use crate::caller::Caller;
use crate::error::{ErrorKind, ToolError};
use crate::store::{Rate, Records, Scope};

use super::ceiling::{Ceilings, RunKey};

/// The rate limits of one snapshot, by what they count.
#[derive(Debug, Default)]
pub(crate) struct Rates {
    caller: Option<Rate>,
    tools: FxHashMap<Box<str>, Rate>,
    profiles: FxHashMap<Box<str>, Rate>,
}

impl Rates {
    /// The limits the records set, if any.
    pub(crate) fn of(records: &Records) -> Option<Self> {
        if records.limits.is_empty() {
            return None;
        }
        let mut rates = Rates::default();
        for limit in records.limits.values() {
            match &limit.scope {
                Scope::Caller => rates.caller = Some(limit.rate),
                Scope::Tool(name) => _ = rates.tools.insert(name.as_str().into(), limit.rate),
                Scope::Profile(name) => {
                    _ = rates.profiles.insert(name.as_str().into(), limit.rate);
                }
            }
        }
        Some(rates)
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
        let budget = caller.budget();
        // Whose count, under what name, and the scope and rate it counts for.
        let mut limits: Vec<(&str, String, Scope, Rate)> = Vec::new();
        if let Some(rate) = self.caller {
            limits.push((budget, "rate:caller".into(), Scope::Caller, rate));
        }
        if let Some(&rate) = self.tools.get(tool) {
            let scope = Scope::Tool(tool.to_owned());
            limits.push((budget, format!("rate:{scope}"), scope, rate));
        }
        for profile in caller.chain().filter_map(Caller::profile) {
            let scope = Scope::Profile(profile.to_owned());
            if let Some(&rate) = self.profiles.get(profile)
                && !limits.iter().any(|(.., counted, _)| *counted == scope)
            {
                limits.push(("", format!("rate:{scope}"), scope, rate));
            }
        }
        let now = crate::store::unix_ms();
        let mut taken: Vec<RunKey<'_>> = Vec::new();
        for (whose, name, scope, rate) in &limits {
            let key = RunKey {
                caller: whose,
                session: None,
                tool: name,
            };
            let (_, end) = rate.window(now);
            let refusal = match ceilings.count(key, rate.calls, end).await {
                Ok(true) => {
                    taken.push(key);
                    continue;
                }
                Ok(false) => used_up(scope, *rate, tool, end - now),
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
            for key in taken {
                ceilings.give_back_key(key).await;
            }
            return Err(refusal);
        }
        Ok(())
    }
}

/// The error of a call past the limit of `scope`, whose window ends in `left_ms`.
fn used_up(scope: &Scope, rate: Rate, tool: &str, left_ms: u64) -> ToolError {
    let who = match scope {
        Scope::Caller => format!("You may make {rate}"),
        Scope::Tool(_) => format!("You may call `{tool}` {}", times(rate)),
        Scope::Profile(profile) => {
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
