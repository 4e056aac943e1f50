//! Call ceilings counted in the database, once for every replica.

use tokio_postgres::types::ToSql;

use crate::confirm::StoreFuture;
use crate::policy::ceiling::count_failed;
use crate::policy::{CeilingStore, RunKey};
use crate::store::RecordError;
use crate::store::tables::{CEILING_END_SESSION, CEILING_GIVE_BACK, CEILING_TAKE};

use super::{PostgresStore, database};

impl PostgresStore {
    /// Runs one of the ceilings' statements and counts the rows changed.
    async fn count(&self, sql: &str, values: &[&(dyn ToSql + Sync)]) -> Result<u64, RecordError> {
        let client = self.client().await?;
        let statement = client.prepare_cached(sql).await.map_err(database)?;
        client.execute(&statement, values).await.map_err(database)
    }
}

impl CeilingStore for PostgresStore {
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if max == 0 {
                return Ok(false);
            }
            let session = key.session.unwrap_or("");
            let values: [&(dyn ToSql + Sync); 4] =
                [&key.caller, &session, &key.tool, &i64::from(max)];
            let changed = self
                .count(CEILING_TAKE, &values)
                .await
                .map_err(count_failed)?;
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
