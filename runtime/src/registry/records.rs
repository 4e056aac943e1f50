//! The operator's records over the declared tools: loading them into a new snapshot, watching their
//! revision, and syncing the code's tools into them.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::schema::merge_settings;
#[cfg(edits)]
use crate::store::Profile;
use crate::store::{
    Edit, ProfileEdit, RecordError, RecordErrorKind, RecordStore, Records, SyncPlan, ToolRecord,
    Write,
};
use crate::tool::Tool;

use super::queries::Registry;
use super::registered::{Profiles, RegisteredTool};
use super::snapshot::{Live, Tools};

impl Registry {
    /// The operator's records, when the registry was built with them
    /// ([`RegistryBuilder::records`](super::RegistryBuilder::records)).
    pub fn records(&self) -> Option<&dyn RecordStore> {
        self.live().and_then(|live| live.store.as_deref())
    }

    /// The store of the records, or the error that says there is none: for the operator's commands.
    ///
    /// # Errors
    /// When the registry was built without records.
    pub(crate) fn store(&self) -> Result<&dyn RecordStore, RecordError> {
        self.records().ok_or_else(|| {
            RecordError::new(
                RecordErrorKind::NotFound,
                "this registry has no records: build it with `RegistryBuilder::records`",
            )
        })
    }

    /// The record of `tool`.
    ///
    /// # Errors
    /// When there is none, or the records cannot be read.
    #[cfg(edits)]
    pub(crate) async fn tool_record(&self, tool: &str) -> Result<ToolRecord, RecordError> {
        let mut records = self.store()?.load().await?;
        records
            .tools
            .remove(tool)
            .ok_or_else(|| RecordError::unknown_tool(tool))
    }

    fn live(&self) -> Option<&Live> {
        match &self.inner.tools {
            Tools::Live(live) => Some(live),
            Tools::Fixed(_) => None,
        }
    }

    /// Loads the records if their revision moved since the snapshot being served, or takes up what
    /// changed on the remote servers, and swaps in the snapshot they make. Returns whether it swapped.
    ///
    /// # Errors
    /// When the records cannot be read; the registry goes on serving its snapshot.
    pub async fn refresh(&self) -> Result<bool, RecordError> {
        let Some(live) = self.live() else {
            return Ok(false);
        };
        let (loaded, seen) = {
            let snapshot = self.snapshot();
            (snapshot.loaded, snapshot.remote_generation)
        };
        // Read before the servers' tools are, so that a change after it is taken up next time.
        let generation = live.remote_generation();
        let unchanged = loaded && generation == seen;
        let records = match &live.store {
            None if unchanged => return Ok(false),
            None => Records::default(),
            Some(store) => {
                if unchanged && store.revision().await? == self.revision() {
                    return Ok(false);
                }
                let records = store.load().await?;
                let confirmations = &self.inner.confirmations;
                if confirmations.from_records {
                    match store.key_ring().await {
                        Ok(ring) => confirmations.keys.store(Arc::new(ring)),
                        Err(error) if error.kind() == RecordErrorKind::NotFound => {}
                        Err(error) => return Err(error),
                    }
                }
                records
            }
        };
        let tools = served_tools(live, &records);
        let rates = crate::policy::rates::Rates::of(&records);
        self.swap(live, tools, (records.revision, generation), rates);
        Ok(true)
    }

