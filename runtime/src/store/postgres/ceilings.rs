//! Counts kept in the database, once for every replica: they expire, and the table is bounded.

use tokio_postgres::types::ToSql;

use crate::confirm::StoreFuture;
use crate::policy::ceiling::count_failed;
use crate::policy::{CeilingStore, RunKey};
use crate::store::tables::{
    CEILING_END_SESSION, CEILING_GIVE_BACK, CEILING_ROWS, CEILING_SWEEP, CEILING_TAKE,
    CEILING_TAKE_KEPT,
};
use crate::store::{RecordError, unix_ms};

use super::{PostgresStore, database};

impl PostgresStore {
    /// Runs one of the ceilings' statements and counts the rows changed.
    async fn count(&self, sql: &str, values: &[&(dyn ToSql + Sync)]) -> Result<u64, RecordError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(database)?;
        client.execute(&statement, values).await.map_err(database)
    }

    /// Forgets the expired counts, at most every few seconds, and notes whether the table is full.
    async fn sweep_counts(&self, now: i64) -> Result<(), RecordError> {
        if !self.sweep.due(now.cast_unsigned()) {
            return Ok(());
        }
        self.count(CEILING_SWEEP, &[&now]).await?;
        let client = self.client().await?;
        let rows: i64 = client
            .query_one(CEILING_ROWS, &[])
            .await
            .map_err(database)?
            .get(0);
        self.sweep.swept(rows);
        Ok(())
    }
}

impl CeilingStore for PostgresStore {
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32, expires_ms: u64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if max == 0 {
                return Ok(false);
            }
            let now = unix_ms().cast_signed();
            self.sweep_counts(now).await.map_err(count_failed)?;
            let statement = if self.sweep.full() {
                CEILING_TAKE_KEPT
            } else {
                CEILING_TAKE
            };
            let session = key.session.unwrap_or("");
            let expires = i64::try_from(expires_ms).unwrap_or(i64::MAX);
            let values: [&(dyn ToSql + Sync); 6] = [
                &key.caller,
                &session,
                &key.tool,
                &i64::from(max),
                &expires,
                &now,
            ];
            let changed = self.count(statement, &values).await.map_err(count_failed)?;
            Ok(changed == 1)
        })
    }

    fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let session = key.session.unwrap_or("");
            let values: [&(dyn ToSql + Sync); 3] = [&key.caller, &session, &key.tool];
            self.count(CEILING_GIVE_BACK, &values)
                .await
                .map(drop)
                .map_err(count_failed)
        })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.count(CEILING_END_SESSION, &[&session])
                .await
                .map(drop)
                .map_err(count_failed)
        })
    }
}
