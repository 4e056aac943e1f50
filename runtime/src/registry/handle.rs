//! The [`Registry`] and its one `impl`: every tool linked into the binary plus dynamic ones, built once,
//! listed per caller and called through one pipeline. Each method says what it does and hands the work to
//! the part that does it: the catalog (what there is, who sees it), the pipeline (calls, confirmations,
//! tasks), or the registry's records, remote servers and delegations.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::call::{Call, Runner, TaskError, TaskHandle};
use crate::caller::Caller;
use crate::catalog::{Catalog, Current, Resolved, Snapshot, ToolId};
use crate::dialect::{self, Dialect};
use crate::error::ToolError;
use crate::output::Outcome;
use crate::policy::hooks::Lookup;
use crate::store::{
    Edit, GrantEdit, LimitEdit, ProfileEdit, RecordError, RecordStore, SyncPlan, TaskRecord, Write,
};
use crate::tool::Tool;

use super::builder::RegistryBuilder;
use super::core::Core;
#[cfg(feature = "remote")]
use super::remote;
use super::{delegation, records};

/// All the tools an application offers, with the policy that decides who sees and runs them.
///
/// Built at start-up: schemas are computed and argument checks made then, never per call. What the
/// operator changes (switched on or off, settings, abilities) is swapped in as a new snapshot while it
/// serves: a call finishes on the snapshot it started with. Cloning a `Registry` is cheap and clones share
/// everything (state, call ceilings, pending confirmations, the snapshot).
///
/// ```rust,standalone_crate
/// use toolgate::{tool, Caller, Registry};
///
/// /// Add two numbers.
/// #[tool(public, read_only)]
/// async fn add(a: i64, b: i64) -> i64 { a + b }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build().expect("tools are consistent");
/// let names: Vec<String> = registry.list(&Caller::anonymous()).iter().map(|t| t.name().to_owned()).collect();
/// assert!(names.contains(&"add".to_owned()));
/// let outcome = registry.call(&Caller::anonymous(), "add", serde_json::json!({"a": 2, "b": 40})).await;
/// assert_eq!(outcome.into_result().structured.as_deref(), Some(&serde_json::json!(42)));
/// # });
/// ```
#[derive(Clone)]
pub struct Registry {
    core: Arc<Core>,
}

impl Registry {
    /// Starts a registry of every `#[tool]` linked into the binary.
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    pub(super) fn new(core: Core) -> Self {
        Registry {
            core: Arc::new(core),
        }
    }

    pub(super) fn downgrade(&self) -> Weak<Core> {
        Arc::downgrade(&self.core)
    }

    fn catalog(&self) -> &Catalog {
        &self.core.catalog
    }

    // ---- what there is, and who sees it ----

    /// The tools `caller` gets up front, in listing order: those they may run, without the deferred ones
    /// (see [`Defer`](crate::Defer)), with `tool_search` when something is deferred.
    pub fn list(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        self.catalog().list(caller)
    }

    /// The tools `caller` may run, deferred ones included.
    pub fn list_all(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        self.catalog().list_all(caller)
    }

    /// The tools deferred for `caller`, in listing order: those they may run but do not get up front.
    pub fn list_deferred(&self, caller: &Caller) -> Vec<Arc<Tool>> {
        self.catalog().list_deferred(caller)
    }

    /// The tools `caller` may run in `category`, deferred ones included.
    pub fn list_category(&self, caller: &Caller, category: &str) -> Vec<Arc<Tool>> {
        self.catalog().list_category(caller, category)
    }

    /// The first tool `caller` may run that fulfils `capability`; hooks may substitute another.
    pub fn for_capability(&self, caller: &Caller, capability: &str) -> Option<Arc<Tool>> {
        let snapshot = self.snapshot();
        let first = self.catalog().first_with(&snapshot, caller, capability)?;
        let id = (self.core.pipeline).redirect(&snapshot, Lookup::Capability(capability), first);
        (self.catalog().may_run(&snapshot, id, caller)).then(|| Arc::clone(&snapshot.tool(id).tool))
    }

