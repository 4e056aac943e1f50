//! Clients we did not write drive the shop: the official Python `mcp` SDK (modes `auto` and `legacy`) and the
//! MCP Inspector CLI, over Streamable HTTP and stdio, including a denied call, a validation error and a tool
//! error.
//!
//! `.ci/run` installs them under `~/.cache/toolgate-ci` (or `$TOOLGATE_CI_TOOLS`) and sets
//! `TOOLGATE_REQUIRE_CLIENTS=1`, which turns a missing client into a failure. Without it, these tests say
//! that they skipped and pass.

#[path = "../../../tests/support/postgres.rs"]
#[allow(dead_code)] // shared with the records tests, which use all of it
mod postgres;
#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the browser tests, which use `chromium`
mod real_clients;

use std::path::Path;
use std::process::{Command, Output};

use real_clients::{Served, installed, report};

const SHOP: &str = env!("CARGO_BIN_EXE_example-shop");

fn clients() -> Option<std::path::PathBuf> {
    installed(&["py/bin/python", "npm/node_modules/.bin/mcp-inspector"])
}

fn python(dir: &Path, args: &[&str]) -> Output {
    python_script(dir, "python_client.py", args)
}

fn python_script(dir: &Path, script: &str, args: &[&str]) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    Command::new(dir.join("py/bin/python"))
        .arg(script)
        .args(args)
        .output()
        .expect("python runs")
}

#[test]
fn the_python_sdk_uses_the_shop_over_http_and_stdio() {
    let Some(dir) = clients() else { return };
    let shop = Served::start(SHOP);
    for mode in ["auto", "legacy"] {
        for token in ["viewer-token", "manager-token"] {
            let output = python(&dir, &[mode, "http", &shop.url, token]);
            let what = format!("python {mode} http {token}");
            assert!(output.status.success(), "{}", report(&what, &output));
            assert!(
                String::from_utf8_lossy(&output.stdout).contains("15 passed, 0 failed"),
                "{}",
                report(&what, &output)
            );
        }
        let output = python(&dir, &[mode, "stdio", SHOP, "--stdio"]);
        let what = format!("python {mode} stdio");
        assert!(output.status.success(), "{}", report(&what, &output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("15 passed, 0 failed"),
            "{}",
            report(&what, &output)
        );
    }
}

#[test]
fn the_python_sdk_approves_declines_and_confirms_writes_across_two_processes() {
    let Some(dir) = clients() else { return };
    let db = std::env::temp_dir().join(format!("toolgate-shop-writes-{}.db", std::process::id()));
    let db = db.to_str().expect("a UTF-8 temp path");
    // Started one after the other: the first seeds the shared database.
    let a = Served::start_with(SHOP, &["--db", db]);
    let b = Served::start_with(SHOP, &["--db", db]);
    for (mode, expected) in [
        ("auto", "15 passed, 0 failed"),
        ("legacy", "9 passed, 0 failed"),
    ] {
        let output = python_script(&dir, "python_writes.py", &[mode, &a.url, &b.url]);
        let what = format!("python writes {mode}");
        assert!(output.status.success(), "{}", report(&what, &output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains(expected),
            "{}",
            report(&what, &output)
        );
    }
    drop((a, b));
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{db}{suffix}"));
    }
}

#[test]
fn a_sub_agent_with_a_delegated_token_acts_with_exactly_the_rights_it_was_handed() {
    let Some(dir) = clients() else { return };
    let shop = Served::start(SHOP);
    let output = python_script(&dir, "python_delegation.py", &[&shop.url]);
    let what = "python delegation";
    assert!(output.status.success(), "{}", report(what, &output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("10 passed, 0 failed"),
        "{}",
        report(what, &output)
    );
}

/// Runs the Inspector CLI on `target` (a URL, or a command) with `args`.
fn inspector(dir: &Path, target: &[&str], args: &[&str]) -> Output {
    real_clients::inspector(dir, &[target, args].concat())
}

#[test]
fn the_inspector_cli_uses_the_shop_over_http_and_stdio() {
    let Some(dir) = clients() else { return };
    let shop = Served::start(SHOP);
    let viewer = ["--header", "Authorization: Bearer viewer-token"];
    let http = [shop.url.as_str()];
    let stdio = [SHOP, "--stdio"];

    for target in [&http[..], &stdio[..]] {
        let auth: &[&str] = if target.len() == 1 { &viewer } else { &[] };
        let listed = inspector(
            &dir,
            target,
            &[auth, &["--method", "tools/list", "--strict"]].concat(),
        );
        assert!(
            listed.status.success(),
            "{}",
            report("tools/list --strict", &listed)
        );
        assert!(
            String::from_utf8_lossy(&listed.stdout).contains("\"search_orders\""),
            "{}",
            report("tools/list", &listed)
        );

        let search = [
            "--method",
            "tools/call",
            "--tool-name",
            "search_orders",
            "--tool-arg",
            "query=Lovelace",
        ];
        let found = inspector(&dir, target, &[auth, &search].concat());
        assert!(found.status.success(), "{}", report("search", &found));
        assert!(
            String::from_utf8_lossy(&found.stdout).contains("Ada Lovelace"),
            "{}",
            report("search", &found)
        );
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&found.stdout),
            String::from_utf8_lossy(&found.stderr)
        );
        assert!(
            !said.contains("unknown format"),
            "the Inspector's validator knows every format the schemas use: {}",
            report("search", &found)
        );

        let details = [
            "--method",
            "tools/call",
            "--tool-name",
            "order_details",
            "--tool-arg",
        ];
        let invalid = inspector(&dir, target, &[auth, &details, &["number=RO-3"]].concat());
        assert_eq!(
            invalid.status.code(),
            Some(5),
            "{}",
            report("validation error", &invalid)
        );
        assert!(
            String::from_utf8_lossy(&invalid.stdout).contains("does not match"),
            "{}",
            report("validation", &invalid)
        );

        let missing = inspector(
            &dir,
            target,
            &[auth, &details, &["number=RO-99999"]].concat(),
        );
        assert_eq!(
            missing.status.code(),
            Some(5),
            "{}",
            report("tool error", &missing)
        );
        assert!(String::from_utf8_lossy(&missing.stdout).contains("There is no order RO-99999."));
    }

    let confirm = [
        "--method",
        "tools/call",
        "--tool-name",
        "confirm_order",
        "--tool-arg",
        "number=RO-00003",
    ];
    // The Inspector looks the tool up in the caller's list before calling it; a viewer's list does not have
    // it, so the call is refused without running. (The Python test sees the server answer it as unknown.)
    let denied = inspector(&dir, &http, &[&viewer[..], &confirm].concat());
    assert_eq!(
        denied.status.code(),
        Some(5),
        "{}",
        report("denied", &denied)
    );
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("not found"),
        "{}",
        report("denied", &denied)
    );

    // The README's third step: the manager's write waits; the confirmation sent back runs it, once.
    let manager = ["--header", "Authorization: Bearer manager-token"];
    let waiting = inspector(&dir, &http, &[&manager[..], &confirm].concat());
    let preview: serde_json::Value =
        serde_json::from_slice(&waiting.stdout).expect("the preview result is JSON");
    let text = preview["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("Waiting for approval: Confirm order RO-00003 for Katherine Johnson (56.57 EUR). Nothing has changed yet"),
        "{}",
        report("preview", &waiting)
    );
    let token = preview["_meta"]["io.toolgate/confirmation"]
        .as_str()
        .expect("a confirmation");
    let approval = format!("io.toolgate/confirmation={token}");
    let approve = [&manager[..], &confirm, &["--tool-metadata", &approval]].concat();
    for attempt in ["approved", "approved again"] {
        let done = inspector(&dir, &http, &approve);
        assert!(done.status.success(), "{}", report(attempt, &done));
        let result: serde_json::Value = serde_json::from_slice(&done.stdout).expect("JSON");
        assert_eq!(
            result["structuredContent"]["status"],
            "confirmed",
            "{}",
            report(attempt, &done)
        );
    }

    let anonymous = inspector(&dir, &http, &["--method", "tools/list"]);
    assert!(
        !anonymous.status.success(),
        "{}",
        report("no token", &anonymous)
    );
}