    /// Keeps the registry in line with its records and its remote servers, until every clone of it is
    /// dropped: checks the records' revision whenever the store hears of a change (PostgreSQL's
    /// `NOTIFY`), and every `every` in any case, so a change made by any process is served within that
    /// time; lists and checks each remote server on its own schedule; then swaps in the new snapshot.
    /// Every hour it forgets the audit rows past the [retention](crate::RegistryBuilder::audit_retention).
    /// Spawn it. An outage is logged once, and calls go on under the last policy loaded; when the
    /// database is back, what changed meanwhile is picked up.
    pub fn watch(&self, every: Duration) -> impl Future<Output = ()> + Send + 'static {
        let weak = Arc::downgrade(&self.inner);
        #[cfg(feature = "remote")]
        let signal = self.remotes().map(|remotes| Arc::clone(&remotes.signal));
        async move {
            #[cfg(feature = "remote")]
            if let Some(inner) = weak.upgrade() {
                let registry = Registry { inner };
                if let Some(remotes) = registry.remotes() {
                    remotes.watch();
                }
            }
            let mut down = false;
            let mut prune_at = tokio::time::Instant::now();
            while let Some(inner) = weak.upgrade() {
                let registry = Registry { inner };
                let Some(store) = registry.live().map(|live| live.store.clone()) else {
                    return;
                };
                if let (Some(store), Some(retention)) = (&store, registry.inner.audit_retention)
                    && tokio::time::Instant::now() >= prune_at
                {
                    prune_at += AUDIT_PRUNE_EVERY;
                    prune_audit(&**store, retention).await;
                }
                match (registry.refresh().await, down) {
                    (Ok(_), true) => {
                        down = false;
                        tracing::info!(target: "toolgate::records", "the records are back");
                    }
                    (Err(error), false) => {
                        down = true;
                        tracing::error!(
                            target: "toolgate::records",
                            error = error.message(),
                            "cannot read the records; serving under the last policy loaded"
                        );
                    }
                    _ => {}
                }
                drop(registry);
                let records_changed = async {
                    match &store {
                        Some(store) => store.changed(every).await,
                        None => tokio::time::sleep(every).await,
                    }
                };
                #[cfg(feature = "remote")]
                if let Some(signal) = &signal {
                    tokio::select! {
                        () = records_changed => {}
                        () = signal.changed() => {}
                    }
                    continue;
                }
                records_changed.await;
            }
        }
    }

    /// Forgets the audit rows of calls that finished before `before_ms`; how many.
    ///
    /// # Errors
    /// Without records, or when their database cannot be written.
    pub async fn prune_audit(&self, before_ms: u64) -> Result<u64, RecordError> {
        self.store()?.prune_audit(before_ms).await
    }

    /// What a sync would write: the code's tools, and the remote servers' as they list them now,
    /// against the records.
    ///
    /// # Errors
    /// Without records, or when they cannot be read.
    pub async fn sync_plan(&self) -> Result<SyncPlan, RecordError> {
        let records = self.store()?.load().await?;
        #[cfg(feature = "remote")]
        self.list_servers().await;
        let Some(live) = self.live() else {
            return Ok(SyncPlan::new(
                Vec::<&Tool>::new(),
                &records,
                crate::store::unix_ms(),
            ));
        };
        #[cfg(feature = "remote")]
        {
            let remote = super::remote::remote_tools(&live.declared, &live.remotes, &live.prepared);
            let tools = live.declared.iter().chain(&remote).map(|r| &*r.tool);
            let mut plan = SyncPlan::new(tools, &records, crate::store::unix_ms());
            // A server whose last listing failed or was empty says nothing about what it still has.
            plan.vanished
                .retain(|name| !super::remote::unlisted(&live.remotes, &records.tools[name]));
            super::remote::bound_new_records(&mut plan, &records);
            Ok(plan)
        }
        #[cfg(not(feature = "remote"))]
        {
            let tools = live.declared.iter().map(|r| &*r.tool);
            Ok(SyncPlan::new(tools, &records, crate::store::unix_ms()))
        }
    }

    /// Syncs the code's tools into the records as `actor`, and serves the result: new tools are added,
    /// changed ones updated (the operator's part kept), and tools gone from the code marked `missing`,
    /// never deleted. Returns what it wrote.
    ///
    /// # Errors
    /// Without records, or when they cannot be read or written; then nothing was written.
    pub async fn sync(&self, actor: &str) -> Result<SyncPlan, RecordError> {
        let plan = self.sync_plan().await?;
        self.store()?.apply_sync(actor, &plan).await?;
        self.served(plan).await
    }

    /// The profile `name`, as the records have it now.
    ///
    /// # Errors
    /// When there is none, or the records cannot be read.
    #[cfg(edits)]
    pub(crate) async fn profile(&self, name: &str) -> Result<Profile, RecordError> {
        let mut records = self.store()?.load().await?;
        records
            .profiles
            .remove(name)
            .ok_or_else(|| crate::store::unknown_profile(name))
    }

    /// Writes an operator's change of a profile and serves it at once.
    ///
    /// # Errors
    /// When the change is refused (see [`ProfileEdit::apply`]) or the records cannot be written; then
    /// nothing changed.
    pub async fn edit_profile(&self, edit: &ProfileEdit) -> Result<u64, RecordError> {
        let revision = self.store()?.write(Write::Profile(edit)).await?;
        self.served(revision).await
    }

    /// Writes an operator's change of a rate limit and serves it at once: calls are counted against it
    /// from the next one on, in every replica within its watch.
    ///
    /// # Errors
    /// When the change is refused (see [`LimitEdit::apply`](crate::store::LimitEdit::apply)) or the
    /// records cannot be written; then nothing changed.
    pub async fn edit_limit(&self, edit: &crate::store::LimitEdit) -> Result<u64, RecordError> {
        let revision = self.store()?.write(Write::Limit(edit)).await?;
        self.served(revision).await
    }

    /// Writes an operator's edit of one record and serves it at once.
    ///
    /// # Errors
    /// When the edit is refused (see [`Edit::apply`]) or the records cannot be written; then nothing
    /// changed.
    pub async fn edit(&self, edit: &Edit) -> Result<u64, RecordError> {
        let revision = self.store()?.edit(edit).await?;
        self.served(revision).await
    }

    /// Deletes the record of a tool a sync marked missing, as `actor`, and serves the result.
    #[cfg(edits)]
    pub(crate) async fn delete_record(&self, actor: &str, tool: &str) -> Result<u64, RecordError> {
        let revision = self.store()?.delete(actor, tool).await?;
        self.served(revision).await
    }

    /// Adds a sealing key that opens at once and seals `after` from now, as `actor`, and takes it up.
    #[cfg(edits)]
    pub(crate) async fn rotate_key(
        &self,
        actor: &str,
        after: Duration,
    ) -> Result<Rotated, RecordError> {
        if after > LONGEST_KEY_WAIT {
            return Err(RecordError::new(
                crate::store::RecordErrorKind::Invalid,
                format!(
                    "a new key seals within a day of its rotation at the latest (asked: {} s); nothing \
                     was changed",
                    after.as_secs()
                ),
            ));
        }
        let seals_from_ms = crate::store::unix_ms().saturating_add(crate::confirm::millis(after));
        let (id, revision) = self.store()?.add_key(actor, seals_from_ms).await?;
        self.served(Rotated {
            id,
            seals_from_ms,
            revision,
        })
        .await
    }

    /// Retires sealing key `id` as `actor`, and stops opening what it sealed.
    #[cfg(edits)]
    pub(crate) async fn retire_key(&self, actor: &str, id: &str) -> Result<u64, RecordError> {
        let revision = self.store()?.retire_key(actor, id).await?;
        self.served(revision).await
    }

    /// `written`, once what the store wrote is served: the records are read again at once, rather than
    /// at the next `watch`.
    async fn served<T>(&self, written: T) -> Result<T, RecordError> {
        self.refresh().await?;
        Ok(written)
    }
}

