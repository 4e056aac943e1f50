//! The operator's commands, each one function that both front ends call: the command line (`cli.rs`)
//! prints its answer for a person, the admin API (`admin/`) answers it as JSON. Each write is made as
//! the operator who asked, against the version of the record they saw, and is served before it returns.

use std::time::Duration;

use crate::registry::Registry;
use crate::store::{
    Change, Claim, Edit, GrantChange, GrantEdit, GrantRecord, LimitChange, LimitEdit, LimitRecord,
    Profile, ProfileChange, ProfileEdit, RecordError, RecordErrorKind, RecordStore, Scope,
    ToolRecord,
};

/// The version of a record an edit is made against.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seen {
    /// The one the records hold now: the command line reads it and changes it at once.
    Now,
    /// The one the operator saw (0 for a record that does not exist yet): a page that shows a record
    /// and changes it later is refused with a conflict when someone else changed it meanwhile.
    #[cfg_attr(
        not(admin),
        expect(
            dead_code,
            reason = "only the admin API edits against a version it showed"
        )
    )]
    Version(u64),
}

/// The longest a rotated key waits before it seals: long enough for every replica to hear of it.
const LONGEST_KEY_WAIT: Duration = Duration::from_secs(24 * 3600);

/// A key an operator added: its id, when it seals from, and the revision the rotation made.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Rotated {
    pub(crate) id: String,
    pub(crate) seals_from_ms: u64,
    pub(crate) revision: u64,
}

/// One operator's commands over a registry's records.
pub(crate) struct Operator<'r> {
    registry: &'r Registry,
    actor: String,
}

impl<'r> Operator<'r> {
    /// The commands of `actor` (as the audit and history name them) over `registry`.
    pub(crate) fn new(registry: &'r Registry, actor: String) -> Self {
        Operator { registry, actor }
    }

