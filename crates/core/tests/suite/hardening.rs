//! What the engine does for small local models and busy servers: greedy tool
//! rounds, a reconnecting state, per-call accounting, progressive tool disclosure.

use std::sync::Arc;

use cairn_protocol::{
    AgentStateKind, ChatMessage, Event, PermissionMode, ToolCategory, TurnStatus,
};
use cairn_providers::Sampling;
use cairn_testkit::{ScriptedModel, ScriptedTurn, server_error};
use cairn_tools::Tool;
use serde_json::json;

use super::support::{Harness, Probe};

#[tokio::test]
async fn tool_rounds_decode_at_temperature_zero_unless_set() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("a"), ScriptedTurn::text("b")]);
    let harness = Harness::new(&model);
    harness.run("one").await;
    let mut harness = harness.limits(|l| l.max_depth = 0);
    harness.tools.clear();
    harness.run("no tools at all").await;
    let requests = model.requests();
    assert_eq!(
        requests[0].sampling.temperature,
        Some(0.0),
        "run_subtask alone makes it a tool round"
    );
    assert!(requests[1].tools.is_empty());
    assert_eq!(
        requests[1].sampling.temperature, None,
        "no tools, the server's default"
    );

    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("c")]);
    let mut harness = Harness::new(&model);
    harness.sampling = Sampling {
        temperature: Some(0.7),
        ..Sampling::default()
    };
    harness.run("warm").await;
    assert_eq!(model.requests()[0].sampling.temperature, Some(0.7));
}

#[tokio::test]
async fn a_busy_server_shows_as_reconnecting_until_it_answers() {
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new()
        .reconnect(1)
        .reconnect(2)
        .say("there you are")]);
    let run = Harness::new(&model).run("hi").await;
    let states: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::AgentState(s) => Some(s.state),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            AgentStateKind::Thinking,
            AgentStateKind::Reconnecting,
            AgentStateKind::Thinking,
            AgentStateKind::Idle
        ]
    );
    assert_eq!(run.outcome.text, "there you are");
}

#[tokio::test]
async fn every_model_call_is_accounted_for_with_its_operation() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new()
            .tool("run_subtask", json!({"title": "t", "instructions": "x"}))
            .usage(100, 10),
        ScriptedTurn::text("done").usage(150, 5),
    ]);
    model.subtask("t", [ScriptedTurn::text("child")]);
    let run = Harness::new(&model).run("go").await;
    let calls = &run.outcome.calls;
    assert_eq!(calls.len(), 3);
    let summary: Vec<_> = calls
        .iter()
        .map(|c| (c.operation.as_str(), c.depth, c.prompt_tokens, c.estimated))
        .collect();
    let child_estimate = summary[1].2;
    assert!(child_estimate > 0);
    assert_eq!(
        summary,
        [
            ("turn", 0, 100, false),
            ("subtask", 1, child_estimate, true),
            ("turn", 0, 150, false)
        ],
        "in the order they ended"
    );
    assert!(
        calls
            .iter()
            .all(|c| c.error.is_none() && c.first_token_ms.is_some())
    );
    assert_eq!(run.outcome.usage.prompt_tokens, 100 + 150 + child_estimate);
    assert_eq!(run.outcome.usage.llm_calls, 3);

    let model = ScriptedModel::new();
    model.root([ScriptedTurn::new().fail(server_error("boom"))]);
    let run = Harness::new(&model).run("go").await;
    assert_eq!(
        run.outcome.calls[0].error.as_deref(),
        Some("the scripted model reported an error mid-answer: boom")
    );
}