    /// The tools `caller` may run that best match `query`, best first: ranked with BM25 over their names,
    /// titles, descriptions, capabilities, categories and parameters. This is how deferred tools are
    /// found; a tool the caller may not run is never among them.
    pub fn search(&self, caller: &Caller, query: &str, limit: usize) -> Vec<Arc<Tool>> {
        self.catalog().search(caller, query, limit)
    }

    /// A tool by name, whoever may run it (for administration; callers use [`list`](Self::list)).
    pub fn get(&self, name: &str) -> Option<Arc<Tool>> {
        self.catalog().get(name)
    }

    /// Every tool, in listing order, whoever may run it (for administration).
    pub fn tools(&self) -> Vec<Arc<Tool>> {
        self.catalog().tools()
    }

    /// The tools `caller` may run, as the value of a model request's `tools` field. The tools deferred for
    /// them (see [`Defer`](crate::Defer)) follow the others: marked `defer_loading` for the APIs that load
    /// them themselves ([`Dialect::loads_deferred`]), left out for the others, which find them through
    /// `tool_search` (see [`definitions_with`](Self::definitions_with)).
    pub fn definitions(&self, caller: &Caller, dialect: Dialect) -> Value {
        self.definitions_with(caller, dialect, &[] as &[&str])
    }

    /// [`definitions`](Self::definitions), with the deferred tools named in `loaded` in full for the APIs
    /// that cannot load them themselves: the names earlier `tool_search` results found
    /// ([`tools_found`](crate::registry::tools_found)). A name the caller may not run is ignored.
    pub fn definitions_with<S: AsRef<str>>(
        &self,
        caller: &Caller,
        dialect: Dialect,
        loaded: &[S],
    ) -> Value {
        dialect::definitions(self.catalog(), caller, dialect, loaded)
    }

    /// The revision of the operator's policy the registry serves now: it moves when a change is swapped in.
    pub fn revision(&self) -> u64 {
        self.catalog().revision()
    }

    /// Waits until a new snapshot is swapped in, and returns its revision: for a transport that tells its
    /// clients that the list changed.
    pub async fn changed(&self) -> u64 {
        self.catalog().changed().await
    }

    // ---- calls ----

    /// Calls tool `name` for `caller` with JSON `arguments`.
    pub fn call(
        &self,
        caller: &Caller,
        name: &str,
        arguments: Value,
    ) -> impl Future<Output = Outcome> {
        (self.core.pipeline).call(self.catalog(), caller, name, arguments)
    }

    /// Runs a [`Call`] for `caller` through the pipeline.
    pub fn run(&self, caller: &Caller, call: Call) -> impl Future<Output = Outcome> {
        (self.core.pipeline).run(self.catalog(), caller, call)
    }

    /// Approves a previewed write: it runs now, once, with exactly the arguments that were previewed.
    ///
    /// Refused, with nothing run, when the confirmation is forged, altered, expired, already used or
    /// declined, or another caller's, and when the caller has since lost the right to run the tool.
    /// Approving twice returns the first run's result.
    pub async fn confirm(&self, caller: &Caller, confirmation: &str) -> Outcome {
        (self.core.pipeline)
            .confirm(self.catalog(), caller, confirmation)
            .await
    }

    /// Declines a previewed write: it will never run.
    ///
    /// # Errors
    /// When the confirmation is forged, altered, expired or another caller's, or was already approved.
    pub async fn decline(&self, caller: &Caller, confirmation: &str) -> Result<(), ToolError> {
        (self.core.pipeline)
            .decline(self.catalog(), caller, confirmation)
            .await
    }

    /// Forgets the call counts of a session, for `max_runs`; call it when a conversation ends. The MCP
    /// server calls it when one of its sessions closes or idles out.
    pub fn end_session(&self, session_id: &str) {
        self.core.pipeline.end_session(session_id);
    }

    // ---- tasks ----

    /// Starts `call` as a task of `caller`'s: it is in the task store when this returns, then runs in the
    /// background under the same pipeline as any call (admission, previews, hooks, audit, timeouts).
    /// A write with a preview starts as a task once a person approved it: with its confirmation
    /// ([`Call::confirmation`]) or its approval's answer ([`Call::resume`]).
    ///
    /// # Errors
    /// [`TaskError::NotStarted`] when `caller` may not run the tool, it takes no tasks, or it is a write
    /// not approved yet; [`TaskError::Unavailable`] when the store cannot be reached. Nothing ran then.
    pub async fn start_task(&self, caller: &Caller, call: Call) -> Result<TaskHandle, TaskError> {
        let task = self.start_task_record(caller, call).await?;
        Ok(self.core.pipeline.tasks().handle(caller, task.id))
    }

