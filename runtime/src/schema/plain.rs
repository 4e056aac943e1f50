//! The plain input schemas most tools have, checked without the general validator: an object of named
//! properties, each a string, integer, number, boolean or null (or such a type or null), with bounds,
//! lengths or a list of allowed values, some required, and no other properties. A property may also be a
//! choice of string constants (`oneOf` or `anyOf` of `const`s, as schemars writes an enum whose variants
//! have doc comments), or refer to one of the schema's own `$defs` that is plain itself, as schemars
//! writes a named type. A plain schema is read once when the tool is registered; anything else in a
//! schema makes it not plain, and the general validator (`jsonschema`) checks it.
//!
//! The check is sound, not complete: when it says arguments are valid, they are valid under the general
//! validator too; when it cannot say (a wrong argument, or a value it does not judge exactly, such as
//! `2.0` for an integer), the general validator decides and explains. So the common call skips the
//! general validator, and every message about wrong arguments still comes from it.

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};

/// A plain object schema: its properties by name, and whether others are refused.
#[derive(Debug)]
pub(crate) struct Plain {
    /// Sorted by name.
    properties: Vec<(String, Property)>,
    additional: bool,
}

/// One property: its type, whether `null` is also allowed, whether it is required, and its constraints.
#[derive(Debug)]
struct Property {
    kind: Kind,
    nullable: bool,
    required: bool,
    /// `None` when it has none, as most properties: their check is the type's alone, and the properties
    /// of a schema lie close together.
    limits: Option<Box<Limits>>,
}

/// A property's bounds, lengths and allowed values.
#[derive(Debug, Default, PartialEq)]
struct Limits {
    minimum: Option<Number>,
    maximum: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    allowed: Option<Vec<Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Number,
    Boolean,
    Null,
}

