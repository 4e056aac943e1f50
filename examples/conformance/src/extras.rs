//! The suite's prompts, resources and completion, from a plain rmcp handler that toolgate composes with its
//! tools (`McpServer::with_handler`).
#![allow(deprecated)] // resources/subscribe is legacy-only in rmcp; the versions tested still have it

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate::mcp::rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    InputRequiredResult, InputResponses, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use toolgate::mcp::rmcp::service::RequestContext;
use toolgate::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};

use crate::tools::PNG;

/// Prompts, resources, completion, and the subscriptions clients hold.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extras {
    subscriptions: Arc<Mutex<BTreeSet<String>>>,
}

/// A typed rmcp value from its JSON form.
fn typed<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value).map_err(|e| ErrorData::internal_error(e.to_string(), None))
}

/// A prompt that needs an answer from the user first: an `InputRequiredResult` until the answer comes.
fn context_prompt(answers: InputResponses) -> Result<GetPromptResponse, ErrorData> {
    let context = answers
        .get("user_context")
        .and_then(|a| a["content"]["context"].as_str());
    let Some(context) = context else {
        let question = json!({ "user_context": {
            "method": "elicitation/create",
            "params": { "mode": "form", "message": "What context should the prompt use?", "requestedSchema": {
                "type": "object", "properties": { "context": { "type": "string" } }, "required": ["context"]
            }}
        }});
        return Ok(InputRequiredResult::from_input_requests(typed(question)?).into());
    };
    let result: toolgate::mcp::rmcp::model::GetPromptResult = typed(json!({
        "resultType": "complete",
        "messages": [{ "role": "user", "content": { "type": "text", "text": format!("Use this context: {context}") } }]
    }))?;
    Ok(result.into())
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            let pad = i > chunk.len();
            out.push(if pad {
                '='
            } else {
                ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char
            });
        }
    }
    out
}

impl ServerHandler for Extras {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_completions()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        typed(json!({ "resultType": "complete", "resources": [
            { "uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain" },
            { "uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource", "mimeType": "image/png" },
            { "uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain" }
        ]}))
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        typed(json!({ "resultType": "complete", "resourceTemplates": [{
            "uriTemplate": "test://template/{id}/data", "name": "template", "description": "Data by id",
            "mimeType": "application/json"
        }]}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                json!({ "uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource." })
            }
            "test://static-binary" => {
                json!({ "uri": uri, "mimeType": "image/png", "blob": base64(PNG) })
            }
            "test://watched-resource" => {
                json!({ "uri": uri, "mimeType": "text/plain", "text": "Watched content." })
            }
            _ => match uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => json!({
                    "uri": uri, "mimeType": "application/json",
                    "text": json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string()
                }),
                None => {
                    return Err(ErrorData::resource_not_found(
                        format!("no resource {uri}"),
                        Some(json!({ "uri": uri })),
                    ));
                }
            },
        };
        let result: toolgate::mcp::rmcp::model::ReadResourceResult =
            typed(json!({ "resultType": "complete", "contents": [contents] }))?;
        Ok(result.into())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let argument = |name: &str, description: &str| json!({ "name": name, "description": description, "required": true });
        typed(json!({ "resultType": "complete", "prompts": [
            { "name": "test_simple_prompt", "description": "A simple prompt" },
            { "name": "test_prompt_with_arguments", "description": "A prompt with arguments",
              "arguments": [argument("arg1", "First test argument"), argument("arg2", "Second test argument")] },
            { "name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource",
              "arguments": [argument("resourceUri", "URI of the resource to embed")] },
            { "name": "test_prompt_with_image", "description": "A prompt with an image" },
            { "name": "test_input_required_result_prompt", "description": "A prompt that asks the user for context first" }
        ]}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == "test_input_required_result_prompt" {
            return context_prompt(request.input_responses.unwrap_or_default());
        }
        let args = request.arguments.unwrap_or_default();
        let arg = |name: &str| {
            args.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let user = |content: Value| json!({ "role": "user", "content": content });
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![user(
                json!({ "type": "text", "text": "This is a simple prompt for testing." }),
            )],
            "test_prompt_with_arguments" => vec![user(json!({
                "type": "text",
                "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))
            }))],
            "test_prompt_with_embedded_resource" => vec![
                user(json!({ "type": "resource", "resource": {
                    "uri": arg("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."
                }})),
                user(
                    json!({ "type": "text", "text": "Please process the embedded resource above." }),
                ),
            ],
            "test_prompt_with_image" => vec![
                user(json!({ "type": "image", "data": base64(PNG), "mimeType": "image/png" })),
                user(json!({ "type": "text", "text": "Please analyze the image above." })),
            ],
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no prompt {other}"),
                    None,
                ));
            }
        };
        let result: toolgate::mcp::rmcp::model::GetPromptResult =
            typed(json!({ "resultType": "complete", "messages": messages }))?;
        Ok(result.into())
    }

    async fn complete(
        &self,
        _: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        typed(
            json!({ "resultType": "complete", "completion": { "values": ["paris", "park", "party"], "total": 3, "hasMore": false } }),
        )
    }
}