    fn store(&self) -> Result<&'r dyn RecordStore, RecordError> {
        self.registry.store()
    }

    /// `written`, once what the store wrote is served: the records are read again at once, rather
    /// than at the next `watch`.
    async fn served<T>(&self, written: T) -> Result<T, RecordError> {
        self.registry.refresh().await?;
        Ok(written)
    }

    /// The record of the tool `name`.
    pub(crate) async fn tool(&self, name: &str) -> Result<ToolRecord, RecordError> {
        let mut records = self.store()?.load().await?;
        records
            .tools
            .remove(name)
            .ok_or_else(|| RecordError::unknown_tool(name))
    }

    /// Changes the record of the tool `name`; the revision, and the record as it is now.
    pub(crate) async fn edit_tool(
        &self,
        name: &str,
        seen: Seen,
        change: Change,
    ) -> Result<(u64, ToolRecord), RecordError> {
        let edit = match seen {
            Seen::Now => Edit::new(&self.actor, &self.tool(name).await?, change),
            Seen::Version(version) => Edit::for_tool(&self.actor, name, version, change),
        };
        let revision = self.registry.edit(&edit).await?;
        Ok((revision, self.tool(name).await?))
    }

    /// Deletes the record of a tool a sync marked missing.
    pub(crate) async fn delete_tool(&self, name: &str) -> Result<u64, RecordError> {
        let revision = self.store()?.delete(&self.actor, name).await?;
        self.served(revision).await
    }

    /// The profile `name`.
    pub(crate) async fn profile(&self, name: &str) -> Result<Profile, RecordError> {
        let mut records = self.store()?.load().await?;
        records
            .profiles
            .remove(name)
            .ok_or_else(|| crate::store::unknown_profile(name))
    }

    /// Changes the profile `name`; the revision, and the profile as it is now (none once deleted).
    pub(crate) async fn edit_profile(
        &self,
        name: &str,
        seen: Seen,
        change: ProfileChange,
    ) -> Result<(u64, Option<Profile>), RecordError> {
        let edit = match seen {
            Seen::Now => ProfileEdit::new(&self.actor, &self.profile(name).await?, change),
            Seen::Version(version) => ProfileEdit::for_profile(&self.actor, name, version, change),
        };
        let revision = self.registry.edit_profile(&edit).await?;
        Ok((revision, self.profile(name).await.ok()))
    }

    /// Creates the profile `name`, with no tools.
    pub(crate) async fn create_profile(
        &self,
        name: &str,
        description: String,
    ) -> Result<u64, RecordError> {
        let edit = ProfileEdit::create(&self.actor, name, description);
        self.registry.edit_profile(&edit).await
    }

    /// Sets or removes the rate limit of `scope`; the revision, and the limit as it is now.
    pub(crate) async fn edit_limit(
        &self,
        scope: Scope,
        seen: Seen,
        change: LimitChange,
    ) -> Result<(u64, Option<LimitRecord>), RecordError> {
        let key = scope.to_string();
        let version = match seen {
            Seen::Now => self.limit(&key).await?.map_or(0, |limit| limit.version),
            Seen::Version(version) => version,
        };
        let edit = LimitEdit::new(&self.actor, scope, version, change);
        let revision = self.registry.edit_limit(&edit).await?;
        Ok((revision, self.limit(&key).await?))
    }

    async fn limit(&self, scope: &str) -> Result<Option<LimitRecord>, RecordError> {
        Ok(self.store()?.load().await?.limits.remove(scope))
    }

    /// Sets or removes what `claim` grants; the revision, and the grant as it is now.
    pub(crate) async fn edit_grant(
        &self,
        claim: Claim,
        seen: Seen,
        change: GrantChange,
    ) -> Result<(u64, Option<GrantRecord>), RecordError> {
        let key = claim.to_string();
        let version = match seen {
            Seen::Now => self.grant(&key).await?.map_or(0, |grant| grant.version),
            Seen::Version(version) => version,
        };
        let edit = GrantEdit::new(&self.actor, claim, version, change);
        let revision = self.registry.edit_grant(&edit).await?;
        Ok((revision, self.grant(&key).await?))
    }

    async fn grant(&self, claim: &str) -> Result<Option<GrantRecord>, RecordError> {
        Ok(self.store()?.load().await?.grants.remove(claim))
    }

    /// Adds, changes or removes the remote server `label`; the revision.
    #[cfg(feature = "remote")]
    pub(crate) async fn edit_server(
        &self,
        label: &str,
        seen: Seen,
        change: crate::store::ServerChange,
    ) -> Result<u64, RecordError> {
        let version = match seen {
            Seen::Now => self
                .registry
                .server_records()
                .await?
                .iter()
                .find(|record| record.label == label)
                .map_or(0, |record| record.version),
            Seen::Version(version) => version,
        };
        let edit = crate::store::ServerEdit::new(&self.actor, label, version, change);
        self.registry.edit_server(&edit).await
    }

    /// Adds a sealing key that opens at once and seals `after` from now.
    pub(crate) async fn rotate_key(&self, after: Duration) -> Result<Rotated, RecordError> {
        if after > LONGEST_KEY_WAIT {
            return Err(RecordError::new(
                RecordErrorKind::Invalid,
                format!(
                    "a new key seals within a day of its rotation at the latest (asked: {} s); \
                     nothing was changed",
                    after.as_secs()
                ),
            ));
        }
        let seals_from_ms = crate::store::unix_ms().saturating_add(crate::confirm::millis(after));
        let (id, revision) = self.store()?.add_key(&self.actor, seals_from_ms).await?;
        self.served(Rotated {
            id,
            seals_from_ms,
            revision,
        })
        .await
    }

    /// Retires the sealing key `id`: what it sealed no longer opens.
    pub(crate) async fn retire_key(&self, id: &str) -> Result<u64, RecordError> {
        let revision = self.store()?.retire_key(&self.actor, id).await?;
        self.served(revision).await
    }
}
