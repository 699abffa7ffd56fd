//! What a model can get wrong becomes a tool error it can read, never a crash.

use cairn_protocol::{ChatMessage, TurnStatus};
use cairn_testkit::{ScriptedModel, ScriptedTurn};

use serde_json::json;

use super::support::{Harness, Probe, assert_calls_paired};

async fn error_for(turn: ScriptedTurn) -> String {
    let model = ScriptedModel::new();
    model.root([turn, ScriptedTurn::text("sorry")]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_calls_paired(&run.outcome.messages);
    let ends = run.tool_ends();
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert!(ends[0].2, "expected an error: {ends:?}");
    // The model reads the same error in its next request.
    let next = &model.requests()[1];
    let ChatMessage::Tool {
        content, is_error, ..
    } = next.messages.last().unwrap()
    else {
        panic!("{next:?}");
    };
    assert!(is_error);
    assert_eq!(content, ends[0].1.as_str().unwrap());
    content.clone()
}

#[tokio::test]
async fn an_unknown_tool_lists_the_real_ones() {
    let err = error_for(ScriptedTurn::call("delete_everything", json!({}))).await;
    assert_eq!(
        err,
        "Error: there is no tool `delete_everything`. Call one of these instead (more with \
         load_tools): probe, run_subtask, load_tools"
    );
}

/// With every group loaded, nothing more waits behind `load_tools`: the error does not
/// send the model there, and loading again is said to bring nothing new.
#[tokio::test]
async fn with_every_group_loaded_an_unknown_tool_points_nowhere_else() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("load_tools", json!({"groups": ["plans"]})),
        ScriptedTurn::call("delete_everything", json!({})),
        ScriptedTurn::call("load_tools", json!({"groups": ["plans"]})),
        ScriptedTurn::text("sorry"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let ends: Vec<(String, bool)> = run
        .tool_ends()
        .into_iter()
        .map(|(_, result, is_error)| (result.as_str().unwrap().to_owned(), is_error))
        .collect();
    assert_eq!(
        ends,
        [
            (
                "Loaded plans. You can now call: create_plan".to_owned(),
                false
            ),
            (
                "Error: there is no tool `delete_everything`. Call one of these instead: probe, \
                 run_subtask, create_plan"
                    .to_owned(),
                true
            ),
            (
                "Already loaded: plans, nothing new: call create_plan or another tool you have."
                    .to_owned(),
                false
            ),
        ]
    );
}

#[tokio::test]
async fn malformed_json_arguments_are_reported() {
    let err = error_for(ScriptedTurn::new().tool_raw("probe", r#"{"q": "#)).await;
    assert!(
        err.starts_with("Error: the arguments are not valid JSON"),
        "{err}"
    );
}

#[tokio::test]
async fn run_subtask_without_instructions_or_with_wrong_types() {
    let err = error_for(ScriptedTurn::call("run_subtask", json!({"title": "x"}))).await;
    assert_eq!(
        err,
        "Error: invalid arguments: missing field `instructions`"
    );
    let err = error_for(ScriptedTurn::call(
        "run_subtask",
        json!({"title": "x", "instructions": "  "}),
    ))
    .await;
    assert!(err.contains("`instructions` is empty"), "{err}");
    let err = error_for(ScriptedTurn::call(
        "run_subtask",
        json!({"instructions": 5}),
    ))
    .await;
    assert!(
        err.contains("invalid type: integer `5`, expected a string"),
        "{err}"
    );
    let err = error_for(ScriptedTurn::call(
        "run_subtask",
        json!(["not", "an", "object"]),
    ))
    .await;
    assert!(err.contains("expected a JSON object"), "{err}");
}

#[tokio::test]
async fn an_output_schema_that_is_not_a_schema_is_refused() {
    let err = error_for(ScriptedTurn::call(
        "run_subtask",
        json!({"title": "t", "instructions": "do", "output_schema": {"type": "banana"}}),
    ))
    .await;
    assert_eq!(
        err,
        "Error: output_schema is not a valid JSON Schema: at /: `type` must be a JSON \
         type's name"
    );
}

#[tokio::test]
async fn an_output_schema_that_cannot_be_checked_says_what_to_leave_out() {
    let err = error_for(ScriptedTurn::call(
        "run_subtask",
        json!({"title": "t", "instructions": "do", "output_schema": {
            "type": "object",
            "properties": {"files": {"type": "array", "items": {"$ref": "#/$defs/file"}}},
            "$defs": {"file": {"type": "string"}}
        }}),
    ))
    .await;
    assert_eq!(
        err,
        "Error: output_schema cannot be used: at /properties/files/items: `$ref` is not \
         checked by Cairn; write the schema out without it (types, properties, required, \
         items, enum, const, ranges, lengths, pattern, anyOf, oneOf, allOf and not are)"
    );
}

#[tokio::test]
async fn finish_subtask_at_the_root_is_explained() {
    let err = error_for(ScriptedTurn::call("finish_subtask", json!({"result": 1}))).await;
    assert!(err.contains("only ends a subtask"), "{err}");
}

#[tokio::test]
async fn a_failing_tool_is_an_error_result_and_the_turn_goes_on() {
    let err = error_for(ScriptedTurn::call("probe", json!({"fail": true}))).await;
    assert_eq!(err, "Error: probe failed as asked");
}

#[tokio::test]
async fn file_tools_refuse_paths_outside_the_workspace_through_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("pwned.txt");
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool(
                "write_file",
                json!({"path": "../pwned.txt", "content": "x"}),
            )
            .tool(
                "write_file",
                json!({"path": target.to_str().unwrap(), "content": "x"}),
            )
            .tool("write_file", json!({"path": "ok.txt", "content": "fine"})),
        ScriptedTurn::text("done"),
    ]);
    let run = Harness::new(&model)
        .workspace(dir.path())
        .run("write")
        .await;
    let ends = run.tool_ends();
    assert!(
        ends[0].2
            && ends[0]
                .1
                .as_str()
                .unwrap()
                .contains("outside the workspace"),
        "{ends:?}"
    );
    assert!(
        ends[1].2
            && ends[1]
                .1
                .as_str()
                .unwrap()
                .contains("absolute paths are refused"),
        "{ends:?}"
    );
    assert!(!ends[2].2, "{ends:?}");
    assert!(!target.exists());
    assert!(!dir.path().parent().unwrap().join("pwned.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ok.txt")).unwrap(),
        "fine"
    );
}

