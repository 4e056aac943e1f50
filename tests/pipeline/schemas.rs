//! Input schemas and declarations, from the signature and doc comments.

use super::fixtures::*;

#[test]
fn input_schema_comes_from_the_signature_and_docs() {
    let registry = registry(&Ledger::default());
    let tool = registry.get("find_orders").unwrap();
    assert_eq!(
        tool.title(),
        Some("Find orders"),
        "the title reads like the name"
    );
    assert_eq!(
        tool.description(),
        "Find orders by customer.\n\nReturns compact rows, each with a url."
    );
    let schema = tool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["query"]));
    assert_eq!(
        schema["properties"]["query"],
        json!({
            "type": "string", "description": "Customer name.", "minLength": 1, "maxLength": 20
        })
    );
    assert_eq!(schema["properties"]["limit"]["default"], 20);
    assert_eq!(
        schema["properties"]["status"]["description"],
        "Only orders in this status."
    );
    assert_eq!(
        schema["$defs"]["Status"]["enum"],
        json!(["open", "shipped"])
    );
    let output = tool.output_schema().expect("a page has an output schema");
    assert_eq!(output["properties"]["total"]["type"], "integer");
    assert!(output.get("$schema").is_none() && output.get("title").is_none());

    let sort = registry.get("sort_things").unwrap();
    let sort = sort.input_schema();
    assert_eq!(
        sort["properties"]["order"]["enum"],
        json!(["newest", "oldest"])
    );
    assert_eq!(sort["properties"]["order"]["default"], "newest");
    assert_eq!(sort["properties"]["count"]["minimum"], 1);
    assert_eq!(sort["properties"]["count"]["maximum"], 10);
    assert!(
        sort.get("required").is_none(),
        "arguments with defaults are optional"
    );

    let whole = registry.get("create_customer").unwrap();
    let whole = whole.input_schema();
    assert_eq!(whole["required"], json!(["name", "email"]));
    assert_eq!(
        whole["properties"]["email"]["description"],
        "Contact address."
    );

    let injected = registry.get("whoami").unwrap();
    let injected = injected.input_schema();
    assert_eq!(
        injected["properties"],
        json!({}),
        "injected parameters are not arguments"
    );
    assert!(
        registry
            .get("shop_overview")
            .unwrap()
            .output_schema()
            .is_none(),
        "text results have no schema"
    );
}

#[test]
fn declarations_reach_the_tool() {
    let registry = registry(&Ledger::default());
    let confirm = registry.get("confirm_order").unwrap();
    assert!(!confirm.is_read_only() && confirm.has_preview() && !confirm.is_public());
    assert_eq!(confirm.abilities(), ["orders.manage"]);
    let search = registry.get("web_search").unwrap();
    assert!(
        search.defer() == toolgate::Defer::Always && search.is_open_world() && search.is_public()
    );
    assert_eq!(
        (search.capability(), search.max_runs()),
        (Some("web_search"), Some(2))
    );
    assert!(registry.get("add").unwrap().is_idempotent());
    assert_eq!(
        registry.get("slow").unwrap().timeout(),
        Some(Duration::from_millis(50))
    );
    let source = registry.get("add").unwrap().source().to_string();
    assert_eq!(
        line_at(&source),
        "async fn add(",
        "the source names the tool's fn: {source}"
    );
}

/// Every `format` in `schema`, wherever it is.
fn formats(schema: &Value, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(format)) = map.get("format") {
                found.push(format.clone());
            }
            map.values().for_each(|v| formats(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| formats(v, found)),
        _ => {}
    }
}

#[test]
fn published_schemas_carry_bounds_not_rust_number_formats() {
    let registry = registry(&Ledger::default());
    let mut found = Vec::new();
    for tool in registry.tools() {
        formats(tool.input_schema(), &mut found);
        if let Some(output) = tool.output_schema() {
            formats(output, &mut found);
        }
    }
    assert_eq!(
        found,
        Vec::<String>::new(),
        "no `int64` or `uint32` that validators do not know"
    );
    let add = registry.get("add").unwrap();
    let add = add.input_schema();
    assert_eq!(add["properties"]["a"]["type"], "integer");
    let find_orders = registry.get("find_orders").unwrap();
    let limit = &find_orders.input_schema()["properties"]["limit"];
    assert_eq!(limit["minimum"], 1, "{limit}");
}

/// Every `description` in `schema`, wherever it is.
fn descriptions<'a>(schema: &'a Value, found: &mut Vec<&'a str>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(description)) = map.get("description") {
                found.push(description);
            }
            map.values().for_each(|v| descriptions(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| descriptions(v, found)),
        _ => {}
    }
}

#[test]
fn published_schemas_describe_for_models_without_rust_examples() {
    let registry = registry(&Ledger::default());
    for tool in registry.tools() {
        let mut found = Vec::new();
        descriptions(tool.input_schema(), &mut found);
        if let Some(output) = tool.output_schema() {
            descriptions(output, &mut found);
        }
        for description in found {
            assert!(
                !description.contains("```") && !description.contains("[`"),
                "{}: {description}",
                tool.name()
            );
        }
    }
    // A page's rows say what they are in a sentence, where rustdoc's example of `Row` was.
    let output = registry
        .get("find_orders")
        .unwrap()
        .output_schema()
        .unwrap()
        .clone();
    let mut found = Vec::new();
    descriptions(&output, &mut found);
    assert!(
        found.contains(&"A row of a `Page`: the record's fields and its `url`."),
        "{found:?}"
    );
    assert!(output.to_string().len() < 1_200, "{output}");
}
