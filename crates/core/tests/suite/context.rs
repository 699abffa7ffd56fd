//! Small context windows: results cut to fit and paged back, history fitted to the
//! window the server reports, tool schemas folded when they would crowd it.

use std::sync::Arc;

use async_trait::async_trait;
use cairn_protocol::{ChatMessage, TurnStatus};
use cairn_testkit::{ScriptedModel, ScriptedTurn};
use cairn_tools::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{Value, json};

use super::support::{Harness, Probe};

fn numbered_lines(count: usize) -> String {
    (0..count).map(|n| format!("line {n}\n")).collect()
}

fn tool_result(messages: &[ChatMessage], id: &str) -> String {
    messages
        .iter()
        .find_map(|message| match message {
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } if tool_call_id == id => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id} in {messages:#?}"))
}

fn tool_names(request: &cairn_providers::ChatRequest) -> Vec<String> {
    request.tools.iter().map(|spec| spec.name.clone()).collect()
}

#[tokio::test]
async fn a_long_result_keeps_head_and_tail_and_the_rest_is_read_in_pages() {
    let whole = numbered_lines(1500);
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::new().tool_with_id("big", "probe", json!({})),
        ScriptedTurn::new().tool_with_id(
            "page",
            "read_tool_result",
            json!({"tool_call_id": "big", "offset": 7000, "limit": 70}),
        ),
        ScriptedTurn::text("read it"),
    ]);
    let run = Harness::new(&model)
        .limits(|l| l.max_tool_result_bytes = 1000)
        .tool(Probe::new("probe").output(whole.clone()))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);

    let cut = tool_result(&run.outcome.messages, "big");
    assert!(cut.len() <= 1000, "{} bytes", cut.len());
    assert!(cut.starts_with("line 0\nline 1\n"), "the head is kept");
    assert!(cut.ends_with("line 1499\n"), "the tail is kept");
    assert!(
        cut.contains("read_tool_result {\"tool_call_id\": \"big\", \"offset\": "),
        "{cut}"
    );

    // The card gets the whole result; the model, the cut.
    let ends = run.tool_ends();
    assert_eq!(ends[0].1.as_str(), Some(whole.as_str()));

    let page = tool_result(&run.outcome.messages, "page");
    let expected = &whole[7000..7070];
    assert_eq!(
        page,
        format!(
            "[bytes 7000–7070 of {} of the result of big]\n{expected}\n[more: read_tool_result {{\"tool_call_id\": \"big\", \"offset\": 7070}}]",
            whole.len()
        )
    );

    let requests = model.requests();
    assert!(!tool_names(&requests[0]).contains(&"read_tool_result".to_owned()));
    assert!(
        tool_names(&requests[1]).contains(&"read_tool_result".to_owned()),
        "offered once a result was cut"
    );
}

/// What a request is estimated to take, its tool schemas counted in.
fn request_tokens(request: &cairn_providers::ChatRequest) -> u64 {
    cairn_core::history::estimate_request(&request.messages, &request.tools)
}

#[tokio::test]
async fn a_small_window_sizes_a_result_to_the_room_the_request_leaves() {
    let model = ScriptedModel::new().with_context_window(4096);
    model.root([
        ScriptedTurn::new().tool_with_id("big", "probe", json!({})),
        ScriptedTurn::text("ok"),
    ]);
    let run = Harness::new(&model)
        .tool(Probe::new("probe").output(numbered_lines(3000)))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let cut = tool_result(&run.outcome.messages, "big");
    assert!(cut.contains("read_tool_result"), "{cut}");
    let requests = model.requests();
    let history_budget = 3072;
    let next = request_tokens(&requests[1]);
    assert!(next <= history_budget, "{next} tokens");
    assert!(
        next > history_budget * 3 / 4,
        "the result takes the room there is, not a fixed share: {next} of {history_budget}"
    );
}

