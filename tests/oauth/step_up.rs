//! Sign-in and step-up per tool, at the HTTP layer, where hosts act on them: with anonymous access, the
//! public tools work before sign-in and a call of any other is answered `401`; a signed-in caller whose
//! scopes do not grant a tool is answered `403 insufficient_scope` naming the scopes that do, and nothing
//! runs. On 2026-07-28 the `Mcp-Name` header decides before the body is read.

use serde_json::{Value, json};

use crate::signed_in::{call, rpc, said, shipped, signed_in_server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_tools_work_before_sign_in_and_others_ask_for_it() {
    // ANCHOR: anonymous
    let Some((provider, url)) = signed_in_server(|verifier| verifier.anonymous_access()).await
    else {
        return;
    };
    // ANCHOR_END: anonymous
    let anonymous = |tool: &str| {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": tool, "arguments": {}}});
        reqwest::Client::new()
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&request)
            .send()
    };
    let open = anonymous("store_hours").await.unwrap();
    assert_eq!(open.status(), 200);
    assert_eq!(said(&open.json::<Value>().await.unwrap()), "9 to 5");

    let protected = anonymous("open_orders").await.unwrap();
    assert_eq!(protected.status(), 401, "a host signs in on a 401 only");
    let challenge = protected.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer scope=\"orders:read\", resource_metadata=\"")
            && !challenge.contains("error="),
        "sign in, asking for the scope the tool needs: {challenge}"
    );

    // An unknown tool is not a reason to sign in: it is answered as MCP answers it.
    let unknown = anonymous("no_such_tool").await.unwrap();
    assert_eq!(unknown.status(), 200);

    // Signed in, the same call runs.
    let viewer = provider.token(&url, "orders:read").await;
    let (status, _, body) = call(&url, &viewer, "open_orders", json!({})).await;
    assert_eq!((status, said(&body).as_str()), (200, "3 open orders"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_whose_scopes_fall_short_is_asked_for_the_scopes_that_grant_the_tool() {
    let Some((provider, url)) = signed_in_server(|verifier| verifier).await else {
        return;
    };
    let viewer = provider.token(&url, "orders:read").await;
    let (status, challenge, body) = call(&url, &viewer, "ship_order", json!({"order": 41})).await;
    assert_eq!(status, 403);
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"orders:write\""),
        "{challenge}"
    );
    // The same challenge in the call's result, where ChatGPT reads it.
    let result = &body["result"];
    assert_eq!(
        (result["isError"].clone(), body["id"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(
        result["_meta"][toolgate::http::META_WWW_AUTHENTICATE],
        json!([challenge])
    );
    assert!(!shipped(41), "nothing ran");

    // A 2026-07-28 client names the tool in a header: the answer is the same, decided before the body.
    let negotiating = reqwest::Client::new()
        .post(&url)
        .bearer_auth(&viewer)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "ship_order")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "ship_order", "arguments": {"order": 41}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(negotiating.status(), 403);
    assert!(!shipped(41));

    // Signed in again with the scope asked for, the call runs.
    let manager = provider.token(&url, "orders:read orders:write").await;
    let (status, _, body) = call(&url, &manager, "ship_order", json!({"order": 41})).await;
    assert_eq!((status, said(&body).as_str()), (200, "shipped 41"));
}

/// Each tool says how a host signs its caller in, as ChatGPT reads it: a public tool works without,
/// and a protected one names the scopes that grant what it needs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tool_publishes_how_its_caller_signs_in() {
    let Some((provider, url)) = signed_in_server(|verifier| verifier).await else {
        return;
    };
    let manager = provider.token(&url, "orders:read orders:write").await;
    let (_, _, listed) = rpc(&url, &manager, "tools/list", json!({})).await;
    let schemes = |name: &str| {
        let tools = listed["result"]["tools"].as_array().unwrap();
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        tool["_meta"][toolgate::mcp::META_SECURITY_SCHEMES].clone()
    };
    assert_eq!(
        schemes("ship_order"),
        json!([{"type": "oauth2", "scopes": ["orders:write"]}])
    );
    assert_eq!(
        schemes("open_orders"),
        json!([{"type": "oauth2", "scopes": ["orders:read"]}]),
        "the scope that grants it alone"
    );
    assert_eq!(
        schemes("store_hours"),
        json!([{"type": "noauth"}, {"type": "oauth2"}])
    );
}
