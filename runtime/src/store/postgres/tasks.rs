//! Tasks kept in PostgreSQL, for every replica on the database.

use tokio_postgres::types::ToSql;

use crate::confirm::StoreFuture;
use crate::store::tables::{
    TASK_BEAT, TASK_CANCEL, TASK_CREATE, TASK_GET, TASK_PURGE, TASK_UPDATE,
};
use crate::store::task::{TaskRecord, TaskStore, from_row, int};
use crate::store::{to_json, unix_ms};

use super::{PostgresStore, database, store_error};

impl PostgresStore {
    /// Runs `sql` with `values`, and counts the rows changed.
    async fn change(
        &self,
        sql: &str,
        values: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, crate::error::ToolError> {
        let client = self.client().await.map_err(store_error)?;
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|e| store_error(database(e)))?;
        client
            .execute(&statement, values)
            .await
            .map_err(|e| store_error(database(e)))
    }
}

impl TaskStore for PostgresStore {
    fn create<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let record = to_json(task).map_err(store_error)?;
            self.change(TASK_PURGE, &[&int(unix_ms())]).await?;
            let (lease, expires) = (int(task.lease_until_ms), int(task.expires_ms()));
            let values: [&(dyn ToSql + Sync); 6] = [
                &task.id,
                &task.status.as_str(),
                &task.message,
                &lease,
                &expires,
                &record,
            ];
            self.change(TASK_CREATE, &values).await.map(drop)
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let client = self.client().await.map_err(store_error)?;
            let row = client
                .query_opt(TASK_GET, &[&id, &int(unix_ms())])
                .await
                .map_err(|e| store_error(database(e)))?;
            row.map(|r| {
                from_row(
                    r.get(0),
                    r.get::<_, &str>(1),
                    r.get(2),
                    r.get(3),
                    r.get(4),
                    r.get::<_, &str>(5),
                )
                .map_err(store_error)
            })
            .transpose()
        })
    }

    fn update<'a>(&'a self, task: &'a TaskRecord) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let record = to_json(task).map_err(store_error)?;
            let (lease, version) = (int(task.lease_until_ms), int(task.version));
            let values: [&(dyn ToSql + Sync); 6] = [
                &task.id,
                &task.status.as_str(),
                &task.message,
                &lease,
                &record,
                &version,
            ];
            Ok(self.change(TASK_UPDATE, &values).await? == 1)
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { self.change(TASK_CANCEL, &[&id]).await.map(drop) })
    }

    fn beat<'a>(
        &'a self,
        id: &'a str,
        until_ms: u64,
        message: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let client = self.client().await.map_err(store_error)?;
            let row = client
                .query_opt(TASK_BEAT, &[&id, &int(until_ms), &message])
                .await
                .map_err(|e| store_error(database(e)))?;
            Ok(row.is_some_and(|r| r.get::<_, i64>(0) != 0))
        })
    }
}
