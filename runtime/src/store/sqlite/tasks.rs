//! Tasks kept in the file, for every process that opens it.

use rusqlite::{OptionalExtension, params};

use crate::confirm::StoreFuture;
use crate::store::tables::{
    TASK_BEAT, TASK_CANCEL, TASK_CREATE, TASK_GET, TASK_PURGE, TASK_UPDATE,
};
use crate::store::task::{TaskRecord, TaskStore, from_row, int};
use crate::store::{to_json, unix_ms};

use super::{SqliteStore, numbered, store_error};
use crate::error::ToolError;

impl SqliteStore {
    /// Runs one of the tasks' statements, written with `$n` placeholders, and counts the rows changed.
    fn change(&self, sql: &str, values: &[&dyn rusqlite::ToSql]) -> Result<usize, ToolError> {
        self.with(|connection| connection.prepare_cached(&numbered(sql))?.execute(values))
            .map_err(store_error)
    }
}

/// `task` as its record column keeps it.
fn record(task: &TaskRecord) -> Result<String, ToolError> {
    to_json(task).map_err(|e| crate::confirm::store_failed(e.message()))
}

impl TaskStore for SqliteStore {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, ()> {
        let created = record(task).and_then(|record| {
            self.change(TASK_PURGE, params![int(unix_ms())])?;
            let (lease, expires) = (int(task.lease_until_ms), int(task.expires_ms()));
            let status = task.status.as_str();
            let values = params![task.id, status, task.message, lease, expires, record];
            self.change(TASK_CREATE, values).map(drop)
        });
        Box::pin(std::future::ready(created))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let found = self
            .with(|connection| {
                connection
                    .prepare_cached(&numbered(TASK_GET))?
                    .query_row(params![id, int(unix_ms())], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, Option<String>>(2)?,
                            r.get::<_, i64>(3)?,
                            r.get::<_, i64>(4)?,
                            r.get::<_, String>(5)?,
                        ))
                    })
                    .optional()
            })
            .map_err(store_error)
            .and_then(|row| {
                row.map(|(version, status, message, lease, cancel, record)| {
                    from_row(version, &status, message, lease, cancel, &record)
                        .map_err(|e| crate::confirm::store_failed(e.message()))
                })
                .transpose()
            });
        Box::pin(std::future::ready(found))
    }

    fn update<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, bool> {
        let written = record(task).and_then(|record| {
            let (lease, version) = (int(task.lease_until_ms), int(task.version));
            let status = task.status.as_str();
            let values = params![task.id, status, task.message, lease, record, version];
            self.change(TASK_UPDATE, values).map(|changed| changed == 1)
        });
        Box::pin(std::future::ready(written))
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(
            self.change(TASK_CANCEL, params![id]).map(drop),
        ))
    }

    fn beat<'a>(
        &'a self,
        id: &'a str,
        until_ms: u64,
        message: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let asked = self
            .with(|connection| {
                connection
                    .prepare_cached(&numbered(TASK_BEAT))?
                    .query_row(params![id, int(until_ms), message], |r| r.get::<_, i64>(0))
                    .optional()
            })
            .map(|asked| asked.is_some_and(|a| a != 0))
            .map_err(store_error);
        Box::pin(std::future::ready(asked))
    }
}
