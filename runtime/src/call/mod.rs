//! Calling a tool: the [`Call`] builder and the pipeline every caller and transport goes through.
//!
//! | step | where |
//! |---|---|
//! | the call's span, with its trace context as parent | `trace` |
//! | resolve the name, then admit or refuse | `pipeline`, `admit`: authorize, availability, ceiling, validation |
//! | the common path: hooks before, run with timeout, cancellation and panic capture | `run` |
//! | writes and questions: preview, approve, decline, replay, ask | `rounds` |
//! | hooks after, masking, audit | `finish` |

mod admit;
mod finish;
mod pipeline;
mod request;
mod rounds;
mod run;
mod trace;

pub use request::Call;
