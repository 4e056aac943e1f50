//! The operator's records in PostgreSQL, in the same tables as SQLite. Each write locks the revision row
//! first, so writes from every replica are serialized, and notifies the new revision on commit.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::store::audit_queue::READ_AFTER_WRITES;

use deadpool_postgres::Transaction;
use serde_json::Value;
use tokio_postgres::IsolationLevel;
use tokio_postgres::types::ToSql;

use crate::store::{
    AuditQuery, AuditRecord, ChangeEntry, RecordError, RecordFuture, RecordStore, Records, Table,
    ToolCalls, Write,
};

use super::revision::{lock_revision, log, unsigned};
use super::{PostgresStore, database, keys};
use crate::confirm::KeyRing;
use crate::store::audit::from_json_columns;
use crate::store::tables;

impl RecordStore for PostgresStore {
    fn revision(&self) -> RecordFuture<'_, u64> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_one("SELECT revision FROM toolgate_revision WHERE id = 1", &[])
                .await
                .map_err(database)?;
            Ok(unsigned(row.get(0)))
        })
    }

    fn load(&self) -> RecordFuture<'_, Records> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let transaction = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
                .map_err(database)?;
            let revision = transaction
                .query_one("SELECT revision FROM toolgate_revision WHERE id = 1", &[])
                .await
                .map_err(database)?;
            let mut tables = Vec::with_capacity(Table::ALL.len());
            for table in Table::ALL {
                let select = format!("SELECT record FROM {}", table.name());
                let rows = transaction.query(&select, &[]).await.map_err(database)?;
                tables.push((table, rows));
            }
            transaction.commit().await.map_err(database)?;
            let mut records = Records {
                revision: unsigned(revision.get(0)),
                ..Records::default()
            };
            for (table, rows) in tables {
                for row in rows {
                    records.insert_json(table, row.get(0))?;
                }
            }
            Ok(records)
        })
    }

    fn write<'a>(&'a self, write: Write<'a>) -> RecordFuture<'a, u64> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let transaction = client.transaction().await.map_err(database)?;
            let revision = lock_revision(&transaction).await?;
            let reads = write.reads();
            let mut current = Records::default();
            for (table, names) in reads.by_table() {
                for text in read(&transaction, table, &names).await? {
                    current.insert_json(table, &text)?;
                }
            }
            let effects = write.resolve(&current)?;
            for rows in effects.by_table()? {
                for (name, record) in &rows.put {
                    put(&transaction, rows.table, name, record).await?;
                }
                delete(&transaction, rows.table, rows.delete).await?;
            }
            let revision = log(&transaction, revision, &effects.log).await?;
            transaction.commit().await.map_err(database)?;
            Ok(revision)
        })
    }

    fn history(&self, limit: usize) -> RecordFuture<'_, Vec<ChangeEntry>> {
        Box::pin(async move {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT revision, at_ms, actor, tool, what FROM toolgate_changes ORDER BY seq DESC LIMIT $1",
                    &[&i64::try_from(limit).unwrap_or(i64::MAX)],
                )
                .await
                .map_err(database)?;
            Ok(rows
                .iter()
                .map(|r| {
                    let what: String = r.get(4);
                    ChangeEntry {
                        revision: unsigned(r.get(0)),
                        at_ms: unsigned(r.get(1)),
                        actor: r.get(2),
                        tool: r.get(3),
                        what: serde_json::from_str(&what).unwrap_or(Value::String(what)),
                    }
                })
                .collect())
        })
    }

    fn calls_per_tool(&self, since_ms: u64) -> RecordFuture<'_, Vec<ToolCalls>> {
        Box::pin(async move {
            self.audit.flush(READ_AFTER_WRITES).await;
            let client = self.client().await?;
            let since = i64::try_from(since_ms).unwrap_or(i64::MAX);
            let rows = client
                .query(crate::store::audit::calls_per_tool!("$1"), &[&since])
                .await
                .map_err(database)?;
            Ok(rows
                .iter()
                .map(|r| ToolCalls {
                    tool: r.get(0),
                    calls: unsigned(r.get(1)),
                })
                .collect())
        })
    }

    fn audit_trail<'a>(&'a self, query: &'a AuditQuery) -> RecordFuture<'a, Vec<AuditRecord>> {
        Box::pin(async move {
            self.audit.flush(READ_AFTER_WRITES).await;
            let client = self.client().await?;
            let (since, until) = query.bounds_i64();
            let parameters: [&(dyn ToSql + Sync); 6] = [
                &query.limit_i64(),
                &query.caller,
                &query.tool,
                &query.outcome,
                &since,
                &until,
            ];
            let rows = client
                .query(
                    concat!(
                        tables::audit_query!(
                            "($2::text IS NULL OR COALESCE(root, caller) = $2) AND ($3::text IS NULL OR tool = $3) \
                             AND ($4::text IS NULL OR outcome = $4) AND at_ms >= $5 AND at_ms < $6"
                        ),
                        "$1"
                    ),
                    &parameters,
                )
                .await
                .map_err(database)?;
            Ok(rows
                .iter()
                .map(|r| {
                    let (on_behalf_of, telemetry) = from_json_columns(r.get(10), r.get(12));
                    AuditRecord {
                        seq: unsigned(r.get(0)),
                        at_ms: unsigned(r.get(1)),
                        caller: r.get(2),
                        tool: r.get(3),
                        action: r.get(4),
                        digest: r.get(5),
                        outcome: r.get(6),
                        session: r.get(7),
                        elapsed_us: unsigned(r.get(8)),
                        revision: r.get::<_, Option<i64>>(9).map(unsigned),
                        on_behalf_of,
                        session_log: r.get(11),
                        telemetry,
                        preview: r.get::<_, Option<String>>(13).or(r.get(17)),
                        client: r.get(15),
                        actors: from_json_columns(r.get(16), None).0,
                    }
                })
                .collect())
        })
    }

    fn prune_audit(&self, before_ms: u64) -> RecordFuture<'_, u64> {
        Box::pin(async move {
            self.audit.flush(READ_AFTER_WRITES).await;
            let before = i64::try_from(before_ms).unwrap_or(i64::MAX);
            let client = self.client().await?;
            client
                .execute(tables::AUDIT_PRUNE, &[&before])
                .await
                .map_err(database)
        })
    }

    fn key_ring(&self) -> RecordFuture<'_, KeyRing> {
        Box::pin(PostgresStore::key_ring(self))
    }

    fn add_key<'a>(
        &'a self,
        actor: &'a str,
        seals_from_ms: u64,
    ) -> RecordFuture<'a, (String, u64)> {
        Box::pin(async move { keys::add(&mut *self.client().await?, actor, seals_from_ms).await })
    }

    fn retire_key<'a>(&'a self, actor: &'a str, id: &'a str) -> RecordFuture<'a, u64> {
        Box::pin(async move { keys::retire(&mut *self.client().await?, actor, id).await })
    }

    fn changed(&self, every: Duration) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let mut heard = self.heard.clone();
        heard.mark_unchanged();
        Box::pin(async move {
            let _ = tokio::time::timeout(every, heard.changed()).await;
        })
    }
}

/// The records of `names` in `table`, locked until the transaction ends.
async fn read(
    transaction: &Transaction<'_>,
    table: Table,
    names: &[&str],
) -> Result<Vec<String>, RecordError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let rows = transaction
        .query(
            &format!(
                "SELECT record FROM {} WHERE name = ANY($1) FOR UPDATE",
                table.name()
            ),
            &[&names],
        )
        .await
        .map_err(database)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

async fn put(
    transaction: &Transaction<'_>,
    table: Table,
    name: &str,
    text: &str,
) -> Result<(), RecordError> {
    transaction
        .execute(
            &format!(
                "INSERT INTO {} (name, record) VALUES ($1, $2) \
                 ON CONFLICT (name) DO UPDATE SET record = excluded.record",
                table.name()
            ),
            &[&name, &text],
        )
        .await
        .map(drop)
        .map_err(database)
}

async fn delete(
    transaction: &Transaction<'_>,
    table: Table,
    names: &[String],
) -> Result<(), RecordError> {
    if names.is_empty() {
        return Ok(());
    }
    transaction
        .execute(
            &format!("DELETE FROM {} WHERE name = ANY($1)", table.name()),
            &[&names],
        )
        .await
        .map(drop)
        .map_err(database)
}
