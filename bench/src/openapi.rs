//! What turning a large real OpenAPI document into tools costs: GitHub's published description
//! (`@octokit/openapi`, 1,223 operations), converted and registered in a child process of its own, whose
//! wall time and peak resident memory are read; the median of the runs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use toolgate::Registry;
use toolgate::openapi::OpenApi;

use crate::result;

/// Where `.ci/run` puts GitHub's published description.
const GITHUB: &str = "npm-api/node_modules/@octokit/openapi/generated/api.github.com.json";

/// The document, where it is installed.
pub(crate) fn github() -> Option<PathBuf> {
    let tools = std::env::var_os("TOOLGATE_CI_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/toolgate-ci"))
        })?;
    Some(tools.join(GITHUB)).filter(|path| path.exists())
}

/// `--convert PATH` in the child: reads, converts and registers the document, and prints its tools,
/// the time that took and the process's peak resident memory in KiB.
pub(crate) fn convert(path: &Path) -> result::Result<()> {
    let started = Instant::now();
    let text = std::fs::read_to_string(path)?;
    let converted = OpenApi::from_json("github", &text, "https://api.github.com")?
        .public()
        .tools()?;
    let tools = converted.tools.len();
    let registry = Registry::builder()
        .compiled_tools(std::iter::empty::<&str>())
        .tools(converted.tools)
        .build()?;
    let took = started.elapsed();
    drop(registry);
    let status = std::fs::read_to_string("/proc/self/status")?;
    let peak = (status.lines())
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    println!("{tools} {} {peak}", took.as_micros());
    Ok(())
}

/// The table: `rounds` conversions, each in a new process.
pub(crate) fn table(rounds: usize) -> result::Result<()> {
    let Some(path) = github() else {
        eprintln!(
            "GitHub's OpenAPI document is not installed (run `bash .ci/run` once): no conversion table"
        );
        return Ok(());
    };
    let mut runs = Vec::new();
    for _ in 0..rounds {
        let output = Command::new(std::env::current_exe()?)
            .arg("--convert")
            .arg(&path)
            .output()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let fields: Vec<u64> = text
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        if let [tools, micros, peak] = fields[..] {
            runs.push((tools, Duration::from_micros(micros), peak));
        }
    }
    runs.sort_by_key(|run| run.1);
    let Some((tools, took, peak)) = runs.get(runs.len() / 2) else {
        return Err("no conversion finished".into());
    };
    println!();
    println!(
        "| document | operations served as tools | read, converted and registered | peak RSS MiB |"
    );
    println!("|---|---:|---:|---:|");
    println!(
        "| GitHub's REST API (`@octokit/openapi` 23.0.2, 13 MB) | {tools} | {:.0} ms | {:.1} |",
        took.as_secs_f64() * 1000.0,
        *peak as f64 / 1024.0
    );
    Ok(())
}
