use serde::de::DeserializeOwned;
use serde_json::Value;

use super::ToolError;

/// Decodes a call's arguments into the tool's typed form, with an error the model can
/// act on ("missing field `path`").
pub fn parse_args<T: DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    if !args.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "expected a JSON object of named arguments, got {}",
            json_kind(&args)
        )));
    }
    serde_json::from_value(args).map_err(|err| ToolError::InvalidArguments(err.to_string()))
}

/// Words of JSON Schema itself, which small models copy from a tool's schema into its
/// arguments (`{"path": "a.txt", "required": ["path"]}`, seen from Qwen2.5-Coder-0.5B).
const SCHEMA_WORDS: [&str; 7] = [
    "required",
    "type",
    "properties",
    "description",
    "additionalProperties",
    "title",
    "$schema",
];

/// `args` without the JSON Schema words a model copied into them from `schema`: only
/// those its schema does not name as arguments of its own. Anything else unknown is
/// left for the tool to refuse, so that a misspelt argument is still said.
pub fn without_copied_schema(mut args: Value, schema: &Value) -> Value {
    let named = schema.get("properties").and_then(Value::as_object);
    if let Value::Object(fields) = &mut args {
        fields.retain(|key, _| {
            !SCHEMA_WORDS.contains(&key.as_str())
                || named.is_some_and(|named| named.contains_key(key))
        });
    }
    args
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_words_copied_into_the_arguments_are_dropped_and_nothing_else() {
        let schema = json!({"type": "object", "properties": {
            "path": {"type": "string"}, "title": {"type": "string"}
        }, "required": ["path"]});
        assert_eq!(
            without_copied_schema(
                json!({"path": "a.txt", "required": ["path"], "type": "object", "title": "T"}),
                &schema
            ),
            json!({"path": "a.txt", "title": "T"}),
            "`title` is an argument of this tool"
        );
        assert_eq!(
            without_copied_schema(json!({"path": "a.txt", "limt": 3}), &schema),
            json!({"path": "a.txt", "limt": 3}),
            "a misspelt argument is the tool's to refuse"
        );
        assert_eq!(without_copied_schema(json!([1]), &schema), json!([1]));
    }
}
