//! `run_subtask` / `finish_subtask`: children, nesting, structured results, limits.

use std::sync::Arc;

use cairn_protocol::{CallKind, ChatMessage, ErrorKind, Event, ToolCallStatus, TurnStatus};
use cairn_testkit::{Lane, ScriptedModel, ScriptedTurn};

use serde_json::{Value, json};
use tokio::sync::Barrier;

use super::support::{Harness, Probe, assert_calls_paired};

fn subtask(title: &str) -> Value {
    json!({"title": title, "instructions": format!("do {title}")})
}

#[tokio::test]
async fn parallel_subtasks_run_concurrently_and_report_back_in_call_order() {
    let model = ScriptedModel::new();
    let titles = ["alpha", "beta", "gamma"];
    let mut fan_out = ScriptedTurn::new();
    for title in titles {
        fan_out = fan_out.tool("run_subtask", subtask(title));
    }
    model.root([fan_out, ScriptedTurn::text("all three done")]);
    // Each child waits until all three have arrived: run one at a time, they would
    // wait forever.
    let barrier = Arc::new(Barrier::new(titles.len()));
    for title in titles {
        model.subtask(
            title,
            [
                ScriptedTurn::new()
                    .barrier(barrier.clone())
                    .tool("probe", json!({"from": title})),
                ScriptedTurn::text(format!("{title} result")),
            ],
        );
    }
    let run = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        Harness::new(&model)
            .tool(Probe::new("probe"))
            .run("fan out"),
    )
    .await
    .expect("children ran one at a time");

    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.text, "all three done");
    assert_eq!(model.remaining(), 0);
    assert_calls_paired(&run.outcome.messages);
    // Results reach the parent model in the order it made the calls.
    let results: Vec<_> = run.outcome.messages[1..4]
        .iter()
        .map(ChatMessage::content)
        .collect();
    assert_eq!(results, ["alpha result", "beta result", "gamma result"]);

    // The tree nests each child's probe call under its run_subtask node.
    let tree = &run.outcome.tree;
    let roots: Vec<_> = tree.children(None).collect();
    assert_eq!(roots.len(), 3);
    for (root, title) in roots.iter().zip(titles) {
        assert_eq!(root.name, "run_subtask");
        // What a front end shows it as, kept as its tool said it.
        assert_eq!(root.kind, Some(CallKind::Subtask));
        assert_eq!(root.title.as_deref(), Some(title));
        assert_eq!(
            root.result_preview.as_deref(),
            Some(format!("{title} result").as_str())
        );
        let children: Vec<_> = tree.children(Some(&root.id)).collect();
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].name, "probe");
        assert_eq!(children[0].kind, None);
    }
    // Child events carry their parent and depth; every update of a subtask call says
    // what it is.
    for event in &run.events {
        if let Event::ToolCallUpdate(u) = event {
            if u.name == "probe" {
                assert_eq!(u.depth, 1);
                assert!(roots.iter().any(|r| Some(&r.id) == u.parent_id.as_ref()));
                assert_eq!(u.kind, None);
            } else {
                assert_eq!(u.kind, Some(CallKind::Subtask), "{u:?}");
            }
        }
    }
    // A child starts from its own history: its prompt and its instructions only.
    let child_request = model
        .requests()
        .into_iter()
        .find(|r| r.origin.subtask_title.as_deref() == Some("beta"))
        .unwrap();
    assert_eq!(child_request.messages.len(), 2);
    assert_eq!(child_request.messages[1], ChatMessage::user("do beta"));
    assert!(
        child_request.messages[0]
            .content()
            .contains("subtask (depth 1)")
    );
}

#[tokio::test]
async fn recursion_past_max_depth_gets_a_depth_limit_error() {
    let model = ScriptedModel::new();
    // Every level tries to go one deeper, then reports what it got back.
    for depth in 0..=3 {
        model.push(
            Lane::Depth(depth),
            [
                ScriptedTurn::call("run_subtask", subtask(&format!("level {}", depth + 1))),
                ScriptedTurn::text(format!("depth {depth} finished")),
            ],
        );
    }
    let run = Harness::new(&model).run("recurse").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let depths: Vec<u32> = model.requests().iter().map(|r| r.origin.depth).collect();
    assert_eq!(depths.iter().max(), Some(&3));
    let deepest = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallUpdate(u) if u.depth == 3 && u.status == ToolCallStatus::End => Some(u),
            _ => None,
        })
        .unwrap();
    assert_eq!(deepest.is_error, Some(true));
    assert!(
        deepest
            .result
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap()
            .contains("depth limit reached"),
        "{deepest:?}"
    );
    // At depth 3, run_subtask is no longer offered.
    let deepest_request = model
        .requests()
        .into_iter()
        .find(|r| r.origin.depth == 3)
        .unwrap();
    assert!(
        !deepest_request
            .tools
            .iter()
            .any(|t| t.name == "run_subtask")
    );
    assert!(
        deepest_request
            .tools
            .iter()
            .any(|t| t.name == "finish_subtask")
    );
}