    /// Task `id` as `caller` may see it: another caller's task is as unknown as one that never was. A task
    /// whose process stopped while it was working is reported, and kept, as failed.
    ///
    /// # Errors
    /// [`TaskError::Unknown`], or [`TaskError::Unavailable`] when the store cannot be reached.
    pub async fn task(&self, caller: &Caller, id: &str) -> Result<TaskRecord, TaskError> {
        self.core.pipeline.tasks().get(caller, id).await
    }

    /// Answers some of the questions task `id` waits on (keys it did not ask are ignored). Once every one
    /// is answered, the tool runs again with the answers, once, here.
    ///
    /// # Errors
    /// As [`task`](Self::task).
    pub async fn answer_task(
        &self,
        caller: &Caller,
        id: &str,
        answers: Map<String, Value>,
    ) -> Result<(), TaskError> {
        let tasks = self.core.pipeline.tasks();
        tasks.answer(caller, id, answers, self.runner()).await
    }

    /// Asks task `id` to stop: its tool's [`Cancellation`](crate::param::Cancellation) fires, here at once
    /// or within seconds on the process running it; a task waiting for answers is cancelled at once. An
    /// ended task stays as it is.
    ///
    /// # Errors
    /// As [`task`](Self::task).
    pub async fn cancel_task(&self, caller: &Caller, id: &str) -> Result<(), TaskError> {
        self.core.pipeline.tasks().cancel(caller, id).await
    }

    // ---- delegation ----

    /// A token that carries the delegated `caller` to a sub-agent in another process: sealed under the
    /// registry's key ring (the one confirmations use), so a server with that ring accepts it as
    /// exactly that caller, and no other. It carries the chain's abilities as they are now and ends when
    /// the delegation does; a delegation without an expiry, or one longer than
    /// [`MAX_DELEGATION_TTL`](crate::registry::MAX_DELEGATION_TTL), gets that.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolgate::{Caller, Delegation, Registry};
    ///
    /// let registry = Registry::builder().build().unwrap();
    /// let person = Caller::new("ada").with_abilities(["orders.view", "orders.manage"]);
    /// let agent = person.delegate(Delegation::to("researcher").abilities(["orders.view"]).expires_in(Duration::from_secs(600)));
    /// let token = registry.seal_delegation(&agent).unwrap();
    ///
    /// let carried = registry.open_delegation(&token).unwrap();
    /// assert_eq!(carried.id(), "researcher");
    /// assert!(carried.has("orders.view") && !carried.has("orders.manage"));
    /// assert_eq!(carried.on_behalf_of().map(Caller::id), Some("ada"));
    ///
    /// let mut tampered = token.clone();
    /// tampered.insert(token.len() - 3, 'x');
    /// assert!(registry.open_delegation(&tampered).is_err());
    /// ```
    ///
    /// # Errors
    /// When `caller` is not delegated, when a name of its chain (an id, a role, a profile) is not an
    /// [`Ident`](crate::text::Ident), and when its chain has more than eight delegations.
    pub fn seal_delegation(&self, caller: &Caller) -> Result<String, ToolError> {
        delegation::seal(self.core.pipeline.confirmations(), caller)
    }

    /// The delegated caller a token from [`seal_delegation`](Self::seal_delegation) carries.
    ///
    /// # Errors
    /// Kind `denied`, with nothing trusted, when the token was altered, forged or sealed with a key this
    /// registry does not have, when it has expired, and when a link of its chain claims more than the
    /// one before it held: an ability, a later expiry.
    pub fn open_delegation(&self, token: &str) -> Result<Caller, ToolError> {
        delegation::open(self.core.pipeline.confirmations(), token)
    }

    // ---- the operator's records ----

    /// The operator's records, when the registry was built with them
    /// ([`RegistryBuilder::records`]).
    pub fn records(&self) -> Option<&dyn RecordStore> {
        self.catalog().records()
    }

