//! A grammar that holds a model's calls to the tools it was offered, for a model that
//! writes its calls as text (see [`crate::textcalls`]) on a server that takes one
//! (llama.cpp's `grammar`, in GBNF).
//!
//! The model's answer is either prose, or one call written as it writes them (a
//! fence of any language, ```json or ```python, whose block opens with `{`; a
//! `<tool_call>` tag; or bare JSON) whose name is an offered tool and whose arguments
//! have that tool's required fields, in its schema's order. Unheld,
//! the 0.5B called tools named after the file it was asked to write (`hi.py`) or the
//! chore it was asked to tick (`call_plumber`), and the turn ended on that.
//!
//! The server applies a grammar only when it is told no tool call will come
//! (`tool_choice: "none"`; it refuses both): the tools are still in the prompt, and
//! Cairn reads the call back from the text as before.

use std::fmt::Write;

use cairn_protocol::ToolSpec;
use serde_json::Value;

/// What is the same in every grammar: JSON values, and prose that does not begin as a
/// call does (a call's openers are held to a call). A fence that opens the answer
/// holds code, not `{`: the 0.5B wrote its calls in ```python fences too, which the
/// text-call reader takes for calls.
const COMMON: &str = r#"
answer ::= ( [^`{<] | "`" [^`] | "``" [^`] | "```" [a-z]{0,12} "\n" [ \t\n]{0,8} [^{ \t\n] | "<" [^t] ) [^\x00]*
ws ::= [ \t\n]{0,24}
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
integer ::= "-"? [0-9]{1,15}
number ::= integer ( "." [0-9]{1,15} )? ( [eE] [-+]? [0-9]{1,3} )?
boolean ::= "true" | "false"
"#;

/// Whether `model`'s calls on `server` are held by a grammar: it writes them as text
/// (its check-up found), and the server takes one.
pub(crate) fn holds(server: &str, model: &str, said: &crate::Said) -> bool {
    said.is_llama_cpp() && crate::habits::of(server, model).text_calls
}

/// The grammar for a model offered `tools`; `None` when there are none.
pub(crate) fn calls(tools: &[ToolSpec]) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut grammar = String::from(
        "root ::= answer | call\n\
         call ::= \"```\" [a-z]{0,12} ws body ws \"```\" | \"<tool_call>\" ws body ws \"</tool_call>\" | body\n",
    );
    let bodies: Vec<String> = (0..tools.len()).map(|n| format!("tool{n}")).collect();
    let _ = writeln!(grammar, "body ::= {}", bodies.join(" | "));
    for (rule, tool) in bodies.iter().zip(tools) {
        let _ = writeln!(
            grammar,
            "{rule} ::= \"{{\" ws \"\\\"name\\\"\" ws \":\" ws {} ws \",\" ws \"\\\"arguments\\\"\" ws \":\" ws {} ws \"}}\"",
            literal(&json_string(&tool.name)),
            arguments(&tool.parameters),
        );
    }
    grammar.push_str(COMMON);
    Some(grammar)
}

/// A tool's arguments: its required fields in its schema's order, each of its type,
/// then any others; any object when the schema says no more.
fn arguments(schema: &Value) -> String {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (Some(properties), false) = (properties, required.is_empty()) else {
        return "object".to_owned();
    };
    // In the order `required` names them: the schema's own (a JSON object's keys here
    // may come back sorted).
    let fields: Vec<String> = required
        .iter()
        .filter_map(|name| Some((name, properties.get(*name)?)))
        .map(|(name, property)| {
            format!(
                "{} ws \":\" ws {}",
                literal(&json_string(name)),
                value(property)
            )
        })
        .collect();
    if fields.is_empty() {
        return "object".to_owned();
    }
    format!(
        "\"{{\" ws {} ws ( \",\" ws string ws \":\" ws value ws )* \"}}\"",
        fields.join(" ws \",\" ws ")
    )
}

/// A property's value by its declared type; any value when it declares none the
/// grammar holds (an enum of strings is held to its words).
fn value(property: &Value) -> String {
    if let Some(words) = property.get("enum").and_then(Value::as_array) {
        let words: Vec<String> = words
            .iter()
            .filter_map(Value::as_str)
            .map(|word| literal(&json_string(word)))
            .collect();
        if !words.is_empty() {
            return format!("( {} )", words.join(" | "));
        }
    }
    match property.get("type").and_then(Value::as_str) {
        Some("string") => "string",
        Some("integer") => "integer",
        Some("number") => "number",
        Some("boolean") => "boolean",
        Some("array") => "array",
        Some("object") => "object",
        _ => "value",
    }
    .to_owned()
}

/// `text` as JSON writes it, quotes and all.
fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// `text` as a GBNF literal that matches it exactly.
fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, parameters: Value) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            parameters,
        }
    }

    #[test]
    fn no_tools_no_grammar() {
        assert_eq!(calls(&[]), None);
    }

    #[test]
    fn each_tool_is_called_by_its_name_with_its_required_fields_in_order() {
        let grammar = calls(&[
            tool(
                "write_file",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"}, "content": {"type": "string"},
                    "mode": {"type": "string", "enum": ["new", "replace"]}},
                    "required": ["path", "content"]}),
            ),
            tool("list_dir", json!({"type": "object", "properties": {}})),
        ])
        .unwrap();
        assert!(grammar.contains("body ::= tool0 | tool1\n"), "{grammar}");
        assert!(
            grammar.contains(
                r#"tool0 ::= "{" ws "\"name\"" ws ":" ws "\"write_file\"" ws "," ws "\"arguments\"" ws ":" ws "{" ws "\"path\"" ws ":" ws string ws "," ws "\"content\"" ws ":" ws string ws ( "," ws string ws ":" ws value ws )* "}" ws "}""#
            ),
            "{grammar}"
        );
        // Nothing required: any object.
        assert!(
            grammar
                .contains(r#"ws "\"list_dir\"" ws "," ws "\"arguments\"" ws ":" ws object ws "}""#),
            "{grammar}"
        );
    }

    #[test]
    fn values_follow_their_declared_type() {
        assert_eq!(value(&json!({"type": "integer"})), "integer");
        assert_eq!(value(&json!({"type": "boolean"})), "boolean");
        assert_eq!(value(&json!({})), "value");
        assert_eq!(
            value(&json!({"type": "string", "enum": ["a", "b\"c"]})),
            r#"( "\"a\"" | "\"b\\\"c\"" )"#
        );
    }
}