fn many_tools(harness: Harness, groups: &[(&'static str, usize)]) -> Harness {
    let mut harness = harness;
    for &(group, count) in groups {
        for n in 0..count {
            let name: &'static str = Box::leak(format!("{group}__tool{n}").into_boxed_str());
            harness
                .tools
                .push(Arc::new(Probe::new(name)) as Arc<dyn Tool>);
        }
    }
    harness
}

#[tokio::test]
async fn a_large_toolbelt_folds_its_largest_groups_until_the_rest_fits() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("list_tool_groups", json!({})),
        ScriptedTurn::call("load_tools", json!({"groups": ["mcp__jira"]})),
        ScriptedTurn::call("mcp__jira__tool3", json!({})),
        ScriptedTurn::call("mcp__slack__tool1", json!({})),
        ScriptedTurn::text("done"),
    ]);
    let harness = many_tools(
        Harness::new(&model).tool(Probe::new("core_tool")),
        &[("mcp__github", 10), ("mcp__jira", 30), ("mcp__slack", 30)],
    );
    let run = harness.run("go").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);

    let shown = |n: usize| -> Vec<String> {
        model.requests()[n]
            .tools
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    // 72 tools: jira goes first (as large as slack, its name first), then slack, and
    // the other 12 fit under 38.
    let first = shown(0);
    assert_eq!(first.len(), 1 + 10 + 1 + 2, "{first:?}");
    assert!(
        first.contains(&"mcp__github__tool9".to_owned()),
        "{first:?}"
    );
    assert_eq!(
        first[first.len() - 3..],
        ["run_subtask", "list_tool_groups", "load_tools"]
    );
    assert_eq!(shown(2).len(), 14 + 30, "jira loaded");
    assert!(shown(2).contains(&"mcp__jira__tool29".to_owned()));
    assert_eq!(
        shown(4).len(),
        14 + 30 + 30,
        "calling a slack tool loaded its group"
    );

    let ends = run.tool_ends();
    let listing = ends[0].1.as_str().unwrap();
    assert!(
        listing.contains("- mcp__jira (30 tools): tool0, tool1"),
        "{listing}"
    );
    assert!(listing.contains("- mcp__slack (30 tools)"), "{listing}");
    assert!(
        listing.contains("- plans (1 tools): create_plan"),
        "{listing}"
    );
    assert!(
        ends[1]
            .1
            .as_str()
            .unwrap()
            .starts_with("Loaded mcp__jira. You can now call: mcp__jira__tool0")
    );
    assert!(ends.iter().all(|(_, _, error)| !error), "{ends:?}");
    // The history stays valid for replay with the meta-tools in it.
    assert!(
        run.outcome
            .messages
            .iter()
            .any(|m| matches!(m, ChatMessage::Tool { name, .. } if name == "load_tools"))
    );
}

#[tokio::test]
async fn loading_an_unknown_group_lists_the_real_ones_and_small_toolbelts_show_everything() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call("load_tools", json!({"groups": ["mcp__nope"]})),
        ScriptedTurn::text("ok"),
    ]);
    let run = many_tools(Harness::new(&model), &[("mcp__a", 39)])
        .run("go")
        .await;
    assert_eq!(
        run.tool_ends()[0].1.as_str().unwrap(),
        "Error: no tool group named mcp__nope; the groups are: mcp__a, plans"
    );

    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("ok")]);
    many_tools(Harness::new(&model), &[("mcp__a", 10)])
        .run("go")
        .await;
    let names: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        names.len(),
        12,
        "under the budget: every tool but the rare create_plan: {names:?}"
    );
    assert_eq!(names[10..], ["run_subtask", "load_tools"]);
}

#[tokio::test]
async fn the_third_identical_call_in_a_row_is_not_run_and_quotes_the_last_result() {
    let model = ScriptedModel::new();
    let same = || ScriptedTurn::new().tool("probe", json!({"path": "notes.md"}));
    model.root([same(), same(), same(), ScriptedTurn::text("done")]);
    let probe = Probe::new("probe").output("# Notes\nsecond line");
    let run = Harness::new(&model).tool(probe.clone()).run("go").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(probe.calls(), 2, "the third call did not run");
    let ends = run.tool_ends();
    assert_eq!(ends.len(), 3, "the refused call still has its card");
    let (_, refused, is_error) = &ends[2];
    assert!(is_error);
    let refused = refused.as_str().unwrap();
    assert!(
        refused.contains("repeats your previous call")
            && refused.contains("That call returned: \"# Notes\nsecond line\""),
        "the whole of what it returned: {refused}"
    );
    // The model read the refusal as the call's result.
    let last_request = model.requests().pop().unwrap();
    let told = last_request.messages.last().unwrap().content();
    assert_eq!(told, refused);
}

