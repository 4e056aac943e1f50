//! The operator's records in SQLite: one row per record of each [`Table`] (the record as JSON), the
//! revision in one row, and every change in `toolgate_changes`. Each write is one immediate transaction, so two processes on one
//! file never interleave.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;

use crate::store::{
    AuditQuery, AuditRecord, ChangeEntry, RecordError, RecordFuture, RecordStore, Records, Table,
    ToolCalls, Write,
};

use super::revision::{current_revision, log};
use super::{SqliteStore, keys, record_error as database};
use crate::confirm::KeyRing;
use crate::store::audit::from_json_columns;
use crate::store::audit_queue::READ_AFTER_WRITES;
use crate::store::tables;

impl RecordStore for SqliteStore {
    fn revision(&self) -> RecordFuture<'_, u64> {
        Box::pin(async move {
            self.with(|connection| current_revision(connection))
                .map_err(database)
        })
    }

    fn load(&self) -> RecordFuture<'_, Records> {
        Box::pin(async move { self.with(load_now) })
    }

    fn write<'a>(&'a self, write: Write<'a>) -> RecordFuture<'a, u64> {
        Box::pin(async move { self.with(|connection| write_now(connection, write)) })
    }

    fn key_ring(&self) -> RecordFuture<'_, KeyRing> {
        Box::pin(async move { self.with(keys::ring).map_err(database) })
    }

    fn add_key<'a>(
        &'a self,
        actor: &'a str,
        seals_from_ms: u64,
    ) -> RecordFuture<'a, (String, u64)> {
        Box::pin(async move { self.with(|connection| keys::add(connection, actor, seals_from_ms)) })
    }

    fn retire_key<'a>(&'a self, actor: &'a str, id: &'a str) -> RecordFuture<'a, u64> {
        Box::pin(async move { self.with(|connection| keys::retire(connection, actor, id)) })
    }

    fn history(&self, limit: usize) -> RecordFuture<'_, Vec<ChangeEntry>> {
        Box::pin(async move { self.with(|connection| history(connection, limit)) })
    }

    fn calls_per_tool(&self, since_ms: u64) -> RecordFuture<'_, Vec<ToolCalls>> {
        Box::pin(async move {
            self.audit_written(READ_AFTER_WRITES).await;
            self.with(|connection| calls_per_tool(connection, since_ms))
        })
    }

    fn audit_trail<'a>(&'a self, query: &'a AuditQuery) -> RecordFuture<'a, Vec<AuditRecord>> {
        Box::pin(async move {
            self.audit_written(READ_AFTER_WRITES).await;
            self.with(|connection| audit_trail(connection, query))
        })
    }

    fn prune_audit(&self, before_ms: u64) -> RecordFuture<'_, u64> {
        Box::pin(async move {
            self.audit_written(READ_AFTER_WRITES).await;
            let before = i64::try_from(before_ms).unwrap_or(i64::MAX);
            self.with(|connection| {
                connection
                    .prepare_cached(tables::AUDIT_PRUNE)?
                    .execute(params![before])
            })
            .map(|rows| rows as u64)
            .map_err(database)
        })
    }
}

/// Every record, in one transaction.
fn load_now(connection: &mut Connection) -> Result<Records, RecordError> {
    let transaction = connection.transaction().map_err(database)?;
    let mut records = Records {
        revision: current_revision(&transaction).map_err(database)?,
        ..Records::default()
    };
    for table in Table::ALL {
        for text in all(&transaction, table)? {
            records.insert_json(table, &text)?;
        }
    }
    Ok(records)
}

/// The newest `limit` changes.
fn history(connection: &mut Connection, limit: usize) -> Result<Vec<ChangeEntry>, RecordError> {
    let mut statement = connection
                .prepare_cached(
                    "SELECT revision, at_ms, actor, tool, what FROM toolgate_changes ORDER BY seq DESC LIMIT ?1",
                )
                .map_err(database)?;
    let rows = statement
        .query_map(params![i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })
        .map_err(database)?;
    rows.map(|row| {
        let (revision, at_ms, actor, tool, what) = row.map_err(database)?;
        Ok(ChangeEntry {
            revision: revision.max(0) as u64,
            at_ms: at_ms.max(0) as u64,
            actor,
            tool,
            what: serde_json::from_str(&what).unwrap_or(Value::String(what)),
        })
    })
    .collect()
}

