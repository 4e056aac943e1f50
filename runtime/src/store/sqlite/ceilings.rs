//! Counts kept in the file, for every process that opens it: they expire, and the table is bounded.

use rusqlite::params;

use crate::confirm::StoreFuture;
use crate::policy::ceiling::count_failed;
use crate::policy::{CeilingStore, RunKey};
use crate::store::tables::{
    CEILING_END_SESSION, CEILING_GIVE_BACK, CEILING_ROWS, CEILING_SWEEP, CEILING_TAKE,
    CEILING_TAKE_KEPT,
};
use crate::store::unix_ms;

use super::{SqliteStore, numbered};

impl CeilingStore for SqliteStore {
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32, expires_ms: u64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            if max == 0 {
                return Ok(false);
            }
            let expires = i64::try_from(expires_ms).unwrap_or(i64::MAX);
            let sweep = self.sweep();
            self.with(|connection| {
                let now = unix_ms().cast_signed();
                if sweep.due(now.cast_unsigned()) {
                    connection
                        .prepare_cached(&numbered(CEILING_SWEEP))?
                        .execute(params![now])?;
                    sweep.swept(connection.query_row(CEILING_ROWS, [], |r| r.get(0))?);
                }
                let statement = if sweep.full() {
                    CEILING_TAKE_KEPT
                } else {
                    CEILING_TAKE
                };
                let session = key.session.unwrap_or("");
                let values = params![key.caller, session, key.tool, i64::from(max), expires, now];
                let changed = connection
                    .prepare_cached(&numbered(statement))?
                    .execute(values)?;
                Ok::<_, rusqlite::Error>(changed == 1)
            })
            .map_err(count_failed)
        })
    }

    fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let session = key.session.unwrap_or("");
            self.with(|connection| {
                connection
                    .prepare_cached(&numbered(CEILING_GIVE_BACK))?
                    .execute(params![key.caller, session, key.tool])
            })
            .map(drop)
            .map_err(count_failed)
        })
    }

    fn end_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.with(|connection| {
                connection
                    .prepare_cached(&numbered(CEILING_END_SESSION))?
                    .execute(params![session])
            })
            .map(drop)
            .map_err(count_failed)
        })
    }
}