#[tokio::test]
async fn identical_calls_in_one_round_count_in_their_order() {
    let model = ScriptedModel::new();
    let round = (0..4).fold(ScriptedTurn::new(), |turn, _| {
        turn.tool("probe", json!({"path": "notes.md"}))
    });
    model.root([round, ScriptedTurn::text("done")]);
    let probe = Probe::new("probe").output("only line");
    let run = Harness::new(&model).tool(probe.clone()).run("go").await;
    assert_eq!(probe.calls(), 2);
    let errors: Vec<bool> = run.tool_ends().iter().map(|(_, _, error)| *error).collect();
    assert_eq!(errors, [false, false, true, true]);
    assert!(
        run.tool_ends()[3]
            .1
            .as_str()
            .unwrap()
            .contains("\"only line\""),
        "the refusal quotes the call it repeats, which ran in the same round"
    );
    // Every call has its result, in order.
    super::support::assert_calls_paired(&run.outcome.messages);
}

/// The rounds of a model stuck on one call: it reads, reads again, and makes the
/// call twice more after it is refused.
fn stuck_on_a_read() -> Vec<ScriptedTurn> {
    let same = || ScriptedTurn::new().tool("probe", json!({"path": "notes.md"}));
    vec![
        ScriptedTurn::new()
            .say("Let me look.")
            .tool("probe", json!({"path": "notes.md"})),
        same(),
        same(),
        same(),
    ]
}

#[tokio::test]
async fn a_stuck_model_is_asked_for_its_last_word_with_no_tools_and_that_is_its_answer() {
    let model = ScriptedModel::new();
    let mut rounds = stuck_on_a_read();
    rounds.push(ScriptedTurn::text("The notes say OSPREY."));
    rounds.push(ScriptedTurn::text("never asked"));
    model.root(rounds);
    let probe = Probe::new("probe").output("# Notes\nOSPREY");
    let run = Harness::new(&model)
        .tool(probe.clone())
        .run("What do the notes say?")
        .await;

    run.assert_completed();
    assert_eq!(probe.calls(), 2);
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        5,
        "one round after the second refused repeat"
    );
    let (before, last) = (&requests[3], &requests[4]);
    assert!(!before.answer_only && !before.tools.is_empty());
    assert!(last.answer_only, "the provider is told to fold the results");
    assert!(last.tools.is_empty(), "nothing is offered to call");
    assert_eq!(last.sampling.temperature, Some(0.0));
    assert_eq!(
        last.messages.len(),
        before.messages.len() + 2,
        "the same conversation, with the last refused call and its result"
    );
    let note = "(The model kept making the same call, so this answer was asked of it with \
                no tools offered.)";
    assert_eq!(
        run.outcome.text,
        format!("Let me look.\n\nThe notes say OSPREY.\n\n{note}")
    );
    // Rounds stream back to back; the kept answer parts them.
    assert_eq!(
        run.root_chunks(),
        format!("Let me look.The notes say OSPREY.\n\n{note}"),
        "the note streams as it is kept"
    );
    assert!(run.of_type("error").is_empty());
    super::support::assert_calls_paired(&run.outcome.messages);
}

