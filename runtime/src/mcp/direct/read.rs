//! Reading a hot request in one pass: the envelope, then the params as its method names them, read in
//! place when `method` comes before `params` (as every client writes it) and from the captured text
//! otherwise. Anything these types do not read exactly as rmcp would (a name with escapes, a request
//! that brings answers back, a malformed field) is not taken, and rmcp reads it instead.
//!
//! A call's `_meta` is read apart ([`CallMeta`]): the capabilities and name a 2026-07-28 client declares
//! on every request are only checked, not kept as JSON, since a call the loops take reads neither.

use std::fmt;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, JsonObject, PaginatedRequestParams, ProtocolVersion,
    RequestId, RequestMetaObject,
};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Era, FastRequest, Method};

/// The `_meta` key of the protocol version a request names.
const VERSION: &str = RequestMetaObject::DRAFT_REQUIRED_KEYS[0];
/// The `_meta` key of the capabilities a client declares.
const CAPABILITIES: &str = RequestMetaObject::DRAFT_REQUIRED_KEYS[1];
/// The `_meta` key of the client's name and version.
const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The params of a `tools/call`, as rmcp reads them (`_meta` aside).
#[derive(serde::Deserialize)]
struct CallParams<'a> {
    #[serde(rename = "_meta", default)]
    meta: Option<CallMeta>,
    name: &'a str,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<IgnoredAny>,
    #[serde(rename = "requestState", default)]
    request_state: Option<IgnoredAny>,
}

/// What a request's `_meta` says of its client.
#[derive(Default)]
pub(super) struct ClientMeta {
    /// The protocol version it names.
    pub(super) version: Option<ProtocolVersion>,
    /// Whether it declares the client's capabilities, in a form rmcp reads.
    capabilities: bool,
    /// Whether it names the client.
    client_info: bool,
}

impl ClientMeta {
    /// What rmcp's `meta` says, each key decoded as rmcp's accessors decode it; `None` when a key is there
    /// but does not read.
    fn of(meta: &RequestMetaObject) -> Option<ClientMeta> {
        fn decoded<'a, T: Deserialize<'a>>(value: Option<&'a Value>) -> Option<Option<T>> {
            match value {
                Some(value) => T::deserialize(value).ok().map(Some),
                None => Some(None),
            }
        }
        let version = decoded::<ProtocolVersion>(meta.get(VERSION))?;
        let capabilities = decoded::<ClientCapabilities>(meta.get(CAPABILITIES))?;
        Some(ClientMeta {
            version,
            capabilities: capabilities.is_some(),
            client_info: meta.contains_key(CLIENT_INFO),
        })
    }

    /// Whether a request that says this belongs where it came: on a version that negotiates per request
    /// (`negotiating`), it names that version and declares its capabilities, all rmcp requires of its
    /// `_meta` there; in a session that negotiated once, it says nothing of its client.
    pub(super) fn admits(&self, negotiating: Option<&ProtocolVersion>) -> bool {
        match negotiating {
            Some(version) => self.version.as_ref() == Some(version) && self.capabilities,
            None => self.version.is_none() && !self.capabilities && !self.client_info,
        }
    }
}

/// A call's `_meta`: what it says of its client checked as rmcp reads it, and every other key, with the
/// version it names, kept as rmcp keeps them. The capabilities and the client's name are not kept:
/// building them as JSON and dropping them again was a fifth of such a call's cost, and a call the loops
/// take (one that only reads, asks nothing and runs as no task) reads neither.
#[derive(Default)]
struct CallMeta {
    declared: ClientMeta,
    kept: RequestMetaObject,
}

impl<'de> Deserialize<'de> for CallMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(CallMetaVisitor)
    }
}

struct CallMetaVisitor;

