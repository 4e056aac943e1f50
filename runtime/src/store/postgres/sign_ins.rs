//! The sign-ins kept in the database, for every replica.

use crate::store::sign_ins::SignInStore;
use crate::store::tables::{
    SIGN_IN, SIGN_IN_FINISH, SIGN_IN_FORGET, SIGN_IN_FORGET_IDLE, SIGN_IN_KEEP, SIGN_IN_LEASE,
    SIGN_IN_START, SIGN_IN_STARTS_SWEEP,
};
use crate::store::{RecordFuture, unix_ms};

use super::{PostgresStore, database};

impl SignInStore for PostgresStore {
    fn sign_in<'a>(&'a self, server: &'a str) -> RecordFuture<'a, Option<String>> {
        Box::pin(async move {
            let client = self.client().await?;
            let row = client
                .query_opt(SIGN_IN, &[&server])
                .await
                .map_err(database)?;
            Ok(row.map(|row| row.get(0)))
        })
    }

    fn keep_sign_in<'a>(
        &'a self,
        server: &'a str,
        sealed: Option<&'a str>,
    ) -> RecordFuture<'a, ()> {
        Box::pin(async move {
            let client = self.client().await?;
            let now = unix_ms().cast_signed();
            match sealed {
                Some(sealed) => {
                    client
                        .execute(SIGN_IN_KEEP, &[&server, &sealed, &now])
                        .await
                }
                None => client.execute(SIGN_IN_FORGET, &[&server]).await,
            }
            .map(drop)
            .map_err(database)
        })
    }

    fn forget_idle_sign_ins<'a>(
        &'a self,
        pattern: &'a str,
        before_ms: u64,
    ) -> RecordFuture<'a, ()> {
        Box::pin(async move {
            let client = self.client().await?;
            let before = before_ms.cast_signed();
            (client
                .execute(SIGN_IN_FORGET_IDLE, &[&pattern, &before])
                .await)
                .map(drop)
                .map_err(database)
        })
    }

    fn lease_sign_in<'a>(
        &'a self,
        server: &'a str,
        until_ms: u64,
        now_ms: u64,
    ) -> RecordFuture<'a, bool> {
        Box::pin(async move {
            let client = self.client().await?;
            let (until, now) = (until_ms.cast_signed(), now_ms.cast_signed());
            let taken = client
                .execute(SIGN_IN_LEASE, &[&server, &until, &now])
                .await;
            taken.map(|taken| taken == 1).map_err(database)
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
            let mut client = self.client().await?;
            let now = unix_ms().cast_signed();
            let expires = i64::try_from(expires_ms).unwrap_or(i64::MAX);
            let transaction = client.transaction().await.map_err(database)?;
            (transaction.execute(SIGN_IN_STARTS_SWEEP, &[&now]).await).map_err(database)?;
            (transaction
                .execute(SIGN_IN_START, &[&state, &server, &sealed, &expires])
                .await)
                .map_err(database)?;
            transaction.commit().await.map_err(database)
        })
    }

    fn finish_sign_in<'a>(&'a self, state: &'a str) -> RecordFuture<'a, Option<(String, String)>> {
        Box::pin(async move {
            let client = self.client().await?;
            let now = unix_ms().cast_signed();
            let row =
                (client.query_opt(SIGN_IN_FINISH, &[&state, &now]).await).map_err(database)?;
            Ok(row.map(|row| (row.get(0), row.get(1))))
        })
    }
}
