//! Scheduling: parallel-safe calls together (bounded), the others one by one, named
//! locks across the whole tree, results always in call order.

use std::time::Duration;

use cairn_protocol::{ChatMessage, ToolCategory};
use cairn_testkit::{ScriptedModel, ScriptedTurn};

use serde_json::json;

use super::support::{CountedModel, Harness, Probe, assert_calls_paired};

fn calls(n: usize, name: &str, args: impl Fn(usize) -> serde_json::Value) -> ScriptedTurn {
    (0..n).fold(ScriptedTurn::new(), |turn, i| turn.tool(name, args(i)))
}

#[tokio::test]
async fn parallel_safe_calls_run_together_up_to_the_limit() {
    let model = ScriptedModel::new();
    // Different arguments each: identical calls in a row would be refused as a loop.
    model.root([
        calls(10, "probe", |i| json!({"i": i})),
        ScriptedTurn::text("ok"),
    ]);
    let probe = Probe::new("probe").delay(Duration::from_millis(30));
    Harness::new(&model)
        .limits(|l| l.max_parallel_per_turn = 4)
        .tool(probe.clone())
        .run("go")
        .await;
    assert_eq!(probe.calls(), 10);
    assert_eq!(probe.peak(), 4);
}

#[tokio::test]
async fn the_limit_bounds_model_requests_and_tools_across_nested_subtasks() {
    let model = ScriptedModel::new();
    let titles = ["a", "b", "c", "d"];
    let fan_out = titles.iter().fold(ScriptedTurn::new(), |turn, title| {
        turn.tool(
            "run_subtask",
            json!({"title": title, "instructions": format!("do {title}")}),
        )
    });
    model.root([fan_out, ScriptedTurn::text("all done")]);
    for title in titles {
        model.subtask(
            title,
            [
                // Each child's answers take a while, so requests overlap.
                ScriptedTurn::new()
                    .delay(Duration::from_millis(20))
                    .tool("probe", json!({"i": 1}))
                    .tool("probe", json!({"i": 2}))
                    .tool("probe", json!({"i": 3})),
                ScriptedTurn::new()
                    .delay(Duration::from_millis(20))
                    .say(format!("{title} done")),
            ],
        );
    }
    let probe = Probe::new("probe").delay(Duration::from_millis(20));
    let run = tokio::time::timeout(
        Duration::from_secs(20),
        Harness::new(&model)
            .client(std::sync::Arc::new(CountedModel::sharing(&model, &probe)))
            .limits(|l| l.max_parallel_per_turn = 3)
            .tool(probe.clone())
            .run("go"),
    )
    .await
    .expect("nesting never waits on itself");
    assert_eq!(run.outcome.text, "all done");
    assert_eq!(probe.calls(), 12);
    // Four children at once, each with three calls, would reach twelve.
    assert_eq!(
        probe.peak(),
        3,
        "model requests and tools in flight together"
    );
}

#[tokio::test]
async fn calls_that_are_not_parallel_safe_run_one_at_a_time() {
    let model = ScriptedModel::new();
    model.root([
        calls(4, "writer", |i| json!({"i": i})),
        ScriptedTurn::text("ok"),
    ]);
    let writer = Probe::new("writer")
        .exclusive()
        .delay(Duration::from_millis(10));
    Harness::new(&model).tool(writer.clone()).run("go").await;
    assert_eq!(writer.calls(), 4);
    assert_eq!(writer.peak(), 1);
}

#[tokio::test]
async fn results_keep_the_models_order_whatever_finishes_first() {
    let model = ScriptedModel::new();
    model.root([
        calls(
            4,
            "probe",
            |i| json!({"i": i, "delay_ms": 40 - 10 * i as u64}),
        ),
        ScriptedTurn::text("ok"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_calls_paired(&run.outcome.messages);
    let order: Vec<u64> = run.outcome.messages[1..5]
        .iter()
        .map(|m| {
            let ChatMessage::Tool { content, .. } = m else {
                panic!("{m:?}")
            };
            let args: serde_json::Value =
                serde_json::from_str(content.trim_start_matches("probe ")).unwrap();
            args["i"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(order, [0, 1, 2, 3]);
    let next = &model.requests()[1].messages;
    assert_eq!(&next[next.len() - 4..], &run.outcome.messages[1..5]);
}

#[tokio::test]
async fn a_write_between_reads_waits_for_the_reads_before_it() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool("reader", json!({"delay_ms": 30}))
            .tool("writer", json!({}))
            .tool("reader", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let reader = Probe::new("reader");
    let writer = Probe::new("writer")
        .category(ToolCategory::Write)
        .exclusive();
    // The writer counts how many readers are running when it starts: the "running"
    // counter is shared by giving both probes the same one.
    let writer = Probe {
        running: reader.running.clone(),
        peak: reader.peak.clone(),
        ..writer
    };
    Harness::new(&model)
        .tool(reader.clone())
        .tool(writer)
        .run("go")
        .await;
    assert_eq!(reader.calls(), 2);
    assert_eq!(reader.peak(), 1, "nothing overlapped the write");
}

#[tokio::test]
async fn a_named_lock_holds_across_parallel_subtasks() {
    let model = ScriptedModel::new();
    model.root([
        calls(
            3,
            "run_subtask",
            |i| json!({"title": format!("s{i}"), "instructions": "write"}),
        ),
        ScriptedTurn::text("ok"),
    ]);
    for i in 0..3 {
        model.subtask(
            &format!("s{i}"),
            [
                ScriptedTurn::call("locked", json!({})),
                ScriptedTurn::text("written"),
            ],
        );
    }
    let locked = Probe::new("locked")
        .lock("disk")
        .delay(Duration::from_millis(20));
    Harness::new(&model).tool(locked.clone()).run("go").await;
    assert_eq!(locked.calls(), 3);
    assert_eq!(locked.peak(), 1);
}
