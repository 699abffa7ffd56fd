//! The JSON Schema a model writes for a subtask's result (`output_schema`), checked by
//! Cairn itself.
//!
//! Such a schema says what shape the answer has: types, properties, required names,
//! lengths, ranges, choices, patterns, and their `anyOf`/`oneOf`/`allOf`/`not`. Those
//! keywords are checked here as the standard defines them. One that reaches elsewhere
//! or depends on other parts of the result (`$ref`, `if`, `patternProperties`, …) is
//! refused by name when the schema is read, so that the model writes the schema out
//! plainly rather than have part of it silently unchecked; words the standard leaves as
//! annotations (`title`, `description`, `format`, …) and unknown words are kept and
//! not checked, as the standard says. (A complete validator was 1.2 MB of the 13.6 MB
//! app for this one use.)

use regex::Regex;
use serde_json::{Map, Number, Value};

use crate::clip::clipped;

/// Why a schema cannot be used; `at` is where in the schema, as a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("at {at}: a schema is an object, true or false")]
    NotASchema { at: String },
    #[error("at {at}: `{keyword}` must be {expected}")]
    BadKeyword {
        at: String,
        keyword: String,
        expected: &'static str,
    },
    #[error("at {at}: `{keyword}` is not a regular expression Cairn can check: {reason}")]
    BadPattern {
        at: String,
        keyword: &'static str,
        reason: String,
    },
    #[error(
        "at {at}: `{keyword}` is not checked by Cairn; write the schema out without it \
         (types, properties, required, items, enum, const, ranges, lengths, pattern, \
         anyOf, oneOf, allOf and not are)"
    )]
    Unsupported { at: String, keyword: String },
}

/// Keywords with validation meaning that this module does not check.
const UNSUPPORTED: [&str; 17] = [
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "if",
    "then",
    "else",
    "patternProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "contains",
    "minContains",
    "maxContains",
    "prefixItems",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// A compiled schema.
#[derive(Debug, Clone)]
pub struct Schema(Node);

#[derive(Debug, Clone)]
enum Node {
    /// `true` (anything) or `false` (nothing).
    Always(bool),
    Rules(Box<Rules>),
}

#[derive(Debug, Clone, Default)]
struct Rules {
    types: Option<Vec<Kind>>,
    properties: Vec<(String, Node)>,
    required: Vec<String>,
    additional: Option<Node>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    items: Option<Node>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    choices: Option<Vec<Value>>,
    constant: Option<Value>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<Regex>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    all_of: Vec<Node>,
    not: Option<Node>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Boolean,
    Object,
    Array,
    Number,
    Integer,
    String,
}

impl Kind {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::Null,
            "boolean" => Self::Boolean,
            "object" => Self::Object,
            "array" => Self::Array,
            "number" => Self::Number,
            "integer" => Self::Integer,
            "string" => Self::String,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Boolean => "boolean",
            Self::Object => "object",
            Self::Array => "array",
            Self::Number => "number",
            Self::Integer => "integer",
            Self::String => "string",
        }
    }

    fn fits(self, value: &Value) -> bool {
        match (self, value) {
            (Self::Null, Value::Null)
            | (Self::Boolean, Value::Bool(_))
            | (Self::Object, Value::Object(_))
            | (Self::Array, Value::Array(_))
            | (Self::Number, Value::Number(_))
            | (Self::String, Value::String(_)) => true,
            // The standard counts 2.0 as an integer.
            (Self::Integer, Value::Number(number)) => {
                number.is_i64()
                    || number.is_u64()
                    || number.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }
}

impl Schema {
    /// Reads a schema, or says where and why it cannot be checked.
    pub fn compile(source: &Value) -> Result<Self, SchemaError> {
        Node::read(source, &mut String::new()).map(Self)
    }

    /// Every way `value` does not fit, each with where it is (a JSON pointer, empty
    /// for the whole value).
    pub fn mismatches(&self, value: &Value) -> Vec<(String, String)> {
        let mut found = Vec::new();
        self.0.check(value, &mut String::new(), &mut found);
        found
    }
}

impl Node {
    fn read(source: &Value, at: &mut String) -> Result<Self, SchemaError> {
        match source {
            Value::Bool(always) => Ok(Self::Always(*always)),
            Value::Object(keywords) => {
                Rules::read(keywords, at).map(|rules| Self::Rules(Box::new(rules)))
            }
            _ => Err(SchemaError::NotASchema { at: pointer(at) }),
        }
    }

    fn check(&self, value: &Value, at: &mut String, found: &mut Vec<(String, String)>) {
        match self {
            Self::Always(true) => {}
            Self::Always(false) => {
                found.push((at.clone(), format!("{} is not allowed here", shown(value))))
            }
            Self::Rules(rules) => rules.check(value, at, found),
        }
    }

    fn fits(&self, value: &Value) -> bool {
        let mut found = Vec::new();
        self.check(value, &mut String::new(), &mut found);
        found.is_empty()
    }
}

/// Reads the keywords of one schema object, each checked for its form.
struct Reader<'a> {
    keywords: &'a Map<String, Value>,
    at: &'a mut String,
}

