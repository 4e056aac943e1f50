//! The sealing keys in PostgreSQL: read as a ring, one made the first time, rotated and retired by an
//! operator, each change recorded under a new revision that every replica hears of.

use deadpool_postgres::{ClientWrapper, Transaction};
use serde_json::json;

use crate::confirm::KeyRing;
use crate::store::{Logged, RecordError, RecordErrorKind, millis, retirable};

use super::revision::{lock_revision, log};
use super::{MIGRATION_LOCK, database};

/// The ring, newest key first; makes a key when there is none.
pub(super) async fn ring(client: &mut ClientWrapper) -> Result<KeyRing, RecordError> {
    let transaction = client.transaction().await.map_err(database)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(database)?;
    let count: i64 = transaction
        .query_one("SELECT count(*) FROM toolgate_keys", &[])
        .await
        .map_err(database)?
        .get(0);
    if count == 0 {
        insert(&transaction, 0).await?;
    }
    let ring = read(&transaction).await?;
    transaction.commit().await.map_err(database)?;
    Ok(ring)
}

/// Adds a random key that seals from `seals_from_ms`: its id and the new revision.
pub(super) async fn add(
    client: &mut ClientWrapper,
    actor: &str,
    seals_from_ms: u64,
) -> Result<(String, u64), RecordError> {
    let transaction = client.transaction().await.map_err(database)?;
    let revision = lock_revision(&transaction).await?;
    let id = insert(&transaction, seals_from_ms).await?;
    let what = json!({ "keys": "rotated", "id": id, "seals_from_ms": seals_from_ms });
    let revision = log(&transaction, revision, &[Logged::new(actor, "-", what)]).await?;
    transaction.commit().await.map_err(database)?;
    Ok((id, revision))
}

/// Deletes key `id`, unless it seals now or is the last.
pub(super) async fn retire(
    client: &mut ClientWrapper,
    actor: &str,
    id: &str,
) -> Result<u64, RecordError> {
    let transaction = client.transaction().await.map_err(database)?;
    let revision = lock_revision(&transaction).await?;
    retirable(&read(&transaction).await?, id)?;
    transaction
        .execute("DELETE FROM toolgate_keys WHERE id = $1", &[&id])
        .await
        .map_err(database)?;
    let what = json!({ "keys": "retired", "id": id });
    let revision = log(&transaction, revision, &[Logged::new(actor, "-", what)]).await?;
    transaction.commit().await.map_err(database)?;
    Ok(revision)
}

async fn insert(transaction: &Transaction<'_>, seals_from_ms: u64) -> Result<String, RecordError> {
    let (id, secret) = KeyRing::fresh();
    transaction
        .execute(
            "INSERT INTO toolgate_keys (id, secret, created_ms, seals_from_ms) VALUES ($1, $2, $3, $4)",
            &[
                &id,
                &&secret[..],
                &millis(std::time::SystemTime::now()),
                &seals_from_ms.cast_signed(),
            ],
        )
        .await
        .map_err(database)?;
    Ok(id)
}

async fn read(transaction: &Transaction<'_>) -> Result<KeyRing, RecordError> {
    let rows = transaction
        .query(
            "SELECT id, secret, seals_from_ms FROM toolgate_keys ORDER BY created_ms DESC, id DESC",
            &[],
        )
        .await
        .map_err(database)?;
    let keys = rows.iter().map(|r| {
        let seals_from: i64 = r.get(2);
        (r.get(0), r.get(1), seals_from.max(0).cast_unsigned())
    });
    KeyRing::from_newest(keys)
        .map_err(|e| RecordError::new(RecordErrorKind::Database, e.to_string()))
}
