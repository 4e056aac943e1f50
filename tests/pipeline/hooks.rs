//! Hooks around every call: mocks, redirects, rewrites.

use super::fixtures::*;

struct Recorder(Arc<Mutex<Vec<String>>>);

impl Hook for Recorder {
    fn on_resolve(&self, lookup: Lookup<'_>, tool: &Tool) -> Option<String> {
        self.0
            .lock()
            .unwrap()
            .push(format!("resolve {lookup:?} -> {}", tool.name()));
        (lookup == Lookup::Name("shop_overview")).then(|| "report".to_owned())
    }

    fn after_call(&self, call: &CallInfo<'_>, outcome: &mut Outcome) {
        self.0
            .lock()
            .unwrap()
            .push(format!("after {} {}", call.tool.name(), outcome.label()));
        if call.tool.name() == "add" {
            *outcome = Outcome::Done(ToolResult::text("rewritten"));
        }
    }
}

#[tokio::test]
async fn hooks_mock_redirect_and_rewrite() {
    let log = Arc::new(Mutex::new(Vec::new()));
    // ANCHOR: hooks
    let registry = Registry::builder()
        .state(Ledger::default())
        .hook(hooks::mock("web_search", |args| {
            ToolResult::text(format!("mocked {}", args["query"]))
        }))
        .hook(Recorder(Arc::clone(&log)))
        .build()
        .unwrap();
    // ANCHOR_END: hooks
    let anyone = Caller::anonymous();
    let mocked = registry
        .call(&anyone, "web_search", json!({ "query": "q" }))
        .await;
    assert_eq!(mocked.into_result().text_for_model(), "mocked \"q\"");
    let redirected = registry.call(&anyone, "shop_overview", json!({})).await;
    assert_eq!(redirected.into_result().text_for_model(), "all good");
    let rewritten = registry
        .call(&anyone, "add", json!({ "a": 1, "b": 2 }))
        .await;
    assert_eq!(rewritten.into_result().text_for_model(), "rewritten");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "resolve Name(\"web_search\") -> web_search",
            "after web_search done",
            "resolve Name(\"shop_overview\") -> shop_overview",
            "after report done",
            "resolve Name(\"add\") -> add",
            "after add done",
        ]
    );
}
