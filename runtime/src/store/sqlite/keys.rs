//! The sealing keys in SQLite: read as a ring, one made the first time, rotated and retired by an
//! operator, each change recorded under a new revision.

use rusqlite::{Connection, TransactionBehavior, params};
use serde_json::json;

use crate::confirm::KeyRing;
use crate::store::{Logged, RecordError, millis, retirable};

use super::record_error;
use super::revision::log;

/// The ring, newest key first; makes a key when there is none.
pub(super) fn ring(connection: &mut Connection) -> rusqlite::Result<KeyRing> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let count: i64 =
        transaction.query_row("SELECT count(*) FROM toolgate_keys", [], |r| r.get(0))?;
    if count == 0 {
        insert(&transaction, 0)?;
    }
    let ring = read(&transaction)?;
    transaction.commit()?;
    Ok(ring)
}

/// Adds a random key that seals from `seals_from_ms`: its id and the new revision.
pub(super) fn add(
    connection: &mut Connection,
    actor: &str,
    seals_from_ms: u64,
) -> Result<(String, u64), RecordError> {
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(record_error)?;
    let id = insert(&transaction, seals_from_ms).map_err(record_error)?;
    let what = json!({ "keys": "rotated", "id": id, "seals_from_ms": seals_from_ms });
    let revision = log(&transaction, vec![Logged::new(actor, "-", what)])?;
    transaction.commit().map_err(record_error)?;
    Ok((id, revision))
}

/// Deletes key `id`, unless it seals now or is the last.
pub(super) fn retire(
    connection: &mut Connection,
    actor: &str,
    id: &str,
) -> Result<u64, RecordError> {
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(record_error)?;
    retirable(&read(&transaction).map_err(record_error)?, id)?;
    transaction
        .execute("DELETE FROM toolgate_keys WHERE id = ?1", params![id])
        .map_err(record_error)?;
    let what = json!({ "keys": "retired", "id": id });
    let revision = log(&transaction, vec![Logged::new(actor, "-", what)])?;
    transaction.commit().map_err(record_error)?;
    Ok(revision)
}

fn insert(connection: &Connection, seals_from_ms: u64) -> rusqlite::Result<String> {
    let (id, secret) = KeyRing::fresh();
    connection.execute(
        "INSERT INTO toolgate_keys (id, secret, created_ms, seals_from_ms) VALUES (?1, ?2, ?3, ?4)",
        params![
            id,
            &secret[..],
            millis(std::time::SystemTime::now()),
            seals_from_ms.cast_signed()
        ],
    )?;
    Ok(id)
}

fn read(connection: &Connection) -> rusqlite::Result<KeyRing> {
    let mut statement = connection.prepare(
        "SELECT id, secret, seals_from_ms FROM toolgate_keys ORDER BY created_ms DESC, id DESC",
    )?;
    let rows = statement.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, Vec<u8>>(1)?,
            r.get::<_, i64>(2)?.max(0).cast_unsigned(),
        ))
    })?;
    let keys = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    KeyRing::from_newest(keys).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}
