//! The command line: each command parsed by clap, run, and printed for a person or as `--json`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand};
use serde_json::{Value, json};

use crate::registry::Registry;

use super::commands::{Operator, Seen};
#[cfg(feature = "remote")]
use super::printed::message;
use super::printed::{audit_line, cell, json_line, json_pretty, line, profile_line, rfc3339};
use crate::store::{
    AuditQuery, Change, Claim, GrantChange, GrantRecord, KeyInfo, LimitChange, Profile,
    ProfileChange, Rate, RecordError, RecordErrorKind, RecordStore, Scope,
};
use crate::text::shown;

/// Exit code: done.
///
/// ```
/// assert_eq!(toolgate::operator::OK, 0);
/// ```
pub const OK: i32 = 0;
/// Exit code: refused (an unknown tool, an edit that breaks a rule, a conflict); nothing changed.
///
/// ```
/// assert_eq!(toolgate::operator::REFUSED, 1);
/// ```
pub const REFUSED: i32 = 1;
/// Exit code: the command line is wrong.
///
/// ```
/// assert_eq!(toolgate::operator::USAGE, 2);
/// ```
pub const USAGE: i32 = 2;
/// Exit code: the records could not be read or written.
///
/// ```
/// assert_eq!(toolgate::operator::UNAVAILABLE, 3);
/// ```
pub const UNAVAILABLE: i32 = 3;

