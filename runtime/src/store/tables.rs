//! The tables, written once for both backends: each migration in order, with the few types that differ
//! between SQLite and PostgreSQL as placeholders.

/// The migrations, in order; a database counts those applied. The first creates only what is missing:
/// SQLite databases made before versions were counted have it.
const MIGRATIONS: [&str; 12] = [
    // 1: confirmations, audit, keys.
    "
CREATE TABLE IF NOT EXISTS toolgate_confirmations (
    id TEXT PRIMARY KEY,
    decision TEXT NOT NULL,
    outcome TEXT,
    expires {int} NOT NULL
);
CREATE INDEX IF NOT EXISTS toolgate_confirmations_expires ON toolgate_confirmations (expires);
CREATE TABLE IF NOT EXISTS toolgate_audit (
    seq {serial},
    at_ms {int} NOT NULL,
    caller TEXT NOT NULL,
    tool TEXT NOT NULL,
    action TEXT NOT NULL,
    digest TEXT NOT NULL,
    outcome TEXT NOT NULL,
    session TEXT,
    elapsed_us {int} NOT NULL
);
CREATE TABLE IF NOT EXISTS toolgate_keys (
    id TEXT PRIMARY KEY,
    secret {bytes} NOT NULL,
    created_ms {int} NOT NULL
);
",
    // 2: the operator's records, their revision and history; the revision in force on each audit row.
    "
CREATE TABLE toolgate_tools (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
CREATE TABLE toolgate_revision (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    revision {int} NOT NULL
);
INSERT INTO toolgate_revision (id, revision) VALUES (1, 0);
CREATE TABLE toolgate_changes (
    seq {serial},
    revision {int} NOT NULL,
    at_ms {int} NOT NULL,
    actor TEXT NOT NULL,
    tool TEXT NOT NULL,
    what TEXT NOT NULL
);
ALTER TABLE toolgate_audit ADD COLUMN revision {int};
",
    // 3: profiles.
    "
CREATE TABLE toolgate_profiles (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
",
    // 4: keys that seal from a time on, so that a rotated key reaches every replica first.
    "
ALTER TABLE toolgate_keys ADD COLUMN seals_from_ms {int} NOT NULL DEFAULT 0;
",
    // 5: approved runs held until a time, past which an abandoned one is taken over; call ceilings
    // counted in one place for every replica.
    "
ALTER TABLE toolgate_confirmations ADD COLUMN held_until {int} NOT NULL DEFAULT 9223372036854775807;
CREATE TABLE toolgate_ceilings (
    caller TEXT NOT NULL,
    session TEXT NOT NULL,
    tool TEXT NOT NULL,
    runs {int} NOT NULL,
    PRIMARY KEY (caller, session, tool)
);
",
    // 6: whom a delegated caller acted for; the session log line and telemetry of each call.
    "
ALTER TABLE toolgate_audit ADD COLUMN on_behalf_of TEXT;
ALTER TABLE toolgate_audit ADD COLUMN session_log TEXT;
ALTER TABLE toolgate_audit ADD COLUMN telemetry TEXT;
",
    // 7: the remote servers operators added.
    "
CREATE TABLE toolgate_servers (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
",
    // 8: the text of each preview, found again for its approval; calls counted over a time.
    "
ALTER TABLE toolgate_audit ADD COLUMN preview TEXT;
CREATE INDEX toolgate_audit_previews ON toolgate_audit (tool, digest, seq);
CREATE INDEX toolgate_audit_at ON toolgate_audit (at_ms);
",
    // 9: tasks (SEP-2663): what a store filters on in columns, the rest as one JSON record.
    "
CREATE TABLE toolgate_tasks (
    id TEXT PRIMARY KEY,
    version {int} NOT NULL,
    status TEXT NOT NULL,
    message TEXT,
    lease_until {int} NOT NULL,
    cancel_requested {int} NOT NULL DEFAULT 0,
    expires {int} NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX toolgate_tasks_expires ON toolgate_tasks (expires);
",
    // 10: counts that expire (rows from before start expired, so they are forgotten); the person at the
    // root of a delegated caller's chain, for the audit's filters; rate limits.
    "
ALTER TABLE toolgate_ceilings ADD COLUMN expires {int} NOT NULL DEFAULT 0;
CREATE INDEX toolgate_ceilings_expires ON toolgate_ceilings (expires);
ALTER TABLE toolgate_audit ADD COLUMN root TEXT;
CREATE TABLE toolgate_limits (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
",
    // 11: what access tokens' scopes and roles grant; the client a signed-in caller called through, and
    // the actors of its token's `act` chain.
    "
CREATE TABLE toolgate_grants (
    name TEXT PRIMARY KEY,
    record TEXT NOT NULL
);
ALTER TABLE toolgate_audit ADD COLUMN client TEXT;
ALTER TABLE toolgate_audit ADD COLUMN actors TEXT;
",
    // 12: the gateway's sign-ins to remote servers an operator made, sealed, and which replica renews
    // each; those begun and not yet finished, which expire.
    "
CREATE TABLE toolgate_sign_ins (
    server TEXT PRIMARY KEY,
    sealed TEXT NOT NULL,
    at_ms {int} NOT NULL,
    lease_until {int} NOT NULL DEFAULT 0
);
CREATE TABLE toolgate_sign_in_starts (
    state TEXT PRIMARY KEY,
    server TEXT NOT NULL,
    sealed TEXT NOT NULL,
    expires {int} NOT NULL
);
",
];

/// The sealed sign-in kept for a server.
#[cfg(signs_in)]
pub(crate) const SIGN_IN: &str = "SELECT sealed FROM toolgate_sign_ins WHERE server = $1";

/// Keeps a server's sealed sign-in, replacing the last; whoever renewed it is done.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_KEEP: &str = "INSERT INTO toolgate_sign_ins (server, sealed, at_ms, lease_until) \
     VALUES ($1, $2, $3, 0) ON CONFLICT (server) \
     DO UPDATE SET sealed = excluded.sealed, at_ms = excluded.at_ms, lease_until = 0";

/// Takes the renewal of a server's sign-in until a time, unless another replica holds it.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_LEASE: &str =
    "UPDATE toolgate_sign_ins SET lease_until = $2 WHERE server = $1 AND lease_until < $3";

/// Forgets a server's sign-in.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_FORGET: &str = "DELETE FROM toolgate_sign_ins WHERE server = $1";

/// Forgets the sign-ins whose key is like a pattern (the people's of one server) and that were not
/// renewed since a time.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_FORGET_IDLE: &str =
    "DELETE FROM toolgate_sign_ins WHERE server LIKE $1 ESCAPE '\\' AND at_ms < $2";

/// Forgets the sign-ins begun that expired, and all but the newest few.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_STARTS_SWEEP: &str = "DELETE FROM toolgate_sign_in_starts WHERE expires < $1 \
     OR state NOT IN (SELECT state FROM toolgate_sign_in_starts ORDER BY expires DESC LIMIT 31)";

/// Keeps a sign-in begun, under its state.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_START: &str =
    "INSERT INTO toolgate_sign_in_starts (state, server, sealed, expires) VALUES ($1, $2, $3, $4)";

/// Takes a sign-in begun, once, unless it expired.
#[cfg(signs_in)]
pub(crate) const SIGN_IN_FINISH: &str = "DELETE FROM toolgate_sign_in_starts \
     WHERE state = $1 AND expires >= $2 RETURNING server, sealed";

/// The columns of an audit row, in the order stores write and read them (after `seq` when reading): a
/// literal, so that statements are made with `concat!`.
macro_rules! audit_columns {
    () => {
        "at_ms, caller, tool, action, digest, outcome, session, elapsed_us, revision, on_behalf_of, \
         session_log, telemetry, preview, root, client, actors"
    };
}
pub(crate) use audit_columns;

/// The rows an audit query reads, newest first: `seq` and the columns, then the preview an approval or a
/// decline answered (the latest preview of the same tool with the same arguments before it); its filters
/// are the backend's own placeholders.
macro_rules! audit_query {
    ($filters:literal) => {
        concat!(
            "SELECT seq, ",
            $crate::store::tables::audit_columns!(),
            ", CASE WHEN a.action IN ('approve', 'decline') THEN (SELECT p.preview FROM toolgate_audit p \
             WHERE p.action = 'preview' AND p.tool = a.tool AND p.digest = a.digest AND p.seq < a.seq \
             ORDER BY p.seq DESC LIMIT 1) END FROM toolgate_audit a WHERE ",
            $filters,
            " ORDER BY seq DESC LIMIT "
        )
    };
}
pub(crate) use audit_query;

/// Counts one of (caller, session, tool) unless `$4` are counted already and have not expired at `$6`; a
/// new count, or one past its expiry, lasts until `$5`: one row changed if it counted.
pub(crate) const CEILING_TAKE: &str = "INSERT INTO toolgate_ceilings (caller, session, tool, runs, expires) \
     VALUES ($1, $2, $3, 1, $5) ON CONFLICT (caller, session, tool) DO UPDATE SET \
     runs = CASE WHEN toolgate_ceilings.expires <= $6 THEN 1 ELSE toolgate_ceilings.runs + 1 END, \
     expires = CASE WHEN toolgate_ceilings.expires <= $6 THEN $5 ELSE toolgate_ceilings.expires END \
     WHERE toolgate_ceilings.runs < $4 OR toolgate_ceilings.expires <= $6";

/// [`CEILING_TAKE`] for a count that exists already: what a full table still counts.
pub(crate) const CEILING_TAKE_KEPT: &str = "UPDATE toolgate_ceilings SET \
     runs = CASE WHEN expires <= $6 THEN 1 ELSE runs + 1 END, \
     expires = CASE WHEN expires <= $6 THEN $5 ELSE expires END \
     WHERE caller = $1 AND session = $2 AND tool = $3 AND (runs < $4 OR expires <= $6)";

/// Forgets the counts that expired before `$1`.
pub(crate) const CEILING_SWEEP: &str = "DELETE FROM toolgate_ceilings WHERE expires <= $1";

/// How many counts are kept.
pub(crate) const CEILING_ROWS: &str = "SELECT COUNT(*) FROM toolgate_ceilings";

/// Takes back one run of (caller, session, tool).
pub(crate) const CEILING_GIVE_BACK: &str = "UPDATE toolgate_ceilings SET runs = runs - 1 \
     WHERE caller = $1 AND session = $2 AND tool = $3 AND runs > 0";

/// Forgets the counts of a session.
pub(crate) const CEILING_END_SESSION: &str = "DELETE FROM toolgate_ceilings WHERE session = $1";

/// Forgets the audit rows of calls that finished before `$1`.
pub(crate) const AUDIT_PRUNE: &str = "DELETE FROM toolgate_audit WHERE at_ms < $1";

/// Forgets the tasks that expired before `$1`, then writes a new one.
pub(crate) const TASK_PURGE: &str = "DELETE FROM toolgate_tasks WHERE expires < $1";

/// A new task.
pub(crate) const TASK_CREATE: &str = "INSERT INTO toolgate_tasks \
     (id, version, status, message, lease_until, cancel_requested, expires, record) \
     VALUES ($1, 0, $2, $3, $4, 0, $5, $6)";

/// A task not expired at `$2`: its columns, then its record.
pub(crate) const TASK_GET: &str = "SELECT version, status, message, lease_until, cancel_requested, record \
     FROM toolgate_tasks WHERE id = $1 AND expires > $2";

/// A task's new state, made from version `$6`, unless it moved since (or has ended).
pub(crate) const TASK_UPDATE: &str = "UPDATE toolgate_tasks SET version = version + 1, status = $2, \
     message = $3, lease_until = $4, record = $5 \
     WHERE id = $1 AND version = $6 AND status NOT IN ('completed', 'failed', 'cancelled')";

/// Asks a task to stop; one that waits for answers is cancelled at once.
pub(crate) const TASK_CANCEL: &str = "UPDATE toolgate_tasks SET version = version + 1, cancel_requested = 1, \
     status = CASE WHEN status = 'input_required' THEN 'cancelled' ELSE status END \
     WHERE id = $1 AND status NOT IN ('completed', 'failed', 'cancelled')";

/// A running task's lease and progress; answers whether it was asked to stop.
pub(crate) const TASK_BEAT: &str = "UPDATE toolgate_tasks SET lease_until = $2, message = $3 WHERE id = $1 RETURNING cancel_requested";

/// The types a backend writes for the placeholders.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SqlDialect {
    /// A 64-bit integer.
    pub(crate) int: &'static str,
    /// A 64-bit key that counts up.
    pub(crate) serial: &'static str,
    /// Bytes.
    pub(crate) bytes: &'static str,
}

/// How many migrations this toolgate knows.
pub(crate) const KNOWN: usize = MIGRATIONS.len();

/// The migrations after the first `applied`, in `dialect`, each with the version it brings.
pub(crate) fn pending(
    applied: usize,
    dialect: SqlDialect,
) -> impl Iterator<Item = (usize, String)> {
    MIGRATIONS
        .iter()
        .enumerate()
        .skip(applied)
        .map(move |(done, sql)| {
            let sql = sql
                .replace("{int}", dialect.int)
                .replace("{serial}", dialect.serial)
                .replace("{bytes}", dialect.bytes);
            (done + 1, sql)
        })
}
