use serde_json::{Value, json};

use super::{Schema, SchemaError};

fn mismatches(schema: Value, value: Value) -> Vec<(String, String)> {
    Schema::compile(&schema).unwrap().mismatches(&value)
}

fn at(place: &str, words: &str) -> (String, String) {
    (place.to_owned(), words.to_owned())
}

/// Schemas of the kinds models write, each with values that fit and values that do
/// not; the verdicts are the standard's, and a complete validator agrees with each
/// (`agrees_with_a_complete_validator`).
fn corpus() -> Vec<(Value, Vec<Value>)> {
    vec![
        (
            json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}),
            vec![
                json!({"count": 3}),
                json!({"count": 3.0}),
                json!({"count": 3.5}),
                json!({"count": "3"}),
                json!({}),
                json!([]),
                json!({"count": 1, "more": true}),
            ],
        ),
        (
            json!({"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 3, "uniqueItems": true}}, "additionalProperties": false}),
            vec![
                json!({"files": ["a"]}),
                json!({"files": []}),
                json!({"files": ["a", "a"]}),
                json!({"files": ["a", ""]}),
                json!({"files": ["a", "b", "c", "d"]}),
                json!({"other": 1}),
                json!({}),
            ],
        ),
        (
            json!({"type": ["string", "null"], "enum": ["red", "green", null]}),
            vec![json!("red"), json!(null), json!("blue"), json!(1)],
        ),
        (
            json!({"type": "number", "minimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5}),
            vec![
                json!(0),
                json!(9.5),
                json!(10),
                json!(-1),
                json!(0.25),
                json!("5"),
            ],
        ),
        (
            json!({"type": "string", "pattern": "^[A-Z]+$", "maxLength": 6}),
            vec![json!("SAFFRON"), json!("OAK"), json!("oak"), json!("")],
        ),
        (
            json!({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}),
            vec![json!(1), json!("ab"), json!("abc"), json!(1.5)],
        ),
        (
            json!({"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 2}]}),
            vec![json!(1), json!(3), json!(2.5), json!(-0.5)],
        ),
        (
            json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}], "not": {"required": ["c"]}}),
            vec![
                json!({"a": 1, "b": 2}),
                json!({"a": 1}),
                json!({"a": 1, "b": 2, "c": 3}),
                json!(7),
            ],
        ),
        (
            json!({"const": {"ok": [1, 2]}}),
            vec![
                json!({"ok": [1, 2]}),
                json!({"ok": [1.0, 2]}),
                json!({"ok": [2, 1]}),
            ],
        ),
        (
            json!({"type": "object", "additionalProperties": {"type": "boolean"}, "minProperties": 1, "maxProperties": 2}),
            vec![
                json!({"a": true}),
                json!({}),
                json!({"a": 1}),
                json!({"a": true, "b": false, "c": true}),
            ],
        ),
        (json!(true), vec![json!(1), json!(null)]),
        (json!(false), vec![json!(1), json!(null)]),
        (
            json!({"title": "Result", "description": "what it found", "format": "email", "examples": [1], "x-note": 2}),
            vec![json!("not an email"), json!(1)],
        ),
    ]
}

#[test]
fn agrees_with_a_complete_validator() {
    for (schema, values) in corpus() {
        let ours = Schema::compile(&schema).unwrap();
        let reference = jsonschema::validator_for(&schema).unwrap();
        for value in values {
            assert_eq!(
                ours.mismatches(&value).is_empty(),
                reference.is_valid(&value),
                "{schema} against {value}: {:?}",
                ours.mismatches(&value)
            );
        }
    }
}

#[test]
fn each_mismatch_says_where_and_what() {
    let schema = json!({
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 0},
            "names": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
            "mode": {"enum": ["fast", "slow"]}
        },
        "required": ["count", "mode"],
        "additionalProperties": false
    });
    assert_eq!(
        mismatches(
            schema,
            json!({"count": -2, "names": ["ok", "Bad", 3], "extra": 1, "x/y": 2})
        ),
        vec![
            at("", "\"mode\" is a required property"),
            at("/count", "-2 is less than the minimum of 0"),
            at("/names/1", "\"Bad\" does not match \"^[a-z]+$\""),
            at("/names/2", "3 is not of type \"string\""),
            at(
                "",
                "Additional properties are not allowed ('extra', 'x/y' were unexpected)"
            ),
        ]
    );
}

