//! The call pipeline, in-process: schemas, listing per caller, policy, validation, errors, panics, timeouts,
//! ceilings, hooks, injection, dynamic tools and write previews.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

mod config;
mod dialects;
mod dynamic;
mod fixtures;
mod hooks;
mod policy;
mod results;
mod running;
mod schemas;
