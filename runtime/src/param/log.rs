//! [`Log`]: a tool's log messages, for the people watching the call.

use std::fmt;
use std::sync::Arc;

use crate::error::ToolError;

use super::{CallParts, Param, ParamKind, ParamSpec, Requirement, RequirementKind};

/// How important a log message is, in MCP's (syslog's) order.
///
/// ```
/// use toolgate::param::LogLevel;
///
/// assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Warning < LogLevel::Error);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal progress.
    Info,
    /// Worth noticing.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something failed.
    Error,
}

/// One log message from a tool.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolgate::Log;
/// use toolgate::param::{LogEntry, LogLevel};
///
/// let last = Arc::new(Mutex::new(None));
/// let sink = Arc::clone(&last);
/// let log = Log::new(move |entry: LogEntry| *sink.lock().unwrap() = Some((entry.level, entry.message)));
/// log.log(LogLevel::Notice, "Rate limit at 80%.");
/// assert_eq!(*last.lock().unwrap(), Some((LogLevel::Notice, "Rate limit at 80%.".to_owned())));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogEntry {
    /// Its level.
    pub level: LogLevel,
    /// The message.
    pub message: String,
}

type LogFn = dyn Fn(LogEntry) + Send + Sync;

/// Sends log messages to whoever made the call (an MCP client's `notifications/message`, honouring its
/// `logging/setLevel`; a host's sink in-process). Does nothing when nobody listens.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolgate::Log;
/// use toolgate::param::LogLevel;
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&seen);
/// let log = Log::new(move |entry| sink.lock().unwrap().push((entry.level, entry.message)));
/// log.info("Fetched 3 pages.");
/// log.warning("Page 4 timed out; skipped.");
/// assert_eq!(seen.lock().unwrap()[1], (LogLevel::Warning, "Page 4 timed out; skipped.".to_owned()));
///
/// Log::default().info("nobody listens, nothing happens");
/// ```
#[derive(Clone, Default)]
pub struct Log(Option<Arc<LogFn>>);

impl Log {
    /// A logger that hands each entry to `sink`.
    pub fn new(sink: impl Fn(LogEntry) + Send + Sync + 'static) -> Self {
        Log(Some(Arc::new(sink)))
    }

    /// Logs `message` at `level`.
    pub fn log(&self, level: LogLevel, message: impl Into<String>) {
        if let Some(sink) = &self.0 {
            sink(LogEntry {
                level,
                message: message.into(),
            });
        }
    }

    /// Logs at [`LogLevel::Info`].
    pub fn info(&self, message: impl Into<String>) {
        self.log(LogLevel::Info, message);
    }

    /// Logs at [`LogLevel::Warning`].
    pub fn warning(&self, message: impl Into<String>) {
        self.log(LogLevel::Warning, message);
    }
}

impl fmt::Debug for Log {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Log").field(&self.0.is_some()).finish()
    }
}

impl Param for Log {
    const KIND: ParamKind = ParamKind::Injected;

    fn extract(parts: &mut CallParts<'_>, _: &'static ParamSpec) -> Result<Self, ToolError> {
        Ok(parts.log.clone())
    }

    fn requirement() -> Option<Requirement> {
        Some(Requirement::uses(RequirementKind::Reports))
    }
}
