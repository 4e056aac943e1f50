//! Tasks kept in the file, for every process that opens it.

use rusqlite::{OptionalExtension, params};

use crate::confirm::StoreFuture;
use crate::store::tables::{
    TASK_BEAT, TASK_CANCEL, TASK_CREATE, TASK_GET, TASK_PURGE, TASK_UPDATE,
};
use crate::store::task::{TaskRecord, TaskStore, from_row};
use crate::store::{to_json, unix_ms};

use super::{SqliteStore, store_error};

/// A number of milliseconds as SQLite keeps it.
fn int(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

impl SqliteStore {
    fn write_task(&self, sql: &str, task: &TaskRecord) -> Result<usize, crate::error::ToolError> {
        let record = to_json(task).map_err(|e| crate::confirm::store_failed(e.message()))?;
        let status = task.status.as_str();
        let connection = self.lock();
        let changed = if sql == TASK_CREATE {
            connection
                .prepare_cached(&TASK_PURGE.replace('$', "?"))
                .and_then(|mut s| s.execute(params![int(unix_ms())]))
                .map_err(store_error)?;
            connection
                .prepare_cached(&sql.replace('$', "?"))
                .and_then(|mut s| {
                    s.execute(params![
                        task.id,
                        status,
                        task.message,
                        int(task.lease_until_ms),
                        int(task.expires_ms()),
                        record
                    ])
                })
        } else {
            connection
                .prepare_cached(&sql.replace('$', "?"))
                .and_then(|mut s| {
                    s.execute(params![
                        task.id,
                        status,
                        task.message,
                        int(task.lease_until_ms),
                        record,
                        int(task.version)
                    ])
                })
        };
        changed.map_err(store_error)
    }
}

impl TaskStore for SqliteStore {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, ()> {
        Box::pin(std::future::ready(
            self.write_task(TASK_CREATE, task).map(drop),
        ))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        let found = self
            .lock()
            .prepare_cached(&TASK_GET.replace('$', "?"))
            .and_then(|mut s| {
                s.query_row(params![id, int(unix_ms())], |r| {
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
        Box::pin(std::future::ready(
            self.write_task(TASK_UPDATE, task)
                .map(|changed| changed == 1),
        ))
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let done = self
            .lock()
            .prepare_cached(&TASK_CANCEL.replace('$', "?"))
            .and_then(|mut s| s.execute(params![id]))
            .map(drop)
            .map_err(store_error);
        Box::pin(std::future::ready(done))
    }

    fn beat<'a>(
        &'a self,
        id: &'a str,
        until_ms: u64,
        message: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let asked = self
            .lock()
            .prepare_cached(&TASK_BEAT.replace('$', "?"))
            .and_then(|mut s| {
                s.query_row(params![id, int(until_ms), message], |r| r.get::<_, i64>(0))
                    .optional()
            })
            .map(|asked| asked.is_some_and(|a| a != 0))
            .map_err(store_error);
        Box::pin(std::future::ready(asked))
    }
}
