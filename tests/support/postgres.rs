//! A real PostgreSQL server for the tests: a throwaway cluster made with `initdb` and run with `pg_ctl` on
//! a free loopback port, as a non-root user (PostgreSQL refuses to run as root). `.ci/run` installs
//! Debian's `postgresql`; without it the tests skip, except in CI (`TOOLGATE_REQUIRE_CLIENTS`).
//!
//! A watchdog process stops the cluster and removes its files when the test binary exits, however it
//! exits.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One cluster of our own.
pub(crate) struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// Who runs the server when the tests run as root.
    user: Option<&'static str>,
}

/// The cluster this test binary shares, started on first use; `None` when PostgreSQL is not installed
/// (and CI does not require it).
pub(crate) fn shared() -> Option<&'static Cluster> {
    static SHARED: OnceLock<Option<Cluster>> = OnceLock::new();
    SHARED.get_or_init(|| Cluster::start("shared")).as_ref()
}

impl Cluster {
    /// Makes and starts a cluster, or says why the test skips.
    pub(crate) fn start(name: &str) -> Option<Cluster> {
        let Some(bin) = binaries() else {
            assert!(
                std::env::var_os("TOOLGATE_REQUIRE_CLIENTS").is_none(),
                "PostgreSQL is not installed (no initdb and pg_ctl); run `bash .ci/run` once"
            );
            eprintln!(
                "skipped: PostgreSQL is not installed (no initdb and pg_ctl; Debian's `postgresql`)"
            );
            return None;
        };
        let dir = std::env::temp_dir().join(format!("toolgate-pg-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for the cluster");
        let user = is_root().then(|| {
            let user = if exists_user("postgres") {
                "postgres"
            } else {
                "nobody"
            };
            run(Command::new("chown").arg(user).arg(&dir));
            user
        });
        let cluster = Cluster {
            bin,
            dir,
            port: free_port(),
            user,
        };
        cluster.watch_parent();
        run(cluster
            .pg("initdb")
            .args([
                "-U",
                "toolgate",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(cluster.data()));
        cluster.up();
        Some(cluster)
    }

    /// The URL of database `database` on this cluster.
    pub(crate) fn url(&self, database: &str) -> String {
        format!("postgres://toolgate@127.0.0.1:{}/{database}", self.port)
    }

    /// A new, empty database, and its URL.
    pub(crate) async fn database(&self, prefix: &str) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("{prefix}_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.execute("postgres", &format!("CREATE DATABASE {name}"))
            .await;
        self.url(&name)
    }

    /// Runs `sql` on `database`, as the cluster's owner.
    pub(crate) async fn execute(&self, database: &str, sql: &str) {
        let (client, connection) = self.connect(database).await;
        client.batch_execute(sql).await.expect("the SQL runs");
        drop(client);
        let _ = connection.await;
    }

    /// The one number `sql` gives on `database`.
    #[allow(dead_code)] // the shop's replica benchmark reads PostgreSQL's counters with it
    pub(crate) async fn number(&self, database: &str, sql: &str) -> i64 {
        let (client, connection) = self.connect(database).await;
        let row = client.query_one(sql, &[]).await.expect("the SQL runs");
        drop(client);
        let _ = connection.await;
        row.get(0)
    }

    /// A client of `database`, and its connection's task, which ends once the client is dropped.
    async fn connect(
        &self,
        database: &str,
    ) -> (
        toolgate::store::postgres::tokio_postgres::Client,
        tokio::task::JoinHandle<()>,
    ) {
        use toolgate::store::postgres::tokio_postgres;
        let (client, connection) =
            tokio_postgres::connect(&self.url(database), tokio_postgres::NoTls)
                .await
                .expect("connects to the test cluster");
        (client, tokio::spawn(async move { drop(connection.await) }))
    }

    /// Starts the server (again).
    pub(crate) fn up(&self) {
        let options = format!(
            // No fsync, for speed: a stopped server loses nothing, since the machine stays up.
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off \
             -c full_page_writes=off",
            self.port
        );
        run(self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-o", &options, "-w", "start"]));
    }

    /// Stops the server at once, as a crash or an outage would.
    pub(crate) fn down(&self) {
        run(self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]));
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A PostgreSQL program, run as the cluster's user.
    fn pg(&self, program: &str) -> Command {
        let program = self.bin.join(program);
        match self.user {
            Some(user) => {
                let mut command = Command::new("runuser");
                command.args(["-u", user, "--"]).arg(program);
                command
            }
            None => Command::new(program),
        }
    }

    /// Stops the cluster and removes it once this process is gone.
    fn watch_parent(&self) {
        let runas = self
            .user
            .map_or(String::new(), |u| format!("runuser -u {u} -- "));
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 0.5; done; \
             {runas}{pg_ctl} -D {data} -m immediate stop >/dev/null 2>&1; rm -rf {dir}",
            pid = std::process::id(),
            pg_ctl = self.bin.join("pg_ctl").display(),
            data = self.data().display(),
            dir = self.dir.display(),
        );
        // In the background of a shell that exits at once, so that nothing waits for the watchdog.
        let started = Command::new("sh")
            .args(["-c", &format!("({script}) </dev/null >/dev/null 2>&1 &")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("starts the cluster's watchdog");
        assert!(started.success());
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where `initdb` and `pg_ctl` are: `$TOOLGATE_PG_BIN`, Debian's `/usr/lib/postgresql/<newest>/bin`,
/// or `PATH`.
fn binaries() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").exists() && dir.join("pg_ctl").exists();
    if let Some(dir) = std::env::var_os("TOOLGATE_PG_BIN").map(PathBuf::from) {
        return has_both(&dir).then_some(dir);
    }
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|dir| has_both(dir))
        .collect();
    debian.sort_by_key(|dir| {
        dir.parent()
            .and_then(|v| v.file_name()?.to_str()?.parse::<u32>().ok())
    });
    debian
        .pop()
        .or_else(|| std::env::split_paths(&std::env::var_os("PATH")?).find(|dir| has_both(dir)))
}

fn run(command: &mut Command) {
    let output = command.output().expect("runs a PostgreSQL program");
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

fn exists_user(name: &str) -> bool {
    Command::new("id")
        .arg(name)
        .output()
        .is_ok_and(|o| o.status.success())
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
