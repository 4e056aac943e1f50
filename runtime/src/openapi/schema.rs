//! A schema of an OpenAPI document made whole, as a tool's schema must be: its local references
//! (`#/components/...`) put in place, a reference that comes back to itself (a recursive type) left
//! open where it recurs, a reference outside the document refused, OpenAPI 3.0's `nullable` written as
//! JSON Schema says it, and an expansion that would grow past [`MAX_NODES`] refused.

use std::cell::Cell;

use serde_json::{Map, Value, json};

/// The most nodes the schemas of one operation expand to: a document whose references fan out is not
/// followed further.
const MAX_NODES: usize = 50_000;

/// Resolves the schemas of one document.
pub(super) struct Resolver<'a> {
    document: &'a Value,
    nodes: Cell<usize>,
}

impl<'a> Resolver<'a> {
    pub(super) fn new(document: &'a Value) -> Self {
        Resolver {
            document,
            nodes: Cell::new(0),
        }
    }

    /// `schema`, whole.
    ///
    /// # Errors
    /// A reference outside the document or to nothing in it, or an expansion past [`MAX_NODES`].
    pub(super) fn resolve(&self, schema: &Value) -> Result<Value, String> {
        self.walk(schema, &mut Vec::new())
    }

    fn walk(&self, value: &Value, seen: &mut Vec<String>) -> Result<Value, String> {
        self.nodes.set(self.nodes.get() + 1);
        if self.nodes.get() > MAX_NODES {
            return Err(format!("its schemas expand past {MAX_NODES} nodes"));
        }
        match value {
            Value::Object(map) => match map.get("$ref") {
                Some(Value::String(reference)) => self.referred(reference, map, seen),
                _ => {
                    let mut whole = Map::with_capacity(map.len());
                    for (key, value) in map {
                        whole.insert(key.clone(), self.walk(value, seen)?);
                    }
                    nullable(&mut whole);
                    Ok(Value::Object(whole))
                }
            },
            Value::Array(items) => items.iter().map(|item| self.walk(item, seen)).collect(),
            other => Ok(other.clone()),
        }
    }

    /// What `reference` names, whole, with the keywords beside it (OpenAPI 3.1) laid over it.
    fn referred(
        &self,
        reference: &str,
        beside: &Map<String, Value>,
        seen: &mut Vec<String>,
    ) -> Result<Value, String> {
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(format!(
                "it refers to `{}` outside the document, which is not fetched",
                crate::text::capped(&crate::text::shown(reference))
            ));
        };
        if seen.iter().any(|s| s == reference) {
            let name = reference.rsplit('/').next().unwrap_or(reference);
            return Ok(
                json!({ "description": format!("A {name}, as above (it contains itself).") }),
            );
        }
        let target = self.document.pointer(pointer).ok_or_else(|| {
            format!(
                "it refers to `{}`, which the document does not have",
                crate::text::capped(&crate::text::shown(reference))
            )
        })?;
        seen.push(reference.to_owned());
        let whole = self.walk(target, seen);
        seen.pop();
        let mut whole = whole?;
        if let Value::Object(whole) = &mut whole {
            for (key, value) in beside.iter().filter(|(key, _)| *key != "$ref") {
                whole.insert(key.clone(), self.walk(value, seen)?);
            }
        }
        Ok(whole)
    }
}

/// OpenAPI 3.0's `nullable: true` as JSON Schema writes it: `null` among the types.
fn nullable(schema: &mut Map<String, Value>) {
    if schema.remove("nullable") != Some(Value::Bool(true)) {
        return;
    }
    if let Some(Value::String(kind)) = schema.get("type") {
        let kinds = json!([kind, "null"]);
        schema.insert("type".to_owned(), kinds);
    }
}

/// `schema` as a request carries it: the properties a server sets itself (`readOnly`) left out, at
/// every depth of objects.
pub(super) fn writable(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        let set_by_server: Vec<String> = (properties.iter())
            .filter(|(_, property)| property["readOnly"] == true)
            .map(|(name, _)| name.clone())
            .collect();
        for name in &set_by_server {
            properties.remove(name);
        }
        for property in properties.values_mut() {
            writable(property);
        }
        if let Some(Value::Array(required)) = map.get_mut("required") {
            required.retain(|name| !set_by_server.iter().any(|s| name == s.as_str()));
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner) = map.get_mut(key) {
            writable(inner);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(options)) = map.get_mut(key) {
            options.iter_mut().for_each(writable);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_put_in_place_and_a_type_that_contains_itself_stops() {
        let document = json!({ "components": { "schemas": {
            "Node": { "type": "object", "properties": {
                "name": { "type": "string", "nullable": true },
                "children": { "type": "array", "items": { "$ref": "#/components/schemas/Node" } },
            }},
        }}});
        let resolver = Resolver::new(&document);
        let whole = resolver
            .resolve(&json!({ "$ref": "#/components/schemas/Node", "description": "A tree." }))
            .unwrap();
        assert_eq!(whole["description"], "A tree.");
        assert_eq!(
            whole["properties"]["name"]["type"],
            json!(["string", "null"])
        );
        let inner = &whole["properties"]["children"]["items"];
        assert_eq!(
            inner["description"],
            "A Node, as above (it contains itself)."
        );
        assert!(
            Resolver::new(&document)
                .resolve(&json!({ "$ref": "https://elsewhere.example/s.json" }))
                .unwrap_err()
                .contains("outside the document, which is not fetched")
        );
        assert!(
            Resolver::new(&document)
                .resolve(&json!({ "$ref": "#/components/schemas/Gone" }))
                .unwrap_err()
                .contains("which the document does not have")
        );
    }

    #[test]
    fn references_that_fan_out_are_refused_before_they_fill_memory() {
        // Each level names the next twice: 2^40 nodes written out.
        let mut schemas = Map::new();
        for level in 0..40 {
            let next = json!({ "$ref": format!("#/components/schemas/L{}", level + 1) });
            schemas.insert(format!("L{level}"), json!({ "allOf": [next, next] }));
        }
        schemas.insert("L40".to_owned(), json!({ "type": "string" }));
        let document = json!({ "components": { "schemas": schemas } });
        let refused =
            Resolver::new(&document).resolve(&json!({ "$ref": "#/components/schemas/L0" }));
        assert!(refused.unwrap_err().contains("expand past"));
    }

    #[test]
    fn what_the_server_sets_is_not_asked_for() {
        let mut order = json!({ "type": "object", "required": ["id", "item"], "properties": {
            "id": { "type": "integer", "readOnly": true }, "item": { "type": "string" },
        }});
        writable(&mut order);
        assert_eq!(order["required"], json!(["item"]));
        assert!(order["properties"].get("id").is_none());
    }
}
