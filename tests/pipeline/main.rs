//! The call pipeline, in-process: schemas, listing per caller, policy, validation, errors, panics, timeouts,
//! ceilings, hooks, injection, dynamic tools, write previews and deferred tools with their search.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

mod config;
mod delegation;
mod dialects;
mod dynamic;
mod fixtures;
mod hooks;
mod policy;
mod results;
mod running;
mod schemas;
mod search;