#[tokio::test]
async fn history_is_fitted_to_the_window_the_server_reports() {
    let old = vec![
        ChatMessage::user("old ".repeat(5000)),
        ChatMessage::assistant("old answer"),
    ];
    let sent_old = |model: ScriptedModel| {
        let old = old.clone();
        async move {
            model.root([ScriptedTurn::text("fits")]);
            let mut harness = Harness::new(&model);
            harness.history = old;
            let run = harness.run("new question").await;
            assert_eq!(run.outcome.status, TurnStatus::Completed);
            model.requests()[0]
                .messages
                .iter()
                .any(|m| m.content().contains("old old"))
        }
    };
    assert!(
        sent_old(ScriptedModel::new()).await,
        "without a window the 128k default keeps 5000 tokens of history"
    );
    assert!(
        !sent_old(ScriptedModel::new().with_context_window(4096)).await,
        "a 4096-token window cannot hold it"
    );
}

/// A tool with a long schema, like many MCP tools.
struct Wide(String);

#[async_trait]
impl Tool for Wide {
    fn name(&self) -> &str {
        &self.0
    }

    fn description(&self) -> &str {
        "Does one of many things this server offers, described at the length MCP \
         servers often use, with every option spelled out for the model to read. \
         Does one of many things this server offers, described at the length MCP \
         servers often use, with every option spelled out for the model to read."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "query": {"type": "string", "description": "What to look for, in full."},
            "limit": {"type": "integer", "description": "How many results to return."}
        }})
    }

    async fn call(&self, _args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.0.clone()))
    }
}

#[tokio::test]
async fn tool_schemas_that_would_crowd_a_small_window_are_shown_on_demand() {
    let offered = |model: ScriptedModel| async move {
        model.root([ScriptedTurn::text("ok")]);
        let mut harness = Harness::new(&model).tool(Probe::new("probe"));
        for n in 0..20 {
            harness
                .tools
                .push(Arc::new(Wide(format!("mcp__big__tool{n}"))));
        }
        harness.run("go").await;
        let request = model.requests().remove(0);
        (
            tool_names(&request),
            request.messages[0].content().to_owned(),
        )
    };
    let (roomy, system) = offered(ScriptedModel::new().with_context_window(32_768)).await;
    assert_eq!(
        roomy.len(),
        1 + 20 + 2,
        "probe, the twenty, run_subtask, load_tools (for the rare create_plan): {roomy:?}"
    );
    assert!(
        system.contains("they run in parallel"),
        "the full prompt: {system}"
    );

    let (small, system) = offered(ScriptedModel::new().with_context_window(4096)).await;
    assert_eq!(
        small,
        ["probe", "run_subtask", "list_tool_groups", "load_tools"],
        "the server's tools wait in their group"
    );
    assert!(
        system.contains("they run in parallel"),
        "the full prompt: {system}"
    );

    let (smallest, _) = offered(ScriptedModel::new().with_context_window(1024)).await;
    assert_eq!(
        smallest,
        ["probe", "list_tool_groups", "load_tools"],
        "only the core tools, the rest in their groups"
    );
}

#[tokio::test]
async fn core_tools_too_large_for_the_window_get_the_compact_prompt_and_brief_schemas() {
    let run = |window: u32| async move {
        let model = ScriptedModel::new().with_context_window(window);
        model.root([ScriptedTurn::text("ok")]);
        let mut harness = Harness::new(&model);
        for n in 0..4 {
            harness.tools.push(Arc::new(Wide(format!("core_{n}"))));
        }
        harness.run("go").await;
        model.requests().remove(0)
    };
    let roomy = run(8192).await;
    assert!(roomy.messages[0].content().contains("in parallel"));
    assert!(roomy.tools[0].parameters["properties"]["query"]["description"].is_string());

    let small = run(2048).await;
    let system = small.messages[0].content();
    assert!(
        !system.contains("in parallel"),
        "the compact prompt: {system}"
    );
    assert!(
        system.len() * 2 < roomy.messages[0].content().len(),
        "{system}"
    );
    assert_eq!(
        tool_names(&small),
        ["core_0", "core_1", "core_2", "core_3", "load_tools"]
    );
    let first = &small.tools[0];
    assert_eq!(
        first.description,
        "Does one of many things this server offers, described at the length MCP servers \
         often use, with every option spelled out for the model to read."
    );
    assert_eq!(
        first.parameters["properties"]["query"],
        json!({"type": "string"}),
        "arguments without their descriptions"
    );
}

/// The offset the last "read the rest" note in `content` names.
fn next_offset(content: &str) -> Option<usize> {
    let at = content.rfind("\"offset\": ")?;
    content[at + 10..].split('}').next()?.parse().ok()
}

