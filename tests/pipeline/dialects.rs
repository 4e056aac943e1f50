//! Tool definitions, calls and results in each model API's format.

use super::fixtures::*;

#[tokio::test]
async fn each_model_dialect_offers_reads_and_answers_tool_calls() {
    use toolgate::dialect::Dialect;
    let registry = registry(&Ledger::default());
    let anyone = Caller::anonymous();
    let add = registry.get("add").unwrap();
    let schema = add.input_schema().clone();
    let description = add.description();

    // One call to `add` as each API returns it, and the result as each expects it back.
    let cases = [
        (
            Dialect::OpenAiChat,
            json!({ "type": "function", "function": { "name": "add", "description": description, "parameters": schema } }),
            json!({ "id": "chatcmpl-1", "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{ "id": "call_9", "type": "function", "function": { "name": "add", "arguments": "{\"a\":2,\"b\":40}" } }],
            }}]}),
            json!({ "role": "tool", "tool_call_id": "call_9", "content": "42" }),
        ),
        (
            Dialect::OpenAiResponses,
            json!({ "type": "function", "name": "add", "description": description, "parameters": schema, "strict": false }),
            json!({ "id": "resp_1", "output": [
                { "type": "reasoning", "id": "rs_1", "summary": [] },
                { "type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "add", "arguments": "{\"a\":2,\"b\":40}" },
            ]}),
            json!({ "type": "function_call_output", "call_id": "call_9", "output": "42" }),
        ),
        (
            Dialect::Anthropic,
            json!({ "name": "add", "description": description, "input_schema": schema }),
            json!({ "id": "msg_1", "role": "assistant", "stop_reason": "tool_use", "content": [
                { "type": "text", "text": "Adding." },
                { "type": "tool_use", "id": "toolu_9", "name": "add", "input": { "a": 2, "b": 40 } },
            ]}),
            json!({ "type": "tool_result", "tool_use_id": "toolu_9", "content": "42", "is_error": false }),
        ),
        (
            Dialect::Gemini,
            json!({ "name": "add", "description": description, "parametersJsonSchema": schema }),
            json!({ "candidates": [{ "content": { "role": "model", "parts": [
                { "functionCall": { "name": "add", "args": { "a": 2, "b": 40 } } },
            ]}}]}),
            json!({ "functionResponse": { "name": "add", "response": { "output": 42 } } }),
        ),
    ];
    for (dialect, definition, reply, answer) in cases {
        let offered = registry.definitions(&anyone, dialect);
        let offered = match dialect {
            Dialect::Gemini => offered[0]["functionDeclarations"].clone(),
            _ => offered,
        };
        let offered = offered.as_array().unwrap();
        assert!(offered.contains(&definition), "{dialect:?}: {offered:?}");
        assert!(
            !offered
                .iter()
                .any(|d| d.to_string().contains("confirm_order")),
            "{dialect:?} offers only what the caller may run"
        );

        let calls = dialect.calls(&reply);
        assert_eq!(calls.len(), 1, "{dialect:?}");
        assert_eq!(
            (calls[0].name.as_str(), &calls[0].arguments),
            ("add", &json!({ "a": 2, "b": 40 }))
        );
        let result = registry
            .run(&anyone, calls[0].to_call())
            .await
            .into_result();
        assert_eq!(dialect.result(&calls[0], &result), answer, "{dialect:?}");
    }

    let refused = registry
        .call(&anyone, "add", json!({ "a": 2 }))
        .await
        .into_result();
    let call = &Dialect::Anthropic.calls(&json!({ "content": [{ "type": "tool_use", "id": "t", "name": "add", "input": { "a": 2 } }] }))[0];
    assert_eq!(Dialect::Anthropic.result(call, &refused)["is_error"], true);
    let call = &Dialect::Gemini.calls(&json!({ "parts": [{ "functionCall": { "id": "g1", "name": "add", "args": { "a": 2 } } }] }))[0];
    let answer = Dialect::Gemini.result(call, &refused);
    assert_eq!(answer["functionResponse"]["id"], "g1");
    assert!(
        answer["functionResponse"]["response"]["error"]
            .as_str()
            .unwrap()
            .starts_with("[ERROR] Invalid arguments")
    );
    assert!(
        Dialect::OpenAiChat
            .calls(
                &json!({ "choices": [{ "message": { "role": "assistant", "content": "Hi." } }] })
            )
            .is_empty()
    );
    let empty = Dialect::OpenAiChat.calls(&json!({ "tool_calls": [{ "id": "x", "function": { "name": "shop_overview", "arguments": "" } }] }));
    assert_eq!(empty[0].arguments, json!({}));
}

/// The fixtures narrowed to `add` and the deferred `web_search`, for anyone.
fn with_deferred() -> Registry {
    Registry::builder()
        .state(Ledger::default())
        .allow_only(["add", "web_search"])
        .build()
        .unwrap()
}