impl Reader<'_> {
    fn bad(&self, keyword: &str, expected: &'static str) -> SchemaError {
        SchemaError::BadKeyword {
            at: pointer(self.at),
            keyword: keyword.to_owned(),
            expected,
        }
    }

    fn schema(&mut self, keyword: &str) -> Result<Option<Node>, SchemaError> {
        let Some(source) = self.keywords.get(keyword) else {
            return Ok(None);
        };
        within(self.at, &[keyword], |at| Node::read(source, at)).map(Some)
    }

    fn schemas(&mut self, keyword: &str) -> Result<Vec<Node>, SchemaError> {
        let Some(source) = self.keywords.get(keyword) else {
            return Ok(Vec::new());
        };
        let list = source
            .as_array()
            .filter(|list| !list.is_empty())
            .ok_or_else(|| self.bad(keyword, "a non-empty array of schemas"))?;
        list.iter()
            .enumerate()
            .map(|(index, source)| {
                within(self.at, &[keyword, &index.to_string()], |at| {
                    Node::read(source, at)
                })
            })
            .collect()
    }

    fn count(&self, keyword: &str) -> Result<Option<u64>, SchemaError> {
        self.keywords
            .get(keyword)
            .map(|value| {
                value
                    .as_u64()
                    .or_else(|| {
                        value
                            .as_f64()
                            .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                            .map(|f| f as u64)
                    })
                    .ok_or_else(|| self.bad(keyword, "a whole number, 0 or more"))
            })
            .transpose()
    }

    fn number(&self, keyword: &str) -> Result<Option<Number>, SchemaError> {
        self.keywords
            .get(keyword)
            .map(|value| match value {
                Value::Number(number) => Ok(number.clone()),
                _ => Err(self.bad(keyword, "a number")),
            })
            .transpose()
    }
}

