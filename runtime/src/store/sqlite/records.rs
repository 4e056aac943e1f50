//! The operator's records in SQLite: one row per tool (its record as JSON), the revision in one row, and
//! every change in `toolgate_changes`. Each write is one immediate transaction, so two processes on one
//! file never interleave.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::{Value, json};

use crate::store::{
    ChangeEntry, Edit, RecordError, RecordErrorKind, RecordFuture, RecordStore, Records, Status,
    SyncPlan, ToolRecord,
};

use super::SqliteStore;

impl RecordStore for SqliteStore {
    fn revision(&self) -> RecordFuture<'_, u64> {
        Box::pin(async move {
            let connection = self.lock();
            current_revision(&connection).map_err(database)
        })
    }

    fn load(&self) -> RecordFuture<'_, Records> {
        Box::pin(async move {
            let mut connection = self.lock();
            let transaction = connection.transaction().map_err(database)?;
            let revision = current_revision(&transaction).map_err(database)?;
            let mut records = Records {
                revision,
                ..Records::default()
            };
            let mut statement = transaction
                .prepare_cached("SELECT record FROM toolgate_tools")
                .map_err(database)?;
            let rows = statement
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(database)?;
            for row in rows {
                let record = parse(&row.map_err(database)?)?;
                records.tools.insert(record.name.clone(), record);
            }
            Ok(records)
        })
    }

    fn edit<'a>(&'a self, edit: &'a Edit) -> RecordFuture<'a, u64> {
        Box::pin(async move {
            write(self, |transaction| {
                let record = read(transaction, &edit.tool)?
                    .ok_or_else(|| RecordError::unknown_tool(&edit.tool))?;
                let next = edit.apply(&record)?;
                put(transaction, &next)?;
                Ok(vec![(edit.actor.clone(), next.name, json!(edit.change))])
            })
        })
    }

    fn apply_sync<'a>(&'a self, actor: &'a str, plan: &'a SyncPlan) -> RecordFuture<'a, u64> {
        Box::pin(async move {
            write(self, |transaction| {
                let mut changes = Vec::new();
                for record in &plan.new {
                    put(transaction, record)?;
                    changes.push((
                        actor.to_owned(),
                        record.name.clone(),
                        json!({ "sync": "new" }),
                    ));
                }
                for drift in &plan.changed {
                    put(transaction, &drift.record)?;
                    let what = json!({ "sync": "changed", "what": drift.what });
                    changes.push((actor.to_owned(), drift.record.name.clone(), what));
                }
                for name in &plan.vanished {
                    let mut record =
                        read(transaction, name)?.ok_or_else(|| RecordError::unknown_tool(name))?;
                    record.status = Status::Missing;
                    record.version += 1;
                    put(transaction, &record)?;
                    changes.push((actor.to_owned(), name.clone(), json!({ "sync": "missing" })));
                }
                for name in &plan.unchanged {
                    if let Some(mut record) = read(transaction, name)? {
                        record.last_seen_ms = plan.at_ms;
                        put(transaction, &record)?;
                    }
                }
                Ok(changes)
            })
        })
    }

    fn delete<'a>(&'a self, actor: &'a str, tool: &'a str) -> RecordFuture<'a, u64> {
        Box::pin(async move {
            write(self, |transaction| {
                let record =
                    read(transaction, tool)?.ok_or_else(|| RecordError::unknown_tool(tool))?;
                if record.status != Status::Missing {
                    return Err(RecordError::new(
                        RecordErrorKind::Invalid,
                        format!(
                            "`{tool}` is still in the code; only a tool a sync marked missing can be deleted"
                        ),
                    ));
                }
                transaction
                    .execute("DELETE FROM toolgate_tools WHERE name = ?1", params![tool])
                    .map_err(database)?;
                Ok(vec![(
                    actor.to_owned(),
                    tool.to_owned(),
                    json!({ "deleted": true }),
                )])
            })
        })
    }

    fn history(&self, limit: usize) -> RecordFuture<'_, Vec<ChangeEntry>> {
        Box::pin(async move {
            let connection = self.lock();
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
        })
    }
}

/// One write: `change` in an immediate transaction, then, if it changed anything, the next revision and
/// a history row per change. Nothing is written when `change` fails.
fn write(
    store: &SqliteStore,
    change: impl FnOnce(&Transaction<'_>) -> Result<Vec<(String, String, Value)>, RecordError>,
) -> Result<u64, RecordError> {
    let mut connection = store.lock();
    let transaction = connection
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(database)?;
    let changes = change(&transaction)?;
    let mut revision = current_revision(&transaction).map_err(database)?;
    if !changes.is_empty() {
        revision += 1;
        transaction
            .execute(
                "UPDATE toolgate_revision SET revision = ?1 WHERE id = 1",
                params![revision as i64],
            )
            .map_err(database)?;
        let at = crate::store::unix_ms() as i64;
        for (actor, tool, what) in changes {
            transaction
                .execute(
                    "INSERT INTO toolgate_changes (revision, at_ms, actor, tool, what) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![revision as i64, at, actor, tool, what.to_string()],
                )
                .map_err(database)?;
        }
    }
    transaction.commit().map_err(database)?;
    Ok(revision)
}

fn current_revision(connection: &rusqlite::Connection) -> rusqlite::Result<u64> {
    connection
        .prepare_cached("SELECT revision FROM toolgate_revision WHERE id = 1")?
        .query_row([], |r| r.get::<_, i64>(0))
        .map(|r| r.max(0) as u64)
}

fn read(transaction: &Transaction<'_>, name: &str) -> Result<Option<ToolRecord>, RecordError> {
    let text: Option<String> = transaction
        .prepare_cached("SELECT record FROM toolgate_tools WHERE name = ?1")
        .and_then(|mut s| s.query_row(params![name], |r| r.get(0)).optional())
        .map_err(database)?;
    text.as_deref().map(parse).transpose()
}

fn put(transaction: &Transaction<'_>, record: &ToolRecord) -> Result<(), RecordError> {
    let text = serde_json::to_string(record)
        .map_err(|e| RecordError::new(RecordErrorKind::Database, e.to_string()))?;
    transaction
        .prepare_cached(
            "INSERT INTO toolgate_tools (name, record) VALUES (?1, ?2) \
             ON CONFLICT (name) DO UPDATE SET record = excluded.record",
        )
        .and_then(|mut s| s.execute(params![record.name, text]))
        .map_err(database)?;
    Ok(())
}

fn parse(text: &str) -> Result<ToolRecord, RecordError> {
    serde_json::from_str(text).map_err(|e| {
        RecordError::new(
            RecordErrorKind::Database,
            format!("a tool record in the database is not one this toolgate reads: {e}"),
        )
    })
}

fn database(error: rusqlite::Error) -> RecordError {
    match error {
        rusqlite::Error::ToSqlConversionFailure(inner) => match inner.downcast::<RecordError>() {
            Ok(record) => *record,
            Err(other) => RecordError::new(RecordErrorKind::Database, other.to_string()),
        },
        other => RecordError::new(
            RecordErrorKind::Database,
            format!("the records database failed: {other}"),
        ),
    }
}
