//! What a tool takes: arguments and how each parameter is extracted from a call's parts, and the values the
//! runtime injects (state, settings, the caller, the invocation, progress, logs, cancellation, questions).

mod ask;
pub(crate) mod inject;
mod log;
mod parts;
mod progress;
pub(crate) mod spec;

pub(crate) use ask::{Answers, Unanswered, elicitation, unsupported};
pub use ask::{Ask, ClientSupport, Elicited, Root};
#[cfg(feature = "remote")]
pub(crate) use ask::{RELAYED, relay};
pub use inject::{Approval, Cancellation, Extension, Invocation, Settings, Shareable, State};
pub use log::{Log, LogEntry, LogLevel};
pub use parts::CallParts;
pub(crate) use parts::StateMap;
pub use progress::{Progress, ProgressUpdate};
pub(crate) use spec::RequirementKind;
pub use spec::{ArgSchema, Input, Param, ParamKind, ParamSpec, Requirement};
pub use tokio_util::sync::CancellationToken;