#[test]
fn a_pointer_escapes_its_steps_and_long_values_are_cut() {
    let schema = json!({"properties": {"a/b~c": {"type": "integer"}}});
    assert_eq!(
        mismatches(schema, json!({"a/b~c": "x".repeat(100)})),
        vec![at(
            "/a~1b~0c",
            &format!("\"{}… is not of type \"integer\"", "x".repeat(79))
        )]
    );
}

#[test]
fn combined_schemas_say_which_rule_failed() {
    assert_eq!(
        mismatches(
            json!({"oneOf": [{"type": "integer"}, {"type": "number"}]}),
            json!(2)
        ),
        vec![at(
            "",
            "2 is valid under more than one of the schemas in 'oneOf'"
        )]
    );
    assert_eq!(
        mismatches(
            json!({"anyOf": [{"type": "integer"}], "not": {"type": "string"}}),
            json!("s")
        ),
        vec![
            at("", "\"s\" is not valid under any of the schemas in 'anyOf'"),
            at("", "\"s\" is valid under the schema in 'not'"),
        ]
    );
    assert_eq!(
        mismatches(json!({"type": ["integer", "null"]}), json!(true)),
        vec![at("", "true is not of types \"integer\", \"null\"")]
    );
}

#[test]
fn a_schema_that_cannot_be_checked_is_refused_where_it_goes_wrong() {
    let refused = |schema: Value| Schema::compile(&schema).unwrap_err();
    assert_eq!(
        refused(json!({"properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}})),
        SchemaError::Unsupported {
            at: "/properties/a".into(),
            keyword: "$ref".into()
        }
    );
    assert_eq!(
        refused(json!({"items": [{"type": "string"}]})),
        SchemaError::Unsupported {
            at: "/".into(),
            keyword: "items (as a list)".into()
        }
    );
    assert_eq!(
        refused(json!({"type": "banana"})),
        SchemaError::BadKeyword {
            at: "/".into(),
            keyword: "type".into(),
            expected: "a JSON type's name"
        }
    );
    assert_eq!(
        refused(json!({"anyOf": [{"type": "string"}, {"minimum": "x"}]})),
        SchemaError::BadKeyword {
            at: "/anyOf/1".into(),
            keyword: "minimum".into(),
            expected: "a number"
        }
    );
    assert_eq!(
        refused(json!({"properties": {"n": 3}})),
        SchemaError::NotASchema {
            at: "/properties/n".into()
        }
    );
    assert!(matches!(
        refused(json!({"pattern": "(?<=a)b"})),
        SchemaError::BadPattern { ref at, .. } if at == "/"
    ));
    for (schema, keyword) in [
        (json!({"required": "a"}), "required"),
        (json!({"minLength": -1}), "minLength"),
        (json!({"maxItems": 1.5}), "maxItems"),
        (json!({"enum": "a"}), "enum"),
        (json!({"anyOf": []}), "anyOf"),
        (json!({"uniqueItems": "yes"}), "uniqueItems"),
        (json!({"multipleOf": 0}), "multipleOf"),
    ] {
        assert!(
            matches!(refused(schema.clone()), SchemaError::BadKeyword { keyword: ref k, .. } if k == keyword),
            "{schema}"
        );
    }
    assert_eq!(
        refused(json!({"if": {}})).to_string(),
        "at /: `if` is not checked by Cairn; write the schema out without it (types, \
         properties, required, items, enum, const, ranges, lengths, pattern, anyOf, oneOf, \
         allOf and not are)"
    );
}

#[test]
fn a_complete_validator_refuses_what_is_refused_as_malformed() {
    // The malformed ones above are malformed by the standard too, not only here.
    for schema in [
        json!({"type": "banana"}),
        json!({"minimum": "x"}),
        json!({"required": "a"}),
        json!({"minLength": -1}),
        json!({"enum": "a"}),
        json!({"anyOf": []}),
        json!({"multipleOf": 0}),
    ] {
        assert!(jsonschema::meta::validate(&schema).is_err(), "{schema}");
        assert!(Schema::compile(&schema).is_err(), "{schema}");
    }
}
