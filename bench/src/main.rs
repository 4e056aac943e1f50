//! Run with `cargo run --release -p toolgate-bench` (`-- --seconds N` to measure each run longer,
//! `-- --rounds N` for more runs of each server, `-- --only stdio` for the rows of one transport (`-- --only openapi` for the conversion alone),
//! `-- --rows 1,5` for some rows (counted from 0), `-- --servers rmcp,toolgate` for some of the servers, `-- --beside PATH` to add the toolgate of another
//! build of this benchmark as a column, `-- --memory N` to serve N calls for the memory table instead of
//! 100,000, `-- --no-memory` to skip it).
//!
//! Serves the same tools from toolgate, from rmcp's own `#[tool_router]` macros, from the official
//! TypeScript SDK, and from a bare responder (the ceiling), and drives all of them with the same load
//! generator in one run: Streamable HTTP stateless with JSON answers, stateful with sessions and SSE, and
//! stdio; with 1 and 16 requests in flight; `add(a, b)`, the shop's `search_orders` (an SQLite query),
//! `add` among 1,000 more tools, and `tools/list` of 1,001 tools. Prints calls per second (the median
//! of the runs, taken in turn), the ratios, and each server's peak resident memory; then each server's
//! memory after 100,000 calls and after three times as many. The sign-in table serves `add` from toolgate
//! without sign-in, with a static token and with a JWT access token, and prints what each costs; the
//! gateway table serves `add` through toolgate as a gateway in front of toolgate, against the same call
//! made straight to it (`-- --no-gateway` skips it); the OpenAPI table converts GitHub's published REST
//! API description into tools and reports the time and memory that takes (`-- --no-openapi` skips it). Each server runs as a child process (this
//! binary with `--serve`, or Node); the load runs on one thread of this process, as `wrk -t1` would.

mod gateway;
mod load;
mod openapi;
mod result;
mod servers;
mod signin;

use std::path::PathBuf;
use std::time::Duration;

use load::{Load, Measured, Until, Workload};
use servers::{Kind, Transport};
use signin::SignIn;

/// The rows: transport, request, extra tools, requests in flight.
const ROWS: [(Transport, Workload, usize, usize); 18] = [
    (Transport::Stateless, Workload::Add, 0, 1),
    (Transport::Stateless, Workload::Add, 0, 16),
    (Transport::Stateful, Workload::Add, 0, 1),
    (Transport::Stateful, Workload::Add, 0, 16),
    (Transport::Stdio, Workload::Add, 0, 1),
    (Transport::Stdio, Workload::Add, 0, 16),
    (Transport::Stateless, Workload::Search, 0, 1),
    (Transport::Stateless, Workload::Search, 0, 16),
    (Transport::Stdio, Workload::Search, 0, 1),
    (Transport::Stdio, Workload::Search, 0, 16),
    (Transport::Stateless, Workload::Add, 1000, 16),
    (Transport::Stdio, Workload::Add, 1000, 16),
    (Transport::Stateless, Workload::List, 1000, 1),
    (Transport::Stdio, Workload::List, 1000, 1),
    (Transport::Stateless, Workload::AddNegotiating, 0, 1),
    (Transport::Stateless, Workload::AddNegotiating, 0, 16),
    (Transport::Stdio, Workload::AddNegotiating, 0, 1),
    (Transport::Stdio, Workload::AddNegotiating, 0, 16),
];

/// The memory rows: transport, requests in flight.
const MEMORY: [(Transport, usize); 3] = [
    (Transport::Stateless, 16),
    (Transport::Stateful, 16),
    (Transport::Stdio, 16),
];

