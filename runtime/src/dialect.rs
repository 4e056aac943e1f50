//! [`Dialect`]: the tool-calling formats of model APIs, so an app's own agent loop can offer the registry's
//! tools to a model, run the calls it asks for, and hand the results back.

use std::borrow::Borrow;

use serde_json::{Value, json};

use crate::call::Call;
use crate::caller::Caller;
use crate::catalog::{Catalog, ToolId};
use crate::output::ToolResult;
use crate::tool::{TOOL_SEARCH, Tool, tools_found};

/// A model API's format for tool definitions, tool calls and tool results.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolgate::prelude::*;
/// use toolgate::dialect::Dialect;
///
/// /// Add two integers.
/// #[tool(public, read_only)]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = Registry::builder().build()?;
/// let caller = Caller::anonymous();
/// let tools = registry.definitions(&caller, Dialect::OpenAiChat);
/// assert_eq!(tools[0]["function"]["name"], "add");
///
/// // The model's reply, as the API returns it:
/// let reply = json!({ "choices": [{ "message": { "role": "assistant", "tool_calls": [{
///     "id": "call_1", "type": "function",
///     "function": { "name": "add", "arguments": "{\"a\": 2, \"b\": 40}" }
/// }]}}]});
/// let calls = Dialect::OpenAiChat.calls(&reply);
/// let result = registry.run(&caller, calls[0].to_call()).await.into_result();
/// assert_eq!(
///     Dialect::OpenAiChat.result(&calls[0], &result),
///     json!({ "role": "tool", "tool_call_id": "call_1", "content": "42" })
/// );
/// # Ok::<(), toolgate::BuildError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// OpenAI Chat Completions, and the servers compatible with it (vLLM, Ollama, llama.cpp, LiteLLM...).
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
}

/// A tool call a model asked for, read from its reply by [`Dialect::calls`].
///
/// ```
/// use serde_json::json;
/// use toolgate::dialect::Dialect;
///
/// let reply = json!({ "content": [{ "type": "tool_use", "id": "toolu_1", "name": "weather", "input": { "city": "Oslo" } }] });
/// let call = &Dialect::Anthropic.calls(&reply)[0];
/// assert_eq!((call.id.as_deref(), call.name.as_str()), (Some("toolu_1"), "weather"));
/// assert_eq!(call.arguments["city"], "Oslo");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCall {
    /// The model's id for the call, which its result must carry back (Gemini may send none).
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments. Arguments that are not valid JSON arrive as a string, which the registry refuses
    /// with a message the model can act on.
    pub arguments: Value,
}

impl ModelCall {
    /// The registry call, with the model's id as the tool call id.
    pub fn to_call(&self) -> Call {
        let call = Call::new(self.name.clone(), self.arguments.clone());
        match &self.id {
            Some(id) => call.tool_call_id(id.as_str()),
            None => call,
        }
    }
}

impl Dialect {
    /// One tool's definition. The model APIs accept narrower names than MCP (OpenAI and Anthropic: at most
    /// 64 letters, digits, `_` and `-`, no `.`); name tools within that when you offer them to a model.
    ///
    /// The built-in `tool_search` is an ordinary function everywhere but in OpenAI Responses, where it is
    /// the API's own client-executed `tool_search` tool.
    pub fn definition(self, tool: &Tool) -> Value {
        let (name, description, schema) = (tool.name(), tool.description(), tool.input_schema());
        match self {
            Dialect::OpenAiChat => json!({
                "type": "function",
                "function": { "name": name, "description": description, "parameters": schema },
            }),
            Dialect::OpenAiResponses if tool.is_tool_search() => json!({
                "type": "tool_search", "execution": "client",
                "description": description, "parameters": schema,
            }),
            // Responses makes `strict` the default, which needs every property required.
            Dialect::OpenAiResponses => json!({
                "type": "function", "name": name, "description": description,
                "parameters": schema, "strict": false,
            }),
            Dialect::Anthropic => {
                json!({ "name": name, "description": description, "input_schema": schema })
            }
            Dialect::Gemini => {
                json!({ "name": name, "description": description, "parametersJsonSchema": schema })
            }
        }
    }

    /// Whether the API loads deferred tools itself: they are sent marked `defer_loading`, and a search
    /// result names them. The other APIs get a deferred tool only once a search found it.
    pub fn loads_deferred(self) -> bool {
        matches!(self, Dialect::Anthropic | Dialect::OpenAiResponses)
    }

    /// The value of a request's `tools` field for these tools.
    pub fn tools<T: Borrow<Tool>>(self, tools: impl IntoIterator<Item = T>) -> Value {
        let definitions = tools
            .into_iter()
            .map(|t| self.definition(t.borrow()))
            .collect();
        self.wrap(definitions)
    }

    /// The `tools` field holding `definitions`.
    fn wrap(self, definitions: Vec<Value>) -> Value {
        match self {
            Dialect::Gemini => json!([{ "functionDeclarations": definitions }]),
            _ => Value::Array(definitions),
        }
    }

