//! The pipeline's overhead, side by side with the bare path, in one run.
//!
//! - `call/direct`: decode `{"a","b"}` from JSON, call the function, encode the result to JSON.
//! - `call/registry`: the same through `Registry::call`: resolve, authorize, validate against the schema,
//!   inject, run with panic capture, encode, hooks and audit steps.
//! - `call/registry_records`: the same on a registry with operator records, whose tools are a live
//!   snapshot (arc-swap) instead of fixed.
//! - `call/registry_profile`: the same by a caller that carries a profile the tool is assigned to.
//! - `call/registry_rate_limited`: the same under an operator's rate limit on every caller's calls,
//!   counted in memory (what a limit costs a call that is within it).
//! - `call/registry_1000`: the same on a registry of 1,000 more tools.
//! - `call/direct_text`, `call/registry_text`: the same from the model's JSON text to the text it reads.
//! - `list/1000`: list 1,000 tools (half of them needing abilities the caller lacks) for one caller.
//! - `search/1000`: rank the same 1,000 tools for a query of two words with BM25, and keep the caller's
//!   best ten.
//!
//! Run with `cargo bench -p toolgate --bench call`; compare the rows of one run (ratios, not absolutes).

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::{Value, json};
use toolgate::store::{LimitChange, LimitEdit, ProfileChange, ProfileEdit, Rate, Scope};
use toolgate::{Caller, DynamicTool, Registry, tool};

/// Add two integers.
#[tool(public, read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Polls a future that completes without waiting, as both paths here do; no executor overhead on either side.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the benchmark's futures complete on the first poll"),
    }
}

fn call(c: &mut Criterion) {
    let registry = Registry::builder().build().expect("registry");
    let caller = Caller::anonymous();
    let args = json!({ "a": 2, "b": 40 });
    assert_eq!(
        ready(registry.call(&caller, "add", args.clone()))
            .into_result()
            .structured
            .as_deref(),
        Some(&json!(42))
    );

    let mut group = c.benchmark_group("call");
    group.bench_function("direct", |b| {
        b.iter(|| {
            let input: AddArgs = serde_json::from_value(black_box(args.clone())).expect("valid");
            let sum = ready(add(input.a, input.b));
            black_box(serde_json::to_value(sum).expect("encodes"))
        });
    });
    group.bench_function("registry", |b| {
        b.iter(|| {
            black_box(ready(registry.call(
                &caller,
                "add",
                black_box(args.clone()),
            )))
        });
    });
    let records = toolgate::sqlite::SqliteStore::in_memory().expect("sqlite");
    let live = ready(Registry::builder().records(records).load()).expect("registry");
    group.bench_function("registry_records", |b| {
        b.iter(|| black_box(ready(live.call(&caller, "add", black_box(args.clone())))));
    });
    ready(live.sync("bench")).expect("synced");
    ready(live.edit_profile(&ProfileEdit::create("bench", "bench", ""))).expect("created");
    let assign = ProfileChange::Assign {
        tool: "add".into(),
        settings: None,
    };
    ready(live.edit_profile(&ProfileEdit::for_profile("bench", "bench", 1, assign)))
        .expect("assigned");
    let bot = Caller::anonymous().with_profile("bench");
    group.bench_function("registry_profile", |b| {
        b.iter(|| black_box(ready(live.call(&bot, "add", black_box(args.clone())))));
    });
    let rate = Rate::new(u32::MAX, 86_400).expect("a rate");
    let limit = LimitEdit::new("bench", Scope::Caller, 0, LimitChange::Set(rate));
    ready(live.edit_limit(&limit)).expect("limited");
    group.bench_function("registry_rate_limited", |b| {
        b.iter(|| black_box(ready(live.call(&caller, "add", black_box(args.clone())))));
    });
    let mut many = Registry::builder();
    for i in 0..1000 {
        let schema = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
        let tool = DynamicTool::new(
            format!("tool_{i:04}"),
            "Works.",
            schema,
            |_: Value, _| async { "ok" },
        );
        many = many.tool(tool.public().read_only());
    }
    let many = many.build().expect("registry");
    group.bench_function("registry_1000", |b| {
        b.iter(|| black_box(ready(many.call(&caller, "add", black_box(args.clone())))));
    });
    // From the model's JSON text to the text the model reads: what an in-process agent loop does.
    let text = r#"{"a": 2, "b": 40}"#;
    group.bench_function("direct_text", |b| {
        b.iter(|| {
            let input: AddArgs = serde_json::from_str(black_box(text)).expect("valid");
            let sum = ready(add(input.a, input.b));
            black_box(serde_json::to_string(&sum).expect("encodes"))
        });
    });
    group.bench_function("registry_text", |b| {
        b.iter(|| {
            let args: Value = serde_json::from_str(black_box(text)).expect("valid");
            black_box(
                ready(registry.call(&caller, "add", args))
                    .into_result()
                    .text_for_model(),
            )
        });
    });
    group.finish();
}

fn list(c: &mut Criterion) {
    let schema = json!({ "type": "object", "properties": { "q": { "type": "string" } } });
    let mut builder = Registry::builder();
    for i in 0..1000 {
        let (what, area) = (WHAT[i % WHAT.len()], AREAS[i % AREAS.len()]);
        let tool = DynamicTool::new(
            format!("tool_{i:04}"),
            format!("Works on the {what} of {area}: finds, lists or changes them."),
            schema.clone(),
            |_: Value, _| async { "ok" },
        );
        let tool = if i % 2 == 0 {
            tool.ability(format!("area{}.view", i % 40))
        } else {
            tool.public()
        };
        builder = builder.tool(tool.read_only());
    }
    let registry = builder.build().expect("registry");
    let caller = Caller::new("u").with_abilities((0..20).map(|i| format!("area{i}.view")));
    let visible = registry.list(&caller).len();
    assert_eq!(
        visible,
        1 + 500 + 250,
        "add, the public half, and the areas the caller holds"
    );

    c.bench_function("list/1000", |b| {
        b.iter(|| black_box(registry.list(black_box(&caller)).len()))
    });
    let found = registry.search(&caller, "refunds invoices", 10);
    assert_eq!(found.len(), 10, "the query matches");
    c.bench_function("search/1000", |b| {
        b.iter(|| {
            black_box(
                registry
                    .search(black_box(&caller), "refunds invoices", 10)
                    .len(),
            )
        })
    });
}

/// The words the 1,000 tools' descriptions are made of.
const WHAT: [&str; 10] = [
    "orders",
    "invoices",
    "refunds",
    "customers",
    "shipments",
    "payments",
    "tickets",
    "reports",
    "products",
    "users",
];
const AREAS: [&str; 7] = [
    "sales",
    "support",
    "billing",
    "logistics",
    "marketing",
    "finance",
    "hr",
];

criterion_group!(benches, call, list);
criterion_main!(benches);
