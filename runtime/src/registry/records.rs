//! The operator's records over the declared tools: loading them into a new snapshot, watching their
//! revision, and syncing the code's tools into them.

use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::catalog::{Live, Profiles, RegisteredTool};
use crate::schema::merge_settings;
use crate::store::{
    Edit, RecordError, RecordErrorKind, RecordStore, Records, SyncPlan, ToolRecord, Write,
};
use crate::tool::Tool;

use super::core::Core;

/// [`Registry::refresh`](crate::Registry::refresh): the snapshot the records and the remote servers make
/// now, swapped in when either moved; with the records' keys, when the keys are kept there.
pub(super) async fn refresh(core: &Core) -> Result<bool, RecordError> {
    let catalog = &core.catalog;
    let Some(live) = catalog.live() else {
        return Ok(false);
    };
    let (loaded, seen, grants) = {
        let snapshot = catalog.snapshot();
        let grants = Arc::clone(&snapshot.grants);
        (snapshot.loaded, snapshot.remote_generation, grants)
    };
    // Read before the servers' tools are, so that a change after it is taken up next time.
    let generation = live.remote_generation();
    let unchanged = loaded && generation == seen;
    let records = match &live.store {
        None if unchanged => return Ok(false),
        None => Records::default(),
        Some(store) => {
            if unchanged && store.revision().await? == catalog.revision() {
                return Ok(false);
            }
            let records = store.load().await?;
            let confirmations = core.pipeline.confirmations();
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
    let policy = (
        crate::catalog::Rates::of(&records),
        crate::catalog::Grants::of(&records, &live.grants, &grants),
    );
    catalog.swap(live, tools, (records.revision, generation), policy);
    Ok(true)
}

/// [`Registry::watch`](crate::Registry::watch): refreshes whenever the records or a remote server change,
/// and at least every `every`, until `core` is dropped; forgets old audit rows every hour.
pub(super) fn watch(
    core: &Arc<Core>,
    every: Duration,
) -> impl Future<Output = ()> + Send + 'static {
    let weak: Weak<Core> = Arc::downgrade(core);
    #[cfg(feature = "remote")]
    let signal = core
        .catalog
        .live()
        .map(|live| Arc::clone(&live.remotes.signal));
    async move {
        #[cfg(feature = "remote")]
        if let Some(live) = weak.upgrade().as_ref().and_then(|core| core.catalog.live()) {
            live.remotes.watch();
        }
        let mut down = false;
        let mut prune_at = tokio::time::Instant::now();
        while let Some(core) = weak.upgrade() {
            let Some(store) = core.catalog.live().map(|live| live.store.clone()) else {
                return;
            };
            if let (Some(store), Some(retention)) = (&store, core.pipeline.audit_retention())
                && tokio::time::Instant::now() >= prune_at
            {
                prune_at += AUDIT_PRUNE_EVERY;
                prune_audit(&**store, retention).await;
            }
            match (refresh(&core).await, down) {
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
            drop(core);
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

/// [`Registry::sync_plan`](crate::Registry::sync_plan): the declared and the remote tools against the
/// records.
pub(super) async fn sync_plan(core: &Core) -> Result<SyncPlan, RecordError> {
    let records = core.catalog.store()?.load().await?;
    #[cfg(feature = "remote")]
    core.catalog.list_remotes().await;
    let Some(live) = core.catalog.live() else {
        return Ok(SyncPlan::new(
            Vec::<&Tool>::new(),
            &records,
            crate::store::unix_ms(),
        ));
    };
    #[cfg(feature = "remote")]
    {
        let remote =
            crate::catalog::remote::remote_tools(&live.declared, &live.remotes, &live.prepared);
        let tools = live.declared.iter().chain(&remote).map(|r| &*r.tool);
        let mut plan = SyncPlan::new(tools, &records, crate::store::unix_ms());
        // A server whose last listing failed or was empty says nothing about what it still has.
        plan.vanished
            .retain(|name| !crate::catalog::remote::unlisted(&live.remotes, &records.tools[name]));
        crate::catalog::remote::bound_new_records(&mut plan, &records);
        Ok(plan)
    }
    #[cfg(not(feature = "remote"))]
    {
        let tools = live.declared.iter().map(|r| &*r.tool);
        Ok(SyncPlan::new(tools, &records, crate::store::unix_ms()))
    }
}

/// [`Registry::sync`](crate::Registry::sync): the plan written as `actor`, and served.
pub(super) async fn sync(core: &Core, actor: &str) -> Result<SyncPlan, RecordError> {
    let plan = sync_plan(core).await?;
    core.catalog.store()?.apply_sync(actor, &plan).await?;
    served(core, plan).await
}

/// Writes an operator's change of a profile, a rate limit or a grant, and serves it.
pub(super) async fn write(core: &Core, write: Write<'_>) -> Result<u64, RecordError> {
    let revision = core.catalog.store()?.write(write).await?;
    served(core, revision).await
}

/// Writes an edit of one record, and serves it.
pub(super) async fn edit(core: &Core, edit: &Edit) -> Result<u64, RecordError> {
    let revision = core.catalog.store()?.edit(edit).await?;
    served(core, revision).await
}

/// `written`, once what the store wrote is served: the records are read again at once, rather than
/// at the next `watch`.
pub(super) async fn served<T>(core: &Core, written: T) -> Result<T, RecordError> {
    refresh(core).await?;
    Ok(written)
}

/// What a snapshot serves: the declared tools and the remote servers' with the operator's records over
/// them; a remote tool no one decided about is withheld.
fn served_tools(live: &Live, records: &Records) -> Vec<RegisteredTool> {
    #[cfg(feature = "remote")]
    {
        crate::catalog::remote::reconcile(&live.remotes, records);
        let mut all = live.declared.clone();
        all.extend(crate::catalog::remote::remote_tools(
            &live.declared,
            &live.remotes,
            &live.prepared,
        ));
        let mut tools = overlay(&all, records);
        crate::catalog::remote::withhold_undecided(&mut tools);
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
        .filter(|a| !declared.tool.abilities().contains(a))
        .collect();
    let capability = record.capability_override.as_ref();
    if !extra.is_empty() || capability.is_some() {
        let mut definition = Tool::clone(&declared.tool);
        if !extra.is_empty() {
            definition.rights.require(extra.into_iter().cloned());
        }
        if let Some(capability) = capability {
            definition.capability = Some(capability.clone());
        }
        tool.tool = Arc::new(definition);
    }
    tool
}

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