    /// Loads the records if their revision moved since the snapshot being served, or takes up what
    /// changed on the remote servers, and swaps in the snapshot they make. Returns whether it swapped.
    ///
    /// # Errors
    /// When the records cannot be read; the registry goes on serving its snapshot.
    pub async fn refresh(&self) -> Result<bool, RecordError> {
        records::refresh(&self.core).await
    }

    /// Keeps the registry in line with its records and its remote servers, until every clone of it is
    /// dropped: checks the records' revision whenever the store hears of a change (PostgreSQL's
    /// `NOTIFY`), and every `every` in any case, so a change made by any process is served within that
    /// time; lists and checks each remote server on its own schedule; then swaps in the new snapshot.
    /// Every hour it forgets the audit rows past the [retention](RegistryBuilder::audit_retention).
    /// Spawn it. An outage is logged once, and calls go on under the last policy loaded; when the
    /// database is back, what changed meanwhile is picked up.
    pub fn watch(&self, every: Duration) -> impl Future<Output = ()> + Send + 'static {
        records::watch(&self.core, every)
    }

    /// Forgets the audit rows of calls that finished before `before_ms`; how many.
    ///
    /// # Errors
    /// Without records, or when their database cannot be written.
    pub async fn prune_audit(&self, before_ms: u64) -> Result<u64, RecordError> {
        self.catalog().store()?.prune_audit(before_ms).await
    }

    /// What a sync would write: the code's tools, and the remote servers' as they list them now,
    /// against the records.
    ///
    /// # Errors
    /// Without records, or when they cannot be read.
    pub async fn sync_plan(&self) -> Result<SyncPlan, RecordError> {
        records::sync_plan(&self.core).await
    }

    /// Syncs the code's tools into the records as `actor`, and serves the result: new tools are added,
    /// changed ones updated (the operator's part kept), and tools gone from the code marked `missing`,
    /// never deleted. Returns what it wrote.
    ///
    /// # Errors
    /// Without records, or when they cannot be read or written; then nothing was written.
    pub async fn sync(&self, actor: &str) -> Result<SyncPlan, RecordError> {
        records::sync(&self.core, actor).await
    }

    /// Writes an operator's change of a profile and serves it at once.
    ///
    /// # Errors
    /// When the change is refused (see [`ProfileEdit::apply`]) or the records cannot be written; then
    /// nothing changed.
    pub async fn edit_profile(&self, edit: &ProfileEdit) -> Result<u64, RecordError> {
        records::write(&self.core, Write::Profile(edit)).await
    }

    /// Writes an operator's change of a rate limit and serves it at once: calls are counted against it
    /// from the next one on, in every replica within its watch.
    ///
    /// # Errors
    /// When the change is refused (see [`LimitEdit::apply`]) or the records cannot be written; then
    /// nothing changed.
    pub async fn edit_limit(&self, edit: &LimitEdit) -> Result<u64, RecordError> {
        records::write(&self.core, Write::Limit(edit)).await
    }

    /// Writes an operator's change of what an access token's scope or role grants and serves it at
    /// once: a `TokenVerifier` serving this registry makes every caller
    /// from the next request on with it, in every replica within its watch.
    ///
    /// # Errors
    /// When the change is refused (see [`GrantEdit::apply`]) or the records cannot be written; then
    /// nothing changed.
    pub async fn edit_grant(&self, edit: &GrantEdit) -> Result<u64, RecordError> {
        records::write(&self.core, Write::Grant(edit)).await
    }

    /// What scopes and roles grant now: the code's map, with the configuration file's and the
    /// records' grants over it.
    #[cfg(feature = "oauth")]
    pub(crate) fn grants(&self) -> Arc<crate::catalog::Grants> {
        Arc::clone(&self.core.catalog.snapshot().grants)
    }

    /// The revision of [`grants`](Self::grants), read without holding them.
    #[cfg(feature = "oauth")]
    pub(crate) fn grants_revision(&self) -> u64 {
        self.core.catalog.snapshot().grants.revision
    }

    /// Writes an operator's edit of one record and serves it at once.
    ///
    /// # Errors
    /// When the edit is refused (see [`Edit::apply`]) or the records cannot be written; then nothing
    /// changed.
    pub async fn edit(&self, edit: &Edit) -> Result<u64, RecordError> {
        records::edit(&self.core, edit).await
    }

    // ---- remote servers ----

    /// The remote servers and how each is doing, in the order they were added.
    #[cfg(feature = "remote")]
    pub fn servers(&self) -> Vec<crate::remote::ServerStatus> {
        remote::servers(&self.core)
    }

    /// Lists every remote server's tools now, rather than at the next check, and serves what changed.
    ///
    /// # Errors
    /// When the records cannot be read; the registry goes on serving its snapshot.
    #[cfg(feature = "remote")]
    pub async fn refresh_servers(&self) -> Result<(), RecordError> {
        remote::refresh_servers(&self.core).await
    }

    /// The remote servers operators added, as the records have them now.
    ///
    /// # Errors
    /// Without records, or when they cannot be read.
    #[cfg(feature = "remote")]
    pub async fn server_records(&self) -> Result<Vec<crate::store::ServerRecord>, RecordError> {
        let records = self.catalog().store()?.load().await?;
        Ok(records.servers.into_values().collect())
    }

    /// Writes an operator's change of a remote server and serves it at once: an added server's tools
    /// come once it is listed, a removed one's go now. An entry is checked as the configuration file's
    /// are (`[servers.<label>]`, in JSON) before anything is written.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolgate::Registry;
    /// use toolgate::sqlite::SqliteStore;
    /// use toolgate::store::{RecordErrorKind, ServerChange, ServerEdit};
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let registry = Registry::builder().records(SqliteStore::in_memory()?).load().await?;
    /// let add = ServerEdit::new("ops", "files", 0, ServerChange::Put(json!({ "command": "files-mcp", "ability": "files.read" })));
    /// registry.edit_server(&add).await?;
    /// assert_eq!(registry.servers()[0].reached_by, "stdio: files-mcp");
    ///
    /// let sse = ServerEdit::new("ops", "old", 0, ServerChange::Put(json!({ "type": "sse", "url": "http://127.0.0.1:9/sse" })));
    /// let refused = registry.edit_server(&sse).await.unwrap_err();
    /// assert_eq!(refused.kind(), RecordErrorKind::Invalid);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// An entry that cannot be served, a stale version, an unknown server to remove, or records that
    /// cannot be written; then nothing changed.
    #[cfg(feature = "remote")]
    pub async fn edit_server(&self, edit: &crate::store::ServerEdit) -> Result<u64, RecordError> {
        remote::edit_server(&self.core, edit).await
    }

    /// Begins an operator's sign-in to the remote server `label`, one that signs in by
    /// [`SignIn::authorization_code`](crate::remote::SignIn::authorization_code): the address where
    /// the operator signs in. Their browser comes back to the gateway's `/oauth/callback`, which
    /// finishes it with [`finish_sign_in`](Self::finish_sign_in); it waits ten minutes.
    ///
    /// # Errors
    /// An unknown server, one that does not sign in that way, or an authorization server that cannot
    /// be found or registered at.
    #[cfg(signs_in)]
    pub async fn begin_sign_in(&self, label: &str) -> Result<String, RecordError> {
        remote::begin_sign_in(&self.core, label).await
    }

    /// Finishes the operator's sign-in the authorization response `query` (its URL's query) answers:
    /// the code is spent, the refresh token kept encrypted in the records, and the server reached with
    /// it. Gives the server's label.
    ///
    /// # Errors
    /// A response that answers no sign-in begun (or one finished, or too old), names another issuer,
    /// or carries an error; a code the authorization server refuses.
    #[cfg(signs_in)]
    pub async fn finish_sign_in(&self, query: &str) -> Result<String, RecordError> {
        remote::finish_sign_in(&self.core, query).await
    }

    /// The gateway's client ID metadata document served at `path` (MCP 2025-11-25): for the remote
    /// servers whose sign-in names an address with that path
    /// ([`SignIn::metadata_document`](crate::remote::SignIn::metadata_document)), a public client
    /// whose id is that address and whose redirects are theirs; none when no server names one.
    #[cfg(all(signs_in, admin))]
    pub(crate) fn client_metadata(&self, path: &str) -> Option<serde_json::Value> {
        remote::client_metadata(&self.core, path)
    }

    // ---- for the transports and the operator's commands ----

    /// The tools as they are now; a call holds its snapshot until it finishes.
    #[inline]
    pub(crate) fn snapshot(&self) -> Current<'_> {
        self.catalog().snapshot()
    }

    /// `name` resolved once, in the current snapshot, after the resolution hooks.
    #[cfg(feature = "mcp")]
    pub(crate) fn resolved(&self, name: &str) -> Resolved<'_> {
        self.core.resolved(name)
    }

    /// What `caller` may run, split into what they get up front and what is deferred for them.
    #[cfg(feature = "mcp")]
    pub(crate) fn listing(&self, snapshot: &Snapshot, caller: &Caller) -> crate::catalog::Listing {
        self.catalog().listing(snapshot, caller)
    }

    /// Whether `caller` may see and run tool `id` of `snapshot` now.
    pub(crate) fn may_run(&self, snapshot: &Snapshot, id: ToolId, caller: &Caller) -> bool {
        self.catalog().may_run(snapshot, id, caller)
    }

    /// The abilities `caller` lacks to run tool `id` of `snapshot`, when they are why it may not.
    #[cfg(feature = "mcp")]
    pub(crate) fn missing_abilities_in(
        &self,
        snapshot: &Snapshot,
        id: ToolId,
        caller: &Caller,
    ) -> Option<Vec<String>> {
        self.catalog().missing_abilities(snapshot, id, caller)
    }

    /// The tool `name` resolves to, when `caller` may see it and run it now.
    pub(crate) fn runnable(&self, caller: &Caller, name: &str) -> Option<Arc<Tool>> {
        let Resolved { snapshot, tool } = self.core.resolved(name);
        let id = tool?;
        self.may_run(&snapshot, id, caller)
            .then(|| Arc::clone(&snapshot.tool(id).tool))
    }

    /// Runs a [`Call`] whose name the transport resolved already in `snapshot`.
    #[cfg(feature = "mcp")]
    pub(crate) fn run_resolved(
        &self,
        snapshot: &Snapshot,
        caller: &Caller,
        call: Call,
        resolved: Option<ToolId>,
    ) -> impl Future<Output = Outcome> {
        (self.core.pipeline).run_resolved(self.catalog(), snapshot, caller, call, resolved)
    }

    /// [`start_task`](Self::start_task), answering the task as it was stored.
    pub(crate) async fn start_task_record(
        &self,
        caller: &Caller,
        call: Call,
    ) -> Result<TaskRecord, TaskError> {
        let tool = self.runnable(caller, call.name());
        let tasks = self.core.pipeline.tasks();
        tasks
            .start(tool.as_deref(), caller, call, self.runner())
            .await
    }

    /// How a task's call runs: through the whole pipeline, in one of the registry's slots.
    fn runner(&self) -> Runner {
        let registry = self.clone();
        Arc::new(move |caller, call| {
            let registry = registry.clone();
            Box::pin(async move {
                let _slot = registry.core.pipeline.slot(&caller, None).await;
                registry.run(&caller, call).await
            })
        })
    }

    /// The pipeline's slots, timeouts and confirmations, for a transport that waits for a slot itself.
    #[cfg(any(feature = "mcp", test))]
    pub(crate) fn pipeline(&self) -> &crate::call::Pipeline {
        &self.core.pipeline
    }

    /// The revisions of the snapshots swapped in from now on; `None` when the tools are fixed.
    #[cfg(feature = "mcp")]
    pub(crate) fn subscribe(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.catalog().subscribe()
    }

    /// The settings a tool runs with now (for the admin page's form).
    #[cfg(admin)]
    pub(crate) fn settings_of(&self, name: &str) -> Option<Arc<Value>> {
        self.catalog().settings_of(name)
    }

    /// The store of the records, or the error that says there is none.
    #[cfg(edits)]
    pub(crate) fn store(&self) -> Result<&dyn RecordStore, RecordError> {
        self.catalog().store()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("catalog", self.catalog())
            .finish_non_exhaustive()
    }
}
