//! What every published schema is made into: portable for clients that read JSON Schema narrowly, and
//! described for models, not for Rust readers.

use schemars::Schema;
use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform};
use serde_json::{Map, Value, json};

/// Spells nullable types and numbers portably throughout `schema` (the settings' transforms reach only
/// the definitions a generator hands over).
pub(super) fn make_portable(schema: &mut Schema) {
    RecursiveTransform(split_nullable_type).transform(schema);
    RecursiveTransform(portable_number).transform(schema);
    RecursiveTransform(described_for_models).transform(schema);
}

/// JSON Schema 2020-12, with nullable types and numbers spelled portably.
pub(super) fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12()
        .with_transform(RecursiveTransform(split_nullable_type))
        .with_transform(RecursiveTransform(portable_number))
        .with_transform(RecursiveTransform(described_for_models))
}

/// A description as a model should read it: schemars takes a type's whole rustdoc, which may hold
/// examples in Rust (a model reads them on every listing, and they say nothing of the value) and links
/// for rustdoc. Fenced blocks go, and so does what follows an `# Examples` heading; ``[`Page`]`` reads
/// `` `Page` ``. A description left empty goes too.
fn described_for_models(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let Some(Value::String(description)) = object.get_mut("description") else {
        return;
    };
    if !description.contains("```") && !description.contains('[') && !description.contains("# ") {
        return;
    }
    let mut kept = String::with_capacity(description.len());
    let mut fenced = false;
    for line in description.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if trimmed.starts_with('#') && trimmed.trim_start_matches('#').trim() == "Examples" {
            break;
        }
        if !fenced {
            kept.push_str(&without_doc_links(line));
            kept.push('\n');
        }
    }
    let kept = kept.trim();
    if kept.is_empty() {
        object.remove("description");
    } else {
        *description = kept.to_owned();
    }
}

/// `line` with rustdoc's links to items (``[`Page`]``, ``[`Page`](crate::Page)``) as their text alone.
fn without_doc_links(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(open) = rest.find("[`") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find("`]") else {
            out.push_str(&rest[open..]);
            return out;
        };
        out.push_str(&after[..=close]);
        rest = &after[close + 2..];
        // A link's target in parentheses is for rustdoc: dropped.
        if let Some(target) = rest.strip_prefix('(')
            && let Some(end) = target.find(')')
        {
            rest = &target[end + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// schemars' Rust number formats (`"format": "uint64"`) as bounds: the formats are no JSON Schema
/// format, and validators such as the MCP Inspector's warn on every call. The bounds say the same and are
/// checked: `u8` is `minimum: 0, maximum: 255`, `u64` is `minimum: 0`.
fn portable_number(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let Some(format) = object.get("format").and_then(Value::as_str) else {
        return;
    };
    let (minimum, maximum): (Option<i64>, Option<i64>) = match format {
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint" | "uint64" | "uint128" => (Some(0), None),
        "int" | "int64" | "int128" | "float" | "double" => (None, None),
        _ => return,
    };
    object.remove("format");
    for (key, bound) in [("minimum", minimum), ("maximum", maximum)] {
        if let Some(bound) = bound {
            object.entry(key).or_insert(bound.into());
        }
    }
}

/// `{"type": ["string", "null"], "maxLength": 5}` as `{"anyOf": [{"type": "string", "maxLength": 5},
/// {"type": "null"}]}`: type arrays are legal, but clients that map schemas onto one-type dialects (Gemini's
/// function declarations) reject them. Annotations stay at the top.
fn split_nullable_type(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let Some(Value::Array(types)) = object.get("type") else {
        return;
    };
    let others: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    if types.len() != 2 || others.len() != 1 {
        return;
    }
    let mut branch = Map::new();
    branch.insert("type".into(), others[0].clone());
    let keys: Vec<String> = object.keys().cloned().collect();
    for key in keys {
        let annotation = matches!(
            key.as_str(),
            "description" | "title" | "default" | "examples" | "deprecated"
        );
        if key != "type"
            && !annotation
            && let Some(value) = object.remove(&key)
        {
            branch.insert(key, value);
        }
    }
    object.remove("type");
    object.insert(
        "anyOf".into(),
        json!([Value::Object(branch), { "type": "null" }]),
    );
}

/// Removes `$schema` and the root `title` (the Rust type's name), which clients do not need.
pub(super) fn strip_root_annotations(schema: &mut Value) {
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_loses_its_rust_examples_and_doc_links() {
        let doc = "One page of results: see [`Row`] and [`Limit`](crate::Limit).\n\n```\nuse toolgate::Page;\n\
                   let page = Page::new(1, [1], |n| n.to_string());\n```\nRows come first.";
        let mut schema = Schema::try_from(json!({ "description": doc, "type": "object" })).unwrap();
        described_for_models(&mut schema);
        assert_eq!(
            schema.to_value()["description"],
            "One page of results: see `Row` and `Limit`.\n\nRows come first."
        );
        let mut only_code =
            Schema::try_from(json!({ "description": "```\nlet x = 1;\n```" })).unwrap();
        described_for_models(&mut only_code);
        assert_eq!(only_code.to_value(), json!({}));
        let mut examples =
            Schema::try_from(json!({ "description": "A row.\n\n# Examples\nSee the book." }))
                .unwrap();
        described_for_models(&mut examples);
        assert_eq!(examples.to_value()["description"], "A row.");
    }

    #[test]
    fn nullable_types_become_any_of() {
        let mut schema = Schema::try_from(json!({
            "description": "Query.", "type": ["string", "null"], "maxLength": 5
        }))
        .unwrap();
        split_nullable_type(&mut schema);
        assert_eq!(
            schema.to_value(),
            json!({ "description": "Query.", "anyOf": [{ "type": "string", "maxLength": 5 }, { "type": "null" }] })
        );
    }
}
