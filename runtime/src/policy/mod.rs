//! Who may do what, and what is kept of it: the authorizer, hooks around every call, the audit, counts
//! with a ceiling (runs, delegated calls, and the rate limits the catalog sets) and the slots calls run in.

mod audit;
mod authorizer;
pub(crate) mod ceiling;
pub mod hooks;
pub(crate) mod slots;

pub use audit::{AuditAction, AuditEvent, AuditSink, TracingAudit};
pub use authorizer::Authorizer;
pub use ceiling::{CeilingStore, MAX_COUNTS, RunKey};