#[tokio::test]
async fn a_model_that_calls_again_in_its_last_word_is_stopped_with_its_answer_kept() {
    let model = ScriptedModel::new();
    let mut rounds = stuck_on_a_read();
    rounds.push(
        ScriptedTurn::new()
            .say("Reading again.")
            .tool("probe", json!({"path": "notes.md"})),
    );
    rounds.push(ScriptedTurn::text("never asked"));
    model.root(rounds);
    let probe = Probe::new("probe").output("# Notes");
    let run = Harness::new(&model)
        .tool(probe.clone())
        .run("What do the notes say?")
        .await;

    assert_eq!(run.outcome.status, TurnStatus::Failed);
    let error = run.outcome.error.clone().unwrap();
    assert_eq!(error.kind, cairn_protocol::ErrorKind::Loop);
    assert!(
        error
            .message
            .starts_with(r#"the model kept repeating `probe {"path":"notes.md"}`"#),
        "{}",
        error.message
    );
    assert_eq!(probe.calls(), 2, "the last word's call never runs");
    assert_eq!(
        model.requests().len(),
        5,
        "stopped after the last word, not at the iteration limit"
    );
    let errors: Vec<bool> = run.tool_ends().iter().map(|(_, _, error)| *error).collect();
    assert_eq!(errors, [false, false, true, true]);
    assert_eq!(
        run.outcome.text, "Let me look.\n\nReading again.",
        "the answer so far is kept, as it streamed"
    );
    assert_eq!(run.root_chunks(), "Let me look.Reading again.");
    assert_eq!(run.of_type("error").len(), 1);
    super::support::assert_calls_paired(&run.outcome.messages);
}

#[tokio::test]
async fn a_model_stuck_on_a_change_it_was_asked_for_is_stopped_with_no_last_word() {
    let model = ScriptedModel::new();
    let mut rounds = stuck_on_a_read();
    rounds.push(ScriptedTurn::text("never asked"));
    model.root(rounds);
    let probe = Probe::new("probe").output("# Notes");
    let run = Harness::new(&model)
        .tool(probe.clone())
        .run("Replace the title of notes.md with Minutes.")
        .await;

    assert_eq!(run.outcome.status, TurnStatus::Failed);
    assert_eq!(
        run.outcome.error.clone().unwrap().kind,
        cairn_protocol::ErrorKind::Loop
    );
    assert_eq!(
        model.requests().len(),
        4,
        "asked without tools, a model said a change it never made was made"
    );
    assert_eq!(
        run.outcome.text, "Let me look.",
        "the answer so far is kept"
    );
    assert_eq!(run.of_type("error").len(), 1);
}

#[tokio::test]
async fn a_stuck_subtask_that_owes_a_structured_result_gets_no_last_word() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({
                "title": "stuck",
                "instructions": "What do the notes say?",
                "output_schema": {"type": "object", "required": ["word"]},
            }),
        ),
        ScriptedTurn::text("the subtask could not finish"),
    ]);
    model.subtask(
        "stuck",
        (0..4).map(|_| ScriptedTurn::call("probe", json!({"path": "notes.md"}))),
    );
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;

    run.assert_completed();
    let (_, result, is_error) = run
        .tool_ends()
        .into_iter()
        .find(|end| end.0 == "run_subtask")
        .unwrap();
    assert!(is_error);
    assert!(
        result.as_str().unwrap().contains("kept repeating `probe"),
        "{result}"
    );
    assert!(model.requests().iter().all(|request| !request.answer_only));
}

#[tokio::test]
async fn a_change_that_writes_the_threads_context_into_a_file_is_not_run() {
    let model = ScriptedModel::new();
    let write = |content: &str| {
        ScriptedTurn::new().tool("probe", json!({"path": "notes.txt", "content": content}))
    };
    model.root([
        // The block that opens the request, taken for the file's words.
        write(
            "Permission mode: auto. Your tool calls run without asking. Prefer reversible \
             steps.",
        ),
        write("OSPREY"),
        ScriptedTurn::text("Wrote OSPREY into notes.txt."),
    ]);
    let probe = Probe::new("probe")
        .category(ToolCategory::Write)
        .output("created `notes.txt`");
    let run = Harness::new(&model)
        .mode(PermissionMode::Auto)
        .tool(probe.clone())
        .run("Put the code word from memo.txt into a new file called notes.txt.")
        .await;

    run.assert_completed();
    assert_eq!(
        probe.calls(),
        1,
        "only the write of the file's own words ran"
    );
    let ends = run.tool_ends();
    let (_, rejected, is_error) = &ends[0];
    assert!(is_error);
    assert_eq!(
        rejected.as_str().unwrap(),
        "Error: nothing was written: this content is Cairn's note about this chat (its \
         permission mode and folder), which no file holds. If the request needs a file's \
         words, read that file first, then write what it says."
    );
    assert!(!ends[1].2, "the second write ran");
    // The block opened the first request, as the model read it.
    let first = model.requests()[0].messages[1].content().to_owned();
    assert!(first.contains("Permission mode: auto."), "{first}");
}

#[tokio::test]
async fn a_window_too_small_to_work_in_is_said_before_any_model_call() {
    let model = ScriptedModel::new().with_context_window(512);
    model.root([ScriptedTurn::text("never asked")]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Failed);
    let error = run.outcome.error.clone().unwrap();
    assert_eq!(error.kind, cairn_protocol::ErrorKind::Config);
    for said in [
        "512 tokens (the scripted model)",
        "at least 1024",
        "num_ctx",
        "--ctx-size",
        "--context-cap",
    ] {
        assert!(error.message.contains(said), "{said}: {}", error.message);
    }
    assert!(model.requests().is_empty());
    assert!(run.of_type("budget_exceeded").is_empty());
}

/// What a level that made a change again answers, `made` being what the change did.
fn made_again(made: &str) -> String {
    format!(
        "(The model made the same change again; it was done already, so it was not run \
         twice.) {made}"
    )
}

