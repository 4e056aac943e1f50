//! The policy revision in SQLite: one row, moved by every change, with a history row per change.

use rusqlite::{Transaction, params};

use crate::store::{Logged, RecordError};

use super::record_error as database;

/// Writes the history rows `logged` under the next revision, and returns it; with none, the revision
/// stays.
pub(super) fn log(transaction: &Transaction<'_>, logged: Vec<Logged>) -> Result<u64, RecordError> {
    let mut revision = current_revision(transaction).map_err(database)?;
    if logged.is_empty() {
        return Ok(revision);
    }
    revision += 1;
    transaction
        .execute(
            "UPDATE toolgate_revision SET revision = ?1 WHERE id = 1",
            params![revision as i64],
        )
        .map_err(database)?;
    let at = crate::store::unix_ms() as i64;
    for row in logged {
        transaction
            .execute(
                "INSERT INTO toolgate_changes (revision, at_ms, actor, tool, what) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![revision as i64, at, row.actor, row.tool, row.what.to_string()],
            )
            .map_err(database)?;
    }
    Ok(revision)
}

/// The revision now.
pub(super) fn current_revision(connection: &rusqlite::Connection) -> rusqlite::Result<u64> {
    connection
        .prepare_cached("SELECT revision FROM toolgate_revision WHERE id = 1")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|r| r.max(0) as u64)
}