#[tokio::test]
async fn a_structured_result_is_validated_and_fixed_by_the_child() {
    let schema = json!({
        "type": "object",
        "properties": {"files": {"type": "integer"}},
        "required": ["files"]
    });
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "count", "instructions": "count files", "output_schema": schema}),
        ),
        ScriptedTurn::text("There are 4 files."),
    ]);
    model.subtask(
        "count",
        [
            ScriptedTurn::call("finish_subtask", json!({"result": {"files": "four"}})),
            ScriptedTurn::call("finish_subtask", json!({"result": {"files": 4}})),
        ],
    );
    let run = Harness::new(&model).run("how many files?").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let ends = run.tool_ends();
    assert_eq!(ends.len(), 3, "{ends:?}");
    assert!(
        ends[0].2
            && ends[0]
                .1
                .as_str()
                .unwrap()
                .contains("does not match the output_schema"),
        "{ends:?}"
    );
    assert!(!ends[1].2);
    // The parent's run_subtask result is the structured value itself.
    assert_eq!(ends[2], ("run_subtask".into(), json!({"files": 4}), false));
    assert_eq!(run.outcome.messages[1].content(), r#"{"files":4}"#);
    // The child was shown the schema in finish_subtask's parameters.
    let child = model
        .requests()
        .into_iter()
        .find(|r| r.origin.depth == 1)
        .unwrap();
    let finish = child
        .tools
        .iter()
        .find(|t| t.name == "finish_subtask")
        .unwrap();
    assert_eq!(finish.parameters["properties"]["result"], schema);
}

#[tokio::test]
async fn a_child_owing_a_structured_result_is_reminded_unless_its_prose_is_valid() {
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "list", "instructions": "list", "output_schema": schema}),
        ),
        ScriptedTurn::text("ok"),
    ]);
    model.subtask(
        "list",
        [
            ScriptedTurn::text("Here you go: a, b"),
            ScriptedTurn::text("```json\n[\"a\", \"b\"]\n```"),
        ],
    );
    let run = Harness::new(&model).run("list").await;
    assert_eq!(run.tool_ends()[0].1, json!(["a", "b"]));
    let second = model
        .requests()
        .into_iter()
        .filter(|r| r.origin.depth == 1)
        .nth(1)
        .unwrap();
    let reminder = second.messages.last().unwrap().content();
    assert!(
        reminder.contains("must end by calling finish_subtask"),
        "{reminder}"
    );
}

#[tokio::test]
async fn a_child_gets_only_the_tools_it_names_and_never_more_than_its_parent() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool(
                "run_subtask",
                json!({"title": "narrow", "instructions": "x", "tools": ["alpha"]}),
            )
            .tool(
                "run_subtask",
                json!({"title": "greedy", "instructions": "x", "tools": ["alpha", "root_shell"]}),
            ),
        ScriptedTurn::text("ok"),
    ]);
    model.subtask(
        "narrow",
        [
            ScriptedTurn::call("beta", json!({})),
            ScriptedTurn::text("narrow done"),
        ],
    );
    let run = Harness::new(&model)
        .tool(Probe::new("alpha"))
        .tool(Probe::new("beta"))
        .run("go")
        .await;
    let narrow = model
        .requests()
        .into_iter()
        .find(|r| r.origin.subtask_title.as_deref() == Some("narrow"))
        .unwrap();
    let names: Vec<_> = narrow.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alpha", "finish_subtask"]);
    let ends = run.tool_ends();
    let beta = ends.iter().find(|e| e.0 == "beta").unwrap();
    assert!(
        beta.2 && beta.1.as_str().unwrap().contains("there is no tool `beta`"),
        "{ends:?}"
    );
    let greedy = ends.iter().filter(|e| e.0 == "run_subtask").nth(1).unwrap();
    assert!(
        greedy.2
            && greedy
                .1
                .as_str()
                .unwrap()
                .contains("you do not have root_shell"),
        "{ends:?}"
    );
}

#[tokio::test]
async fn a_child_out_of_iterations_fails_its_call_and_the_root_carries_on() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("run_subtask", subtask("loop")),
        ScriptedTurn::text("the subtask failed, here is what I know"),
    ]);
    model.subtask(
        "loop",
        (0..3).map(|_| ScriptedTurn::call("probe", json!({}))),
    );
    let run = Harness::new(&model)
        .limits(|l| l.max_iterations_per_level = 3)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let (_, result, is_error) = run
        .tool_ends()
        .into_iter()
        .find(|e| e.0 == "run_subtask")
        .unwrap();
    assert!(is_error);
    assert!(
        result
            .as_str()
            .unwrap()
            .contains("used all 3 of its iterations"),
        "{result}"
    );
}

#[tokio::test]
async fn the_root_out_of_iterations_ends_the_turn_with_an_error() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().say("trying").tool("probe", json!({})),
        ScriptedTurn::call("probe", json!({})),
    ]);
    let run = Harness::new(&model)
        .limits(|l| l.max_iterations_per_level = 2)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Failed);
    assert_eq!(
        run.outcome.error.as_ref().unwrap().kind,
        ErrorKind::IterationLimit
    );
    assert_eq!(run.outcome.text, "trying");
    assert_eq!(run.outcome.tree.nodes.len(), 2);
    assert_calls_paired(&run.outcome.messages);
    let kinds: Vec<_> = run
        .events
        .iter()
        .rev()
        .take(2)
        .map(Event::type_name)
        .collect();
    assert_eq!(kinds, ["agent_state", "error"]);
}