#[test]
fn the_inspector_sees_a_tool_the_operator_disables_vanish_without_a_restart() {
    let Some(dir) = clients() else { return };
    let db = std::env::temp_dir().join(format!("toolgate-shop-operator-{}.db", std::process::id()));
    let db = db.to_str().expect("a UTF-8 path").to_owned();
    disabled_from_a_second_terminal(&dir, &["--db", &db]);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{db}{suffix}"));
    }
}

#[test]
fn on_postgresql_the_inspector_sees_a_tool_the_operator_disables_vanish_without_a_restart() {
    let Some(dir) = clients() else { return };
    let Some(cluster) = postgres::Cluster::start("shop") else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let url = runtime.block_on(cluster.database("shop"));
    disabled_from_a_second_terminal(&dir, &["--store", &url]);
}

/// The shop serving on `store`, a tool disabled by the operator's command in another process on the same
/// store, and the Inspector's list without it.
fn disabled_from_a_second_terminal(dir: &Path, store: &[&str]) {
    let shop = Served::start_with(SHOP, &[store, &["--sync"]].concat());
    let manager = ["--header", "Authorization: Bearer manager-token"];
    let list = || {
        let listed = inspector(
            dir,
            &[shop.url.as_str()],
            &[&manager[..], &["--method", "tools/list"]].concat(),
        );
        assert!(listed.status.success(), "{}", report("tools/list", &listed));
        String::from_utf8_lossy(&listed.stdout).contains("\"ship_order\"")
    };
    assert!(list(), "the manager sees ship_order");

    // A second terminal: the operator's command on the same database.
    let disabled = Command::new(SHOP)
        .args(store)
        .args([
            "toolgate",
            "--actor",
            "ops",
            "tools",
            "disable",
            "ship_order",
        ])
        .output()
        .expect("the operator's command runs");
    assert!(
        disabled.status.success(),
        "{}",
        report("disable", &disabled)
    );
    assert!(String::from_utf8_lossy(&disabled.stdout).contains("ship_order"));

    // The running server picks the change up on its own; give it a few of its 250 ms checks.
    let vanished = (0..40).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(250));
        !list()
    });
    assert!(
        vanished,
        "ship_order is gone from the Inspector's list, without a restart"
    );
}
