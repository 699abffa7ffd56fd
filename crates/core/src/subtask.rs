//! `run_subtask` and `finish_subtask`: the engine's own tools, intercepted by the loop
//! because they need the turn itself (depth, budget, gate) rather than the world.

use std::sync::Arc;

use cairn_protocol::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::clip::clipped;
use crate::schema::{Schema, SchemaError};

pub use cairn_protocol::RUN_SUBTASK;
pub const FINISH_SUBTASK: &str = "finish_subtask";

pub fn run_subtask_spec() -> ToolSpec {
    ToolSpec {
        name: RUN_SUBTASK.into(),
        description: "Hand a separable part of the work to a fresh agent that sees only \
                      your instructions and returns its result. Calls made together run in \
                      parallel."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "A short label for the user"},
                "instructions": {"type": "string", "description": "All it needs to know and do"},
                "tools": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only these of your tools"
                },
                "output_schema": {
                    "type": "object",
                    "description": "A JSON Schema its result must match"
                },
                "agent": {"type": "string", "description": "One of the agents listed for subtasks"}
            },
            "required": ["title", "instructions"]
        }),
    }
}

pub fn finish_subtask_spec(schema: Option<&Value>) -> ToolSpec {
    let result = schema.cloned().unwrap_or_else(|| json!({}));
    ToolSpec {
        name: FINISH_SUBTASK.into(),
        description: "End this subtask and hand `result` back to the agent that started it.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"result": result},
            "required": ["result"]
        }),
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct RunSubtaskArgs {
    /// Small models forget the label more often than the work; the loop derives one.
    #[serde(default)]
    pub title: Option<String>,
    pub instructions: String,
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// The profile the subtask runs as; by default its parent's.
    #[serde(default)]
    pub agent: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FinishSubtaskArgs {
    pub result: Value,
}

/// How a child level hands its result back.
#[derive(Debug, Clone)]
pub(crate) enum Finish {
    /// `finish_subtask {result}` (or a plain answer), the result matching the schema
    /// when there is one.
    Subtask(Option<OutputSchema>),
    /// A tool whose arguments are the result (`submit_plan`, `submit_review`): the
    /// level exists to call it.
    Submit {
        name: &'static str,
        description: &'static str,
        schema: OutputSchema,
    },
}

impl Finish {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Subtask(_) => FINISH_SUBTASK,
            Self::Submit { name, .. } => name,
        }
    }

    /// What an answer in prose must be to count as the result; none: prose is the result.
    pub fn schema(&self) -> Option<&OutputSchema> {
        match self {
            Self::Subtask(schema) => schema.as_ref(),
            Self::Submit { schema, .. } => Some(schema),
        }
    }

    pub fn spec(&self) -> ToolSpec {
        match self {
            Self::Subtask(schema) => finish_subtask_spec(schema.as_ref().map(|s| &s.source)),
            Self::Submit {
                name,
                description,
                schema,
            } => ToolSpec {
                name: (*name).into(),
                description: (*description).into(),
                parameters: schema.source.clone(),
            },
        }
    }

    /// The result a call with `args` hands back, or what is wrong with it.
    pub fn accept(&self, args: Value) -> Result<Value, Unaccepted> {
        let (result, schema) = match self {
            Self::Subtask(schema) => {
                let args: FinishSubtaskArgs = crate::tool::parse_args(args)
                    .map_err(|err| Unaccepted::Arguments(err.to_string()))?;
                (args.result, schema.as_ref())
            }
            Self::Submit { schema, .. } => (args, Some(schema)),
        };
        if let Some(schema) = schema {
            schema
                .check(&result)
                .map_err(|mismatch| Unaccepted::Mismatch {
                    what: match self {
                        Self::Subtask(_) => "the result does not match the output_schema",
                        Self::Submit { .. } => "the arguments do not match what it takes",
                    },
                    mismatch,
                    tool: self.name().to_owned(),
                })?;
        }
        Ok(result)
    }
}

