//! How a tool's data is best held, asked of its `Serialize` without writing it.

use std::fmt;

use serde::Serialize;
use serde::ser::{self, Impossible, Serializer};

use super::display::{CHART_KEY, TABLE_KEY};

/// How to hold a tool's data as its structured value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holding {
    /// As its JSON text, written once: a list, or an object that is a struct with no `chart` or
    /// `table` field, which is what MCP sends as it is.
    Text,
    /// As a [`Value`](serde_json::Value): a scalar, which a value holds with no allocation; a map, whose
    /// keys are only known by writing them; an object with a `chart` or `table` to check and describe;
    /// and data that cannot be written, whose error serde_json reports.
    Value,
}

/// How to hold `data`. The answer comes from the first things `data` asks of a serializer: its kind,
/// and a struct's field names, whose values are never looked at.
pub(crate) fn holding<T: Serialize + ?Sized>(data: &T) -> Holding {
    match data.serialize(Probe) {
        Ok(holding) | Err(Stop(holding)) => holding,
    }
}

/// A serializer that answers [`holding`] as early as it can.
struct Probe;

/// The answer, known before the data's end.
#[derive(Debug)]
struct Stop(Holding);

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "held as {:?}", self.0)
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop(Holding::Value)
    }
}

/// Whether a top-level key names what [`describe`](super::display::describe) draws.
fn drawn(key: &str) -> bool {
    key == CHART_KEY || key == TABLE_KEY
}

/// An object `{variant: ...}`, as serde_json writes an enum's variant with data.
fn variant(variant: &str) -> Stop {
    Stop(if drawn(variant) {
        Holding::Value
    } else {
        Holding::Text
    })
}

/// Methods for values that serde_json writes as a scalar.
macro_rules! scalars {
    ($($method:ident($($ty:ty),*)),* $(,)?) => {
        $(fn $method(self $(, _: $ty)*) -> Result<Holding, Stop> {
            Ok(Holding::Value)
        })*
    };
}

impl Serializer for Probe {
    type Ok = Holding;
    type Error = Stop;
    type SerializeSeq = Impossible<Holding, Stop>;
    type SerializeTuple = Impossible<Holding, Stop>;
    type SerializeTupleStruct = Impossible<Holding, Stop>;
    type SerializeTupleVariant = Impossible<Holding, Stop>;
    type SerializeMap = Impossible<Holding, Stop>;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Impossible<Holding, Stop>;

    scalars! {
        serialize_bool(bool), serialize_i8(i8), serialize_i16(i16), serialize_i32(i32),
        serialize_i64(i64), serialize_i128(i128), serialize_u8(u8), serialize_u16(u16),
        serialize_u32(u32), serialize_u64(u64), serialize_u128(u128), serialize_f32(f32),
        serialize_f64(f64), serialize_char(char), serialize_str(&str), serialize_none(),
        serialize_unit(), serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    }

    /// serde_json writes bytes as a list of numbers.
    fn serialize_bytes(self, _: &[u8]) -> Result<Holding, Stop> {
        Err(Stop(Holding::Text))
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Holding, Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Holding, Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
        _: &T,
    ) -> Result<Holding, Stop> {
        Err(variant(name))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Stop> {
        Err(Stop(Holding::Text))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Stop> {
        Err(Stop(Holding::Text))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Stop> {
        Err(Stop(Holding::Text))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Stop> {
        Err(variant(name))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Stop> {
        Err(Stop(Holding::Value))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Fields, Stop> {
        Ok(Fields)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Stop> {
        Err(variant(name))
    }

    /// A string, known without formatting it.
    fn collect_str<T: fmt::Display + ?Sized>(self, _: &T) -> Result<Holding, Stop> {
        Ok(Holding::Value)
    }
}

/// A struct's fields, read by name only.
struct Fields;

impl ser::SerializeStruct for Fields {
    type Ok = Holding;
    type Error = Stop;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        _: &T,
    ) -> Result<(), Stop> {
        if drawn(key) {
            return Err(Stop(Holding::Value));
        }
        Ok(())
    }

    fn end(self) -> Result<Holding, Stop> {
        Ok(Holding::Text)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::{Value, json};

    use super::*;

    #[derive(Serialize)]
    struct Unit;

    #[derive(Serialize)]
    struct Wrapped(Vec<u8>);

    #[derive(Serialize)]
    struct Scalar(i64);

    /// Bytes, as a serializer sees them.
    struct Bytes;

    impl Serialize for Bytes {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.serialize_bytes(b"ab")
        }
    }

    #[derive(Serialize)]
    enum Kind {
        Plain,
        Newtype(u8),
        Tuple(u8, u8),
        Struct {
            a: u8,
        },
        #[serde(rename = "chart")]
        Drawn(u8),
        #[serde(rename = "table")]
        DrawnToo {
            a: u8,
        },
    }

    /// A struct with what `describe` draws.
    #[derive(Serialize)]
    struct Drawn {
        #[serde(skip_serializing_if = "Option::is_none")]
        chart: Option<u8>,
        table: u8,
    }

    /// A struct whose fields serde writes as a map's.
    #[derive(Serialize)]
    struct Flattened {
        #[serde(flatten)]
        inner: Kind,
    }

    /// A value whose serialization fails.
    struct Refuses;

    impl Serialize for Refuses {
        fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(ser::Error::custom("refused"))
        }
    }

    /// Held as text exactly when serde_json writes a list, or an object of a struct's fields (or an
    /// enum variant's) that names no chart or table.
    fn agrees<T: Serialize>(data: T, from_a_map: bool) {
        let value = serde_json::to_value(&data).unwrap();
        let text = match &value {
            Value::Array(_) => true,
            Value::Object(object) => !from_a_map && !object.keys().any(|key| drawn(key)),
            _ => false,
        };
        let expected = if text { Holding::Text } else { Holding::Value };
        assert_eq!(holding(&data), expected, "{value}");
    }

    #[test]
    fn compound_exactly_when_serde_json_writes_an_object_or_a_list() {
        agrees(1_i64, false);
        agrees(u128::from(u64::MAX), false);
        agrees(-3_i128, false);
        agrees(2.5_f64, false);
        agrees(f64::NAN, false);
        agrees('x', false);
        agrees("text", false);
        agrees(true, false);
        agrees((), false);
        agrees(Unit, false);
        agrees(Scalar(3), false);
        agrees(Some(Scalar(3)), false);
        agrees(None::<Vec<u8>>, false);
        agrees(Some(vec![1]), false);
        agrees(Wrapped(vec![1, 2]), false);
        agrees(Bytes, false);
        agrees((1, 2), false);
        agrees(Kind::Plain, false);
        agrees(Kind::Newtype(1), false);
        agrees(Kind::Tuple(1, 2), false);
        agrees(Kind::Struct { a: 1 }, false);
        agrees(BTreeMap::from([("a", 1)]), true);
        agrees(BTreeMap::from([(1, 1)]), true);
        agrees(json!({ "a": [1] }), true);
        agrees(json!(null), false);
        agrees(json!("s"), false);
        agrees(
            Drawn {
                chart: Some(1),
                table: 2,
            },
            false,
        );
        agrees(
            Drawn {
                chart: None,
                table: 2,
            },
            false,
        );
        agrees(Kind::Drawn(1), false);
        agrees(Kind::DrawnToo { a: 1 }, false);
        agrees(
            Flattened {
                inner: Kind::Struct { a: 1 },
            },
            true,
        );
        assert_eq!(
            holding(&Refuses),
            Holding::Value,
            "serde_json reports its error"
        );
    }
}
