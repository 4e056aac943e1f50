//! Input and output schemas built once per tool, and argument validation with messages a model can act on.

mod plain;
mod portable;

use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Draft, Validator};
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::error::{ErrorKind, ToolError};
use crate::param::{ParamKind, ParamSpec};

use self::portable::{make_portable, settings, strip_root_annotations};

/// The input schema of a compiled-in tool and the defaults to fill in before validation.
pub(crate) struct InputSchema {
    pub(crate) schema: Value,
    pub(crate) defaults: Vec<(&'static str, Value)>,
}

/// Builds the object schema of a tool's parameters.
pub(crate) fn input_schema(params: &[ParamSpec]) -> Result<InputSchema, String> {
    let mut generator = settings().for_deserialize().into_generator();
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut defaults = Vec::new();
    for spec in params {
        let Some(arg) = (spec.fields.schema)(&mut generator) else {
            continue;
        };
        let mut schema = arg.schema;
        make_portable(&mut schema);
        if spec.kind() == ParamKind::Input {
            let mut schema = schema.to_value();
            strip_root_annotations(&mut schema);
            if schema.get("type") != Some(&json!("object")) {
                return Err("the type in `Input<T>` must have an object schema (a struct with named fields)".into());
            }
            return Ok(InputSchema { schema, defaults });
        }
        let name = spec.name();
        let mut property = schema.to_value();
        let object = property
            .as_object_mut()
            .ok_or_else(|| format!("argument `{name}` has a boolean schema"))?;
        if !spec.description().is_empty() {
            object.insert("description".into(), spec.description().into());
        }
        constrain(object, spec);
        if let Some(default) = spec.fields.default {
            let value = default();
            object.insert("default".into(), value.clone());
            defaults.push((name, value));
        } else if !arg.optional {
            required.push(Value::from(name));
        }
        properties.insert(name.to_owned(), property);
    }
    let mut schema =
        json!({ "type": "object", "properties": properties, "additionalProperties": false });
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    let definitions = generator.take_definitions(true);
    if !definitions.is_empty() {
        schema["$defs"] = Value::Object(definitions);
    }
    Ok(InputSchema { schema, defaults })
}

/// Applies `#[arg(range, length, pattern, one_of)]` to a property schema.
fn constrain(object: &mut Map<String, Value>, spec: &ParamSpec) {
    let numbers = [
        ("minimum", spec.fields.minimum),
        ("maximum", spec.fields.maximum),
    ];
    for (key, value) in numbers {
        if let Some(v) = value {
            object.insert(key.into(), number(v));
        }
    }
    let lengths = [
        ("minLength", spec.fields.min_length),
        ("maxLength", spec.fields.max_length),
    ];
    for (key, value) in lengths {
        if let Some(v) = value {
            object.insert(key.into(), v.into());
        }
    }
    if let Some(pattern) = spec.fields.pattern {
        object.insert("pattern".into(), pattern.into());
    }
    if !spec.fields.one_of.is_empty() {
        object.insert(
            "enum".into(),
            spec.fields.one_of.iter().map(|l| l.to_value()).collect(),
        );
    }
}

/// A bound as an integer when it is one, so `range(min = 1)` reads `"minimum": 1`.
fn number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        Value::from(v)
    }
}

/// The schema of a value a tool takes (its settings, a built-in's arguments), portable like every
/// published schema.
pub(crate) fn taken_schema(make: fn(&mut SchemaGenerator) -> Schema) -> Value {
    let mut generator = settings().for_deserialize().into_generator();
    let mut schema = make(&mut generator);
    make_portable(&mut schema);
    let mut schema = schema.to_value();
    strip_root_annotations(&mut schema);
    schema
}

/// The schema of a tool's structured result, or `None` when it returns none.
pub(crate) fn output_schema(make: fn(&mut SchemaGenerator) -> Option<Schema>) -> Option<Value> {
    let mut generator = settings().for_serialize().into_generator();
    make(&mut generator).map(|mut schema| {
        make_portable(&mut schema);
        let mut schema = schema.to_value();
        strip_root_annotations(&mut schema);
        schema
    })
}