fn main() -> result::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, path] = args.as_slice()
        && flag == "--convert"
    {
        return openapi::convert(std::path::Path::new(path));
    }
    if let [flag, transport, kind, tools] = args.as_slice()
        && flag == "--serve"
    {
        let kind = Kind::parse(kind).ok_or("unknown server")?;
        let transport = Transport::parse(transport).ok_or("unknown transport")?;
        let tools = tools.parse()?;
        // Every server on tokio's default runtime: a worker thread per core.
        let runtime = tokio::runtime::Runtime::new()?;
        return runtime.block_on(servers::serve(kind, transport, tools));
    }
    // The load on one thread, as `wrk -t1` drives it, leaving the other cores to the server.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(measure(&args))
}

async fn measure(args: &[String]) -> result::Result<()> {
    let option = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).cloned()
    };
    let seconds: u64 = option("--seconds")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let rounds: usize = option("--rounds").and_then(|s| s.parse().ok()).unwrap_or(3);
    let only = option("--only");
    let rows: Option<Vec<usize>> =
        option("--rows").map(|r| r.split(',').filter_map(|n| n.parse().ok()).collect());
    let calls: u64 = option("--memory")
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let beside = option("--beside").map(PathBuf::from);
    let mut kinds = vec![Kind::Bare, Kind::Rmcp];
    if servers::typescript_sdk().is_some() {
        kinds.push(Kind::Typescript);
    } else {
        eprintln!(
            "the TypeScript SDK is not installed (run `bash .ci/run` once): its column is left empty"
        );
    }
    kinds.extend(beside.map(Kind::Beside));
    kinds.push(Kind::Toolgate);
    if let Some(servers) = option("--servers") {
        let key = |k: &Kind| match k {
            Kind::Beside(_) => "beside",
            other => other.name(),
        };
        kinds.retain(|k| servers.split(',').any(|s| s == key(k)));
    }
    let window = Until::Elapsed(Duration::from_secs(seconds));

    println!(
        "| transport | request | in flight | bare | rmcp | TypeScript SDK |{} toolgate | ÷ rmcp | ÷ TypeScript | ÷ bare |{} peak RSS MiB: rmcp / TypeScript / toolgate |",
        beside_column(&kinds, " toolgate beside |"),
        beside_column(&kinds, " ÷ beside |"),
    );
    let aligned = beside_column(&kinds, "---:|");
    println!("|---|---|---:|---:|---:|---:|{aligned}---:|---:|---:|---:|{aligned}---:|");
    for (n, (transport, workload, tools, in_flight)) in ROWS.into_iter().enumerate() {
        if only.as_deref().is_some_and(|o| o != transport.name())
            || rows.as_ref().is_some_and(|r| !r.contains(&n))
        {
            continue;
        }
        let load = Load {
            transport,
            workload,
            tools,
            in_flight,
        };
        // Each server in turn, `rounds` times, so that a slow moment of the machine falls on all alike.
        let mut measured: Vec<Vec<Measured>> = kinds.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for (kind, runs) in kinds.iter().zip(&mut measured) {
                if *kind == Kind::Typescript && !workload.typescript_serves() {
                    continue;
                }
                runs.push(load::run(kind, load, window).await?);
            }
        }
        let medians: Vec<Option<Measured>> = measured.into_iter().map(Measured::median).collect();
        let row = Row::new(&kinds, &medians);
        let request = match workload {
            Workload::Add if tools > 0 => format!("tools/call add (of {} tools)", tools + 2),
            Workload::Add => "tools/call add".to_owned(),
            Workload::Search => "tools/call search_orders (SQLite)".to_owned(),
            Workload::List => format!("tools/list ({} tools)", tools + 2),
            Workload::AddNegotiating => "tools/call add (2026-07-28)".to_owned(),
            Workload::AddThroughGateway => "tools/call add, through a gateway".to_owned(),
        };
        println!(
            "| {} | {request} | {in_flight} | {} | {} | {} |{} {} | {} | {} | {} |{} {} / {} / {} |",
            transport.name(),
            row.rate(&Kind::Bare),
            row.rate(&Kind::Rmcp),
            row.rate(&Kind::Typescript),
            row.beside(|kind| format!(" {} |", row.rate(kind))),
            row.rate(&Kind::Toolgate),
            row.ratio(&Kind::Rmcp),
            row.ratio(&Kind::Typescript),
            row.ratio(&Kind::Bare),
            row.beside(|kind| format!(" {} |", row.ratio(kind))),
            row.peak(&Kind::Rmcp),
            row.peak(&Kind::Typescript),
            row.peak(&Kind::Toolgate),
        );
    }
    if !args.iter().any(|a| a == "--no-signin") && only.as_deref().is_none_or(|o| o == "stateless")
    {
        signing_in(rounds, window).await?;
    }
    if !args.iter().any(|a| a == "--no-gateway") && only.as_deref().is_none_or(|o| o == "stateless")
    {
        through_gateway(rounds, window).await?;
    }
    if !args.iter().any(|a| a == "--no-openapi") && only.as_deref().is_none_or(|o| o == "openapi") {
        openapi::table(rounds)?;
    }
    if args.iter().any(|a| a == "--no-memory") {
        return Ok(());
    }
    memory(&kinds, calls, only.as_deref()).await
}