#[tokio::test]
async fn a_4k_model_reading_a_40_kb_file_sees_its_cut_at_once_and_pages_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let text: String = (1..=800)
        .map(|n| format!("note {n:03}: the garden path runs past the old stone wall\n"))
        .collect();
    assert!(text.len() > 40_000);
    std::fs::write(dir.path().join("notes.md"), &text).unwrap();
    // A model that reads the file, then follows each note to the next page.
    let model = ScriptedModel::from_fn(|request| match request.messages.last() {
        Some(ChatMessage::Tool { content, .. }) => match next_offset(content) {
            Some(offset) => ScriptedTurn::new().tool_with_id(
                &format!("page{offset}"),
                "read_tool_result",
                json!({"tool_call_id": "read", "offset": offset}),
            ),
            None => ScriptedTurn::text("I have read all of it."),
        },
        _ => ScriptedTurn::new().tool_with_id("read", "read_file", json!({"path": "notes.md"})),
    })
    .recording()
    .with_context_window(4096);
    let run = Harness::new(&model)
        .workspace(dir.path())
        .run("Read notes.md")
        .await;
    assert_eq!(
        run.outcome.status,
        TurnStatus::Completed,
        "{:?}",
        run.outcome.error
    );

    let requests = model.requests();
    // The very next request holds the cut: head, tail and the way to the rest.
    let ChatMessage::Tool { content: first, .. } = requests[1].messages.last().unwrap() else {
        panic!("{:?}", requests[1].messages);
    };
    assert!(first.starts_with("note 001:"), "{first}");
    assert!(first.ends_with("note 800: the garden path runs past the old stone wall\n"));
    assert!(
        first.contains("read_tool_result {\"tool_call_id\": \"read\""),
        "{first}"
    );
    for (n, request) in requests.iter().enumerate() {
        let tokens = request_tokens(request);
        assert!(
            tokens * 5 <= 4096 * 4,
            "request {n}: {tokens} tokens of 4096"
        );
        // Every call in a request has its result.
        let calls = request
            .messages
            .iter()
            .flat_map(ChatMessage::tool_calls)
            .count();
        let results = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Tool { .. }))
            .count();
        assert_eq!(calls, results, "request {n}");
    }
    let reads = run
        .outcome
        .messages
        .iter()
        .flat_map(ChatMessage::tool_calls)
        .filter(|call| call.name == "read_file")
        .count();
    assert_eq!(reads, 1, "read once, paged after");

    let results: Vec<&str> = run
        .outcome
        .messages
        .iter()
        .filter_map(|message| match message {
            ChatMessage::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    assert!(results.len() >= 10, "paged in {} reads", results.len());
    let mut read = text[..next_offset(results[0]).unwrap()].to_owned();
    for page in &results[1..] {
        let body = page.split_once('\n').unwrap().1;
        read.push_str(body.split("\n[more: ").next().unwrap());
    }
    assert_eq!(read, text, "the head and the pages are the whole file");
}

#[tokio::test]
async fn a_known_window_bounds_each_answer_unless_the_user_set_a_length() {
    let max_tokens = |model: ScriptedModel, set: Option<u32>| async move {
        model.root([ScriptedTurn::text("ok")]);
        let mut harness = Harness::new(&model);
        harness.sampling.max_tokens = set;
        harness.run("go").await;
        model.requests()[0].sampling.max_tokens
    };
    assert_eq!(
        max_tokens(ScriptedModel::new().with_context_window(4096), None).await,
        Some(1024),
        "the answer's room, a quarter of the window"
    );
    assert_eq!(
        max_tokens(ScriptedModel::new().with_context_window(4096), Some(300)).await,
        Some(300),
        "the user's length wins"
    );
    assert_eq!(max_tokens(ScriptedModel::new(), None).await, None);
}

#[tokio::test]
async fn a_server_counting_more_tokens_than_estimated_shrinks_the_next_request() {
    // A tokenizer that counts twice what the estimate says: the second request is
    // fitted to half the budget, so that it fits the window the server counts in.
    let model = ScriptedModel::from_fn(|request| {
        let estimated = request_tokens(request);
        let turn = match request.messages.last() {
            Some(ChatMessage::Tool { .. }) => ScriptedTurn::text("done"),
            _ => ScriptedTurn::new().tool_with_id("big", "probe", json!({})),
        };
        turn.usage(estimated * 2, 1)
    })
    .recording()
    .with_context_window(8192);
    let run = Harness::new(&model)
        .tool(Probe::new("probe").output(numbered_lines(4000)))
        .run("go")
        .await;
    assert_eq!(
        run.outcome.status,
        TurnStatus::Completed,
        "{:?}",
        run.outcome.error
    );
    let second = request_tokens(&model.requests()[1]);
    let budget = 8192 - 2048;
    assert!(
        second * 2 <= budget,
        "{second} estimated tokens, {} as the server counts them, of {budget}",
        second * 2
    );
    assert!(
        second * 2 > budget * 3 / 4,
        "and the room is still used: {second}"
    );
}

#[tokio::test]
async fn an_answer_the_server_cut_at_its_length_is_kept_and_said() {
    let model = ScriptedModel::new().with_context_window(4096);
    model.root([ScriptedTurn::text("The code word is the code word is the").cut_at_length()]);
    let run = Harness::new(&model).run("What is the code word?").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(run.outcome.cut, Some(cairn_protocol::Cut::Length));
    assert_eq!(run.outcome.text, "The code word is the code word is the");
    assert_eq!(
        run.outcome.tree.cut,
        Some(cairn_protocol::Cut::Length),
        "kept with the answer"
    );
    let Some(cairn_protocol::Event::Done(done)) = Some(run.outcome.done_event()) else {
        unreachable!()
    };
    assert_eq!(done.cut, Some(cairn_protocol::Cut::Length));

    // An answer that ends as the model meant it says nothing of the kind.
    let model = ScriptedModel::new();
    model.root([ScriptedTurn::text("PELICAN.")]);
    let run = Harness::new(&model).run("What is the code word?").await;
    assert_eq!(run.outcome.cut, None);
    assert_eq!(run.outcome.tree.cut, None);
}

#[tokio::test]
async fn a_subtask_cut_at_its_length_tells_its_parent() {
    let model = ScriptedModel::new();
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "Summarise", "instructions": "Summarise the notes"}),
        ),
        ScriptedTurn::text("done"),
    ]);
    model.subtask(
        "Summarise",
        [ScriptedTurn::text("The notes say").cut_at_length()],
    );
    let run = Harness::new(&model)
        .tool(Probe::new("probe"))
        .run("go")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let ends = run.tool_ends();
    assert_eq!(ends[0].0, "run_subtask");
    let result = ends[0].1.as_str().unwrap();
    assert!(
        result.starts_with("The notes say\n[cut: The model stopped at its length limit"),
        "{result}"
    );
    assert_eq!(run.outcome.cut, None, "the answer itself was not cut");
}

