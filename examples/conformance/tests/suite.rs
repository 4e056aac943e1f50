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

fn suite(dir: &Path, package: &str, url: &str, args: &[&str]) {
    let output_dir = std::env::temp_dir().join(format!(
        "toolgate-conformance-{package}-{}",
        args.join("-").replace('/', "_")
    ));
    let output = Command::new(dir.join(package).join("node_modules/.bin/conformance"))
        .args(["server", "--url", url])
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
    suite(&dir, "npm", &server.url, &["--suite", "all"]);
    suite(
        &dir,
        "npm-alpha",
        &server.url,
        &["--requirements", "2025-11-25"],
    );
    suite(
        &dir,
        "npm-alpha",
        &server.url,
        &[
            "--requirements",
            "2026-07-28",
            "--expected-failures",
            baseline,
        ],
    );
}

/// The client scenarios toolgate's remote-server client passes so far, on both suite versions: the
/// handshake, a tool call, signing in by the client credentials grant (MCP's extension), and on the
/// alpha the 2026-07-28 request metadata, standard headers and a schema's `$ref` kept as it is. The
/// others (signing a person in, elicitation defaults, SSE retry, custom and invalid headers, request
/// state) are not yet run here.
#[test]
fn toolgates_client_passes_the_client_scenarios_it_speaks() {
    let needed = [
        "npm/node_modules/.bin/conformance",
        "npm-alpha/node_modules/.bin/conformance",
    ];
    let Some(dir) = installed(&needed) else {
        return;
    };
    let client = format!("{} client", env!("CARGO_BIN_EXE_example-conformance"));
    let both = ["initialize", "tools_call", "auth/client-credentials-basic"];
    let alpha = [
        "request-metadata",
        "http-standard-headers",
        "json-schema-ref-no-deref",
    ];
    let runs = (both.iter().map(|s| ("npm", *s)))
        .chain(both.iter().chain(&alpha).map(|s| ("npm-alpha", *s)));
    for (package, scenario) in runs {
        let output = Command::new(dir.join(package).join("node_modules/.bin/conformance"))
            .args(["client", "--command", &client, "--scenario", scenario])
            .env("PATH", node_path(&dir))
            .output()
            .expect("the suite runs");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success() && said.contains("OVERALL: PASSED"),
            "conformance {package} client {scenario}:\n{}\n{said}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}