/// Compiles a validator for a tool's input schema.
pub(crate) fn validator(schema: &Value) -> Result<Validator, String> {
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// A validator compiled when first needed: a schema toolgate or schemars made (a compiled tool's, a
/// built-in's, settings') is valid by construction, and a process that never needs its validator never
/// loads the general validator's code. A schema from elsewhere is compiled at once, so that a wrong one
/// is refused when the tool is registered.
pub(crate) struct LazyValidator {
    schema: Arc<Value>,
    compiled: OnceLock<Result<Validator, String>>,
}

impl LazyValidator {
    /// The validator of `schema`: compiled at once unless `trusted`; an error when it does not compile.
    pub(crate) fn new(schema: &Arc<Value>, trusted: bool) -> Result<Self, String> {
        let compiled = OnceLock::new();
        if !trusted {
            let _ = compiled.set(Ok(validator(schema)?));
        }
        Ok(LazyValidator {
            schema: Arc::clone(schema),
            compiled,
        })
    }

    /// The validator, compiled on first use.
    pub(crate) fn get(&self) -> Result<&Validator, &str> {
        self.compiled
            .get_or_init(|| validator(&self.schema))
            .as_ref()
            .map_err(String::as_str)
    }
}

/// How a tool's arguments are checked: a plain schema by the plain check first (see [`plain`]); the
/// general validator for any other schema, for arguments the plain check cannot accept, and for every
/// message about wrong arguments.
pub(crate) struct ArgumentCheck {
    plain: Option<plain::Plain>,
    validator: LazyValidator,
}

impl ArgumentCheck {
    /// The check of `schema`; an error when it is no valid schema. A plain schema is valid by its form,
    /// a `trusted` one by how it was made; either is compiled only when first needed.
    pub(crate) fn new(schema: &Arc<Value>, trusted: bool) -> Result<Self, String> {
        let plain = plain::Plain::of(schema);
        let validator = LazyValidator::new(schema, trusted || plain.is_some())?;
        Ok(ArgumentCheck { plain, validator })
    }

    /// Whether `value` alone satisfies property `name`'s schema, with the schema's other properties
    /// not required (how a default is checked).
    pub(crate) fn admits_alone(&self, name: &str, value: &Value) -> Result<bool, String> {
        let schema = &*self.validator.schema;
        if let Some(property) = schema.get("properties").and_then(|p| p.get(name))
            && plain::admits(property, value)
        {
            return Ok(true);
        }
        let mut lenient = schema.clone();
        lenient.as_object_mut().map(|o| o.remove("required"));
        let probe = Value::Object([(name.to_owned(), value.clone())].into_iter().collect());
        Ok(validator(&lenient)?.is_valid(&probe))
    }
}

/// Checks `arguments` against a tool's input schema and hands them back. The validator reads a `Value`,
/// so the map moves into one and out again: no copy, and nothing to drop.
#[inline]
pub(crate) fn validate(
    check: &ArgumentCheck,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Map<String, Value>, ToolError> {
    if check.plain.as_ref().is_some_and(|p| p.accepts(&arguments)) {
        return Ok(arguments);
    }
    let validator = check.validator.get().map_err(|reason| {
        let message = format!("the input schema of `{tool}` does not compile: {reason}");
        ToolError::with_kind(ErrorKind::Internal, message)
    })?;
    let mut object = Value::Object(arguments);
    if !validator.is_valid(&object) {
        object = without_nulls(validator, object)
            .map_err(|object| invalid_arguments(validator, tool, &object))?;
    }
    let Value::Object(arguments) = object else {
        unreachable!("wrapped as an object at the top")
    };
    Ok(arguments)
}

/// Arguments that do not match, without those given as `null`, when that makes them match: a model's
/// `null` for an optional argument means it leaves the argument out. Otherwise they are handed back.
#[cold]
fn without_nulls(validator: &Validator, object: Value) -> Result<Value, Value> {
    let mut left = object.clone();
    if let Value::Object(arguments) = &mut left {
        arguments.retain(|_, value| !value.is_null());
    }
    match left != object && validator.is_valid(&left) {
        true => Ok(left),
        false => Err(object),
    }
}

/// The error for arguments that do not match: one message naming each wrong field, and the list as
/// structured data.
#[cold]
fn invalid_arguments(validator: &Validator, tool: &str, arguments: &Value) -> ToolError {
    let problems = problems(validator, arguments, "argument").unwrap_or_default();
    let data: Vec<Value> = problems
        .iter()
        .map(|(path, problem)| json!({ "path": path, "problem": problem }))
        .collect();
    arguments_error(tool, &sentences(&problems)).with_data(json!({ "problems": data }))
}

/// The error for arguments of `tool` with `problems`, in sentences, that the model can fix.
pub(crate) fn arguments_error(tool: &str, problems: &str) -> ToolError {
    let message = format!("Invalid arguments for `{tool}`: {problems}. Fix them and call again.");
    ToolError::with_kind(ErrorKind::InvalidArguments, message)
}

/// Checks a tool's settings against the schema its `Settings<T>` publishes; on failure, a message naming
/// each wrong setting.
pub(crate) fn check_settings(
    validator: &LazyValidator,
    tool: &str,
    settings: &Value,
) -> Result<(), String> {
    let validator = validator.get()?;
    settings_problems(validator, tool, settings).map_err(|(message, _)| message)
}

/// As [`check_settings`], with each problem beside the message as (the setting's path, the problem): a
/// missing setting's path is its own, so that a form can show the problem beside its field.
pub(crate) fn settings_problems(
    validator: &Validator,
    tool: &str,
    settings: &Value,
) -> Result<(), (String, Vec<(String, String)>)> {
    if validator.is_valid(settings) {
        return Ok(());
    }
    let mut explained = Vec::new();
    let mut fields = Vec::new();
    for error in validator.iter_errors(settings).take(5) {
        let (path, problem) = explain(&error, "setting");
        let field = match error.kind() {
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                if path.is_empty() {
                    name.to_owned()
                } else {
                    format!("{path}.{name}")
                }
            }
            _ => path.clone(),
        };
        fields.push((field, problem.clone()));
        explained.push((path, problem));
    }
    let message = format!(
        "the settings of `{tool}` do not match their schema: {}",
        sentences(&explained)
    );
    Err((message, fields))
}

/// Up to five problems of `value` as (path, problem in words), with `noun` for a top-level key; `None`
/// when it is valid.
fn problems(validator: &Validator, value: &Value, noun: &str) -> Option<Vec<(String, String)>> {
    if validator.is_valid(value) {
        return None;
    }
    Some(
        validator
            .iter_errors(value)
            .take(5)
            .map(|e| explain(&e, noun))
            .collect(),
    )
}

/// The problems as one sentence: `` `path`: problem `` joined by `; `.
fn sentences(problems: &[(String, String)]) -> String {
    let sentences: Vec<String> = problems
        .iter()
        .map(|(path, problem)| {
            if path.is_empty() {
                problem.clone()
            } else {
                format!("`{path}`: {problem}")
            }
        })
        .collect();
    sentences.join("; ")
}

/// A validation error as (argument path, problem in words).
fn explain(error: &jsonschema::ValidationError<'_>, noun: &str) -> (String, String) {
    let path = dotted(error.instance_path().as_str());
    let problem = match error.kind() {
        ValidationErrorKind::Required { property } => {
            let field = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_owned);
            let what = if path.is_empty() { noun } else { "field" };
            format!("missing required {what} `{field}`")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<String> = unexpected.iter().map(|n| format!("`{n}`")).collect();
            let what = if path.is_empty() { noun } else { "field" };
            format!(
                "unknown {what}{} {}",
                if names.len() > 1 { "s" } else { "" },
                names.join(", ")
            )
        }
        _ => error.to_string(),
    };
    (path, problem)
}

