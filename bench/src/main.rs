//! Run with `cargo run --release -p toolgate-bench` (`-- --seconds N` to measure each run longer,
//! `-- --rounds N` for more runs of each server, `-- --only stdio` for the rows of one transport).
//!
//! Serves the same trivial tool (`add(a, b)`) from toolgate, from rmcp's own `#[tool_router]` macros, from
//! the official TypeScript SDK, and from a bare responder (the ceiling), and drives all of them with the
//! same load generator in one run: Streamable HTTP stateless with JSON answers, stateful with sessions and
//! SSE, and stdio, with 1 and 16 requests in flight, and `tools/list` of 1,001 tools. Prints calls per
//! second (the median of three runs, taken in turn), the ratios, and each server's peak resident memory. Each server runs as a child process (this
//! binary with `--serve`, or Node), the load in this process. The bare stdio responder reads and writes on
//! the reactor and flushes only when no request is waiting, so it is a true ceiling for stdio.

mod load;
mod servers;

use std::time::Duration;

use load::{Measured, Workload};
use servers::{Kind, Transport};

/// The rows: transport, request, requests in flight.
const ROWS: [(Transport, Workload, usize); 8] = [
    (Transport::Stateless, Workload::Call, 1),
    (Transport::Stateless, Workload::Call, 16),
    (Transport::Stateful, Workload::Call, 1),
    (Transport::Stateful, Workload::Call, 16),
    (Transport::Stdio, Workload::Call, 1),
    (Transport::Stdio, Workload::Call, 16),
    (Transport::Stateless, Workload::List(1000), 1),
    (Transport::Stdio, Workload::List(1000), 1),
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, transport, kind, tools] = args.as_slice()
        && flag == "--serve"
    {
        let kind = Kind::parse(kind).ok_or("unknown server")?;
        let transport = Transport::parse(transport).ok_or("unknown transport")?;
        servers::serve(kind, transport, tools.parse()?).await?;
        return Ok(());
    }
    let option = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).cloned()
    };
    let seconds: u64 = option("--seconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let rounds: usize = option("--rounds").and_then(|s| s.parse().ok()).unwrap_or(3);
    let only = option("--only");
    let measure = Duration::from_secs(seconds);
    let typescript = servers::typescript_sdk().is_some();
    if !typescript {
        eprintln!(
            "the TypeScript SDK is not installed (run `bash .ci/run` once): its column is left empty"
        );
    }
    println!(
        "| transport | request | in flight | bare | rmcp | TypeScript SDK | toolgate | ÷ rmcp | ÷ TypeScript | ÷ bare | peak RSS MiB: rmcp / TypeScript / toolgate |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (transport, workload, in_flight) in ROWS {
        if only.as_deref().is_some_and(|o| o != transport.name()) {
            continue;
        }
        // Each server in turn, `rounds` times, so that a slow moment of the machine falls on all alike.
        let mut measured: Vec<Vec<Measured>> = Kind::ALL.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for (kind, runs) in Kind::ALL.into_iter().zip(&mut measured) {
                if kind != Kind::Typescript || typescript {
                    runs.push(load::run(kind, transport, workload, in_flight, measure).await?);
                }
            }
        }
        let runs: Vec<Option<Measured>> = measured.into_iter().map(Measured::median).collect();
        let [Some(bare), Some(rmcp), ts, Some(toolgate)] = runs.as_slice() else {
            unreachable!("every server but the TypeScript SDK's runs")
        };
        let request = match workload {
            Workload::Call => "tools/call".to_owned(),
            Workload::List(tools) => format!("tools/list ({} tools)", tools + 1),
        };
        let ratio = |peer: &Measured| format!("{:.2}", toolgate.rate / peer.rate);
        let missing = || "–".to_owned();
        println!(
            "| {} | {request} | {in_flight} | {:.0} | {:.0} | {} | {:.0} | {} | {} | {} | {:.1} / {} / {:.1} |",
            transport.name(),
            bare.rate,
            rmcp.rate,
            ts.as_ref()
                .map_or_else(missing, |t| format!("{:.0}", t.rate)),
            toolgate.rate,
            ratio(rmcp),
            ts.as_ref().map_or_else(missing, ratio),
            ratio(bare),
            rmcp.peak_mib,
            ts.as_ref()
                .map_or_else(missing, |t| format!("{:.1}", t.peak_mib)),
            toolgate.peak_mib
        );
    }
    Ok(())
}
