//! [`Telemetry`]: a result's measurements and tags, a JSON object that costs nothing while empty.

use std::ops::{Deref, DerefMut};
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A result's measurements and tags for telemetry: a JSON object, read and changed as a
/// [`Map`] through `Deref`. Most results have none, so an empty one holds no map at all, and dropping
/// it costs one check.
///
/// ```
/// use toolgate::ToolResult;
///
/// let mut result = ToolResult::text("3 orders").with_telemetry("rows", 3.into());
/// result.telemetry.insert("cached".into(), false.into());
/// assert_eq!(result.telemetry.get("rows"), Some(&3.into()));
/// assert_eq!(result.telemetry.len(), 2);
/// assert!(ToolResult::text("none").telemetry.is_empty());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Telemetry(Option<Box<Map<String, Value>>>);

/// What an empty [`Telemetry`] reads as.
static EMPTY: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl Telemetry {
    /// Whether it has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|map| map.is_empty())
    }

    /// The entries as a JSON object.
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|map| *map).unwrap_or_default()
    }
}

impl Deref for Telemetry {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Self::Target {
        self.0.as_deref().unwrap_or(&EMPTY)
    }
}

impl DerefMut for Telemetry {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.0.get_or_insert_with(Box::default)
    }
}

impl From<Map<String, Value>> for Telemetry {
    fn from(map: Map<String, Value>) -> Self {
        Telemetry((!map.is_empty()).then(|| Box::new(map)))
    }
}

/// Equal when the entries are: an empty map and no map are the same.
impl PartialEq for Telemetry {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Serialize for Telemetry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Telemetry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer).map(Telemetry::from)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn empty_holds_no_map_and_reads_as_an_empty_object() {
        let empty = Telemetry::default();
        assert!(empty.0.is_none() && empty.is_empty() && empty.get("rows").is_none());
        assert_eq!(serde_json::to_value(&empty).unwrap(), json!({}));
        let read: Telemetry = serde_json::from_value(json!({})).unwrap();
        assert!(read.0.is_none(), "an empty object read holds no map either");
    }

    #[test]
    fn changed_through_the_map_and_equal_by_entries() {
        let mut telemetry = Telemetry::default();
        telemetry.insert("rows".into(), json!(3));
        assert_eq!(
            serde_json::to_value(&telemetry).unwrap(),
            json!({ "rows": 3 })
        );
        let read: Telemetry = serde_json::from_value(json!({ "rows": 3 })).unwrap();
        assert_eq!(read, telemetry);

        telemetry.remove("rows");
        assert!(telemetry.is_empty());
        assert_eq!(
            telemetry,
            Telemetry::default(),
            "an emptied map equals none"
        );
        assert_eq!(
            Telemetry::from(Map::from_iter([("a".into(), json!(1))])).into_map(),
            Map::from_iter([("a".into(), json!(1))])
        );
    }
}
