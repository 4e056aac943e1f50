//! The official MCP conformance suite against the fixture server: 0.1.16 with `--suite all`, and the
//! 0.2.0 alpha with `--requirements 2025-11-25` and `--requirements 2026-07-28` (expected failures, with
//! their reasons, in `baseline-2026-07-28.yml`).
//!
//! `.ci/run` installs the suite under `~/.cache/toolgate-ci` (or `$TOOLGATE_CI_TOOLS`) and sets
//! `TOOLGATE_REQUIRE_CLIENTS=1`, which turns a missing suite into a failure; without it the test says it
//! skipped and passes.

#[path = "../../../tests/support/real_clients.rs"]
#[allow(dead_code)] // shared with the clients' tests, which use all of it
mod real_clients;

use std::path::Path;
use std::process::Command;

use real_clients::{Served, installed, node_path};

/// Runs the suite of `package` (`npm` or `npm-alpha`) with `args` (`server --url URL ...` or
/// `client --command CMD ...`), and fails with its failed scenarios unless it passes.
fn suite(dir: &Path, package: &str, args: &[&str]) {
    let output_dir = std::env::temp_dir().join(format!(
        "toolgate-conformance-{package}-{}",
        args.join("-").replace(['/', ' '], "_")
    ));
    let output = Command::new(dir.join(package).join("node_modules/.bin/conformance"))
        .args(args)
        .arg("-o")
        .arg(&output_dir)
        .env("PATH", node_path(dir))
        .output()
        .expect("the suite runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let summary: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with('✗') || l.starts_with("Total"))
        .collect();
    assert!(
        output.status.success(),
        "conformance {package} {args:?} failed:\n{}\n--- stderr\n{}",
        summary.join("\n"),
        String::from_utf8_lossy(&output.stderr)
    );
    eprintln!(
        "conformance {package} {args:?}: {}",
        summary.last().unwrap_or(&"?")
    );
}

#[test]
fn the_official_conformance_suite_passes() {
    let needed = [
        "npm/node_modules/.bin/conformance",
        "npm-alpha/node_modules/.bin/conformance",
    ];
    let Some(dir) = installed(&needed) else {
        return;
    };
    let server = Served::start(env!("CARGO_BIN_EXE_example-conformance"));
    let baseline = concat!(env!("CARGO_MANIFEST_DIR"), "/baseline-2026-07-28.yml");
    let url = server.url.as_str();
    suite(&dir, "npm", &["server", "--url", url, "--suite", "all"]);
    suite(
        &dir,
        "npm-alpha",
        &["server", "--url", url, "--requirements", "2025-11-25"],
    );
    suite(
        &dir,
        "npm-alpha",
        &[
            "server",
            "--url",
            url,
            "--requirements",
            "2026-07-28",
            "--expected-failures",
            baseline,
        ],
    );
}

/// Every client scenario of both suite versions against toolgate's client of remote servers
/// (`example-conformance client URL`): those it does not pass yet are listed, each with its reason, in
/// `baseline-client-0.1.yml` and `baseline-client-0.2.yml`, and one of them that starts passing fails the
/// run.
#[test]
fn toolgates_client_passes_every_client_scenario_but_those_listed() {
    let needed = [
        "npm/node_modules/.bin/conformance",
        "npm-alpha/node_modules/.bin/conformance",
    ];
    let Some(dir) = installed(&needed) else {
        return;
    };
    let client = format!("{} client", env!("CARGO_BIN_EXE_example-conformance"));
    for (package, baseline) in [
        ("npm", "baseline-client-0.1.yml"),
        ("npm-alpha", "baseline-client-0.2.yml"),
    ] {
        let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join(baseline);
        let baseline = baseline.to_str().expect("a path in UTF-8");
        let args = ["client", "--command", &client, "--suite", "all"];
        suite(
            &dir,
            package,
            &[&args[..], &["--expected-failures", baseline]].concat(),
        );
    }
}
