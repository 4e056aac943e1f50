//! The canonical form of a call's arguments, and its digest: the same arguments give the same digest
//! whatever the order of their keys.

use serde_json::{Map, Value};

/// The SHA-256 of the canonical JSON of `arguments`, in hex.
pub(crate) fn digest(arguments: &Map<String, Value>) -> String {
    let mut text = String::new();
    write_object(&mut text, arguments);
    crate::text::digest(&text)
}

/// JSON with object keys sorted and no whitespace; strings and numbers as serde_json writes them.
fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Object(map) => write_object(out, map),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_object(out: &mut String, map: &Map<String, Value>) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (key, value)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        write_value(out, value);
    }
    out.push('}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn key_order_does_not_matter_but_values_do() {
        let a = object(json!({ "b": [1, { "y": 2, "x": 1 }], "a": "x" }));
        let b = object(json!({ "a": "x", "b": [1, { "x": 1, "y": 2 }] }));
        let c = object(json!({ "a": "x", "b": [1, { "x": 1, "y": 3 }] }));
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&c));
        assert_ne!(digest(&a), digest(&Map::new()));
    }
}