impl<'de> Visitor<'de> for CallMetaVisitor {
    type Value = CallMeta;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a request's `_meta`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CallMeta, A::Error> {
        let mut meta = CallMeta::default();
        let declared = &mut meta.declared;
        while let Some(key) = map.next_key::<MetaKey>()? {
            // A key said twice is left to rmcp, which keeps the last.
            let again = match key {
                MetaKey::Version => {
                    let value: Value = map.next_value()?;
                    let version =
                        ProtocolVersion::deserialize(&value).map_err(de::Error::custom)?;
                    meta.kept.insert(VERSION.to_owned(), value);
                    declared.version.replace(version).is_some()
                }
                MetaKey::Capabilities => {
                    map.next_value::<ClientCapabilities>()?;
                    std::mem::replace(&mut declared.capabilities, true)
                }
                MetaKey::ClientInfo => {
                    map.next_value::<IgnoredAny>()?;
                    std::mem::replace(&mut declared.client_info, true)
                }
                MetaKey::Other(key) => {
                    let value = map.next_value()?;
                    meta.kept.insert(key, value).is_some()
                }
            };
            if again {
                return Err(de::Error::custom("a `_meta` key said twice"));
            }
        }
        Ok(meta)
    }
}

/// A key of a call's `_meta`.
enum MetaKey {
    Version,
    Capabilities,
    ClientInfo,
    Other(String),
}

impl<'de> Deserialize<'de> for MetaKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(MetaKeyVisitor)
    }
}

struct MetaKeyVisitor;

impl Visitor<'_> for MetaKeyVisitor {
    type Value = MetaKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a `_meta` key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<MetaKey, E> {
        Ok(match key {
            VERSION => MetaKey::Version,
            CAPABILITIES => MetaKey::Capabilities,
            CLIENT_INFO => MetaKey::ClientInfo,
            other => MetaKey::Other(other.to_owned()),
        })
    }
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

