//! Three stateless shop replicas on one PostgreSQL, behind Debian's nginx with round-robin and no
//! affinity, started from the shop's own `deploy/` files and driven by the official Python `mcp` SDK
//! (`tests/clients/python_replicas.py`): a write previewed on one replica runs once when approved on
//! another, replays run nothing anywhere, a ceiling holds across replicas, a tool disabled on one vanishes
//! from all three, concurrent approvals on three replicas write once, and a replica killed in the middle of
//! a write loses neither the write nor its approval.
//!
//! It needs PostgreSQL, nginx and the Python SDK, which `.ci/run` installs; without one it says that it
//! skipped, except in CI (`TOOLGATE_REQUIRE_CLIENTS`). Signed in with OAuth, the replicas agree on
//! their metadata, on the tokens they accept, and on a grant an operator changes while they serve.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../../../tests/support/oidc_provider.rs"]
#[allow(dead_code)] // shared with the OAuth tests, which use all of it
mod oidc_provider;
#[path = "../../../tests/support/postgres.rs"]
#[allow(dead_code)] // shared with the records tests, which use all of it
mod postgres;
#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the clients tests
mod real_clients;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use real_clients::{Served, installed};

const SHOP: &str = env!("CARGO_BIN_EXE_example-shop");

/// The shop's deployment files.
fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

/// nginx, if installed; otherwise the test skips (or fails in CI).
fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("TOOLGATE_REQUIRE_CLIENTS").is_none(),
            "nginx is not installed; run `bash .ci/run` once"
        );
        eprintln!("skipped: nginx is not installed (Debian's `nginx`)");
    }
    found
}

/// The variables of `deploy/replica.env`, with this test's database, orders file and address.
fn replica_env(store: &str, orders: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(deploy().join("replica.env")).expect("replica.env");
    let mut env: Vec<(String, String)> = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#') && line.contains('='))
        .filter_map(|line| line.split_once('='))
        .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
        .collect();
    for (key, value) in &mut env {
        match key.as_str() {
            "SHOP_STORE" => *value = store.to_owned(),
            "SHOP_DB" => *value = orders.display().to_string(),
            _ => {}
        }
    }
    assert!(
        env.iter()
            .any(|(key, value)| key == "SHOP_STATELESS" && value == "true"),
        "replicas serve statelessly"
    );
    env
}

/// A free loopback port.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

/// nginx on `deploy/nginx.conf`, with the replicas' and its own ports put in; stopped when dropped.
struct Nginx {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Nginx {
    fn start(binary: &Path, replicas: &[&Served]) -> Nginx {
        Nginx::start_on(binary, replicas, free_port())
    }