/// The operator's commands on a registry's records.
#[derive(Debug, Parser)]
#[command(
    name = "toolgate",
    about = "The operator's commands on this server's tool records."
)]
struct Command {
    /// Who makes the change, for the records' history (default: $USER).
    #[arg(long, global = true)]
    actor: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// The tools and their records.
    #[command(subcommand)]
    Tools(Tools),
    /// Bring the records in line with the tools this binary has: new ones added, changed ones updated,
    /// vanished ones marked missing (never deleted).
    Sync {
        /// Print what would change, and change nothing (the default).
        #[arg(long, conflicts_with = "apply")]
        plan: bool,
        /// Write it.
        #[arg(long)]
        apply: bool,
    },
    /// The newest changes of the records: who changed what, under which revision.
    History {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// The audit trail: one row per call, with the policy revision it ran under.
    #[command(subcommand)]
    Audit(Audit),
    /// Profiles: the tools an agent, a model, a team or an API key may see, with settings of their own.
    #[command(subcommand)]
    Profiles(Profiles),
    /// The keys that seal confirmations and request states.
    #[command(subcommand)]
    Keys(Keys),
    /// The remote MCP servers whose tools this server serves.
    #[cfg(feature = "remote")]
    #[command(subcommand)]
    Servers(Servers),
    /// Rate limits: calls per time window, for every caller, one tool, or one profile's callers.
    #[command(subcommand)]
    Limits(Limits),
    /// What the scopes and roles of signed-in callers' access tokens grant, over the code's scope map.
    #[command(subcommand)]
    Grants(Grants),
}

#[derive(Debug, Subcommand)]
enum Grants {
    /// Every grant in the records (the code's scope map is not listed).
    List,
    /// Set what a scope or role grants, replacing what the code's map says of it: `scope:NAME` or
    /// `role:NAME`, then its abilities (none takes away what the code grants).
    Set {
        claim: String,
        abilities: Vec<String>,
    },
    /// Remove the grant of a scope or role: the code's map decides again.
    Remove { claim: String },
}

#[derive(Debug, Subcommand)]
enum Limits {
    /// Every rate limit.
    List,
    /// Set the rate limit of a scope: `caller` (each caller, any tool), `tool:NAME` (each caller, that
    /// tool) or `profile:NAME` (that profile's callers together).
    Set {
        scope: String,
        /// Calls per window: `30/1m`, `1000/1h`, `5/10s`.
        rate: String,
    },
    /// Remove the rate limit of a scope.
    Remove { scope: String },
}

#[cfg(feature = "remote")]
#[derive(Debug, Subcommand)]
enum Servers {
    /// Every remote server, checked now: how it is reached, its health, its tools, its last error.
    List,
    /// Add a remote server, or replace the entry of one an operator added.
    Add {
        label: String,
        /// Its entry, as under `[servers.<label>]` in the configuration file, in JSON:
        /// `{"command": "python3", "args": ["server.py"], "ability": "files.read"}`.
        entry: String,
    },
    /// Remove a server an operator added: its tools are served no more.
    Remove { label: String },
    /// Sign the gateway in to a server that an operator authorizes (`oauth = { redirect_uri = ... }`):
    /// prints the address to open in a browser; the gateway serving the redirect finishes it.
    #[cfg(feature = "oauth")]
    SignIn { label: String },
}

#[derive(Debug, Subcommand)]
enum Keys {
    /// Every key, newest first, and the one that seals now.
    List,
    /// Add a new key: it opens confirmations at once, everywhere, and seals them after `--after`, by when
    /// every replica has it. The old key keeps opening what it sealed until you retire it.
    Rotate {
        /// How long until the new key seals: longer than a replica takes to hear of it.
        #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
        after: Duration,
    },
    /// Delete a key: what it sealed no longer opens. Not the key that seals now, nor the last.
    Retire { id: String },
}

#[derive(Debug, Subcommand)]
enum Profiles {
    /// Every profile.
    List,
    /// One profile, with its assignments.
    Show { name: String },
    /// Make an empty profile.
    Create {
        name: String,
        /// What or whom it is for.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// Assign a tool to a profile, or replace its assignment's settings.
    Assign {
        name: String,
        tool: String,
        /// Settings over the tool's own for this profile, as a JSON object; merged, they must match the
        /// tool's settings schema.
        #[arg(long)]
        settings: Option<String>,
    },
    /// Take a tool out of a profile.
    Unassign { name: String, tool: String },
    /// Delete a profile: its callers then see nothing but system tools.
    Delete { name: String },
}

#[derive(Debug, Subcommand)]
enum Audit {
    /// The newest calls.
    Tail {
        /// How many.
        #[arg(long, short = 'n', default_value_t = 20)]
        limit: usize,
    },
    /// The calls that match every filter given, newest first.
    Query {
        /// Only the calls of this person and of the sub-agents acting for them.
        #[arg(long)]
        caller: Option<String>,
        /// Only calls of this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only calls with this outcome: done, tool_error, denied, needs_confirmation, ...
        #[arg(long)]
        outcome: Option<String>,
        /// Only calls since this time: an RFC 3339 time (`2026-12-01T09:00:00Z`) or an age (`90m`, `2d`).
        #[arg(long, value_parser = parse_time)]
        since: Option<u64>,
        /// Only calls before this time, written as for `--since`.
        #[arg(long, value_parser = parse_time)]
        until: Option<u64>,
        /// At most this many rows.
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Forget the calls that finished before a time (the registry forgets those past its retention
    /// every hour on its own).
    Prune {
        /// An RFC 3339 time (`2026-12-01T09:00:00Z`) or an age (`30d`): calls before it are forgotten.
        #[arg(long, value_parser = parse_time)]
        before: u64,
    },
}

#[derive(Debug, Subcommand)]
enum Tools {
    /// Every record.
    List,
    /// One record.
    Show { name: String },
    /// Switch a tool on.
    Enable { name: String },
    /// Switch a tool off: listed to nobody, calls refused.
    Disable { name: String },
    /// Replace a tool's settings with a JSON object; it must match the tool's settings schema.
    Settings { name: String, settings: String },
    /// Require one more ability of a tool's callers.
    Require { name: String, ability: String },
    /// Stop requiring an ability an operator added (the code's own stay).
    Unrequire { name: String, ability: String },
    /// Say which capability a tool fulfils (a remote tool's, mostly); without one, the declared one again.
    Capability {
        name: String,
        capability: Option<String>,
    },
    /// Delete the record of a tool a sync marked missing, with its settings.
    Delete { name: String },
}

/// Runs one command line (`args[0]` is the command's own name) against `registry`'s records. Returns the
/// exit code and what to print: the result on success, the reason otherwise.
///
/// ```
/// use toolgate::Registry;
/// use toolgate::sqlite::SqliteStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().records(SqliteStore::in_memory()?).load().await?;
/// let (code, help) = toolgate::operator::run(&registry, ["toolgate", "--help"]).await;
/// assert_eq!(code, toolgate::operator::OK);
/// assert!(help.contains("sync"));
/// let (code, _) = toolgate::operator::run(&registry, ["toolgate", "tools", "frobnicate"]).await;
/// assert_eq!(code, toolgate::operator::USAGE);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn run<I, T>(registry: &Registry, args: I) -> (i32, String)
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let command = match Command::try_parse_from(args) {
        Ok(command) => command,
        Err(error) => {
            let code = if error.use_stderr() { USAGE } else { OK };
            return (code, error.to_string());
        }
    };
    match execute(registry, command).await {
        Ok(out) => (OK, out),
        Err(error) => {
            let code = match error.kind() {
                RecordErrorKind::Database | RecordErrorKind::Newer => UNAVAILABLE,
                _ => REFUSED,
            };
            (code, format!("{}\n", shown(error.message())))
        }
    }
}

async fn execute(registry: &Registry, command: Command) -> Result<String, RecordError> {
    let store = registry.store()?;
    let actor = command
        .actor
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "operator".to_owned());
    let json = command.json;
    match command.action {
        Action::Sync { apply: true, .. } => {
            let plan = registry.sync(&actor).await?;
            Ok(if plan.is_empty() {
                "Nothing to sync.\n".to_owned()
            } else {
                format!("{plan}Synced: revision {}.\n", registry.revision())
            })
        }
        Action::Sync { .. } => {
            let plan = registry.sync_plan().await?;
            Ok(if plan.is_empty() {
                "Nothing to sync.\n".to_owned()
            } else {
                format!("{plan}Nothing written; run `sync --apply` to write this.\n")
            })
        }
        Action::History { limit } => {
            let history = store.history(limit).await?;
            if json {
                return Ok(json_line(&json!(history)));
            }
            let mut out = String::new();
            for entry in history {
                let _ = writeln!(
                    out,
                    "{:>5}  {:<16} {:<24} {}",
                    entry.revision,
                    cell(&entry.actor),
                    cell(&entry.tool),
                    shown(&entry.what.to_string())
                );
            }
            Ok(out)
        }
        Action::Tools(tools) => {
            self::tools(&Operator::new(registry, actor), store, json, tools).await
        }
        Action::Profiles(command) => {
            profiles(&Operator::new(registry, actor), store, json, command).await
        }
        Action::Keys(command) => keys(&Operator::new(registry, actor), store, json, command).await,
        #[cfg(feature = "remote")]
        Action::Servers(command) => {
            servers(registry, Operator::new(registry, actor), json, command).await
        }
        Action::Limits(command) => {
            limits(&Operator::new(registry, actor), store, json, command).await
        }
        Action::Grants(command) => {
            grants(&Operator::new(registry, actor), store, json, command).await
        }
        Action::Audit(Audit::Prune { before }) => {
            let rows = registry.prune_audit(before).await?;
            Ok(format!(
                "Forgot {rows} audit rows of calls before {}.\n",
                rfc3339(before)
            ))
        }
        Action::Audit(audit) => {
            let query = match audit {
                Audit::Tail { limit } => AuditQuery::newest(limit),
                Audit::Query {
                    caller,
                    tool,
                    outcome,
                    since,
                    until,
                    limit,
                } => AuditQuery {
                    caller,
                    tool,
                    outcome,
                    since_ms: since,
                    until_ms: until,
                    ..AuditQuery::newest(limit)
                },
                Audit::Prune { .. } => unreachable!("answered above"),
            };
            let rows = store.audit_trail(&query).await?;
            if json {
                return Ok(json_line(&json!(rows)));
            }
            if rows.is_empty() {
                return Ok("No calls recorded.\n".to_owned());
            }
            Ok(rows.iter().map(audit_line).collect())
        }
    }
}

#[cfg(feature = "remote")]
async fn servers(
    registry: &Registry,
    operator: Operator<'_>,
    json: bool,
    command: Servers,
) -> Result<String, RecordError> {
    use crate::store::ServerChange;
    let (label, change) = match command {
        Servers::List => {
            registry.refresh_servers().await?;
            let servers = registry.servers();
            if json {
                return Ok(json_line(&json!(servers)));
            }
            let mut out = String::new();
            for server in servers {
                let _ = writeln!(
                    out,
                    "{:<16} {:<9} {:>3} tools  {}",
                    cell(&server.label),
                    server.health.as_str(),
                    server.tools,
                    cell(&server.reached_by)
                );
                for line in server.last_error.iter().chain(&server.problems) {
                    let _ = writeln!(out, "    {}", message(line));
                }
            }
            return Ok(out);
        }
        Servers::Add { label, entry } => {
            let entry: Value = serde_json::from_str(&entry).map_err(|e| {
                RecordError::new(
                    RecordErrorKind::Invalid,
                    format!("the entry is not JSON: {e}"),
                )
            })?;
            (label, ServerChange::Put(entry))
        }
        Servers::Remove { label } => (label, ServerChange::Remove),
        #[cfg(feature = "oauth")]
        Servers::SignIn { label } => {
            let url = registry.begin_sign_in(&label).await?;
            if json {
                return Ok(json_line(&json!({ "server": label, "url": url })));
            }
            return Ok(format!(
                "Open this address in a browser within ten minutes, and sign in to `{}`:\n{url}\n",
                cell(&label)
            ));
        }
    };
    let revision = operator.edit_server(&label, Seen::Now, change).await?;
    Ok(format!("`{}`: revision {revision}.\n", cell(&label)))
}

async fn limits(
    operator: &Operator<'_>,
    store: &dyn RecordStore,
    json: bool,
    command: Limits,
) -> Result<String, RecordError> {
    let limits = store.load().await?.limits;
    let (scope, change) = match command {
        Limits::List => {
            if json {
                return Ok(json_line(&json!(limits.values().collect::<Vec<_>>())));
            }
            if limits.is_empty() {
                return Ok("No rate limits.\n".to_owned());
            }
            return Ok(limits
                .values()
                .map(|limit| format!("{:<32} {}\n", cell(&limit.scope.to_string()), limit.rate))
                .collect());
        }
        Limits::Set { scope, rate } => (scope, LimitChange::Set(rate.parse::<Rate>()?)),
        Limits::Remove { scope } => (scope, LimitChange::Remove),
    };
    let scope: Scope = scope.parse()?;
    let (revision, limit) = operator
        .edit_limit(scope.clone(), Seen::Now, change)
        .await?;
    let now = match limit {
        Some(limit) => format!("`{scope}`: {}", limit.rate),
        None => format!("`{scope}`: no rate limit"),
    };
    Ok(format!("{now}. Revision {revision}.\n"))
}

async fn grants(
    operator: &Operator<'_>,
    store: &dyn RecordStore,
    json: bool,
    command: Grants,
) -> Result<String, RecordError> {
    let (claim, change) = match command {
        Grants::List => {
            let grants = store.load().await?.grants;
            if json {
                return Ok(json_line(&json!(grants.values().collect::<Vec<_>>())));
            }
            if grants.is_empty() {
                return Ok("No grants in the records; the code's scope map decides.\n".to_owned());
            }
            return Ok(grants
                .values()
                .map(|grant| {
                    format!(
                        "{:<32} {}\n",
                        cell(&grant.claim.to_string()),
                        granted(grant)
                    )
                })
                .collect());
        }
        Grants::Set { claim, abilities } => (claim, GrantChange::Set(abilities)),
        Grants::Remove { claim } => (claim, GrantChange::Remove),
    };
    let claim: Claim = claim.parse()?;
    let (revision, grant) = operator
        .edit_grant(claim.clone(), Seen::Now, change)
        .await?;
    let now = match grant {
        Some(grant) => format!("`{claim}` grants {}", granted(&grant)),
        None => format!("`{claim}`: as the code's scope map says"),
    };
    Ok(format!("{now}. Revision {revision}.\n"))
}

/// What a grant holds, for a person.
fn granted(grant: &GrantRecord) -> String {
    match grant.abilities.is_empty() {
        true => "nothing".to_owned(),
        false => grant
            .abilities
            .iter()
            .map(|a| cell(a))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A point in time as milliseconds since the Unix epoch: an RFC 3339 time, or an age before now.
fn parse_time(text: &str) -> Result<u64, String> {
    let at = match humantime::parse_duration(text) {
        Ok(age) => SystemTime::now().checked_sub(age).unwrap_or(UNIX_EPOCH),
        Err(_) => humantime::parse_rfc3339_weak(text).map_err(|_| {
            format!(
                "`{text}` is neither a time like 2026-12-01T09:00:00Z nor an age like 90m or 2d"
            )
        })?,
    };
    Ok(crate::store::millis(at).cast_unsigned())
}

async fn tools(
    operator: &Operator<'_>,
    store: &dyn RecordStore,
    json: bool,
    command: Tools,
) -> Result<String, RecordError> {
    let (name, change) = match command {
        Tools::List => {
            let records = store.load().await?;
            if json {
                return Ok(json_line(&json!(
                    records.tools.values().collect::<Vec<_>>()
                )));
            }
            return Ok(records
                .tools
                .values()
                .map(|r| format!("{}\n", line(r)))
                .collect());
        }
        Tools::Show { name } => return Ok(json_pretty(&operator.tool(&name).await?)),
        Tools::Delete { name } => {
            let revision = operator.delete_tool(&name).await?;
            return Ok(format!(
                "Deleted the record of `{name}`: revision {revision}.\n"
            ));
        }
        Tools::Enable { name } => (name, Change::Enable),
        Tools::Disable { name } => (name, Change::Disable),
        Tools::Settings { name, settings } => (name, Change::Settings(parse_settings(&settings)?)),
        Tools::Require { name, ability } => (name, Change::Require(ability)),
        Tools::Unrequire { name, ability } => (name, Change::Unrequire(ability)),
        Tools::Capability { name, capability } => (name, Change::Capability(capability)),
    };
    let (revision, record) = operator.edit_tool(&name, Seen::Now, change).await?;
    Ok(format!("{}\nRevision {revision}.\n", line(&record)))
}

async fn profiles(
    operator: &Operator<'_>,
    store: &dyn RecordStore,
    json: bool,
    command: Profiles,
) -> Result<String, RecordError> {
    let (name, change) = match command {
        Profiles::List => {
            let profiles: Vec<Profile> = store.load().await?.profiles.into_values().collect();
            if json {
                return Ok(json_line(&json!(profiles)));
            }
            return Ok(profiles.iter().map(profile_line).collect());
        }
        Profiles::Show { name } => return Ok(json_pretty(&operator.profile(&name).await?)),
        Profiles::Create { name, description } => {
            let revision = operator.create_profile(&name, description).await?;
            return Ok(format!("Created profile `{name}`: revision {revision}.\n"));
        }
        Profiles::Assign {
            name,
            tool,
            settings,
        } => {
            let settings = settings.as_deref().map(parse_settings).transpose()?;
            (name, ProfileChange::Assign { tool, settings })
        }
        Profiles::Unassign { name, tool } => (name, ProfileChange::Unassign { tool }),
        Profiles::Delete { name } => (name, ProfileChange::Delete),
    };
    let (revision, profile) = operator.edit_profile(&name, Seen::Now, change).await?;
    let now = match profile {
        Some(profile) => profile_line(&profile),
        None => format!("Deleted profile `{name}`.\n"),
    };
    Ok(format!("{now}Revision {revision}.\n"))
}

async fn keys(
    operator: &Operator<'_>,
    store: &dyn RecordStore,
    json: bool,
    command: Keys,
) -> Result<String, RecordError> {
    match command {
        Keys::List => {
            let ring = store.key_ring().await?;
            let keys = KeyInfo::of(&ring);
            if json {
                return Ok(json_line(&json!(keys)));
            }
            Ok(keys
                .iter()
                .map(|key| {
                    let state = match (key.sealing, key.seals_from_ms) {
                        (true, _) => "seals now".to_owned(),
                        (false, 0) => "opens what it sealed".to_owned(),
                        (false, from) => format!("seals from {}", rfc3339(from)),
                    };
                    format!("{:<16} {state}\n", cell(key.id))
                })
                .collect())
        }
        Keys::Rotate { after } => {
            let rotated = operator.rotate_key(after).await?;
            Ok(format!(
                "Added key `{}`: it opens confirmations now, and seals them from {}. Revision {}.\n",
                rotated.id,
                rfc3339(rotated.seals_from_ms),
                rotated.revision
            ))
        }
        Keys::Retire { id } => {
            let revision = operator.retire_key(&id).await?;
            Ok(format!(
                "Retired key `{id}`: what it sealed no longer opens. Revision {revision}.\n"
            ))
        }
    }
}

fn parse_settings(text: &str) -> Result<Value, RecordError> {
    serde_json::from_str(text).map_err(|e| {
        RecordError::new(
            RecordErrorKind::Invalid,
            format!("the settings are not JSON: {e}"),
        )
    })
}