impl FastRequest<'_> {
    /// The request in `body`, if it is a hot one, read as rmcp would read it, without deciding anything
    /// else yet.
    pub(super) fn read<'r>(body: &[u8]) -> Option<FastRequest<'r>> {
        // Checked as UTF-8 once, whole, rather than string by string as `from_slice` does.
        let body = std::str::from_utf8(body).ok()?;
        let Read { id, method, params } = serde_json::from_str(body).ok()?;
        let (meta, declared, method) = match method {
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
                let CallMeta { declared, kept } = call.meta.unwrap_or_default();
                (kept, declared, Method::Call(request))
            }
            "tools/list" => {
                let mut page: Option<PaginatedRequestParams> = captured(params)?;
                let meta = page
                    .as_mut()
                    .and_then(|p| p.meta.take())
                    .unwrap_or_default();
                let declared = ClientMeta::of(&meta)?;
                (meta, declared, Method::List(page))
            }
            "ping" => {
                let only: Option<MetaOnly> = captured(params)?;
                let meta = only.and_then(|o| o.meta).unwrap_or_default();
                let declared = ClientMeta::of(&meta)?;
                (meta, declared, Method::Ping)
            }
            _ => return None,
        };
        Some(FastRequest {
            id,
            meta,
            declared,
            method,
            sends: false,
            resolved: None,
            era: Era::Session,
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rmcp::model::{ClientCapabilities, Implementation};
    use serde_json::{Value, json};

    use super::*;

    /// A request of `method` with `_meta` in its params, beside what a call names.
    fn line(method: &str, meta: &Value) -> Vec<u8> {
        let params = match method {
            "tools/call" => json!({"name": "add", "arguments": {"a": 1}, "_meta": meta}),
            _ => json!({"_meta": meta}),
        };
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            .to_string()
            .into_bytes()
    }

    /// What rmcp decides of `meta`: that a request of `negotiating`'s version names it and lacks none of
    /// what it requires, or (`None`) that it names no version.
    fn rmcp_admits(meta: &Value, negotiating: Option<&ProtocolVersion>) -> bool {
        let Ok(meta) = serde_json::from_value::<RequestMetaObject>(meta.clone()) else {
            return false;
        };
        let named = meta.protocol_version();
        match negotiating {
            Some(version) => {
                named.as_ref() == Some(version) && meta.missing_required_keys(version).is_empty()
            }
            None => named.is_none(),
        }
    }

    #[test]
    fn the_keys_read_apart_are_those_rmcp_writes_for_the_clients_context() {
        let meta = RequestMetaObject::with_client_context(
            ProtocolVersion::V_2026_07_28,
            Implementation::new("t", "0"),
            ClientCapabilities::default(),
        );
        let mut keys: Vec<&str> = meta.keys().map(String::as_str).collect();
        keys.sort_unstable();
        let mut ours = vec![VERSION, CAPABILITIES, CLIENT_INFO];
        ours.sort_unstable();
        assert_eq!(keys, ours);
    }

    #[test]
    fn a_request_is_admitted_only_where_rmcp_admits_it() {
        let current = json!("2026-07-28");
        let metas = [
            json!({}),
            json!({
                "io.modelcontextprotocol/protocolVersion": current,
                "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "roots": {"listChanged": true}},
                "io.modelcontextprotocol/logLevel": "debug",
                "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                "vendor/key": [1, {"a": null}]
            }),
            json!({"io.modelcontextprotocol/protocolVersion": current, "io.modelcontextprotocol/clientCapabilities": {}}),
            json!({"io.modelcontextprotocol/protocolVersion": current}),
            json!({"io.modelcontextprotocol/protocolVersion": "2025-11-25", "io.modelcontextprotocol/clientCapabilities": {}}),
            json!({"io.modelcontextprotocol/protocolVersion": 20260728, "io.modelcontextprotocol/clientCapabilities": {}}),
            json!({"io.modelcontextprotocol/protocolVersion": current, "io.modelcontextprotocol/clientCapabilities": 5}),
            json!({"io.modelcontextprotocol/protocolVersion": current, "io.modelcontextprotocol/clientCapabilities": {"roots": 5}}),
            json!({"io.modelcontextprotocol/protocolVersion": current, "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": 5}),
            json!({"io.modelcontextprotocol/clientCapabilities": {}}),
            json!({"io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}),
            json!({"progressToken": 3}),
        ];
        let v2026 = ProtocolVersion::V_2026_07_28;
        for method in ["tools/call", "tools/list", "ping"] {
            for meta in &metas {
                for negotiating in [Some(&v2026), None] {
                    let ours = FastRequest::read(&line(method, meta))
                        .is_some_and(|hot| hot.declared.admits(negotiating));
                    if ours {
                        assert!(
                            rmcp_admits(meta, negotiating),
                            "{method} {meta} on {negotiating:?}"
                        );
                    }
                }
            }
        }
        // What clients send is admitted, not merely never wrongly.
        for (meta, negotiating) in [
            (&metas[0], None),
            (&metas[1], Some(&v2026)),
            (&metas[2], Some(&v2026)),
            (&metas[11], None),
        ] {
            for method in ["tools/call", "tools/list", "ping"] {
                let hot = FastRequest::read(&line(method, meta)).unwrap();
                assert!(hot.declared.admits(negotiating), "{method} {meta}");
            }
        }
    }

    #[test]
    fn a_call_keeps_every_key_of_its_meta_but_the_clients_capabilities_and_name() {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "debug",
            "progressToken": "p",
            "vendor/key": [1, {"a": null}]
        });
        let hot = FastRequest::read(&line("tools/call", &meta)).unwrap();
        let mut kept = meta.as_object().unwrap().clone();
        kept.remove(CLIENT_INFO);
        kept.remove(CAPABILITIES);
        assert_eq!(hot.meta.0.0, kept);
        assert_eq!(
            hot.meta.protocol_version(),
            Some(ProtocolVersion::V_2026_07_28)
        );
        // In a session that negotiated once, what a call would lose is rmcp's to keep.
        for key in [CLIENT_INFO, CAPABILITIES] {
            let hot = FastRequest::read(&line("tools/call", &json!({ key: {} }))).unwrap();
            assert!(!hot.declared.admits(None), "{key}");
        }
        // A key said twice, which rmcp reads as its last, is rmcp's to read.
        let twice = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","_meta":{"k":1,"k":2}}}"#;
        assert!(FastRequest::read(twice).is_none());
    }
}