impl Rules {
    fn read(keywords: &Map<String, Value>, at: &mut String) -> Result<Self, SchemaError> {
        if let Some(keyword) = UNSUPPORTED
            .iter()
            .find(|keyword| keywords.contains_key(**keyword))
        {
            return Err(SchemaError::Unsupported {
                at: pointer(at),
                keyword: (*keyword).to_owned(),
            });
        }
        let mut read = Reader { keywords, at };
        let types = match keywords.get("type") {
            None => None,
            Some(Value::String(name)) => Some(vec![
                Kind::named(name).ok_or_else(|| read.bad("type", "a JSON type's name"))?,
            ]),
            Some(Value::Array(names)) if !names.is_empty() => Some(
                names
                    .iter()
                    .map(|name| name.as_str().and_then(Kind::named))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| read.bad("type", "a JSON type's name or a list of them"))?,
            ),
            Some(_) => return Err(read.bad("type", "a JSON type's name or a list of them")),
        };
        let properties = match keywords.get("properties") {
            None => Vec::new(),
            Some(Value::Object(properties)) => properties
                .iter()
                .map(|(name, source)| {
                    within(read.at, &["properties", name], |at| Node::read(source, at))
                        .map(|node| (name.clone(), node))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(read.bad("properties", "an object of schemas")),
        };
        let required = match keywords.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| read.bad("required", "an array of property names"))?,
            Some(_) => return Err(read.bad("required", "an array of property names")),
        };
        if keywords.get("items").is_some_and(Value::is_array) {
            // The old tuple form, which the current standard spells `prefixItems`.
            return Err(SchemaError::Unsupported {
                at: pointer(read.at),
                keyword: "items (as a list)".to_owned(),
            });
        }
        let choices = match keywords.get("enum") {
            None => None,
            Some(Value::Array(choices)) => Some(choices.clone()),
            Some(_) => return Err(read.bad("enum", "an array of values")),
        };
        let unique_items = match keywords.get("uniqueItems") {
            None => false,
            Some(Value::Bool(unique)) => *unique,
            Some(_) => return Err(read.bad("uniqueItems", "true or false")),
        };
        let multiple_of = match keywords.get("multipleOf") {
            None => None,
            Some(value) => Some(
                value
                    .as_f64()
                    .filter(|f| *f > 0.0)
                    .ok_or_else(|| read.bad("multipleOf", "a number above 0"))?,
            ),
        };
        let pattern = match keywords.get("pattern") {
            None => None,
            Some(Value::String(pattern)) => Some(Regex::new(pattern).map_err(|err| {
                SchemaError::BadPattern {
                    at: pointer(read.at),
                    keyword: "pattern",
                    reason: err
                        .to_string()
                        .lines()
                        .last()
                        .unwrap_or_default()
                        .trim()
                        .to_owned(),
                }
            })?),
            Some(_) => return Err(read.bad("pattern", "a regular expression")),
        };
        Ok(Self {
            types,
            properties,
            required,
            additional: read.schema("additionalProperties")?,
            min_properties: read.count("minProperties")?,
            max_properties: read.count("maxProperties")?,
            items: read.schema("items")?,
            min_items: read.count("minItems")?,
            max_items: read.count("maxItems")?,
            unique_items,
            choices,
            constant: keywords.get("const").cloned(),
            minimum: read.number("minimum")?,
            maximum: read.number("maximum")?,
            exclusive_minimum: read.number("exclusiveMinimum")?,
            exclusive_maximum: read.number("exclusiveMaximum")?,
            multiple_of,
            min_length: read.count("minLength")?,
            max_length: read.count("maxLength")?,
            pattern,
            any_of: read.schemas("anyOf")?,
            one_of: read.schemas("oneOf")?,
            all_of: read.schemas("allOf")?,
            not: read.schema("not")?,
        })
    }

    fn check(&self, value: &Value, at: &mut String, found: &mut Vec<(String, String)>) {
        let mut say = |words: String| found.push((at.clone(), words));
        if let Some(types) = &self.types
            && !types.iter().any(|kind| kind.fits(value))
        {
            let names: Vec<String> = types
                .iter()
                .map(|kind| format!("\"{}\"", kind.name()))
                .collect();
            let noun = if names.len() == 1 { "type" } else { "types" };
            say(format!(
                "{} is not of {noun} {}",
                shown(value),
                names.join(", ")
            ));
        }
        if let Some(choices) = &self.choices
            && !choices.iter().any(|choice| same(choice, value))
        {
            say(format!(
                "{} is not one of {}",
                shown(value),
                shown(&Value::Array(choices.clone()))
            ));
        }
        if let Some(constant) = &self.constant
            && !same(constant, value)
        {
            say(format!("{} was expected", shown(constant)));
        }
        match value {
            Value::Number(number) => self.check_number(number, &mut say),
            Value::String(text) => self.check_text(text, &mut say),
            _ => {}
        }
        self.check_combined(value, &mut say);
        match value {
            Value::Object(members) => self.check_object(members, at, found),
            Value::Array(items) => self.check_array(items, at, found),
            _ => {}
        }
    }

    fn check_number(&self, number: &Number, say: &mut impl FnMut(String)) {
        let Some(n) = number.as_f64() else { return };
        let bound = |limit: &Option<Number>| limit.as_ref().and_then(Number::as_f64);
        if let Some(minimum) = bound(&self.minimum)
            && n < minimum
        {
            say(format!("{number} is less than the minimum of {minimum}"));
        }
        if let Some(maximum) = bound(&self.maximum)
            && n > maximum
        {
            say(format!("{number} is greater than the maximum of {maximum}"));
        }
        if let Some(minimum) = bound(&self.exclusive_minimum)
            && n <= minimum
        {
            say(format!(
                "{number} is less than or equal to the minimum of {minimum}"
            ));
        }
        if let Some(maximum) = bound(&self.exclusive_maximum)
            && n >= maximum
        {
            say(format!(
                "{number} is greater than or equal to the maximum of {maximum}"
            ));
        }
        if let Some(step) = self.multiple_of {
            let ratio = n / step;
            if (ratio - ratio.round()).abs() > 1e-9 {
                say(format!("{number} is not a multiple of {step}"));
            }
        }
    }

    fn check_text(&self, text: &str, say: &mut impl FnMut(String)) {
        let length = text.chars().count() as u64;
        if let Some(min) = self.min_length
            && length < min
        {
            say(format!(
                "{} is shorter than {min} characters",
                shown_text(text)
            ));
        }
        if let Some(max) = self.max_length
            && length > max
        {
            say(format!(
                "{} is longer than {max} characters",
                shown_text(text)
            ));
        }
        if let Some(pattern) = &self.pattern
            && !pattern.is_match(text)
        {
            say(format!(
                "{} does not match \"{}\"",
                shown_text(text),
                pattern.as_str()
            ));
        }
    }

    fn check_combined(&self, value: &Value, say: &mut impl FnMut(String)) {
        let shown = || shown(value);
        for (index, part) in self.all_of.iter().enumerate() {
            if !part.fits(value) {
                say(format!(
                    "{} is not valid under schema {index} of 'allOf'",
                    shown()
                ));
            }
        }
        if !self.any_of.is_empty() && !self.any_of.iter().any(|part| part.fits(value)) {
            say(format!(
                "{} is not valid under any of the schemas in 'anyOf'",
                shown()
            ));
        }
        if !self.one_of.is_empty() {
            match self.one_of.iter().filter(|part| part.fits(value)).count() {
                0 => say(format!(
                    "{} is not valid under any of the schemas in 'oneOf'",
                    shown()
                )),
                1 => {}
                _ => say(format!(
                    "{} is valid under more than one of the schemas in 'oneOf'",
                    shown()
                )),
            }
        }
        if let Some(not) = &self.not
            && not.fits(value)
        {
            say(format!("{} is valid under the schema in 'not'", shown()));
        }
    }

    fn check_object(
        &self,
        members: &Map<String, Value>,
        at: &mut String,
        found: &mut Vec<(String, String)>,
    ) {
        for name in &self.required {
            if !members.contains_key(name) {
                found.push((at.clone(), format!("\"{name}\" is a required property")));
            }
        }
        if let Some(words) = outside(
            members.len(),
            self.min_properties,
            self.max_properties,
            "properties",
        ) {
            found.push((at.clone(), words));
        }
        let mut unexpected = Vec::new();
        for (name, member) in members {
            match self.properties.iter().find(|(known, _)| known == name) {
                Some((_, node)) => within(at, &[name], |at| node.check(member, at, found)),
                None => match &self.additional {
                    None | Some(Node::Always(true)) => {}
                    Some(Node::Always(false)) => unexpected.push(format!("'{name}'")),
                    Some(node) => within(at, &[name], |at| node.check(member, at, found)),
                },
            }
        }
        if !unexpected.is_empty() {
            let verb = if unexpected.len() == 1 { "was" } else { "were" };
            found.push((
                at.clone(),
                format!(
                    "Additional properties are not allowed ({} {verb} unexpected)",
                    unexpected.join(", ")
                ),
            ));
        }
    }

    fn check_array(&self, items: &[Value], at: &mut String, found: &mut Vec<(String, String)>) {
        if let Some(words) = outside(items.len(), self.min_items, self.max_items, "items") {
            found.push((at.clone(), words));
        }
        if self.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(index, item)| items[..index].iter().any(|earlier| same(earlier, item)))
        {
            found.push((at.clone(), "has non-unique elements".to_owned()));
        }
        if let Some(node) = &self.items {
            for (index, item) in items.iter().enumerate() {
                within(at, &[&index.to_string()], |at| node.check(item, at, found));
            }
        }
    }
}

