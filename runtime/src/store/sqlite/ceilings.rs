//! Call ceilings counted in the file, for every process that opens it.

use rusqlite::params;

use crate::confirm::StoreFuture;
use crate::policy::ceiling::count_failed;
use crate::policy::{CeilingStore, RunKey};
use crate::store::tables::{CEILING_END_SESSION, CEILING_GIVE_BACK, CEILING_TAKE};

use super::SqliteStore;

impl SqliteStore {
    /// Runs one of the ceilings' statements, written with `$n` placeholders, and counts the rows changed.
    fn count(&self, sql: &str, values: &[&dyn rusqlite::ToSql]) -> rusqlite::Result<usize> {
        self.lock()
            .prepare_cached(&sql.replace('$', "?"))?
            .execute(values)
    }
}

impl CeilingStore for SqliteStore {
    fn take<'a>(&'a self, key: RunKey<'a>, max: u32) -> StoreFuture<'a, bool> {
        let session = key.session.unwrap_or("");
        let counted = match max {
            0 => Ok(false),
            _ => self
                .count(CEILING_TAKE, params![key.caller, session, key.tool, max])
                .map(|changed| changed == 1),
        };
        Box::pin(std::future::ready(counted.map_err(count_failed)))
    }

    fn give_back<'a>(&'a self, key: RunKey<'a>) -> StoreFuture<'a, ()> {
        let session = key.session.unwrap_or("");
        let done = self.count(CEILING_GIVE_BACK, params![key.caller, session, key.tool]);
        Box::pin(std::future::ready(done.map(drop).map_err(count_failed)))
    }

    fn end_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        let done = self.count(CEILING_END_SESSION, params![session]);
        Box::pin(std::future::ready(done.map(drop).map_err(count_failed)))
    }
}
