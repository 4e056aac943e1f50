//! Calling a tool: the [`Call`] builder and the pipeline every caller and transport goes through.
//!
//! | step | where |
//! |---|---|
//! | the call's span, with its trace context as parent | `trace` |
//! | the pipeline and its entries; resolve the name | `pipeline` |
//! | what a call carries between the steps, and a refusal | `flight` |
//! | admit or refuse: authorize, availability, ceiling, validation | `admit` |
//! | the common path: hooks before, run with timeout, cancellation and panic capture | `run` |
//! | writes and questions: preview, approve, decline, replay, ask | `rounds` |
//! | hooks after, masking, audit | `finish` |
//! | a call as a task: stored, run in the background, asked for by id | `task` |

mod admit;
mod finish;
mod flight;
mod pipeline;
mod request;
mod rounds;
mod run;
mod task;
mod trace;

pub(crate) use pipeline::{Pipeline, PipelineParts};
pub use request::Call;
#[cfg(feature = "mcp")]
pub(crate) use task::POLL_INTERVAL;
pub(crate) use task::{Runner, Tasks};
pub use task::{TaskError, TaskHandle};