#[tokio::test]
async fn a_change_made_again_is_not_run_and_ends_the_level_saying_it_was_done() {
    const MADE: &str = "created `message.txt` (6 bytes)";
    let model = ScriptedModel::new();
    let write = |content: &str| {
        ScriptedTurn::new().tool("probe", json!({"path": "message.txt", "content": content}))
    };
    model.root([
        write("VELVET"),
        // Another change runs; the same one again does not.
        write("COBALT"),
        ScriptedTurn::new().tool("probe", json!({"content": "COBALT", "path": "message.txt"})),
        ScriptedTurn::text("never asked"),
    ]);
    let probe = Probe::new("probe")
        .category(ToolCategory::Write)
        .output(MADE);
    let run = Harness::new(&model)
        .mode(PermissionMode::Auto)
        .tool(probe.clone())
        .run("Write the code word into message.txt.")
        .await;
    run.assert_completed();
    assert_eq!(probe.calls(), 2);
    assert_eq!(model.requests().len(), 3);
    assert_eq!(run.outcome.text, made_again(MADE));
    assert_eq!(run.root_chunks(), run.outcome.text, "the user sees it said");
    super::support::assert_calls_paired(&run.outcome.messages);
}

#[tokio::test]
async fn a_change_made_again_after_reading_again_is_not_run_but_one_after_a_command_is() {
    const MADE: &str = "created `message.txt` (6 bytes)";
    // Read, write, then `between`, then the same write again.
    let run = |between: &'static str| async move {
        let model = ScriptedModel::new();
        let read = || ScriptedTurn::new().tool("source", json!({"path": "letter.txt"}));
        let write = || {
            ScriptedTurn::new().tool("write", json!({"path": "message.txt", "content": "COBALT"}))
        };
        model.root([
            read(),
            write(),
            ScriptedTurn::new().tool(between, json!({"path": "letter.txt"})),
            write(),
            ScriptedTurn::text("Wrote it."),
        ]);
        let probes = [
            Probe::new("source").output("The code word is COBALT."),
            Probe::new("write")
                .category(ToolCategory::Write)
                .output(MADE),
            Probe::new("command")
                .category(ToolCategory::Execute)
                .output("exit code: 0"),
        ];
        let mut harness = Harness::new(&model).mode(PermissionMode::Auto);
        for probe in &probes {
            harness = harness.tool(probe.clone());
        }
        let run = harness
            .run("Read letter.txt and write its code word into message.txt.")
            .await;
        run.assert_completed();
        (run.outcome.text, probes.map(|probe| probe.calls()))
    };

    // Reading again between, the loop a small model falls into: not written twice.
    assert_eq!(run("source").await, (made_again(MADE), [2, 1, 0]));
    // A command between may have changed the file: the write runs again.
    assert_eq!(run("command").await, ("Wrote it.".to_owned(), [1, 2, 1]));
}

#[tokio::test]
async fn a_change_made_again_after_a_refused_change_is_not_run() {
    const MADE: &str = "edited `summary.md`";
    let model = ScriptedModel::new();
    let edit = || {
        ScriptedTurn::new().tool(
            "edit",
            json!({"path": "summary.md", "old_text": "yellow", "new_text": "green"}),
        )
    };
    model.root([
        edit(),
        // The 0.5B's own step between: an edit the tool refuses, which changes nothing.
        ScriptedTurn::new().tool("edit", json!({"path": "summary.md", "fail": true})),
        edit(),
        ScriptedTurn::text("never asked"),
    ]);
    let probe = Probe::new("edit")
        .category(ToolCategory::Write)
        .output(MADE);
    let run = Harness::new(&model)
        .mode(PermissionMode::Auto)
        .tool(probe.clone())
        .run("Replace yellow with green in summary.md.")
        .await;
    run.assert_completed();
    assert_eq!(probe.calls(), 2, "the first edit and the refused one");
    assert_eq!(run.outcome.text, made_again(MADE));
}

#[tokio::test]
async fn a_read_made_again_still_runs() {
    let model = ScriptedModel::new();
    let read = || ScriptedTurn::new().tool("probe", json!({"path": "notes.md"}));
    model.root([read(), read(), ScriptedTurn::text("done")]);
    let probe = Probe::new("probe").output("# Notes");
    let run = Harness::new(&model).tool(probe.clone()).run("go").await;
    assert_eq!(probe.calls(), 2, "only the loop guard stops reads");
    assert_eq!(run.outcome.text, "done");
}