/// Keys that annotate and never restrict.
const ANNOTATIONS: [&str; 7] = [
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

impl Plain {
    /// `schema` as a plain schema, or `None` when it has anything a plain schema does not.
    pub(crate) fn of(schema: &Value) -> Option<Plain> {
        let root = schema.as_object()?;
        let defs = match root.get("$defs") {
            Some(defs) => defs.as_object()?,
            None => &Map::new(),
        };
        // Every definition plain too, so that the schema is valid by its form (see `ArgumentCheck`).
        if !defs.values().all(|def| Property::of(def, None).is_some()) {
            return None;
        }
        let mut properties = Vec::new();
        let mut additional = true;
        let mut required = Vec::new();
        for (key, value) in root {
            match key.as_str() {
                "type" if value == "object" => {}
                "properties" => {
                    for (name, property) in value.as_object()? {
                        properties.push((name.clone(), Property::of(property, Some(defs))?));
                    }
                }
                "required" => {
                    for name in value.as_array()? {
                        required.push(name.as_str()?);
                    }
                }
                "additionalProperties" => additional = value.as_bool()?,
                "$schema" | "$defs" => {}
                key if ANNOTATIONS.contains(&key) => {}
                _ => return None,
            }
        }
        if root.get("type")? != "object" {
            return None;
        }
        properties.sort_by(|(a, _), (b, _)| a.cmp(b));
        for name in &required {
            let at = properties
                .binary_search_by(|(n, _)| n.as_str().cmp(name))
                .ok()?;
            properties[at].1.required = true;
        }
        Some(Plain {
            properties,
            additional,
        })
    }

    /// Whether `arguments` certainly satisfy the schema. `false` means the general validator decides.
    pub(crate) fn accepts(&self, arguments: &Map<String, Value>) -> bool {
        self.accepts_in_order(arguments)
            .unwrap_or_else(|| self.accepts_by_name(arguments))
    }

    /// [`accepts`](Self::accepts) in one pass over the arguments and the properties, both in order of
    /// name as a `Map` keeps its keys. `None` when it cannot tell: an argument that is no property, or a
    /// required property passed over, as arguments in another order (serde_json's `preserve_order`) give.
    fn accepts_in_order(&self, arguments: &Map<String, Value>) -> Option<bool> {
        let mut properties = self.properties.iter();
        for (name, value) in arguments {
            let property = loop {
                let (property_name, property) = properties.next()?;
                match by_bytes(property_name, name) {
                    Ordering::Equal => break property,
                    Ordering::Less if !property.required => {}
                    _ => return None,
                }
            };
            if !property.accepts(value) {
                return Some(false);
            }
        }
        Some(properties.all(|(_, property)| !property.required))
    }

    /// [`accepts`](Self::accepts) whatever the arguments' order: each property looked up by name.
    fn accepts_by_name(&self, arguments: &Map<String, Value>) -> bool {
        let mut found = 0;
        for (name, property) in &self.properties {
            match arguments.get(name) {
                Some(value) if property.accepts(value) => found += 1,
                Some(_) => return false,
                None if property.required => return false,
                None => {}
            }
        }
        self.additional || found == arguments.len()
    }
}

/// `a` against `b` in the order of `str`, byte by byte in place: names are short, and a call of `memcmp`
/// costs more than comparing a few bytes.
fn by_bytes(a: &str, b: &str) -> Ordering {
    match a.bytes().zip(b.bytes()).find(|(x, y)| x != y) {
        Some((x, y)) => x.cmp(&y),
        None => a.len().cmp(&b.len()),
    }
}

/// Whether `value` certainly satisfies the property schema `schema` (`false` when it is not plain).
pub(crate) fn admits(schema: &Value, value: &Value) -> bool {
    Property::of(schema, None).is_some_and(|p| p.accepts(value))
}

impl Property {
    /// `schema` as a plain property; `defs` are the definitions a `$ref` may name (`None`: no `$ref`).
    fn of(schema: &Value, defs: Option<&Map<String, Value>>) -> Option<Property> {
        let object = schema.as_object()?;
        let only_annotations_besides = |keyword: &str| {
            object
                .keys()
                .all(|k| k == keyword || ANNOTATIONS.contains(&k.as_str()))
        };
        // `{"$ref": "#/$defs/<name>"}`, as a named type is published; the definition is read without
        // further references.
        if let Some(reference) = object.get("$ref") {
            let name = reference.as_str()?.strip_prefix("#/$defs/")?;
            if !only_annotations_besides("$ref") || name.contains(['~', '%', '/']) {
                return None;
            }
            return Property::of(defs?.get(name)?, None);
        }
        if let Some(choices) = object.get("oneOf") {
            if !only_annotations_besides("oneOf") {
                return None;
            }
            return Property::constants(choices.as_array()?);
        }
        // `{"anyOf": [<type>, {"type": "null"}]}`, as nullable arguments are published, with constraints
        // beside it that a `null` ignores; or a choice of constants.
        let (mut property, mut limits) = match object.get("anyOf").map(Value::as_array) {
            None => (Property::untyped(), Limits::default()),
            Some(Some(branches)) => match branches.as_slice() {
                [branch, null] if null == &serde_json::json!({ "type": "null" }) => {
                    let branch = Property::of(branch, defs)?;
                    let limits = branch.limits.map(|limits| *limits).unwrap_or_default();
                    let property = Property {
                        nullable: true,
                        limits: None,
                        ..branch
                    };
                    (property, limits)
                }
                _ if only_annotations_besides("anyOf") => return Property::constants(branches),
                _ => return None,
            },
            Some(None) => return None,
        };
        let mut typed = property.nullable;
        for (key, value) in object {
            match key.as_str() {
                "anyOf" if property.nullable => {}
                "type" if !property.nullable => {
                    property.kind = match value.as_str()? {
                        "string" => Kind::String,
                        "integer" => Kind::Integer,
                        "number" => Kind::Number,
                        "boolean" => Kind::Boolean,
                        "null" => Kind::Null,
                        _ => return None,
                    };
                    typed = true;
                }
                "minimum" => set_once(&mut limits.minimum, value.as_number()?.clone())?,
                "maximum" => set_once(&mut limits.maximum, value.as_number()?.clone())?,
                "minLength" => set_once(&mut limits.min_length, value.as_u64()?)?,
                "maxLength" => set_once(&mut limits.max_length, value.as_u64()?)?,
                "enum" if !property.nullable => {
                    let allowed = value.as_array()?;
                    if allowed.iter().any(|v| v.is_array() || v.is_object()) {
                        return None;
                    }
                    limits.allowed = Some(allowed.clone());
                }
                key if ANNOTATIONS.contains(&key) => {}
                _ => return None,
            }
        }
        property.limits = limits.boxed();
        typed.then_some(property)
    }

    /// A choice of distinct string constants, each `{"const": "...", "type": "string"}` with annotations:
    /// `oneOf` and `anyOf` then accept the same values.
    fn constants(choices: &[Value]) -> Option<Property> {
        let mut allowed: Vec<Value> = Vec::new();
        for choice in choices {
            let choice = choice.as_object()?;
            let constant = choice.get("const").filter(|c| c.is_string())?;
            let plain = choice.iter().all(|(key, value)| match key.as_str() {
                "const" => true,
                "type" => value == "string",
                key => ANNOTATIONS.contains(&key),
            });
            if !plain || allowed.contains(constant) {
                return None;
            }
            allowed.push(constant.clone());
        }
        (!allowed.is_empty()).then(|| Property {
            kind: Kind::String,
            limits: Some(Box::new(Limits {
                allowed: Some(allowed),
                ..Limits::default()
            })),
            ..Property::untyped()
        })
    }

    /// A property with no type yet and no constraints.
    fn untyped() -> Property {
        Property {
            kind: Kind::Null,
            nullable: false,
            required: false,
            limits: None,
        }
    }

    /// Inlined into the passes over the arguments: for most properties it is one comparison of types.
    #[inline(always)]
    fn accepts(&self, value: &Value) -> bool {
        if value.is_null() && self.nullable {
            return true;
        }
        let typed = match (self.kind, value) {
            (Kind::String, Value::String(_))
            | (Kind::Number, Value::Number(_))
            | (Kind::Boolean, Value::Bool(_))
            | (Kind::Null, Value::Null) => true,
            (Kind::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        };
        typed
            && self
                .limits
                .as_deref()
                .is_none_or(|limits| limits.admit(value))
    }
}

impl Limits {
    /// The limits as a property keeps them: `None` when there are none.
    fn boxed(self) -> Option<Box<Limits>> {
        (self != Limits::default()).then(|| Box::new(self))
    }

    /// Whether `value`, of its property's type, is within these limits.
    fn admit(&self, value: &Value) -> bool {
        self.within_bounds(value)
            && self.within_lengths(value)
            && self
                .allowed
                .as_ref()
                .is_none_or(|allowed| allowed.contains(value))
    }

    fn within_bounds(&self, value: &Value) -> bool {
        let Value::Number(n) = value else {
            return true;
        };
        let at_least = self
            .minimum
            .as_ref()
            .is_none_or(|min| compare(n, min).is_some_and(Ordering::is_ge));
        let at_most = self
            .maximum
            .as_ref()
            .is_none_or(|max| compare(n, max).is_some_and(Ordering::is_le));
        at_least && at_most
    }

    fn within_lengths(&self, value: &Value) -> bool {
        let Value::String(s) = value else {
            return true;
        };
        if self.min_length.is_none() && self.max_length.is_none() {
            return true;
        }
        let length = s.chars().count() as u64;
        self.min_length.is_none_or(|min| length >= min)
            && self.max_length.is_none_or(|max| length <= max)
    }
}

/// Sets a constraint that was not set before; `None` when it was (a schema that says it twice is left
/// to the general validator).
fn set_once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    slot.is_none().then(|| *slot = Some(value))
}

/// How `a` compares with `b`, when that is certain: both integers, or both read exactly as `f64`.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return Some(a.cmp(&b));
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return Some(a.cmp(&b));
    }
    let exact = |n: &Number| {
        let f = n.as_f64()?;
        let lossless = n.is_f64() || n.as_i64().is_some_and(|i| i.unsigned_abs() <= 1 << 53);
        lossless.then_some(f)
    };
    exact(a)?.partial_cmp(&exact(b)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn reads_the_schemas_tools_publish_and_nothing_more() {
        let add = json!({
            "type": "object",
            "properties": {
                "a": { "type": "integer", "description": "First." },
                "b": { "type": "integer" }
            },
            "required": ["a", "b"],
            "additionalProperties": false
        });
        let plain = Plain::of(&add).unwrap();
        assert!(plain.accepts(&args(json!({ "a": 2, "b": 40 }))));
        assert!(
            !plain.accepts(&args(json!({ "a": 2 }))),
            "a missing argument"
        );
        assert!(
            !plain.accepts(&args(json!({ "a": 2, "b": 40, "c": 1 }))),
            "an unknown one"
        );
        assert!(
            !plain.accepts(&args(json!({ "a": "2", "b": 40 }))),
            "a string"
        );
        assert!(
            !plain.accepts(&args(json!({ "a": 2.0, "b": 40 }))),
            "left to the validator"
        );

        for not_plain in [
            json!({ "type": "object", "properties": { "a": { "$ref": "#/$defs/A" } } }),
            json!({ "type": "object", "properties": { "a": { "type": "string", "pattern": "x" } } }),
            json!({ "type": "object", "properties": { "a": { "type": "string", "format": "date" } } }),
            json!({ "type": "object", "properties": { "a": { "type": ["string", "null"] } } }),
            json!({ "type": "object", "properties": {}, "required": ["a"] }),
            json!({ "type": "array" }),
            json!({
                "type": "object",
                "properties": { "a": { "$ref": "#/$defs/A", "maxLength": 2 } },
                "$defs": { "A": { "type": "string" } }
            }),
            json!({
                "type": "object",
                "properties": { "a": { "$ref": "#/$defs/A" } },
                "$defs": { "A": { "type": "object" } }
            }),
            json!({
                "type": "object",
                "properties": { "a": { "$ref": "#/$defs/A~1B" } },
                "$defs": { "A/B": { "type": "string" } }
            }),
            json!({
                "type": "object",
                "properties": { "a": { "type": "string" } },
                "$defs": { "Unused": { "type": "strange" } }
            }),
            json!({ "type": "object", "properties": { "a": { "oneOf": [{ "const": "x" }, { "const": "x" }] } } }),
            json!({ "type": "object", "properties": { "a": { "oneOf": [{ "const": "x" }, { "type": "string" }] } } }),
            json!({ "type": "object", "properties": { "a": { "oneOf": [{ "const": 1 }, { "const": "1" }] } } }),
            json!({ "type": "object", "properties": { "a": { "oneOf": [{ "const": "x", "type": "integer" }] } } }),
            json!({ "type": "object", "properties": { "a": { "oneOf": [{ "const": "x" }], "type": "string" } } }),
            json!({ "type": "object", "properties": { "a": { "anyOf": [{ "type": "string", "maxLength": 2 }, { "type": "null" }], "maxLength": 3 } } }),
            json!({ "type": "object", "properties": { "a": { "anyOf": [{ "type": "string" }, { "type": "null" }], "enum": ["x"] } } }),
        ] {
            assert!(Plain::of(&not_plain).is_none(), "{not_plain}");
        }
    }

    #[test]
    fn names_compare_by_bytes_as_str_does() {
        let names = [
            "", "a", "ab", "b", "ba", "limit", "limits", "Limit", "é", "e\u{301}", "z",
        ];
        for a in names {
            for b in names {
                assert_eq!(by_bytes(a, b), a.cmp(b), "{a:?} against {b:?}");
            }
        }
    }

    /// The one pass in order of name says what the lookup by name says, whenever it says anything, for
    /// every subset of known and unknown arguments, valid or not, with others allowed or refused.
    #[test]
    fn the_pass_in_order_agrees_with_the_lookup_by_name() {
        let candidates = [
            ("a", json!(1), json!("1")),
            ("b", json!("x"), json!(2)),
            ("c", json!(true), json!(null)),
            ("d", json!(3), json!(-1)),
            ("zz", json!(0), json!([])),
        ];
        let mut decided = 0;
        for additional in [true, false] {
            let plain = Plain::of(&json!({
                "type": "object",
                "properties": {
                    "a": { "type": "integer" },
                    "b": { "type": "string" },
                    "c": { "type": "boolean" },
                    "d": { "type": "integer", "minimum": 0 }
                },
                "required": ["b", "d"],
                "additionalProperties": additional
            }))
            .unwrap();
            for pick in 0..3u32.pow(5) {
                let mut arguments = Map::new();
                let mut rest = pick;
                for (name, good, bad) in &candidates {
                    match rest % 3 {
                        1 => arguments.insert((*name).to_owned(), good.clone()),
                        2 => arguments.insert((*name).to_owned(), bad.clone()),
                        _ => None,
                    };
                    rest /= 3;
                }
                let by_name = plain.accepts_by_name(&arguments);
                if let Some(in_order) = plain.accepts_in_order(&arguments) {
                    assert_eq!(in_order, by_name, "{arguments:?}, additional: {additional}");
                    decided += 1;
                }
                assert_eq!(plain.accepts(&arguments), by_name);
            }
        }
        assert!(
            decided > 3u32.pow(5),
            "the pass decides most cases: {decided}"
        );
    }

    #[test]
    fn bounds_lengths_choices_and_null() {
        let schema = json!({
            "type": "object",
            "properties": {
                "limit": { "type": "integer", "minimum": 1, "maximum": 50, "default": 20 },
                "query": { "anyOf": [{ "type": "string", "maxLength": 3 }, { "type": "null" }] },
                "status": { "type": "string", "enum": ["pending", "shipped"] }
            }
        });
        let plain = Plain::of(&schema).unwrap();
        assert!(plain.accepts(&args(
            json!({ "limit": 50, "query": "héé", "status": "pending" })
        )));
        assert!(plain.accepts(&args(json!({ "query": null, "extra": true }))));
        assert!(!plain.accepts(&args(json!({ "limit": 0 }))));
        assert!(!plain.accepts(&args(json!({ "limit": 51 }))));
        assert!(!plain.accepts(&args(json!({ "query": "four" }))));
        assert!(!plain.accepts(&args(json!({ "status": "lost" }))));
        assert!(!plain.accepts(&args(json!({ "limit": null }))));
    }

    /// The shapes schemars gives an optional enum with documented variants (a `$ref` to a `oneOf` of
    /// constants) and an optional string with a bound on its length beside the `anyOf`, as the shop's
    /// `search_orders` publishes them.
    #[test]
    fn named_choices_and_bounds_beside_a_null() {
        let schema = json!({
            "$defs": {
                "Status": {
                    "description": "Where an order is.",
                    "oneOf": [
                        { "const": "pending", "description": "Placed.", "type": "string" },
                        { "const": "shipped", "description": "On its way.", "type": "string" }
                    ]
                }
            },
            "type": "object",
            "properties": {
                "limit": { "type": "integer", "minimum": 1, "default": 20 },
                "query": { "anyOf": [{ "type": "string" }, { "type": "null" }], "maxLength": 3 },
                "status": {
                    "anyOf": [{ "$ref": "#/$defs/Status" }, { "type": "null" }],
                    "description": "Only orders in this status."
                }
            },
            "additionalProperties": false
        });
        let plain = Plain::of(&schema).unwrap();
        assert!(plain.accepts(&args(
            json!({ "limit": 3, "query": "Ada", "status": "pending" })
        )));
        assert!(plain.accepts(&args(json!({ "query": null, "status": null }))));
        assert!(!plain.accepts(&args(json!({ "status": "lost" }))));
        assert!(!plain.accepts(&args(json!({ "status": 1 }))));
        assert!(!plain.accepts(&args(json!({ "query": "Grace" }))));
        assert!(!plain.accepts(&args(json!({ "page": 2 }))));
    }

    /// Whatever the plain check accepts, the general validator accepts too, over many values and
    /// schemas of the plain kind.
    #[test]
    fn never_accepts_what_the_validator_refuses() {
        let kinds = [
            json!({ "type": "integer", "minimum": -3, "maximum": 9_007_199_254_740_993_u64 }),
            json!({ "type": "number", "minimum": 0.5, "maximum": 2 }),
            json!({ "type": "string", "minLength": 2, "maxLength": 4 }),
            json!({ "type": "string", "enum": ["a", "bb", 1] }),
            json!({ "type": "boolean" }),
            json!({ "anyOf": [{ "type": "integer", "maximum": 5 }, { "type": "null" }] }),
            json!({ "type": "null" }),
            json!({ "$ref": "#/$defs/Choice" }),
            json!({ "anyOf": [{ "$ref": "#/$defs/Choice" }, { "type": "null" }], "maxLength": 1 }),
            json!({ "anyOf": [{ "type": "string" }, { "type": "null" }], "minLength": 2, "minimum": 9 }),
            json!({ "anyOf": [{ "const": "a" }, { "const": "bb", "type": "string" }] }),
            json!({ "oneOf": [{ "const": "🦀🦀🦀🦀", "title": "Crabs" }] }),
        ];
        let values = [
            json!(null),
            json!(true),
            json!(0),
            json!(-3),
            json!(-4),
            json!(5),
            json!(1.0),
            json!(0.5),
            json!(2.000_000_1),
            json!(9_007_199_254_740_993_u64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!("a"),
            json!("bb"),
            json!("🦀🦀🦀🦀"),
            json!("🦀🦀🦀🦀🦀"),
            json!([1]),
            json!({ "x": 1 }),
        ];
        for kind in &kinds {
            for additional in [true, false] {
                let schema = json!({
                    "type": "object",
                    "properties": { "p": kind },
                    "required": ["p"],
                    "additionalProperties": additional,
                    "$defs": { "Choice": { "oneOf": [{ "const": "a" }, { "const": "bb" }] } }
                });
                let plain = Plain::of(&schema).unwrap();
                let validator = super::super::validator(&schema).unwrap();
                for value in &values {
                    for extra in [false, true] {
                        let mut arguments = args(json!({ "p": value }));
                        if extra {
                            arguments.insert("q".into(), json!(1));
                        }
                        if plain.accepts(&arguments) {
                            assert!(
                                validator.is_valid(&Value::Object(arguments.clone())),
                                "{schema} accepted {arguments:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
