//! The sign-ins kept in the file.

use rusqlite::{OptionalExtension, params};

use crate::store::sign_ins::SignInStore;
use crate::store::tables::{
    SIGN_IN, SIGN_IN_FINISH, SIGN_IN_FORGET, SIGN_IN_FORGET_IDLE, SIGN_IN_KEEP, SIGN_IN_LEASE,
    SIGN_IN_START, SIGN_IN_STARTS_SWEEP,
};
use crate::store::{RecordFuture, unix_ms};

use super::{SqliteStore, numbered, record_error};

impl SignInStore for SqliteStore {
    fn sign_in<'a>(&'a self, server: &'a str) -> RecordFuture<'a, Option<String>> {
        Box::pin(async move {
            self.with(|connection| {
                connection
                    .prepare_cached(&numbered(SIGN_IN))?
                    .query_row(params![server], |row| row.get(0))
                    .optional()
            })
            .map_err(record_error)
        })
    }

    fn keep_sign_in<'a>(
        &'a self,
        server: &'a str,
        sealed: Option<&'a str>,
    ) -> RecordFuture<'a, ()> {
        Box::pin(async move {
            let now = unix_ms().cast_signed();
            self.with(|connection| match sealed {
                Some(sealed) => connection
                    .prepare_cached(&numbered(SIGN_IN_KEEP))?
                    .execute(params![server, sealed, now]),
                None => connection
                    .prepare_cached(&numbered(SIGN_IN_FORGET))?
                    .execute(params![server]),
            })
            .map(drop)
            .map_err(record_error)
        })
    }

    fn forget_idle_sign_ins<'a>(
        &'a self,
        pattern: &'a str,
        before_ms: u64,
    ) -> RecordFuture<'a, ()> {
        Box::pin(async move {
            let before = before_ms.cast_signed();
            self.with(|connection| {
                connection
                    .prepare_cached(&numbered(SIGN_IN_FORGET_IDLE))?
                    .execute(params![pattern, before])
            })
            .map(drop)
            .map_err(record_error)
        })
    }

    fn lease_sign_in<'a>(
        &'a self,
        server: &'a str,
        until_ms: u64,
        now_ms: u64,
    ) -> RecordFuture<'a, bool> {
        Box::pin(async move {
            let (until, now) = (until_ms.cast_signed(), now_ms.cast_signed());
            self.with(|connection| {
                connection
                    .prepare_cached(&numbered(SIGN_IN_LEASE))?
                    .execute(params![server, until, now])
            })
            .map(|taken| taken == 1)
            .map_err(record_error)
        })
    }

    fn begin_sign_in<'a>(
        &'a self,
        state: &'a str,
        server: &'a str,
        sealed: &'a str,
        expires_ms: u64,
    ) -> RecordFuture<'a, ()> {
        Box::pin(async move {
            let now = unix_ms().cast_signed();
            let expires = i64::try_from(expires_ms).unwrap_or(i64::MAX);
            self.with(|connection| {
                let transaction = connection.transaction()?;
                (transaction.prepare_cached(&numbered(SIGN_IN_STARTS_SWEEP))?)
                    .execute(params![now])?;
                (transaction.prepare_cached(&numbered(SIGN_IN_START))?)
                    .execute(params![state, server, sealed, expires])?;
                transaction.commit()
            })
            .map_err(record_error)
        })
    }

    fn finish_sign_in<'a>(&'a self, state: &'a str) -> RecordFuture<'a, Option<(String, String)>> {
        Box::pin(async move {
            let now = unix_ms().cast_signed();
            self.with(|connection| {
                connection
                    .prepare_cached(&numbered(SIGN_IN_FINISH))?
                    .query_row(params![state, now], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(record_error)
        })
    }
}
