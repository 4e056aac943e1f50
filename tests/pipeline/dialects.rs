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