#[tokio::test]
async fn anthropic_loads_deferred_tools_from_tool_reference_blocks() {
    use toolgate::dialect::Dialect;
    let registry = with_deferred();
    let anyone = Caller::anonymous();
    let offered = registry.definitions(&anyone, Dialect::Anthropic);
    let named = |name: &str| {
        offered
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .cloned()
    };
    let web = registry.get("web_search").unwrap();
    assert_eq!(
        named("web_search"),
        Some(json!({
            "name": "web_search", "description": web.description(),
            "input_schema": web.input_schema(), "defer_loading": true,
        })),
        "a deferred tool is sent, marked for the API to load on demand"
    );
    let search = named("tool_search").expect("the search tool is offered");
    assert!(
        search.get("defer_loading").is_none()
            && search["input_schema"]["required"] == json!(["query"])
    );
    assert!(named("add").unwrap().get("defer_loading").is_none());

    let reply = json!({ "role": "assistant", "content": [
        { "type": "tool_use", "id": "toolu_4", "name": "tool_search", "input": { "query": "search the web" } },
    ]});
    let call = &Dialect::Anthropic.calls(&reply)[0];
    let result = registry.run(&anyone, call.to_call()).await.into_result();
    assert_eq!(
        Dialect::Anthropic.result(call, &result),
        json!({ "type": "tool_result", "tool_use_id": "toolu_4", "content": [
            { "type": "tool_reference", "tool_name": "web_search" },
        ]})
    );
    let nothing = registry
        .run(
            &anyone,
            toolgate::Call::new("tool_search", json!({ "query": "zzz" })),
        )
        .await
        .into_result();
    assert_eq!(
        Dialect::Anthropic.result(call, &nothing)["content"],
        r#"{"tools":[]}"#,
        "no reference blocks when nothing matched: the model reads that nothing did"
    );
}

#[tokio::test]
async fn openai_responses_runs_its_client_tool_search_through_the_registry() {
    use toolgate::dialect::Dialect;
    let registry = with_deferred();
    let anyone = Caller::anonymous();
    let offered = registry.definitions(&anyone, Dialect::OpenAiResponses);
    let offered = offered.as_array().unwrap();
    let search = offered
        .iter()
        .find(|d| d["type"] == "tool_search")
        .expect("the API's own search tool");
    assert_eq!(search["execution"], "client");
    assert_eq!(search["parameters"]["required"], json!(["query"]));
    assert!(search.get("name").is_none(), "the API names it: {search}");
    let web = offered.iter().find(|d| d["name"] == "web_search").unwrap();
    assert_eq!(
        (&web["type"], &web["defer_loading"]),
        (&json!("function"), &json!(true))
    );
    assert!(
        offered
            .iter()
            .find(|d| d["name"] == "add")
            .unwrap()
            .get("defer_loading")
            .is_none()
    );

    let reply = json!({ "id": "resp_2", "output": [{
        "type": "tool_search_call", "id": "tsc_1", "call_id": "call_5", "execution": "client",
        "arguments": { "query": "search the web" }, "status": "completed",
    }]});
    let calls = Dialect::OpenAiResponses.calls(&reply);
    assert_eq!(
        (calls[0].name.as_str(), calls[0].id.as_deref()),
        ("tool_search", Some("call_5"))
    );
    let result = registry
        .run(&anyone, calls[0].to_call())
        .await
        .into_result();
    let schema = registry.get("web_search").unwrap().input_schema().clone();
    assert_eq!(
        Dialect::OpenAiResponses.result(&calls[0], &result),
        json!({ "type": "tool_search_output", "call_id": "call_5", "execution": "client", "tools": [{
            "type": "function", "name": "web_search", "description": "Search the web.",
            "parameters": schema, "strict": false,
        }]})
    );
    let hosted = json!({ "output": [{ "type": "tool_search_call", "id": "tsc_2", "execution": "server", "arguments": {} }] });
    assert!(
        Dialect::OpenAiResponses.calls(&hosted).is_empty(),
        "a search the API ran itself is not ours to answer"
    );
}

#[tokio::test]
async fn chat_completions_and_gemini_get_found_tools_on_the_next_request() {
    use toolgate::dialect::Dialect;
    use toolgate::registry::tools_found;
    let registry = with_deferred();
    let anyone = Caller::anonymous();
    let function_names = |dialect: Dialect, tools: &Value| -> Vec<String> {
        let list = match dialect {
            Dialect::Gemini => &tools[0]["functionDeclarations"],
            _ => tools,
        };
        list.as_array()
            .unwrap()
            .iter()
            .map(|d| {
                d.pointer("/function/name")
                    .unwrap_or(&d["name"])
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let found = registry
        .run(
            &anyone,
            toolgate::Call::new("tool_search", json!({ "query": "search the web" })),
        )
        .await
        .into_result();
    assert_eq!(tools_found(&found), ["web_search"]);
    for dialect in [Dialect::OpenAiChat, Dialect::Gemini] {
        assert!(!dialect.loads_deferred());
        let first = registry.definitions(&anyone, dialect);
        assert_eq!(
            function_names(dialect, &first),
            ["add", "tool_search"],
            "{dialect:?}: the deferred tool waits for a search, offered as a plain function"
        );
        let next = registry.definitions_with(&anyone, dialect, &tools_found(&found));
        assert_eq!(
            function_names(dialect, &next),
            ["add", "tool_search", "web_search"],
            "{dialect:?}"
        );
        let forged =
            registry.definitions_with(&anyone, dialect, &["confirm_order", "refund_order"]);
        assert_eq!(
            function_names(dialect, &forged),
            ["add", "tool_search"],
            "{dialect:?}: a name the caller may not run is never loaded"
        );
    }
}
