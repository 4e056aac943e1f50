//! The operations of an OpenAPI document, each as a tool would take it: its name, what it says it does,
//! one input schema for its path, query and header parameters and its JSON body, the schema of its
//! success's answer, and whether it only reads. An operation that cannot be one is skipped with the
//! reason.

use serde_json::{Map, Value, json};

use super::Skipped;
use super::schema::{Resolver, writable};

/// The methods an operation can have, in the order a path item lists them.
const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// The most parameters an operation may have to become a tool: past it, no model fills them well.
pub(super) const MAX_PARAMETERS: usize = 100;

/// The longest tool name the model APIs take.
const MAX_NAME: usize = 64;

/// The longest description kept.
const MAX_DESCRIPTION: usize = 2_000;

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Location {
    Path,
    Query,
    Header,
}

/// One parameter: its name in the request, and its key among the tool's arguments.
#[derive(Debug, Clone)]
pub(super) struct Parameter {
    pub(super) name: String,
    pub(super) key: String,
    pub(super) location: Location,
}

/// The argument a JSON body is given under.
pub(super) const BODY: &str = "body";

/// One operation, as a tool.
#[derive(Debug, Clone)]
pub(super) struct Operation {
    pub(super) name: String,
    /// Its `operationId`, if it has one.
    pub(super) id: Option<String>,
    pub(super) method: http::Method,
    pub(super) path: String,
    pub(super) summary: String,
    pub(super) description: String,
    pub(super) tags: Vec<String>,
    pub(super) parameters: Vec<Parameter>,
    pub(super) has_body: bool,
    pub(super) input_schema: Value,
    pub(super) output_schema: Option<Value>,
}

impl Operation {
    /// Whether it only reads: `GET` and `HEAD`.
    pub(super) fn reads(&self) -> bool {
        matches!(self.method, http::Method::GET | http::Method::HEAD)
    }
}

/// The operations of `document` as the tools of the API labelled `label`, and those skipped with why.
///
/// # Errors
/// When the document is not OpenAPI 3.0 or 3.1.
pub(super) fn operations(
    label: &str,
    document: &Value,
) -> Result<(Vec<Operation>, Vec<Skipped>), String> {
    let version = document["openapi"].as_str().unwrap_or_default();
    if !(version.starts_with("3.0") || version.starts_with("3.1")) {
        return Err(match document.get("swagger") {
            Some(_) => "it is a Swagger 2.0 document; convert it to OpenAPI 3 first".to_owned(),
            None => "it is not an OpenAPI 3.0 or 3.1 document (no `openapi` version)".to_owned(),
        });
    }
    let Some(paths) = document["paths"].as_object() else {
        return Err("it has no `paths`".to_owned());
    };
    let (mut made, mut skipped) = (Vec::new(), Vec::new());
    for (path, item) in paths {
        for method in METHODS {
            let Some(operation) = item.get(method).filter(|o| o.is_object()) else {
                continue;
            };
            let what = format!("{} {path}", method.to_uppercase());
            let skip = |why| Skipped {
                operation: what.clone(),
                why,
            };
            match one(label, document, path, item, method, operation) {
                Ok(operation) if made.iter().any(|m: &Operation| m.name == operation.name) => {
                    skipped.push(skip(format!("its name `{}` is taken", operation.name)));
                }
                Ok(operation) => made.push(operation),
                Err(why) => skipped.push(skip(why)),
            }
        }
    }
    Ok((made, skipped))
}