/// A key an operator added: its id, when it seals from, and the revision the rotation made.
#[cfg(edits)]
#[derive(Debug, serde::Serialize)]
pub(crate) struct Rotated {
    pub(crate) id: String,
    pub(crate) seals_from_ms: u64,
    pub(crate) revision: u64,
}

/// What a snapshot serves: the declared tools and the remote servers' with the operator's records over
/// them; a remote tool no one decided about is withheld.
fn served_tools(live: &Live, records: &Records) -> Vec<RegisteredTool> {
    #[cfg(feature = "remote")]
    {
        super::remote::reconcile(&live.remotes, records);
        let mut all = live.declared.clone();
        all.extend(super::remote::remote_tools(
            &live.declared,
            &live.remotes,
            &live.prepared,
        ));
        let mut tools = overlay(&all, records);
        super::remote::withhold_undecided(&mut tools);
        tools
    }
    #[cfg(not(feature = "remote"))]
    overlay(&live.declared, records)
}

/// The declared tools with the operator's records over them, and the profiles they are assigned to. A
/// tool without a record is as declared.
pub(super) fn overlay(declared: &[RegisteredTool], records: &Records) -> Vec<RegisteredTool> {
    declared
        .iter()
        .map(|tool| {
            let mut tool = match records.tools.get(&*tool.tool.name) {
                Some(record) => apply(tool, record),
                None => tool.clone(),
            };
            tool.profiles = assigned(&tool, records);
            tool
        })
        .collect()
}