/// What signing in costs: `add` over stateless HTTP from toolgate without sign-in, with a static token,
/// and with a JWT access token (checked once, then found among the tokens already checked); each in
/// turn, `rounds` times. The last column is the JWT call's cost over the static token's (their rates
/// inverted).
async fn signing_in(rounds: usize, window: Until) -> result::Result<()> {
    let kinds = [
        Kind::Toolgate,
        Kind::SignedIn(SignIn::StaticToken),
        Kind::SignedIn(SignIn::Jwt),
    ];
    println!();
    println!(
        "| transport | request | in flight | toolgate, no sign-in | static token | JWT | static ÷ none, cost | JWT ÷ static, cost |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for in_flight in [1, 16] {
        let load = Load {
            transport: Transport::Stateless,
            workload: Workload::Add,
            tools: 0,
            in_flight,
        };
        let mut measured: Vec<Vec<Measured>> = kinds.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for (kind, runs) in kinds.iter().zip(&mut measured) {
                runs.push(load::run(kind, load, window).await?);
            }
        }
        let rates: Vec<f64> = measured
            .into_iter()
            .map(|runs| Measured::median(runs).map_or(f64::NAN, |m| m.rate))
            .collect();
        println!(
            "| stateless | tools/call add | {in_flight} | {:.0} | {:.0} | {:.0} | {:.3} | {:.3} |",
            rates[0],
            rates[1],
            rates[2],
            rates[0] / rates[1],
            rates[1] / rates[2],
        );
    }
    Ok(())
}

/// The gateway's path: `add` over stateless HTTP straight to toolgate, and through toolgate as a gateway
/// in front of it (the remote's tool served under the gateway's policy, the call forwarded over
/// Streamable HTTP); each in turn, `rounds` times.
async fn through_gateway(rounds: usize, window: Until) -> result::Result<()> {
    println!();
    println!(
        "| transport | request | in flight | straight to toolgate | through the gateway | gateway ÷ straight |"
    );
    println!("|---|---|---:|---:|---:|---:|");
    for in_flight in [1, 16] {
        let load = |workload| Load {
            transport: Transport::Stateless,
            workload,
            tools: 0,
            in_flight,
        };
        let runs = [
            (Kind::Toolgate, load(Workload::Add)),
            (Kind::Gateway, load(Workload::AddThroughGateway)),
        ];
        let mut measured: Vec<Vec<Measured>> = runs.iter().map(|_| Vec::new()).collect();
        for _ in 0..rounds {
            for ((kind, load), each) in runs.iter().zip(&mut measured) {
                each.push(load::run(kind, *load, window).await?);
            }
        }
        let rates: Vec<f64> = measured
            .into_iter()
            .map(|runs| Measured::median(runs).map_or(f64::NAN, |m| m.rate))
            .collect();
        println!(
            "| stateless | tools/call add | {in_flight} | {:.0} | {:.0} | {:.2} |",
            rates[0],
            rates[1],
            rates[1] / rates[0],
        );
    }
    Ok(())
}

