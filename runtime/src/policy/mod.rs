//! Who may do what, and what is kept of it: the authorizer, hooks around every call, the audit, and call
//! ceilings.

mod audit;
mod authorizer;
pub(crate) mod ceiling;
pub mod hooks;

pub use audit::{AuditAction, AuditEvent, AuditSink, TracingAudit};
pub use authorizer::Authorizer;
pub use ceiling::{CeilingStore, RunKey};