    /// The tool calls in a model's reply: the whole response body, or (for Chat Completions) its message.
    /// Empty when the model answered without calling a tool.
    pub fn calls(self, reply: &Value) -> Vec<ModelCall> {
        match self {
            Dialect::OpenAiChat => {
                let message = reply.pointer("/choices/0/message").unwrap_or(reply);
                items(message, "tool_calls")
                    .map(|c| ModelCall {
                        id: text(c, "id"),
                        name: text(&c["function"], "name").unwrap_or_default(),
                        arguments: decode(&c["function"]["arguments"]),
                    })
                    .collect()
            }
            Dialect::OpenAiResponses => items(reply, "output")
                .filter_map(|c| {
                    let name = match c["type"].as_str()? {
                        "function_call" => text(c, "name").unwrap_or_default(),
                        "tool_search_call" if c["execution"] == "client" => TOOL_SEARCH.to_owned(),
                        _ => return None,
                    };
                    let (id, arguments) = (text(c, "call_id"), decode(&c["arguments"]));
                    Some(ModelCall {
                        id,
                        name,
                        arguments,
                    })
                })
                .collect(),
            Dialect::Anthropic => items(reply, "content")
                .filter(|block| block["type"] == "tool_use")
                .map(|c| ModelCall {
                    id: text(c, "id"),
                    name: text(c, "name").unwrap_or_default(),
                    arguments: c["input"].clone(),
                })
                .collect(),
            Dialect::Gemini => {
                let content = reply.pointer("/candidates/0/content").unwrap_or(reply);
                items(content, "parts")
                    .filter_map(|part| part.get("functionCall"))
                    .map(|c| ModelCall {
                        id: text(c, "id"),
                        name: text(c, "name").unwrap_or_default(),
                        arguments: c.get("args").cloned().unwrap_or_else(|| json!({})),
                    })
                    .collect()
            }
        }
    }

    /// What hands `result` back to the model for `call`. For Chat Completions a message of its own; for
    /// Responses an input item; for Anthropic a content block of the next user message; for Gemini a part
    /// of the next user content.
    ///
    /// A `tool_search` result goes back as the API expects it: for Anthropic as `tool_reference` blocks
    /// naming the tools found, for Responses as a `tool_search_output` with their definitions.
    pub fn result(self, call: &ModelCall, result: &ToolResult) -> Value {
        let id = call.id.as_deref().unwrap_or_default();
        let search = call.name == TOOL_SEARCH && !result.is_error;
        match self {
            Dialect::Anthropic if search => {
                let references: Vec<Value> = tools_found(result)
                    .into_iter()
                    .map(|name| json!({ "type": "tool_reference", "tool_name": name }))
                    .collect();
                if !references.is_empty() {
                    return json!({ "type": "tool_result", "tool_use_id": id, "content": references });
                }
            }
            Dialect::OpenAiResponses if search => {
                let found = result.structured.as_ref().map(|s| &s["tools"]);
                let tools: Vec<Value> = items_of(found)
                    .map(|t| {
                        json!({
                            "type": "function", "name": t["name"], "description": t["description"],
                            "parameters": t["inputSchema"], "strict": false,
                        })
                    })
                    .collect();
                return json!({
                    "type": "tool_search_output", "call_id": id, "execution": "client", "tools": tools,
                });
            }
            _ => {}
        }
        let text = result.text_for_model();
        match self {
            Dialect::OpenAiChat => json!({ "role": "tool", "tool_call_id": id, "content": text }),
            Dialect::OpenAiResponses => {
                json!({ "type": "function_call_output", "call_id": id, "output": text })
            }
            Dialect::Anthropic => json!({
                "type": "tool_result", "tool_use_id": id, "content": text, "is_error": result.is_error,
            }),
            Dialect::Gemini => {
                let response = match &result.structured {
                    _ if result.is_error => json!({ "error": text }),
                    Some(value) => json!({ "output": value }),
                    None => json!({ "output": text }),
                };
                let mut answer = json!({ "name": call.name, "response": response });
                if let Some(id) = &call.id {
                    answer["id"] = json!(id);
                }
                json!({ "functionResponse": answer })
            }
        }
    }
}

/// The tools `caller` may run as `dialect`'s `tools` field, with the deferred ones named in `loaded`: see
/// [`Registry::definitions_with`](crate::Registry::definitions_with).
pub(crate) fn definitions<S: AsRef<str>>(
    catalog: &Catalog,
    caller: &Caller,
    dialect: Dialect,
    loaded: &[S],
) -> Value {
    let snapshot = catalog.snapshot();
    let listing = catalog.listing(&snapshot, caller);
    let tool = |i: ToolId| &*snapshot.tool(i).tool;
    let mut definitions: Vec<Value> = listing
        .shown
        .iter()
        .map(|&i| dialect.definition(tool(i)))
        .collect();
    for &i in &listing.deferred {
        let tool = tool(i);
        if dialect.loads_deferred() {
            let mut definition = dialect.definition(tool);
            definition["defer_loading"] = json!(true);
            definitions.push(definition);
        } else if loaded.iter().any(|name| name.as_ref() == tool.name()) {
            definitions.push(dialect.definition(tool));
        }
    }
    dialect.wrap(definitions)
}

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    items_of(value.get(key))
}

fn items_of(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value.and_then(Value::as_array).into_iter().flatten()
}

fn text(value: &Value, key: &str) -> Option<String> {
    value[key].as_str().map(str::to_owned)
}

/// Arguments sent as JSON text (OpenAI), parsed; empty text is no arguments.
fn decode(arguments: &Value) -> Value {
    match arguments {
        Value::String(raw) if raw.trim().is_empty() => json!({}),
        Value::String(raw) => serde_json::from_str(raw).unwrap_or_else(|_| arguments.clone()),
        Value::Null => json!({}),
        other => other.clone(),
    }
}