/// How many times each tool was called since `since_ms`.
fn calls_per_tool(
    connection: &mut Connection,
    since_ms: u64,
) -> Result<Vec<ToolCalls>, RecordError> {
    let mut statement = connection
        .prepare_cached(crate::store::audit::calls_per_tool!("?1"))
        .map_err(database)?;
    let since = i64::try_from(since_ms).unwrap_or(i64::MAX);
    let rows = statement
        .query_map(params![since], |r| {
            Ok(ToolCalls {
                tool: r.get(0)?,
                calls: r.get::<_, i64>(1)?.max(0) as u64,
            })
        })
        .map_err(database)?;
    rows.map(|row| row.map_err(database)).collect()
}

/// The audit rows `query` asks for.
fn audit_trail(
    connection: &mut Connection,
    query: &AuditQuery,
) -> Result<Vec<AuditRecord>, RecordError> {
    let mut statement = connection
        .prepare_cached(concat!(
            tables::audit_query!(
                "(?2 IS NULL OR COALESCE(root, caller) = ?2) AND (?3 IS NULL OR tool = ?3) \
                         AND (?4 IS NULL OR outcome = ?4) AND at_ms >= ?5 AND at_ms < ?6"
            ),
            "?1"
        ))
        .map_err(database)?;
    let (since, until) = query.bounds_i64();
    let rows = statement
        .query_map(
            params![
                query.limit_i64(),
                query.caller,
                query.tool,
                query.outcome,
                since,
                until
            ],
            |r| {
                let (on_behalf_of, telemetry) = from_json_columns(r.get(10)?, r.get(12)?);
                Ok(AuditRecord {
                    seq: r.get::<_, i64>(0)?.max(0) as u64,
                    at_ms: r.get::<_, i64>(1)?.max(0) as u64,
                    caller: r.get(2)?,
                    tool: r.get(3)?,
                    action: r.get(4)?,
                    digest: r.get(5)?,
                    outcome: r.get(6)?,
                    session: r.get(7)?,
                    elapsed_us: r.get::<_, i64>(8)?.max(0) as u64,
                    revision: r.get::<_, Option<i64>>(9)?.map(|r| r.max(0) as u64),
                    on_behalf_of,
                    session_log: r.get(11)?,
                    telemetry,
                    preview: r.get::<_, Option<String>>(13)?.or(r.get(17)?),
                    client: r.get(15)?,
                    actors: from_json_columns(r.get(16)?, None).0,
                })
            },
        )
        .map_err(database)?;
    rows.map(|row| row.map_err(database)).collect()
}

/// One write in an immediate transaction, which no other process on the file interleaves with.
fn write_now(connection: &mut Connection, write: Write<'_>) -> Result<u64, RecordError> {
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(database)?;
    let reads = write.reads();
    let mut current = Records::default();
    for (table, names) in reads.by_table() {
        for name in names {
            if let Some(text) = read(&transaction, table, name)? {
                current.insert_json(table, &text)?;
            }
        }
    }
    let effects = write.resolve(&current)?;
    for rows in effects.by_table()? {
        for (name, record) in &rows.put {
            put(&transaction, rows.table, name, record)?;
        }
        for name in rows.delete {
            delete(&transaction, rows.table, name)?;
        }
    }
    let revision = log(&transaction, effects.log)?;
    transaction.commit().map_err(database)?;
    Ok(revision)
}

fn all(transaction: &Transaction<'_>, table: Table) -> Result<Vec<String>, RecordError> {
    let mut statement = transaction
        .prepare_cached(&format!("SELECT record FROM {}", table.name()))
        .map_err(database)?;
    let rows = statement
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(database)?;
    rows.map(|row| row.map_err(database)).collect()
}

fn read(
    transaction: &Transaction<'_>,
    table: Table,
    name: &str,
) -> Result<Option<String>, RecordError> {
    transaction
        .prepare_cached(&format!(
            "SELECT record FROM {} WHERE name = ?1",
            table.name()
        ))
        .and_then(|mut s| s.query_row(params![name], |r| r.get(0)).optional())
        .map_err(database)
}

fn put(
    transaction: &Transaction<'_>,
    table: Table,
    name: &str,
    text: &str,
) -> Result<(), RecordError> {
    transaction
        .prepare_cached(&format!(
            "INSERT INTO {} (name, record) VALUES (?1, ?2) \
             ON CONFLICT (name) DO UPDATE SET record = excluded.record",
            table.name()
        ))
        .and_then(|mut s| s.execute(params![name, text]))
        .map(drop)
        .map_err(database)
}

fn delete(transaction: &Transaction<'_>, table: Table, name: &str) -> Result<(), RecordError> {
    transaction
        .execute(
            &format!("DELETE FROM {} WHERE name = ?1", table.name()),
            params![name],
        )
        .map(drop)
        .map_err(database)
}
