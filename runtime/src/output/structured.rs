//! [`StructuredValue`]: a result's structured value, kept as the JSON text a tool's data was written to
//! until someone reads it as a value.

use std::borrow::Cow;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A result's structured value, read and changed as a [`Value`] through `Deref`.
///
/// A tool that returns an object or a list has it written once, straight to JSON text: that text is what
/// MCP sends, both as the model's text block and as `structuredContent`, so the common path builds no
/// `Value` and drops none. The value is read from the text the first time someone looks at it, and
/// changing it forgets the text.
///
/// ```
/// use serde_json::json;
/// use toolgate::ToolResult;
///
/// let mut result = ToolResult::structured(json!({ "total": 5 }));
/// let value = result.structured.as_mut().unwrap();
/// assert_eq!(value["total"], 5);
/// value["total"] = json!(6);
/// assert_eq!(result.text_for_model(), r#"{"total":6}"#);
/// ```
#[derive(Clone)]
pub struct StructuredValue(Repr);

#[derive(Clone)]
enum Repr {
    /// A value as built, or as changed.
    Value(Value),
    /// The JSON text serde_json wrote, and the value read from it once asked for.
    Text {
        text: String,
        value: OnceLock<Value>,
    },
}

impl StructuredValue {
    /// The JSON text `serde_json` writes for `data`, kept as it is.
    pub(crate) fn written<T: Serialize + ?Sized>(data: &T) -> serde_json::Result<Self> {
        Ok(StructuredValue(Repr::Text {
            text: serde_json::to_string(data)?,
            value: OnceLock::new(),
        }))
    }

    /// The value, read from the text if it is held as text.
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Value(value) => value,
            Repr::Text { text, value } => value.into_inner().unwrap_or_else(|| read(&text)),
        }
    }

    /// Its JSON text: the text as written, or the value's.
    pub fn to_json(&self) -> Cow<'_, str> {
        match &self.0 {
            // Written to bytes rather than through `Display`, whose formatter adapter doubles the cost.
            Repr::Value(value) => {
                Cow::Owned(serde_json::to_string(value).expect("a JSON value serializes"))
            }
            Repr::Text { text, .. } => Cow::Borrowed(text),
        }
    }

    /// Holds the value itself from now on, as a copy read back from storage does, so that its JSON text
    /// is the one such a copy writes.
    pub(crate) fn hold_value(&mut self) {
        self.deref_mut();
    }

    /// Whether it is a JSON object, known without reading the text.
    #[cfg(feature = "mcp")]
    pub(crate) fn holds_object(&self) -> bool {
        match &self.0 {
            Repr::Value(value) => value.is_object(),
            // serde_json starts an object's text with its brace, with no space before it.
            Repr::Text { text, .. } => text.starts_with('{'),
        }
    }
}

/// The value of JSON text serde_json wrote.
fn read(text: &str) -> Value {
    serde_json::from_str(text).expect("serde_json reads the JSON text it wrote")
}

impl From<Value> for StructuredValue {
    fn from(value: Value) -> Self {
        StructuredValue(Repr::Value(value))
    }
}

impl Deref for StructuredValue {
    type Target = Value;

    fn deref(&self) -> &Value {
        match &self.0 {
            Repr::Value(value) => value,
            Repr::Text { text, value } => value.get_or_init(|| read(text)),
        }
    }
}

impl DerefMut for StructuredValue {
    fn deref_mut(&mut self) -> &mut Value {
        if let Repr::Text { text, value } = &mut self.0 {
            let value = value.take().unwrap_or_else(|| read(text));
            self.0 = Repr::Value(value);
        }
        match &mut self.0 {
            Repr::Value(value) => value,
            Repr::Text { .. } => unreachable!("held as a value above"),
        }
    }
}

/// Equal when the values are, however each is held.
impl PartialEq for StructuredValue {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl PartialEq<Value> for StructuredValue {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl fmt::Debug for StructuredValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Its JSON text, as a [`Value`] shows it: compact, or pretty with `{:#}`.
impl fmt::Display for StructuredValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            fmt::Display::fmt(&**self, f)
        } else {
            f.write_str(&self.to_json())
        }
    }
}

impl Serialize for StructuredValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StructuredValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(StructuredValue::from)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    struct Row {
        number: &'static str,
        total_eur: f64,
        tags: Vec<&'static str>,
    }

    fn row() -> Row {
        Row {
            number: "RO-\"1\"",
            total_eur: 194.7,
            tags: vec!["a", "é"],
        }
    }

    #[test]
    fn written_data_reads_as_the_value_serde_json_makes() {
        let written = StructuredValue::written(&row()).unwrap();
        let built = StructuredValue::from(serde_json::to_value(row()).unwrap());
        assert_eq!(written.to_json(), serde_json::to_string(&row()).unwrap());
        assert!(matches!(written.to_json(), Cow::Borrowed(_)), "no copy");
        assert_eq!(written, built);
        assert_eq!(written["tags"][1], "é");
        #[cfg(feature = "mcp")]
        {
            assert!(written.holds_object() && built.holds_object());
            let list = StructuredValue::written(&[1, 2]).unwrap();
            assert!(!list.holds_object() && !StructuredValue::from(json!(3)).holds_object());
        }
        assert_eq!(written.to_string(), serde_json::to_string(&row()).unwrap());
        assert_eq!(format!("{written:#}"), format!("{built:#}"));
        assert_eq!(written.clone().into_value(), built.into_value());
        assert_eq!(
            serde_json::to_value(&written).unwrap(),
            serde_json::to_value(row()).unwrap()
        );
    }

    #[test]
    fn a_change_forgets_the_text() {
        let mut written = StructuredValue::written(&row()).unwrap();
        assert_eq!(written["total_eur"], 194.7, "read before the change");
        written["total_eur"] = json!(0);
        assert_eq!(written["total_eur"], 0);
        let text = written.to_json();
        assert!(text.contains(r#""total_eur":0"#), "{text}");
        let read: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(written, read);
    }

    #[test]
    fn a_held_value_writes_what_a_stored_copy_reads_back() {
        let mut written = StructuredValue::written(&row()).unwrap();
        let stored: StructuredValue =
            serde_json::from_str(&serde_json::to_string(&written).unwrap()).unwrap();
        assert_ne!(
            written.to_json(),
            stored.to_json(),
            "the fields in their declared order"
        );
        written.hold_value();
        assert_eq!(written.to_json(), stored.to_json());
        assert_eq!(written, stored);
    }
}