    /// As [`start`](Self::start), on `port`.
    fn start_on(binary: &Path, replicas: &[&Served], port: u16) -> Nginx {
        let dir =
            std::env::temp_dir().join(format!("toolgate-nginx-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory for nginx");
        let mut site = std::fs::read_to_string(deploy().join("nginx.conf")).expect("nginx.conf");
        for (i, replica) in replicas.iter().enumerate() {
            let address = replica
                .url
                .trim_start_matches("http://")
                .trim_end_matches("/mcp");
            site = site.replace(&format!("127.0.0.1:808{}", i + 1), address);
        }
        // Fewer replicas than the file lists: the others' lines go.
        let unused: Vec<String> = (replicas.len()..3)
            .map(|i| format!("server 127.0.0.1:808{} ", i + 1))
            .collect();
        site = site
            .lines()
            .filter(|line| !unused.iter().any(|u| line.contains(u.as_str())))
            .collect::<Vec<_>>()
            .join("\n");
        site = site.replace(
            "listen 127.0.0.1:8080;",
            &format!("listen 127.0.0.1:{port};"),
        );
        std::fs::write(dir.join("toolgate.conf"), site).expect("the site");
        // What Debian's /etc/nginx/nginx.conf gives, in this test's directory.
        let main = format!(
            "daemon off;\nworker_processes auto;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  \
             fastcgi_temp_path {d}/fastcgi;\n  uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  \
             include {d}/toolgate.conf;\n}}\n",
            d = dir.display()
        );
        std::fs::write(dir.join("nginx.conf"), main).expect("the main configuration");
        let child = Command::new(binary)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let up = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(25));
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
        assert!(up, "nginx listens on port {port}; its log:\n{log}");
        Nginx {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            dir,
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // TERM, not KILL: the master stops its workers before it exits.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// PostgreSQL, the shop's orders file, and replicas started from `deploy/replica.env`.
struct Deployment {
    cluster: postgres::Cluster,
    /// The database's name on the cluster.
    database: String,
    orders: PathBuf,
    replicas: Vec<Served>,
    /// The replicas' variables.
    env: Vec<(String, String)>,
}

impl Deployment {
    /// `replicas` shop replicas on a fresh database, its tools recorded first; `None` (the test skips)
    /// when PostgreSQL is not installed.
    fn start(runtime: &tokio::runtime::Runtime, replicas: usize) -> Option<Deployment> {
        Deployment::start_with(runtime, replicas, "replicas", &[])
    }

    /// As [`start`](Self::start), on the database `name`, with `extra` variables over the file's.
    fn start_with(
        runtime: &tokio::runtime::Runtime,
        replicas: usize,
        name: &str,
        extra: &[(&str, &str)],
    ) -> Option<Deployment> {
        let cluster = postgres::Cluster::start(name)?;
        let store = runtime.block_on(cluster.database(name));
        let database = store.rsplit('/').next().expect("a database").to_owned();
        let orders =
            std::env::temp_dir().join(format!("toolgate-{name}-{}.db", std::process::id()));
        let mut env = replica_env(&store, &orders);
        for (key, value) in extra {
            env.retain(|(k, _)| k != key);
            env.push(((*key).to_owned(), (*value).to_owned()));
        }
        let shop = || shop_with(&env);
        // The operator records the tools once, before the first replica serves.
        let synced = shop()
            .args(["toolgate", "--actor", "ops", "sync", "--apply"])
            .output()
            .expect("the sync runs");
        assert!(synced.status.success(), "{synced:?}");
        // One after the other: the first seeds the shared orders file.
        let replicas = (0..replicas).map(|_| Served::spawn(shop())).collect();
        Some(Deployment {
            cluster,
            database,
            orders,
            replicas,
            env,
        })
    }

    /// Runs an operator's command (`toolgate ARGS...`) on the replicas' database, as `ops`.
    fn operate(&self, args: &[&str]) -> String {
        let output = shop_with(&self.env)
            .args(["toolgate", "--actor", "ops"])
            .args(args)
            .output()
            .expect("the command runs");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

/// The shop with the replicas' variables `env`, in `deploy/`.
fn shop_with(env: &[(String, String)]) -> Command {
    let mut command = Command::new(SHOP);
    command.current_dir(deploy()).envs(env.iter().cloned());
    command
}

impl Drop for Deployment {
    fn drop(&mut self) {
        self.replicas.clear();
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.orders.display()));
        }
    }
}

#[test]
fn three_replicas_behind_nginx_hold_what_one_server_holds() {
    let Some(clients) = installed(&["py/bin/python"]) else {
        return;
    };
    let Some(nginx) = nginx() else { return };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let Some(mut deployment) = Deployment::start(&runtime, 3) else {
        return;
    };
    let proxy = Nginx::start(&nginx, &deployment.replicas.iter().collect::<Vec<_>>());

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/python_replicas.py");
    let mut python = Command::new(clients.join("py/bin/python"))
        .arg(script)
        .arg(&proxy.url)
        .args(deployment.replicas.iter().map(|r| r.url.as_str()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python runs");
    let mut answer = python.stdin.take().expect("stdin");
    let mut printed = Vec::new();
    for line in BufReader::new(python.stdout.take().expect("stdout")).lines() {
        let line = line.expect("readable");
        println!("{line}");
        // The script asks for the crash while replica A is in the middle of a write.
        if line == "kill replica A" {
            deployment.replicas[0].kill();
            writeln!(answer, "killed").expect("the script reads");
        }
        printed.push(line);
    }
    let status = python.wait().expect("python ends");
    let printed = printed.join("\n");
    assert!(status.success(), "{printed}");
    assert!(printed.contains(" passed, 0 failed"), "{printed}");
}

/// Three replicas behind nginx sign people in at one authorization server: each publishes the same
/// metadata, naming the address clients reach through nginx; each accepts a token for that address and
/// refuses a viewer's write with the same challenge; and a grant an operator sets on the shared
/// database reaches all three while they serve.
#[test]
fn three_signed_in_replicas_behind_nginx_agree_on_who_may_do_what() {
    let Some(nginx) = nginx() else { return };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}/mcp");
    let Some(provider) = oidc_provider::Provider::start(&public) else {
        return;
    };
    let extra = [
        ("SHOP_OAUTH_ISSUER", provider.issuer.as_str()),
        ("SHOP_PUBLIC_URL", public.as_str()),
        ("SHOP_CONFIG", "signed-in.toml"),
    ];
    let Some(deployment) = Deployment::start_with(&runtime, 3, "signed_in", &extra) else {
        return;
    };
    let proxy = Nginx::start_on(
        &nginx,
        &deployment.replicas.iter().collect::<Vec<_>>(),
        port,
    );
    assert_eq!(proxy.url, public);
    let metadata_url = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let post = |url: &str, token: Option<&str>, tool: &str| {
            let mut request = http
                .post(url)
                .header("accept", "application/json, text/event-stream")
                .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": tool, "arguments": {"number": "RO-00003", "query": "Lovelace"}}}));
            if let Some(token) = token {
                request = request.bearer_auth(token);
            }
            request.send()
        };
        // Every replica, through nginx, publishes the same metadata and the same challenge.
        let mut answered_by = std::collections::BTreeSet::new();
        for _ in 0..6 {
            let response = http.get(&metadata_url).send().await.unwrap();
            answered_by.insert(response.headers()["x-toolgate-replica"].to_str().unwrap().to_owned());
            let metadata: serde_json::Value = response.json().await.unwrap();
            assert_eq!(metadata["resource"], public.as_str());
            assert_eq!(metadata["authorization_servers"][0], provider.issuer.as_str());
            let refused = post(&public, None, "search_orders").await.unwrap();
            assert_eq!(refused.status(), 401);
            let challenge = refused.headers()["www-authenticate"].to_str().unwrap();
            assert!(challenge.contains(&metadata_url), "{challenge}");
        }
        assert_eq!(answered_by.len(), 3, "round-robin reached every replica: {answered_by:?}");

        // A viewer's token for the public address: every replica reads, and refuses her write alike.
        let viewer = provider.token(&public, "orders:read").await;
        for replica in &deployment.replicas {
            let read = post(&replica.url, Some(&viewer), "search_orders").await.unwrap();
            assert_eq!(read.status(), 200, "{}", replica.url);
            let write = post(&replica.url, Some(&viewer), "confirm_order").await.unwrap();
            assert_eq!(write.status(), 403, "{}", replica.url);
            let challenge = write.headers()["www-authenticate"].to_str().unwrap();
            assert!(challenge.contains("scope=\"orders:write\""), "{challenge}");
        }
        // A token for another address is refused by every replica.
        let elsewhere = provider.token("http://127.0.0.1:1/mcp", "orders:read").await;
        for replica in &deployment.replicas {
            let refused = post(&replica.url, Some(&elsewhere), "search_orders").await.unwrap();
            assert_eq!(refused.status(), 401, "{}", replica.url);
        }

        // An operator lets viewers confirm orders: every replica takes it up while serving.
        let set = deployment.operate(&[
            "grants", "set", "scope:orders:read", "orders.view", "orders.manage",
        ]);
        assert!(set.starts_with("`scope:orders:read` grants orders.manage, orders.view."), "{set}");
        for replica in &deployment.replicas {
            let mut status = 0;
            for _ in 0..200 {
                status = post(&replica.url, Some(&viewer), "confirm_order").await.unwrap().status().as_u16();
                if status == 200 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            assert_eq!(status, 200, "{} took up the grant", replica.url);
        }
    });
}

/// How many calls in flight the throughput run keeps.
const IN_FLIGHT: usize = 16;

/// Throughput through nginx with one, two and three replicas, and PostgreSQL round trips per call (its
/// committed transactions: every statement the replicas send in the run commits on its own):
/// measured and printed, never asserted. Run it with
/// `cargo test --release -p example-shop --test replicas -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a test: run it with --ignored"]
fn throughput_through_nginx_with_one_two_and_three_replicas() {
    let Some(nginx) = nginx() else { return };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let Some(deployment) = Deployment::start(&runtime, 3) else {
        return;
    };
    let seconds = std::env::var("TOOLGATE_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let window = std::time::Duration::from_secs(seconds);
    println!(
        "| served by | in flight | order_details (calls/s) | PostgreSQL round trips per call |"
    );
    println!("|---|---:|---:|---:|");
    let direct = &deployment.replicas[0].url;
    let rows = [
        ("one replica, no nginx", None),
        ("nginx, 1 replica", Some(1)),
        ("nginx, 2 replicas", Some(2)),
        ("nginx, 3 replicas", Some(3)),
    ];
    for (label, behind) in rows {
        let proxy = behind.map(|n| {
            Nginx::start(
                &nginx,
                &deployment.replicas.iter().take(n).collect::<Vec<_>>(),
            )
        });
        let url = proxy.as_ref().map_or(direct, |p| &p.url).clone();
        let commits = || {
            runtime.block_on(deployment.cluster.number(
                &deployment.database,
                "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
            ))
        };
        let before = commits();
        let calls = runtime.block_on(load(&url, window));
        // The counters are published with a delay; the audit's writer flushes in the background.
        std::thread::sleep(std::time::Duration::from_secs(1));
        let transactions = commits() - before;
        println!(
            "| {label} | {IN_FLIGHT} | {:.0} | {:.3} |",
            calls as f64 / window.as_secs_f64(),
            transactions as f64 / calls.max(1) as f64
        );
    }
}

/// Calls of `order_details` made in `window` with [`IN_FLIGHT`] in flight, each answer checked.
async fn load(url: &str, window: std::time::Duration) -> u64 {
    let http = reqwest::Client::new();
    let warm = tokio::time::Instant::now() + std::time::Duration::from_secs(1);
    let end = warm + window;
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|worker| {
            let (http, url) = (http.clone(), url.to_owned());
            tokio::spawn(async move {
                let mut counted = 0;
                for id in 0.. {
                    let now = tokio::time::Instant::now();
                    if now >= end {
                        break;
                    }
                    let body = format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"order_details","arguments":{{"number":"RO-{:05}"}}}}}}"#,
                        worker + 1
                    );
                    let answer = http
                        .post(&url)
                        .bearer_auth("viewer-token")
                        .header("content-type", "application/json")
                        .header("accept", "application/json, text/event-stream")
                        .header("mcp-protocol-version", "2025-11-25")
                        .body(body)
                        .send()
                        .await
                        .expect("the call is answered");
                    assert!(answer.status().is_success(), "{}", answer.status());
                    let text = answer.text().await.expect("a body");
                    assert!(text.contains("\"customer\""), "{text}");
                    if now >= warm {
                        counted += 1;
                    }
                }
                counted
            })
        })
        .collect();
    let mut total = 0;
    for worker in workers {
        total += worker.await.expect("the worker finishes");
    }
    total
}