/// Why a call that ends a level was not taken; the model reads it and calls again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unaccepted {
    #[error("{0}")]
    Arguments(String),
    #[error("{what}: {mismatch}. Fix it and call {tool} again.")]
    Mismatch {
        what: &'static str,
        mismatch: Mismatch,
        tool: String,
    },
}

/// Why an `output_schema` the model wrote cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BadSchema {
    #[error("output_schema must be a JSON Schema object")]
    NotAnObject,
    #[error("output_schema is not a valid JSON Schema: {0}")]
    Invalid(SchemaError),
    #[error("output_schema cannot be used: {0}")]
    Unusable(SchemaError),
}

impl From<SchemaError> for BadSchema {
    fn from(err: SchemaError) -> Self {
        match err {
            SchemaError::Unsupported { .. } => Self::Unusable(err),
            SchemaError::NotASchema { .. }
            | SchemaError::BadKeyword { .. }
            | SchemaError::BadPattern { .. } => Self::Invalid(err),
        }
    }
}

/// Where a result does not match its schema: every mismatch, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub(crate) struct Mismatch(pub Vec<String>);

/// A subtask's output schema, compiled once and kept with its source for the prompt.
#[derive(Debug, Clone)]
pub(crate) struct OutputSchema {
    pub source: Value,
    schema: Arc<Schema>,
}

impl OutputSchema {
    /// Compiles a schema the model wrote, or says why it is not one.
    pub fn compile(source: Value) -> Result<Self, BadSchema> {
        if !source.is_object() && !source.is_boolean() {
            return Err(BadSchema::NotAnObject);
        }
        let schema = Schema::compile(&source)?;
        Ok(Self {
            source,
            schema: Arc::new(schema),
        })
    }

    /// Checks a result; the error lists every mismatch with where it is.
    pub fn check(&self, result: &Value) -> Result<(), Mismatch> {
        let problems: Vec<String> = self
            .schema
            .mismatches(result)
            .into_iter()
            .map(|(at, words)| {
                if at.is_empty() {
                    words
                } else {
                    format!("at {at}: {words}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Mismatch(problems))
        }
    }
}

/// A label from the instructions when the model gave none.
pub(crate) fn derive_title(instructions: &str) -> String {
    let first_line = instructions.lines().next().unwrap_or("").trim();
    let title = clipped(first_line, 60);
    if title.is_empty() {
        "Subtask".into()
    } else {
        title
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_compile_check_and_explain() {
        let schema = OutputSchema::compile(json!({
            "type": "object",
            "properties": {"count": {"type": "integer"}},
            "required": ["count"]
        }))
        .unwrap();
        assert_eq!(schema.check(&json!({"count": 3})), Ok(()));
        let err = schema.check(&json!({"count": "three"})).unwrap_err();
        assert_eq!(err.0.len(), 1, "{err}");
        assert!(err.to_string().starts_with("at /count:"), "{err}");
        assert!(
            schema
                .check(&json!({}))
                .unwrap_err()
                .to_string()
                .contains("count")
        );
    }

    #[test]
    fn invalid_schemas_are_refused_with_a_reason() {
        for bad in [
            json!("string"),
            json!(42),
            json!({"type": 12}),
            json!({"minimum": "x"}),
        ] {
            let err = OutputSchema::compile(bad.clone()).unwrap_err();
            assert!(err.to_string().contains("output_schema"), "{bad}: {err}");
        }
        // A remote reference is not fetched (no network from a model's say-so).
        assert!(OutputSchema::compile(json!({"$ref": "http://example.invalid/s.json"})).is_err());
    }

    #[test]
    fn titles_are_derived_from_instructions() {
        assert_eq!(
            derive_title("Count the files\nthen report"),
            "Count the files"
        );
        assert_eq!(derive_title(""), "Subtask");
        assert_eq!(derive_title(&"x".repeat(70)).chars().count(), 61);
    }
}