/// What a small model (1.5B parameters, 8k window) is sent first for "Say hi.": the
/// tools' names and the question as the model reads it.
async fn small_models_first_request(
    setup: impl FnOnce(Harness) -> Harness,
) -> (Vec<String>, String) {
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(1_543_714_304);
    model.root([ScriptedTurn::text("Hello!")]);
    let run = setup(Harness::new(&model)).run("Say hi.").await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let request = model.requests().remove(0);
    let asked = request.messages.last().unwrap().content().to_owned();
    (tool_names(&request), asked)
}

#[tokio::test]
async fn a_small_model_in_a_chat_without_a_folder_is_offered_no_tools_and_no_mode() {
    let (tools, asked) = small_models_first_request(|h| h.tool(Probe::new("web_fetch"))).await;
    assert_eq!(tools, Vec::<String>::new());
    assert_eq!(
        asked, "Say hi.",
        "nothing to call, so no permission mode either"
    );

    // Tools of the user's own (an MCP server's) are what they asked for: offered.
    let (tools, asked) = small_models_first_request(|h| h.tool(Probe::new("mcp__box__look"))).await;
    assert_eq!(tools, ["load_tools"], "{tools:?}");
    assert!(asked.starts_with("<context>\nPermission mode: "), "{asked}");

    // A folder: the core tools.
    let dir = tempfile::tempdir().unwrap();
    let (tools, asked) =
        small_models_first_request(|h| h.tool(Probe::new("web_fetch")).workspace(dir.path())).await;
    assert!(tools.contains(&"web_fetch".to_owned()), "{tools:?}");
    assert!(asked.contains("Workspace (file paths"), "{asked}");
}

