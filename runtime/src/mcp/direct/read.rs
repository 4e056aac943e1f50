//! Reading a hot request in one pass: the envelope, then the params as its method names them, read in
//! place when `method` comes before `params` (as every client writes it) and from the captured text
//! otherwise. Anything these types do not read exactly as rmcp would (a name with escapes, a request
//! that brings answers back, a malformed field) is not taken, and rmcp reads it instead.

use std::fmt;

use rmcp::model::{
    CallToolRequestParams, JsonObject, PaginatedRequestParams, RequestId, RequestMetaObject,
};
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{Hot, Method};

/// The params of a `tools/call`, as rmcp reads them (`_meta` aside).
#[derive(serde::Deserialize)]
struct CallParams<'a> {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMetaObject>,
    name: &'a str,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<IgnoredAny>,
    #[serde(rename = "requestState", default)]
    request_state: Option<IgnoredAny>,
}

/// The params of a request that takes nothing but `_meta` (`ping`).
#[derive(serde::Deserialize)]
struct MetaOnly {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMetaObject>,
}

/// What the envelope's `params` held: read already, or captured to read once the method is known.
enum Params<'a> {
    Absent,
    Captured(&'a RawValue),
    Call(CallParams<'a>),
}

/// A request as read: id, method and params.
struct Read<'a> {
    id: RequestId,
    method: &'a str,
    params: Params<'a>,
}

impl<'de> serde::Deserialize<'de> for Read<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ReadVisitor)
    }
}

struct ReadVisitor;

impl<'de> Visitor<'de> for ReadVisitor {
    type Value = Read<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Read<'de>, A::Error> {
        let (mut version, mut id, mut method, mut params) = (false, None, None, None);
        while let Some(key) = map.next_key::<&'de str>()? {
            let seen = match key {
                "jsonrpc" => {
                    if map.next_value::<&'de str>()? != "2.0" {
                        return Err(de::Error::custom("not JSON-RPC 2.0"));
                    }
                    std::mem::replace(&mut version, true)
                }
                "id" => id.replace(map.next_value::<RequestId>()?).is_some(),
                "method" => method.replace(map.next_value::<&'de str>()?).is_some(),
                "params" => {
                    let read = if method == Some("tools/call") {
                        Params::Call(map.next_value()?)
                    } else {
                        Params::Captured(map.next_value()?)
                    };
                    params.replace(read).is_some()
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    false
                }
            };
            if seen {
                return Err(de::Error::custom(format_args!("duplicate field `{key}`")));
            }
        }
        match (version, id, method) {
            (true, Some(id), Some(method)) => Ok(Read {
                id,
                method,
                params: params.unwrap_or(Params::Absent),
            }),
            _ => Err(de::Error::custom("not a request")),
        }
    }
}

impl Hot {
    /// The request in `body`, if it is a hot one, read as rmcp would read it, without deciding anything
    /// else yet.
    pub(super) fn read(body: &[u8]) -> Option<Hot> {
        // Checked as UTF-8 once, whole, rather than string by string as `from_slice` does.
        let body = std::str::from_utf8(body).ok()?;
        let Read { id, method, params } = serde_json::from_str(body).ok()?;
        let (meta, method) = match method {
            "tools/call" => {
                let call = match params {
                    Params::Call(call) => call,
                    Params::Captured(raw) => serde_json::from_str(raw.get()).ok()?,
                    Params::Absent => return None,
                };
                if call.input_responses.is_some() || call.request_state.is_some() {
                    return None;
                }
                let mut request = CallToolRequestParams::new(call.name.to_owned());
                request.arguments = call.arguments;
                (call.meta, Method::Call(request))
            }
            "tools/list" => {
                let mut page: Option<PaginatedRequestParams> = captured(params)?;
                (
                    page.as_mut().and_then(|p| p.meta.take()),
                    Method::List(page),
                )
            }
            "ping" => {
                let only: Option<MetaOnly> = captured(params)?;
                (only.and_then(|o| o.meta), Method::Ping)
            }
            _ => return None,
        };
        Some(Hot {
            id,
            meta: meta.unwrap_or_default(),
            version: None,
            method,
            sends: false,
        })
    }
}

/// Params read from their captured text, `Some(None)` when absent; `None` when they do not read.
fn captured<'a, T: serde::Deserialize<'a>>(params: Params<'a>) -> Option<Option<T>> {
    match params {
        Params::Absent => Some(None),
        Params::Captured(raw) => serde_json::from_str(raw.get()).ok(),
        Params::Call(_) => None,
    }
}