/// The operation `method` of the path item `item` at `path`.
fn one(
    label: &str,
    document: &Value,
    path: &str,
    item: &Value,
    method: &str,
    operation: &Value,
) -> Result<Operation, String> {
    let resolver = Resolver::new(document);
    let name = name(label, method, path, operation["operationId"].as_str());
    let text = |said: &str| {
        let said = crate::text::shown(said.trim());
        said.chars().take(MAX_DESCRIPTION).collect::<String>()
    };
    let summary = text(operation["summary"].as_str().unwrap_or_default());
    // Its first paragraph: what follows is for people reading the reference (media types, notes), and
    // buries what the operation does under words a search weighs too.
    let description = operation["description"].as_str().unwrap_or_default();
    let description = text(description.split("\n\n").next().unwrap_or_default());
    // The path item's parameters, then the operation's, which replace those it names again.
    let mut declared: Vec<Value> = Vec::new();
    for parameter in [&item["parameters"], &operation["parameters"]]
        .into_iter()
        .filter_map(Value::as_array)
        .flatten()
    {
        let parameter = resolver.resolve(parameter)?;
        let same = |p: &&mut Value| p["name"] == parameter["name"] && p["in"] == parameter["in"];
        match declared.iter_mut().find(same) {
            Some(earlier) => *earlier = parameter,
            None => declared.push(parameter),
        }
    }
    if declared.len() > MAX_PARAMETERS {
        return Err(format!(
            "it has {} parameters, more than {MAX_PARAMETERS}",
            declared.len()
        ));
    }
    let (mut properties, mut required, mut parameters) = (Map::new(), Vec::new(), Vec::new());
    for parameter in &declared {
        let Some(name) = parameter["name"].as_str() else {
            return Err("a parameter has no name".to_owned());
        };
        let location = match parameter["in"].as_str() {
            Some("path") => Location::Path,
            Some("query") => Location::Query,
            // The client sets these itself (OpenAPI ignores them as parameters).
            Some("header")
                if ["accept", "content-type", "authorization"]
                    .contains(&name.to_ascii_lowercase().as_str()) =>
            {
                continue;
            }
            Some("header") => Location::Header,
            Some("cookie") if parameter["required"] != true => continue,
            other => {
                return Err(format!(
                    "its parameter `{}` is in {}, which toolgate does not send",
                    crate::text::shown(name),
                    other.unwrap_or("no place")
                ));
            }
        };
        let in_name = parameter["in"].as_str().unwrap_or_default();
        let key = [name.to_owned(), format!("{in_name}_{name}")]
            .into_iter()
            .find(|key| key != BODY && !properties.contains_key(key))
            .ok_or_else(|| {
                format!(
                    "its parameter name `{}` is given twice",
                    crate::text::shown(name)
                )
            })?;
        let mut schema = parameter.get("schema").cloned().unwrap_or(json!({}));
        if let (Value::Object(schema), Some(said)) =
            (&mut schema, parameter["description"].as_str())
        {
            schema
                .entry("description")
                .or_insert_with(|| Value::String(said.to_owned()));
        }
        if parameter["required"] == true || location == Location::Path {
            required.push(Value::String(key.clone()));
        }
        properties.insert(key.clone(), schema);
        parameters.push(Parameter {
            name: name.to_owned(),
            key,
            location,
        });
    }
    let body = resolver.resolve(&operation["requestBody"])?;
    let has_body = !body.is_null();
    if has_body {
        let Some(mut schema) = json_schema(&body) else {
            return Err("its request body is not JSON".to_owned());
        };
        writable(&mut schema);
        if body["required"] == true {
            required.push(Value::String(BODY.to_owned()));
        }
        properties.insert(BODY.to_owned(), schema);
    }
    let input_schema = json!({ "type": "object", "properties": properties, "required": required });
    Ok(Operation {
        name,
        id: operation["operationId"].as_str().map(str::to_owned),
        method: method
            .to_uppercase()
            .parse()
            .map_err(|_| format!("`{method}` is no method"))?,
        path: path.to_owned(),
        summary,
        description,
        tags: (operation["tags"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        parameters,
        has_body,
        input_schema,
        output_schema: output_schema(&resolver, operation)?,
    })
}

/// The tool's name: the label and the operation's id, or its method and path where it has none, in
/// the characters tool names take, and shortened with a digest past what the model APIs take.
fn name(label: &str, method: &str, path: &str, id: Option<&str>) -> String {
    let base = match id {
        Some(id) => id.to_owned(),
        None => format!("{method}_{path}"),
    };
    let mut name = format!("{label}_");
    let mut last = '_';
    for c in base.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' {
            c
        } else {
            '_'
        };
        if !(c == '_' && last == '_') {
            name.push(c);
        }
        last = c;
    }
    let name = name.trim_end_matches('_').to_owned();
    if name.len() <= MAX_NAME {
        return name;
    }
    // Too long for the model APIs: its start, and a digest of the whole that keeps it apart.
    use sha2::Digest as _;
    let digest = crate::random::hex(&sha2::Sha256::digest(name.as_bytes())[..3]);
    format!("{}_{digest}", &name[..MAX_NAME - digest.len() - 1])
}

/// The JSON schema of a request body or answer's `content`, whole.
fn json_schema(with_content: &Value) -> Option<Value> {
    let content = with_content["content"].as_object()?;
    let (_, media) = content
        .iter()
        .find(|(kind, _)| kind.starts_with("application/json") || kind.ends_with("+json"))?;
    Some(media.get("schema").cloned().unwrap_or(json!({})))
}

/// The schema of its success's JSON answer, when it is an object (what an output schema may be).
fn output_schema(resolver: &Resolver<'_>, operation: &Value) -> Result<Option<Value>, String> {
    let Some(responses) = operation["responses"].as_object() else {
        return Ok(None);
    };
    let Some((_, success)) = responses.iter().find(|(code, _)| code.starts_with('2')) else {
        return Ok(None);
    };
    let success = resolver.resolve(success)?;
    Ok(json_schema(&success).filter(|schema| schema["type"] == "object"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_operation_id_or_its_method_and_path() {
        assert_eq!(name("pets", "get", "/x", Some("listPets")), "pets_listPets");
        assert_eq!(
            name("pets", "get", "/pets/{petId}/toys", None),
            "pets_get_pets_petId_toys"
        );
        assert_eq!(name("a", "post", "/x", Some("dö \u{202e}it")), "a_d_it");
        let long = name("a", "get", "/", Some(&"x".repeat(80)));
        assert_eq!(long.len(), 64);
        assert_ne!(
            long,
            name("a", "get", "/", Some(&"x".repeat(81))),
            "kept apart"
        );
    }

    #[test]
    fn parameters_that_share_a_name_are_kept_apart_and_too_many_are_refused() {
        let parameter = |name: &str, place: &str| json!({ "name": name, "in": place, "schema": { "type": "string" } });
        let document = json!({ "openapi": "3.1.0", "paths": { "/items/{id}": {
            "parameters": [parameter("id", "path")],
            "put": {
                "operationId": "put_item",
                "parameters": [parameter("id", "query"), parameter("body", "query")],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
            },
            "get": {
                "operationId": "many",
                "parameters": (0..=MAX_PARAMETERS).map(|n| parameter(&format!("p{n}"), "query")).collect::<Vec<_>>(),
            },
        }}});
        let (made, skipped) = operations("shop", &document).unwrap();
        let put = &made[0];
        let keys: Vec<&str> = put.parameters.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["id", "query_id", "query_body"]);
        assert_eq!(put.input_schema["required"], json!(["id", "body"]));
        assert!(!put.reads());
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].why.contains("more than 100"), "{skipped:?}");
        assert!(
            operations("x", &json!({ "swagger": "2.0" }))
                .unwrap_err()
                .contains("Swagger 2.0")
        );
        assert!(
            operations("x", &json!({ "hello": 1 }))
                .unwrap_err()
                .contains("not an OpenAPI")
        );
    }
}