/// The groups `load_tools` offers in `request`, by name.
fn loadable_groups(request: &cairn_providers::ChatRequest) -> Vec<String> {
    request
        .tools
        .iter()
        .find(|tool| tool.name == "load_tools")
        .map(|tool| {
            tool.parameters["properties"]["groups"]["items"]["enum"]
                .as_array()
                .unwrap()
                .iter()
                .map(|group| group.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_small_model_in_a_folder_is_offered_no_to_do_list_and_no_subtasks() {
    let dir = tempfile::tempdir().unwrap();
    let asked = |params: u64| {
        let model = ScriptedModel::new()
            .with_context_window(8192)
            .with_params(params);
        model.root([ScriptedTurn::text("Done.")]);
        let harness = Harness::new(&model)
            .tool(cairn_tools::TodoWrite)
            .workspace(dir.path());
        async move {
            let run = harness.run("Tick the box for \"milk\" in todo.md.").await;
            assert_eq!(run.outcome.status, TurnStatus::Completed);
            let request = model.requests().remove(0);
            let mut offered = tool_names(&request);
            offered.extend(loadable_groups(&request));
            offered
        }
    };
    let small = asked(1_543_714_304).await;
    assert!(small.contains(&"read_file".to_owned()), "{small:?}");
    assert!(
        !small.contains(&"todo".to_owned()) && !small.contains(&"todo_write".to_owned()),
        "{small:?}"
    );
    assert!(
        !small.contains(&"subtasks".to_owned()) && !small.contains(&"run_subtask".to_owned()),
        "{small:?}"
    );
    // Asked for anyway, a subtask is refused in words it can act on.
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(1_543_714_304);
    model.root([
        ScriptedTurn::call(
            "run_subtask",
            json!({"title": "Tick", "instructions": "tick it"}),
        ),
        ScriptedTurn::text("Done."),
    ]);
    let run = Harness::new(&model)
        .workspace(dir.path())
        .run("Tick the box.")
        .await;
    assert!(
        run.events.iter().any(|event| matches!(
            event,
            cairn_protocol::Event::ToolCallUpdate(update)
                if update.result.as_ref().and_then(Value::as_str)
                    == Some("Error: this model is not given subtasks. Do this part yourself.")
        )),
        "{:?}",
        run.events
    );
    // A large model is offered both, as before.
    let large = asked(32_000_000_000).await;
    assert!(
        large.contains(&"todo".to_owned()) || large.contains(&"todo_write".to_owned()),
        "{large:?}"
    );
    assert!(
        large.contains(&"subtasks".to_owned()) || large.contains(&"run_subtask".to_owned()),
        "{large:?}"
    );
}

/// The first request a tiny model (the 0.5B) is sent for `prompt` in `dir`, as it
/// reads the request: its last user message.
async fn tiny_model_asked_in(
    dir: &std::path::Path,
    prompt: &str,
    setup: impl FnOnce(Harness) -> Harness,
) -> String {
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(494_032_768);
    model.root([ScriptedTurn::text("GARNET")]);
    let run = setup(Harness::new(&model).workspace(dir)).run(prompt).await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let request = model.requests().remove(0);
    request.messages.last().unwrap().content().to_owned()
}

#[tokio::test]
async fn a_tiny_models_request_opens_with_the_small_text_files_it_names() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("memo.txt"),
        "Lunch at noon.\nThe code word is GARNET.\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(5000)).unwrap();
    std::fs::write(dir.path().join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1]).unwrap();
    let question = "What is the code word in memo.txt? Not in big.txt, logo.png or gone.txt.";

    let asked = tiny_model_asked_in(dir.path(), question, |h| h).await;
    let (context, words) = cairn_core::prompt::split_context(&asked);
    assert_eq!(words, question, "the user's words stay as they were, last");
    assert!(
        context.ends_with(
            "<context>\n`memo.txt` holds:\n```\nLunch at noon.\nThe code word is GARNET.\n```\n\
             </context>\n\n"
        ),
        "only the small text file that exists is read with the request: {context}"
    );
    assert!(
        context.starts_with("<context>\nPermission mode: "),
        "the thread's own context still opens its first message: {context}"
    );

    // A file the user's rules keep from the model is not read for it, nor one the
    // gate would ask about first.
    let denied = tiny_model_asked_in(dir.path(), question, |h| {
        h.rule(cairn_core::RuleList::Deny, "read_file(memo.txt)")
    })
    .await;
    assert!(!denied.contains("GARNET"), "{denied}");
    let asking = tiny_model_asked_in(dir.path(), question, |h| {
        h.rule(cairn_core::RuleList::Ask, "read_file")
    })
    .await;
    assert!(!asking.contains("GARNET"), "{asking}");
}

#[tokio::test]
async fn a_request_that_speaks_of_files_in_a_small_folder_opens_with_all_of_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "A lamp.\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b.txt"), "A fox.\n").unwrap();
    let question = "Find the file that mentions an animal and tell me its name.";

    let asked = tiny_model_asked_in(dir.path(), question, |h| h).await;
    let (context, words) = cairn_core::prompt::split_context(&asked);
    assert_eq!(words, question);
    assert!(
        context.ends_with(
            "<context>\n`a.txt` holds:\n```\nA lamp.\n```\n`sub/b.txt` holds:\n```\nA fox.\n```\n\
             </context>\n\n"
        ),
        "{context}"
    );

    // Not for a request that speaks of no file.
    let other = tiny_model_asked_in(dir.path(), "Which animal is it?", |h| h).await;
    assert!(!other.contains("A fox"), "{other}");
    // Nor where one of them could not be read with it: all or none.
    std::fs::write(dir.path().join("logo.png"), [0x89, b'P', 0]).unwrap();
    let partial = tiny_model_asked_in(dir.path(), question, |h| h).await;
    assert!(!partial.contains("A fox"), "{partial}");
    // Nor in a folder of more files than are read with a request.
    std::fs::remove_file(dir.path().join("logo.png")).unwrap();
    for name in ["c.txt", "d.txt"] {
        std::fs::write(dir.path().join(name), "A chair.\n").unwrap();
    }
    let larger = tiny_model_asked_in(dir.path(), question, |h| h).await;
    assert!(!larger.contains("A fox"), "{larger}");
}