/// Whether `count` things fall short of `min` or past `max`, in words.
fn outside(count: usize, min: Option<u64>, max: Option<u64>, noun: &str) -> Option<String> {
    let count = count as u64;
    match (min, max) {
        (Some(min), _) if count < min => Some(format!("has fewer than {min} {noun}")),
        (_, Some(max)) if count > max => Some(format!("has more than {max} {noun}")),
        _ => None,
    }
}

/// Runs `inner` with `at` extended by `steps` (each escaped as a JSON pointer's
/// reference token), then restores it.
fn within<T>(at: &mut String, steps: &[&str], inner: impl FnOnce(&mut String) -> T) -> T {
    let length = at.len();
    for step in steps {
        at.push('/');
        at.push_str(&step.replace('~', "~0").replace('/', "~1"));
    }
    let result = inner(at);
    at.truncate(length);
    result
}

/// Where in the schema, for an error: `/` for the schema itself.
fn pointer(at: &str) -> String {
    if at.is_empty() {
        "/".to_owned()
    } else {
        at.to_owned()
    }
}

/// JSON equality as the standard has it: numbers by value (1 is 1.0).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64() == b.as_f64(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(name, a)| b.get(name).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// A value as an error quotes it: JSON, cut short.
fn shown(value: &Value) -> String {
    clipped(&value.to_string(), SHOWN_MAX_CHARS)
}

fn shown_text(text: &str) -> String {
    shown(&Value::from(text))
}

/// How much of a value an error quotes.
const SHOWN_MAX_CHARS: usize = 80;

#[cfg(test)]
mod tests;
