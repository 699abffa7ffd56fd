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