#[tokio::test]
async fn a_larger_models_request_is_sent_as_the_user_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("memo.txt"), "The code word is GARNET.\n").unwrap();
    // The 1.5B: small enough for the compact prompt, large enough to read for itself.
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(1_543_714_304);
    model.root([ScriptedTurn::text("GARNET")]);
    let run = Harness::new(&model)
        .workspace(dir.path())
        .run("What is the code word in memo.txt?")
        .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let asked = model.requests().remove(0);
    let asked = asked.messages.last().unwrap().content();
    assert!(
        !asked.contains("GARNET"),
        "it reads the file itself: {asked}"
    );
}

/// What a model's `write_file` of memo.txt, made for `prompt`, came to: the
/// call's result and error flag, and the file afterwards.
async fn write_of_memo_for(prompt: &str, params: u64) -> (String, bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let memo = dir.path().join("memo.txt");
    std::fs::write(&memo, "The code word is SAFFRON.\n").unwrap();
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(params);
    model.root([
        ScriptedTurn::call(
            "write_file",
            json!({"path": "memo.txt", "content": "The code word is Saffron.\n"}),
        ),
        ScriptedTurn::text("SAFFRON"),
    ]);
    let run = Harness::new(&model).workspace(dir.path()).run(prompt).await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    let (name, result, failed) = run.tool_ends().remove(0);
    assert_eq!(name, "write_file");
    let result = result.as_str().unwrap().to_owned();
    (result, failed, std::fs::read_to_string(&memo).unwrap())
}

#[tokio::test]
async fn a_small_model_changes_no_file_for_a_question() {
    let (result, failed, memo) =
        write_of_memo_for("What is the code word in memo.txt?", 1_543_714_304).await;
    assert!(failed, "{result}");
    assert!(
        result.contains("the user asked a question, and no change answers it"),
        "{result}"
    );
    assert_eq!(memo, "The code word is SAFFRON.\n", "the file is as it was");

    // Asked for the change, politely or not, it makes it.
    for change in [
        "In memo.txt, write the code word in lower case.",
        "Can you write the code word in memo.txt in lower case?",
        "What is the code word in memo.txt? Write it in lower case there.",
    ] {
        let (result, failed, memo) = write_of_memo_for(change, 1_543_714_304).await;
        assert!(!failed, "{change}: {result}");
        assert_eq!(memo, "The code word is Saffron.\n", "{change}");
    }

    // A large model asked a question is left to the permission mode, as ever.
    let (result, failed, memo) =
        write_of_memo_for("What is the code word in memo.txt?", 32_000_000_000).await;
    assert!(!failed, "{result}");
    assert_eq!(memo, "The code word is Saffron.\n");
}