/// `/items/0/name` as `items[0].name`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

/// Merges settings `over` into `base`: objects key by key, anything else replaced.
pub(crate) fn merge_settings(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => base.extend(over),
        (base, over) => *base = over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_code() {
        assert_eq!(dotted(""), "");
        assert_eq!(dotted("/limit"), "limit");
        assert_eq!(dotted("/items/0/name"), "items[0].name");
        assert_eq!(dotted("/a~1b"), "a/b");
    }

    #[test]
    fn messages_name_the_field() {
        let schema = json!({
            "type": "object",
            "properties": { "n": { "type": "integer" }, "q": { "type": "string" } },
            "required": ["q"],
            "additionalProperties": false
        });
        let v = validator(&schema).unwrap();
        let err = invalid_arguments(&v, "t", &json!({ "n": "x", "zz": 1 }));
        assert_eq!(err.kind(), ErrorKind::InvalidArguments);
        let message = err.message();
        assert!(
            message.contains("`n`: \"x\" is not of type \"integer\""),
            "{message}"
        );
        assert!(
            message.contains("missing required argument `q`"),
            "{message}"
        );
        assert!(message.contains("unknown argument `zz`"), "{message}");
        let check = ArgumentCheck::new(&Arc::new(schema), false).unwrap();
        assert!(
            validate(
                &check,
                "t",
                json!({ "q": "ok" }).as_object().cloned().unwrap()
            )
            .is_ok()
        );
        let wrong = validate(
            &check,
            "t",
            json!({ "n": "x" }).as_object().cloned().unwrap(),
        );
        assert_eq!(
            wrong.unwrap_err().message(),
            err.message().replace("; unknown argument `zz`", "")
        );
    }

    /// A tool with a documented enum and a bounded optional string, as the shop's `search_orders` has,
    /// is checked without loading the general validator until a call is wrong; its message then names
    /// the field as before.
    #[test]
    fn named_choices_leave_the_validator_unloaded_until_a_call_is_wrong() {
        let schema = json!({
            "$defs": {
                "Status": { "oneOf": [
                    { "const": "pending", "description": "Placed.", "type": "string" },
                    { "const": "shipped", "description": "On its way.", "type": "string" }
                ] }
            },
            "type": "object",
            "properties": {
                "query": { "anyOf": [{ "type": "string" }, { "type": "null" }], "maxLength": 100 },
                "status": { "anyOf": [{ "$ref": "#/$defs/Status" }, { "type": "null" }] }
            },
            "additionalProperties": false
        });
        let check = ArgumentCheck::new(&Arc::new(schema), false).unwrap();
        let arguments = |value: Value| value.as_object().cloned().unwrap();
        let good = arguments(json!({ "query": "Ada", "status": "shipped" }));
        assert!(validate(&check, "search", good).is_ok());
        assert!(check.validator.compiled.get().is_none(), "not loaded");
        let wrong = validate(&check, "search", arguments(json!({ "status": "lost" })));
        assert!(
            check.validator.compiled.get().is_some(),
            "loaded to explain"
        );
        let message = wrong.unwrap_err().message().to_owned();
        assert!(message.contains("`status`"), "{message}");
    }
}
