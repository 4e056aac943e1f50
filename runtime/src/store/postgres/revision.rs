//! The policy revision in PostgreSQL: one row, locked by every write so that replicas' writes are
//! serialized, moved by every change with a history row per change, and announced with `NOTIFY`.

use deadpool_postgres::Transaction;

use crate::store::{Logged, RecordError};

use super::{CHANNEL, database};

/// Locks the revision row, so that writes from every replica are serialized: the revision now.
pub(super) async fn lock_revision(transaction: &Transaction<'_>) -> Result<u64, RecordError> {
    let row = transaction
        .query_one(
            "SELECT revision FROM toolgate_revision WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await
        .map_err(database)?;
    Ok(unsigned(row.get(0)))
}

/// Writes the history rows `logged` under the revision after `revision` (locked), notifies it, and
/// returns it; with none, the revision stays.
pub(super) async fn log(
    transaction: &Transaction<'_>,
    revision: u64,
    logged: &[Logged],
) -> Result<u64, RecordError> {
    if logged.is_empty() {
        return Ok(revision);
    }
    let next = revision + 1;
    let signed = signed(next);
    transaction
        .execute(
            "UPDATE toolgate_revision SET revision = $1 WHERE id = 1",
            &[&signed],
        )
        .await
        .map_err(database)?;
    let at = crate::store::millis(std::time::SystemTime::now());
    for row in logged {
        transaction
            .execute(
                "INSERT INTO toolgate_changes (revision, at_ms, actor, tool, what) VALUES ($1, $2, $3, $4, $5)",
                &[&signed, &at, &row.actor, &row.tool, &row.what.to_string()],
            )
            .await
            .map_err(database)?;
    }
    transaction
        .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &next.to_string()])
        .await
        .map_err(database)?;
    Ok(next)
}

/// A count the database keeps as `BIGINT`.
pub(super) fn unsigned(value: i64) -> u64 {
    value.max(0).cast_unsigned()
}

/// A count as the database keeps it.
pub(super) fn signed(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