/// A tiny model (the 0.5B's size) asked `prompt` in `dir`, answering `answer`: the
/// run, and the requests it was sent.
async fn tiny_model_answers_in(
    dir: &std::path::Path,
    prompt: &str,
    answers: Vec<ScriptedTurn>,
    mode: cairn_protocol::PermissionMode,
) -> (super::support::Run, Vec<cairn_core::model::ChatRequest>) {
    let model = ScriptedModel::new()
        .with_context_window(8192)
        .with_params(494_032_768);
    model.root(answers);
    let run = Harness::new(&model)
        .workspace(dir)
        .mode(mode)
        .run(prompt)
        .await;
    (run, model.requests())
}

#[tokio::test]
async fn a_tiny_models_change_to_one_file_is_its_answers_block_saved_as_that_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "The fence is painted red.\n").unwrap();
    let script = "Here it is:\n```python\nprint(\"Hello, Mona!\")\n```";
    let (run, requests) = tiny_model_answers_in(
        dir.path(),
        "Write a Python script hi.py that prints Hello, Mona!",
        vec![ScriptedTurn::text(script)],
        cairn_protocol::PermissionMode::Auto,
    )
    .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hi.py")).unwrap(),
        "print(\"Hello, Mona!\")\n"
    );
    // Asked for the file alone: no tools, and no thread lines to copy into it.
    assert_eq!(requests.len(), 1, "the write's result ends the turn");
    assert!(requests[0].tools.is_empty(), "{:?}", requests[0].tools);
    assert_eq!(
        requests[0].messages[0].content(),
        "You are Cairn, an assistant on the user's computer.\nReply with the whole new \
         text of `hi.py` in one fenced code block: it is saved as that file.\n"
    );
    assert_eq!(
        requests[0].messages[1].content(),
        "Write a Python script hi.py that prints Hello, Mona!"
    );
    // The write is a call like any other, with its card; the answer says what it did.
    assert_eq!(
        run.tool_ends(),
        [(
            "write_file".to_owned(),
            json!("created `hi.py` (22 bytes)"),
            false
        )]
    );
    assert_eq!(
        run.outcome.text,
        format!("{script}\n\nCreated `hi.py` (22 bytes).")
    );

    // A file it was given whole is changed whole.
    let (run, _) = tiny_model_answers_in(
        dir.path(),
        "In notes.md, change the word red to blue.",
        vec![ScriptedTurn::text("```\nThe fence is painted blue.\n```")],
        cairn_protocol::PermissionMode::Auto,
    )
    .await;
    assert_eq!(run.outcome.status, TurnStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "The fence is painted blue.\n"
    );
}

#[tokio::test]
async fn a_tiny_models_whole_file_is_not_asked_where_it_could_not_be_written_or_for_a_question() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "The code word is GARNET.\n").unwrap();
    for (prompt, mode) in [
        // Plan mode blocks every write: the model is offered its tools as before.
        (
            "Write a Python script hi.py that prints Hi.",
            cairn_protocol::PermissionMode::Plan,
        ),
        (
            "What is the code word in notes.md? Put nothing in b.md.",
            cairn_protocol::PermissionMode::Auto,
        ),
        ("Write a.py and b.py.", cairn_protocol::PermissionMode::Auto),
    ] {
        let (run, requests) = tiny_model_answers_in(
            dir.path(),
            prompt,
            vec![ScriptedTurn::text("```\nGARNET\n```")],
            mode,
        )
        .await;
        assert_eq!(run.outcome.status, TurnStatus::Completed, "{prompt}");
        assert!(!requests[0].tools.is_empty(), "{prompt}");
        assert_eq!(run.outcome.text, "```\nGARNET\n```", "{prompt}");
        assert!(!dir.path().join("hi.py").exists());
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing was written"
    );
}
