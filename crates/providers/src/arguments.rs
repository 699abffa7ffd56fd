//! The order a tool's arguments are shown to a model in. A model writes a call's
//! arguments in the order its schema lists them, and serde_json (as the CLI is built)
//! lists an object's keys by name: `edit_file` came out as `new_text`, `old_text`,
//! `path`, so a small model wrote the replacement before it had said what it replaces
//! (the 1.5B put the user's request, "Replace yellow with green", where `green`
//! belonged). Shown `path`, `old_text`, `new_text`, it writes them in that order. The
//! order is the schema's `required` list, then the optional arguments by name: the
//! same on every build (whether serde_json keeps insertion order is a feature flag,
//! which a workspace build turns on), so a cached prompt prefix stays cached.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// A schema's `properties`, required first in the order `required` names them, then
/// the optional ones by name.
pub(crate) fn in_order(schema: &Value) -> Vec<(&str, &Value, bool)> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut ordered: Vec<(&str, &Value, bool)> = required
        .iter()
        .filter_map(|name| properties.get_key_value(*name))
        .map(|(name, property)| (name.as_str(), property, true))
        .collect();
    // serde_json's map iterates by name unless built to keep insertion order; sort
    // so that the order never depends on that.
    let mut optional: Vec<(&str, &Value, bool)> = properties
        .iter()
        .filter(|(name, _)| !required.contains(&name.as_str()))
        .map(|(name, property)| (name.as_str(), property, false))
        .collect();
    optional.sort_by_key(|(name, _, _)| *name);
    ordered.extend(optional);
    ordered
}

/// A JSON schema serialized with every `properties` object in [`in_order`]'s order,
/// at every depth, and every other object's keys by name: the same text on every
/// build (a workspace build, where another crate turns on serde_json's
/// `preserve_order`, keeps insertion order; the CLI built alone does not).
pub(crate) struct Schema<'a>(pub &'a Value);

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(object) => {
                let mut entries: Vec<(&String, &Value)> = object.iter().collect();
                entries.sort_by_key(|(key, _)| *key);
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    if key == "properties" && value.is_object() {
                        map.serialize_entry(key, &Properties(self.0))?;
                    } else {
                        map.serialize_entry(key, &Schema(value))?;
                    }
                }
                map.end()
            }
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Schema(item))?;
                }
                seq.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// The `properties` of the schema it holds, in order.
struct Properties<'a>(&'a Value);

impl Serialize for Properties<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ordered = in_order(self.0);
        let mut map = serializer.serialize_map(Some(ordered.len()))?;
        for (name, property, _) in ordered {
            map.serialize_entry(name, &Schema(property))?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn required_arguments_come_first_in_their_order_then_the_optional_by_name() {
        let schema = json!({"type": "object", "properties": {
            "timeout_ms": {"type": "integer"},
            "new_text": {"type": "string"},
            "path": {"type": "string"},
            "old_text": {"type": "string"},
            "limit": {"type": "integer"},
        }, "required": ["path", "old_text", "new_text"]});
        let names: Vec<(&str, bool)> = in_order(&schema)
            .into_iter()
            .map(|(name, _, required)| (name, required))
            .collect();
        assert_eq!(
            names,
            [
                ("path", true),
                ("old_text", true),
                ("new_text", true),
                ("limit", false),
                ("timeout_ms", false),
            ]
        );
    }

    #[test]
    fn a_schema_is_written_with_its_arguments_in_order_at_every_depth() {
        let schema = json!({"type": "object", "properties": {
            "new_text": {"type": "string"},
            "old_text": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "to": {"type": "string"}, "from": {"type": "string"}
            }, "required": ["from", "to"]}},
        }, "required": ["old_text", "new_text"]});
        let text = serde_json::to_string(&Schema(&schema)).unwrap();
        assert_eq!(
            text,
            r#"{"properties":{"old_text":{"type":"string"},"new_text":{"type":"string"},"#
                .to_owned()
                + r#""edits":{"items":{"properties":{"from":{"type":"string"},"to":{"type":"string"}},"#
                + r#""required":["from","to"],"type":"object"},"type":"array"}},"#
                + r#""required":["old_text","new_text"],"type":"object"}"#
        );
        // Reordered, not changed.
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), schema);
    }
}
