//! The Inspector, a client we did not write, uses the gateway: the shop's tools and two real remote
//! servers (`server-everything`, and notes kept by a Python SDK server) under one policy, a remote write
//! approved once.

#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the shop's tests, which use all of it
mod real_clients;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use real_clients::{Served, installed, node_path, report};

const GATEWAY: &str = env!("CARGO_BIN_EXE_example-gateway");

/// The gateway's configuration with the servers `.ci/run` installed.
fn config(dir: &Path) -> PathBuf {
    let everything = dir.join("npm-servers/node_modules/.bin/mcp-server-everything");
    let notes = Path::new(env!("CARGO_MANIFEST_DIR")).join("servers/notes.py");
    let text = format!(
        "[servers.everything]\ncommand = {everything:?}\npublic = true\ntrusted = true\nenv = {{ PATH = {path:?} }}\n\
         [servers.notes]\ncommand = {python:?}\nargs = [{notes:?}]\nability = \"orders.view\"\ntrusted = true\n\
         approve_writes = true\n[servers.notes.tools.clear_notes]\nenabled = false\n",
        path = node_path(dir),
        python = dir.join("py/bin/python"),
    );
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gateway.toml");
    std::fs::write(&file, text).expect("the configuration written");
    file
}

fn inspector(dir: &Path, url: &str, token: &str, args: &[&str]) -> Output {
    let header = format!("Authorization: Bearer {token}");
    real_clients::inspector(dir, &[&[url, "--header", &header][..], args].concat())
}

fn listed(dir: &Path, url: &str, token: &str) -> String {
    let output = inspector(dir, url, token, &["--method", "tools/list"]);
    assert!(output.status.success(), "{}", report("tools/list", &output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The result of a call; the Inspector exits with 5 for a result that is not a success (a preview too).
fn call(dir: &Path, url: &str, token: &str, tool: &str, args: &[&str]) -> serde_json::Value {
    let mut line = vec!["--method", "tools/call", "--tool-name", tool];
    line.extend(args);
    let output = inspector(dir, url, token, &line);
    serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{}", report(tool, &output)))
}

#[test]
fn the_inspector_uses_the_shop_and_two_remote_servers_under_one_policy() {
    let Some(dir) = installed(&[
        "py/bin/python",
        "npm/node_modules/.bin/mcp-inspector",
        "npm-servers/node_modules/.bin/mcp-server-everything",
    ]) else {
        return;
    };
    let mut command = Command::new(GATEWAY);
    command.args(["--config", config(&dir).to_str().unwrap()]);
    let gateway = Served::spawn(command);
    let url = gateway.url.as_str();

    // The remote servers are listed in the background; wait until both are served.
    let mut tools = String::new();
    for _ in 0..60 {
        tools = listed(&dir, url, "manager-token");
        if tools.contains("\"everything_echo\"") && tools.contains("\"notes_add_note\"") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    for name in [
        "search_orders",
        "everything_echo",
        "everything_get-sum",
        "notes_list_notes",
        "notes_add_note",
    ] {
        assert!(tools.contains(&format!("\"{name}\"")), "{name} in {tools}");
    }
    assert!(
        !tools.contains("notes_clear_notes"),
        "switched off by the operator"
    );

    let echoed = call(
        &dir,
        url,
        "viewer-token",
        "everything_echo",
        &["--tool-arg", "message=hello"],
    );
    assert!(
        echoed["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("hello"),
        "{echoed}"
    );
    let sum = call(
        &dir,
        url,
        "viewer-token",
        "everything_get-sum",
        &["--tool-arg", "a=2", "--tool-arg", "b=40"],
    );
    assert!(
        sum["content"][0]["text"].as_str().unwrap().contains("42"),
        "{sum}"
    );

    // The remote write waits for approval; the confirmation sent back runs it once.
    let note = ["--tool-arg", "text=Call Ada"];
    let waiting = call(&dir, url, "manager-token", "notes_add_note", &note);
    let text = waiting["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with(r#"Waiting for approval: Run `add_note` on the remote server `notes` with {"text":"Call Ada"}"#),
        "{waiting}"
    );
    let empty = call(&dir, url, "viewer-token", "notes_list_notes", &[]);
    assert_eq!(
        empty["content"][0]["text"], "No notes yet.",
        "nothing ran before the approval"
    );
    let token = waiting["_meta"]["io.toolgate/confirmation"]
        .as_str()
        .expect("a confirmation");
    let approval = format!("io.toolgate/confirmation={token}");
    for _ in ["approved", "approved again"] {
        let done = call(
            &dir,
            url,
            "manager-token",
            "notes_add_note",
            &[&note[..], &["--tool-metadata", &approval]].concat(),
        );
        assert_eq!(done["content"][0]["text"], "Note 1 added.", "{done}");
    }
    let notes = call(&dir, url, "viewer-token", "notes_list_notes", &[]);
    assert_eq!(
        notes["content"][0]["text"], "1. Call Ada",
        "the write ran once"
    );
}