/// The profiles `tool` is assigned to, each with its settings merged over the tool's. An assignment whose
/// merged settings no longer match the schema is left out: that profile's callers do not see the tool.
fn assigned(tool: &RegisteredTool, records: &Records) -> Option<Arc<Profiles>> {
    let mut profiles = Profiles::default();
    for profile in records.profiles.values() {
        let Some(assignment) = profile.tools.get(&*tool.tool.name) else {
            continue;
        };
        let settings = match &assignment.settings {
            None => None,
            Some(over) => {
                let mut merged = tool.settings.as_deref().cloned().unwrap_or_default();
                merge_settings(&mut merged, over.clone());
                if let Err(reason) = tool.check_settings_of(&merged) {
                    tracing::error!(target: "toolgate::records", tool = &*tool.tool.name, profile = profile.name, reason, "left out of the profile");
                    continue;
                }
                Some(Arc::new(merged))
            }
        };
        profiles.insert(profile.name.as_str().into(), settings);
    }
    (!profiles.is_empty()).then(|| Arc::new(profiles))
}

fn apply(declared: &RegisteredTool, record: &ToolRecord) -> RegisteredTool {
    let mut tool = declared.clone();
    // The operator's switch holds whatever the tool's source does meanwhile: a tool that went missing
    // and came back (a remote server that left it out of a listing, say) stays off until an operator
    // turns it on.
    tool.enabled = declared.enabled && record.enabled;
    if let Some(over) = &record.settings {
        let mut settings = declared.settings.as_deref().cloned().unwrap_or_default();
        merge_settings(&mut settings, over.clone());
        tool.settings = Some(Arc::new(settings));
    }
    if let Err(reason) = tool.check_settings() {
        // Settings are checked when they are written, but the schema may have changed since: fail closed.
        tracing::error!(target: "toolgate::records", tool = &*tool.tool.name, reason, "switched off");
        tool.enabled = false;
    }
    let extra: Vec<&String> = record
        .required_abilities
        .iter()
        .filter(|a| !declared.tool.abilities.contains(a))
        .collect();
    let capability = record.capability_override.as_ref();
    if !extra.is_empty() || capability.is_some() {
        let mut definition = Tool::clone(&declared.tool);
        if !extra.is_empty() {
            definition.public = false;
            definition.abilities.extend(extra.into_iter().cloned());
        }
        if let Some(capability) = capability {
            definition.capability = Some(capability.clone());
        }
        tool.tool = Arc::new(definition);
    }
    tool
}

/// The longest a rotated key waits before it seals: long enough for every replica to hear of it.
#[cfg(edits)]
const LONGEST_KEY_WAIT: Duration = Duration::from_secs(24 * 3600);

/// How often a watched registry forgets audit rows past the retention.
const AUDIT_PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Forgets the audit rows older than `retention`, logging what it did.
async fn prune_audit(store: &dyn RecordStore, retention: Duration) {
    let before = crate::store::unix_ms().saturating_sub(crate::confirm::millis(retention));
    match store.prune_audit(before).await {
        Ok(0) => {}
        Ok(rows) => {
            tracing::info!(target: "toolgate::audit", rows, "forgot audit rows past the retention");
        }
        Err(error) => {
            tracing::warn!(target: "toolgate::audit", error = error.message(), "cannot forget audit rows past the retention");
        }
    }
}