#[tokio::test]
async fn a_tool_invented_again_after_being_told_ends_the_turn_with_what_was_written() {
    const FIRST: &str =
        "```json\n{\"name\": \"hello\", \"arguments\": {\"message\": \"Hello!\"}}\n```";
    const AGAIN: &str =
        "```json\n{\"name\": \"say_hello\", \"arguments\": {\"message\": \"Hello!\"}}\n```";
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().tool_written("hello", json!({"message": "Hello!"}), FIRST),
        ScriptedTurn::new().say("Sure.").tool_written(
            "say_hello",
            json!({"message": "Hello!"}),
            AGAIN,
        ),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("Say hello.")
        .await;
    run.assert_completed();
    let ends = run.tool_ends();
    assert_eq!(
        ends.len(),
        1,
        "only the first invention runs (and fails): {ends:?}"
    );
    assert!(ends[0].2, "{ends:?}");
    assert!(
        ends[0]
            .1
            .as_str()
            .unwrap()
            .contains("there is no tool `hello`"),
        "{ends:?}"
    );
    assert_eq!(run.outcome.text, format!("Sure.\n\n{AGAIN}"));
    assert_eq!(
        run.root_chunks(),
        run.outcome.text,
        "the user sees what is stored"
    );
    assert_eq!(model.requests().len(), 2);
    assert_calls_paired(&run.outcome.messages);
}

#[tokio::test]
async fn a_real_tool_written_as_text_after_an_invented_one_still_runs() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().tool_written("hello", json!({}), "{\"name\": \"hello\"}"),
        ScriptedTurn::new().tool_written("probe", json!({}), "{\"name\": \"probe\"}"),
        ScriptedTurn::text("done"),
    ]);
    let probe = Probe::new("probe");
    let run = Harness::new(&model).tool(probe.clone()).run("go").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(probe.calls(), 1);
    assert_eq!(run.outcome.text, "done");
}