/// Each server's memory after `calls` calls of `add` with 16 in flight, and after three times as many
/// in a second run (the soak): peak and current resident memory, the growth between the two, and how
/// much of the present memory is the server's own (anonymous) rather than pages of its binary.
async fn memory(kinds: &[Kind], calls: u64, only: Option<&str>) -> result::Result<()> {
    println!();
    println!(
        "| transport | server | calls/s | peak RSS MiB after {calls} calls | after {} calls: peak / now | growth MiB | of now, private MiB |",
        calls * 3
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (transport, in_flight) in MEMORY {
        if only.is_some_and(|o| o != transport.name()) {
            continue;
        }
        let load = Load {
            transport,
            workload: Workload::Add,
            tools: 0,
            in_flight,
        };
        // The TypeScript SDK's stateless server makes a server per request: too slow for this many.
        let served = kinds
            .iter()
            .filter(|k| !(**k == Kind::Typescript && transport == Transport::Stateless));
        for kind in served {
            let short = load::run(kind, load, Until::Answered(calls)).await?;
            let soak = load::run(kind, load, Until::Answered(calls * 3)).await?;
            println!(
                "| {} | {} | {:.0} | {:.1} | {:.1} / {:.1} | {:+.1} | {:.1} |",
                transport.name(),
                label(kind),
                short.rate,
                short.peak_mib,
                soak.peak_mib,
                soak.rss_mib,
                soak.peak_mib - short.peak_mib,
                soak.private_mib,
            );
        }
    }
    Ok(())
}

fn label(kind: &Kind) -> &'static str {
    match kind {
        Kind::Beside(_) => "toolgate beside",
        Kind::Typescript => "TypeScript SDK",
        other => other.name(),
    }
}

/// `column` when another toolgate runs beside this one, else nothing.
fn beside_column(kinds: &[Kind], column: &str) -> String {
    if kinds.iter().any(|k| matches!(k, Kind::Beside(_))) {
        column.to_owned()
    } else {
        String::new()
    }
}

/// The medians of one row, by server.
struct Row<'a> {
    kinds: &'a [Kind],
    medians: &'a [Option<Measured>],
}

impl<'a> Row<'a> {
    fn new(kinds: &'a [Kind], medians: &'a [Option<Measured>]) -> Self {
        Row { kinds, medians }
    }

    fn of(&self, kind: &Kind) -> Option<&Measured> {
        let at = self.kinds.iter().position(|k| {
            k == kind || (matches!(kind, Kind::Beside(_)) && matches!(k, Kind::Beside(_)))
        })?;
        self.medians[at].as_ref()
    }

    fn rate(&self, kind: &Kind) -> String {
        self.of(kind)
            .map_or_else(|| "–".to_owned(), |m| format!("{:.0}", m.rate))
    }

    /// toolgate's rate divided by `kind`'s.
    fn ratio(&self, kind: &Kind) -> String {
        match (self.of(&Kind::Toolgate), self.of(kind)) {
            (Some(ours), Some(theirs)) => format!("{:.2}", ours.rate / theirs.rate),
            _ => "–".to_owned(),
        }
    }

    fn peak(&self, kind: &Kind) -> String {
        self.of(kind)
            .map_or_else(|| "–".to_owned(), |m| format!("{:.1}", m.peak_mib))
    }

    /// `cell` of the build beside, if one runs.
    fn beside(&self, cell: impl Fn(&Kind) -> String) -> String {
        self.kinds
            .iter()
            .find(|k| matches!(k, Kind::Beside(_)))
            .map_or_else(String::new, cell)
    }
}
