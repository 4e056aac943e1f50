//! Log messages to MCP clients (`notifications/message`, filtered by `logging/setLevel` or the request's
//! `_meta` level). SEP-2577 deprecates MCP logging, and rmcp marks it so, but the protocol versions served
//! here still include it; this module is the one place that uses it.
#![allow(deprecated)]

use std::future::Future;

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion};
use rmcp::service::{RequestContext, ServiceError};
use rmcp::{Peer, RoleServer};

use crate::param::{LogEntry, LogLevel};

/// The rank of `info`, the level sent until a client sets another.
pub(super) const DEFAULT_RANK: u8 = 1;

/// The lowest level to send for this request: the one its `_meta` asks for; for a 2026-07-28 request that
/// asks for none, nothing (`u8::MAX`), since that revision sends logs only to requests that opt in; for
/// older ones, the session's `logging/setLevel`.
pub(super) fn min_rank(context: &RequestContext<RoleServer>, session: u8) -> u8 {
    match context.meta.log_level() {
        Some(level) => rank(level),
        None if context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28) =>
        {
            u8::MAX
        }
        None => session,
    }
}

/// Sends `entry` unless it is below `min_rank`.
pub(super) fn send(
    peer: &Peer<RoleServer>,
    entry: LogEntry,
    min_rank: u8,
) -> Option<impl Future<Output = Result<(), ServiceError>> + use<>> {
    let level = match entry.level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        _ => LoggingLevel::Error,
    };
    if rank(level) < min_rank {
        return None;
    }
    let peer = peer.clone();
    let param = LoggingMessageNotificationParam::new(level, entry.message.into());
    Some(async move { peer.notify_logging_message(param).await })
}

/// Severity order, `debug` lowest.
pub(super) fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
