//! Run with `cargo run --release -p toolgate-bench`.
//!
//! Serves the same trivial tool (`add(a, b)`) from toolgate, from rmcp's own `#[tool_router]` macros, and
//! from a bare responder (the ceiling), and drives all three with the same load generator in one run:
//! Streamable HTTP (stateless, JSON) and stdio, with 1 and 16 requests in flight. Prints calls per second and
//! the ratios, and each server's peak resident memory. Each server runs as a child process (this binary with
//! `--serve`), the load in this process. The bare stdio responder reads and writes on the reactor and
//! flushes only when no request is waiting, so it is a true ceiling for stdio.

mod load;
mod servers;

use std::time::Duration;

use servers::Kind;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, transport, kind] = args.as_slice()
        && flag == "--serve"
    {
        let kind = Kind::parse(kind).ok_or("unknown server")?;
        match transport.as_str() {
            "http" => servers::serve_http(kind).await?,
            _ => servers::serve_stdio(kind).await?,
        }
        return Ok(());
    }
    let seconds: u64 = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1)?.parse().ok())
        .unwrap_or(3);
    let measure = Duration::from_secs(seconds);
    println!(
        "| transport | in flight | bare (calls/s) | rmcp (calls/s) | toolgate (calls/s) | toolgate ÷ rmcp | toolgate ÷ bare | peak RSS rmcp / toolgate (MiB) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for transport in ["http", "stdio"] {
        for in_flight in [1, 16] {
            let mut runs = Vec::new();
            for kind in Kind::ALL {
                runs.push(load::run(transport, kind, in_flight, measure).await?);
            }
            let (bare, rmcp, toolgate) = (&runs[0], &runs[1], &runs[2]);
            println!(
                "| {transport} | {in_flight} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {:.1} / {:.1} |",
                bare.rate,
                rmcp.rate,
                toolgate.rate,
                toolgate.rate / rmcp.rate,
                toolgate.rate / bare.rate,
                rmcp.peak_mib,
                toolgate.peak_mib
            );
        }
    }
    Ok(())
}
