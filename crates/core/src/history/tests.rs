use super::*;
use cairn_protocol::ToolCall;

fn call(id: &str) -> ChatMessage {
    calls(&[id])
}

fn calls(ids: &[&str]) -> ChatMessage {
    ChatMessage::Assistant {
        content: String::new(),
        reasoning: None,
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: (*id).into(),
                name: "read_file".into(),
                arguments: "{}".into(),
                written: None,
            })
            .collect(),
    }
}

fn result(id: &str, size: usize) -> ChatMessage {
    ChatMessage::Tool {
        tool_call_id: id.into(),
        name: "read_file".into(),
        content: "x".repeat(size),
        is_error: false,
        images: Vec::new(),
    }
}

/// A cut that keeps the head: enough to count bytes by.
fn head(_id: &str, content: &str, max: usize) -> String {
    content[..max.min(content.len())].to_owned()
}

fn total(history: &[ChatMessage], fixed: u64) -> u64 {
    fixed + history.iter().map(estimate_tokens).sum::<u64>()
}

/// Every tool result follows its call, and every call has its result.
fn assert_paired(history: &[ChatMessage]) {
    for (index, message) in history.iter().enumerate() {
        if let ChatMessage::Tool { tool_call_id, .. } = message {
            assert!(
                history[..index]
                    .iter()
                    .any(|m| m.tool_calls().iter().any(|c| &c.id == tool_call_id)),
                "{tool_call_id} has no call"
            );
        }
        for c in message.tool_calls() {
            assert!(
                history[index..].iter().any(
                    |m| matches!(m, ChatMessage::Tool { tool_call_id, .. } if *tool_call_id == c.id)
                ),
                "{} has no result",
                c.id
            );
        }
    }
}

#[test]
fn pruning_keeps_system_last_user_and_whole_pairs() {
    let mut history = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("u".repeat(400)),
        call("a"),
        result("a", 400),
        ChatMessage::assistant("x".repeat(400)),
        ChatMessage::user("last question"),
        call("b"),
        result("b", 40),
    ];
    let kept = fit(&mut history, 60, 0, 16, &mut head).unwrap();
    assert!(kept <= 60);
    assert_eq!(kept, total(&history, 0));
    assert_eq!(history[0], ChatMessage::system("sys"));
    assert!(history.contains(&ChatMessage::user("last question")));
    assert_paired(&history);
    assert!(
        !history
            .iter()
            .any(|m| m.tool_calls().iter().any(|c| c.id == "a"))
    );
}

#[test]
fn the_round_waited_on_is_kept_and_older_rounds_go_first() {
    let mut history = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("question"),
        call("old"),
        result("old", 2000),
        call("new"),
        result("new", 2000),
    ];
    let kept = fit(&mut history, 700, 0, 16, &mut head).unwrap();
    assert!(kept <= 700);
    assert_eq!(
        history,
        [
            ChatMessage::system("sys"),
            ChatMessage::user("question"),
            call("new"),
            result("new", 2000),
        ]
    );
}

#[test]
fn a_round_too_big_for_the_budget_has_its_results_cut_not_dropped() {
    let mut history = vec![
        ChatMessage::system("sys"),
        ChatMessage::user("question"),
        calls(&["a", "b", "c"]),
        result("a", 100),
        result("b", 6000),
        result("c", 9000),
    ];
    let budget = 1000;
    let kept = fit(&mut history, budget, 100, 16, &mut head).unwrap();
    assert!(kept <= budget, "{kept}");
    assert_eq!(kept, total(&history, 100));
    let sizes: Vec<usize> = history[3..].iter().map(|m| m.content().len()).collect();
    assert_eq!(sizes[0], 100, "a result under its share is not cut");
    assert_eq!(
        sizes[1], sizes[2],
        "the others share what is left: {sizes:?}"
    );
    assert!(
        kept > budget - 10,
        "and use nearly all of it: {kept} of {budget}"
    );
}

#[test]
fn results_are_never_cut_below_the_least_useful_size() {
    let mut history = vec![
        ChatMessage::system("s".repeat(400)),
        ChatMessage::user("question"),
        call("a"),
        result("a", 5000),
    ];
    let observed = fit(&mut history, 150, 0, 640, &mut head).unwrap_err();
    assert_eq!(history[3].content().len(), 640);
    assert_eq!(observed, total(&history, 0));
}

#[test]
fn fitting_fails_when_the_protected_messages_alone_are_too_big() {
    let mut history = vec![
        ChatMessage::system("s".repeat(400)),
        ChatMessage::user("u".repeat(400)),
    ];
    let observed = fit(&mut history, 50, 0, 16, &mut head).unwrap_err();
    assert_eq!(
        observed,
        2 * (400_u64.div_ceil(BYTES_PER_TOKEN) + MESSAGE_FRAMING)
    );
    assert_eq!(history.len(), 2);
}

#[test]
fn schemas_are_counted_as_a_json_list_of_wrapped_specs() {
    let spec = |name: &str| ToolSpec {
        name: name.into(),
        description: "does it".into(),
        parameters: serde_json::json!({"type": "object"}),
    };
    let specs = [spec("a"), spec("bb")];
    let written = serde_json::to_string(&specs).unwrap().len() + 2 * SPEC_WRAPPER.len();
    assert_eq!(spec_tokens(&specs), bytes_to_tokens(written));
    assert_eq!(spec_tokens(&[]), bytes_to_tokens(2));
}

#[test]
fn shares_leave_small_results_whole() {
    assert_eq!(equal_share(&[10, 20, 1000], 1030), usize::MAX);
    assert_eq!(equal_share(&[10, 20, 1000], 1029), 999);
    assert_eq!(equal_share(&[10, 20, 1000], 500), 470);
    assert_eq!(equal_share(&[400, 400], 500), 250);
    assert_eq!(equal_share(&[1, 2], 500), usize::MAX);
}

/// A history as a turn could have it: a system prompt, earlier turns (text and
/// rounds of calls), the last question, and this turn's rounds so far.
fn random_history(rng: &mut fastrand::Rng) -> Vec<ChatMessage> {
    let mut history = vec![ChatMessage::system("s".repeat(rng.usize(50..6000)))];
    let mut next_id = 0;
    let mut round = |history: &mut Vec<ChatMessage>, rng: &mut fastrand::Rng| {
        let ids: Vec<String> = (0..rng.usize(1..=4))
            .map(|_| {
                next_id += 1;
                format!("call_{next_id}")
            })
            .collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        history.push(calls(&refs));
        for id in &ids {
            // Mostly small, sometimes a whole file or a long log.
            let size = if rng.bool() {
                rng.usize(0..500)
            } else {
                rng.usize(0..120_000)
            };
            history.push(result(id, size));
        }
    };
    for _ in 0..rng.usize(0..5) {
        history.push(ChatMessage::user("u".repeat(rng.usize(1..3000))));
        for _ in 0..rng.usize(0..3) {
            round(&mut history, rng);
        }
        history.push(ChatMessage::assistant("a".repeat(rng.usize(0..3000))));
    }
    history.push(ChatMessage::user("q".repeat(rng.usize(1..2000))));
    for _ in 0..rng.usize(0..4) {
        round(&mut history, rng);
    }
    history
}

#[test]
fn every_fitted_history_fits_and_keeps_what_the_model_needs() {
    const MIN: usize = 640;
    let mut rng = fastrand::Rng::with_seed(29);
    let (mut fitted, mut refused) = (0, 0);
    for case in 0..3000 {
        let seed = rng.u64(..);
        let mut rng = fastrand::Rng::with_seed(seed);
        let window = rng.u64(1024..=131_072);
        let budget = window - (window / 4).min(8192);
        let fixed = rng.u64(0..=window / 2);
        let original = random_history(&mut rng);
        let mut history = original.clone();
        let context = format!("case {case}, seed {seed}, window {window}, fixed {fixed}");

        let outcome = fit(&mut history, budget, fixed, MIN, &mut head);

        assert_eq!(history[0], original[0], "system kept: {context}");
        let question = last_user(&original).unwrap();
        let kept_question = last_user(&history).unwrap();
        assert_eq!(history[kept_question], original[question], "{context}");
        assert_paired(&history);
        // The round waited on: the same calls, each with its result, at the end.
        if let Some(round) = waited_on(&original) {
            let tail = &history[history.len() - round.len()..];
            assert_eq!(tail[0], original[round.start], "{context}");
            for (kept, was) in tail[1..].iter().zip(&original[round.start + 1..]) {
                let (
                    ChatMessage::Tool {
                        tool_call_id: a, ..
                    },
                    ChatMessage::Tool {
                        tool_call_id: b, ..
                    },
                ) = (kept, was)
                else {
                    panic!("not a result: {context}");
                };
                assert_eq!(a, b, "{context}");
                assert!(
                    kept.content().len() >= was.content().len().min(MIN),
                    "a result cut below the least useful size: {context}"
                );
            }
        }
        match outcome {
            Ok(kept) => {
                fitted += 1;
                assert_eq!(kept, total(&history, fixed), "{context}");
                assert!(kept <= budget, "{kept} over {budget}: {context}");
            }
            Err(observed) => {
                refused += 1;
                assert_eq!(observed, total(&history, fixed), "{context}");
                // Only when nothing more could go: the protected messages alone,
                // their results at the least useful size, are over.
                let protected = 2 + waited_on(&original).map_or(0, |round| round.len());
                assert_eq!(history.len(), protected, "{context}");
                assert!(observed > budget, "{context}");
            }
        }
    }
    assert!(
        fitted > 2000 && refused > 0,
        "{fitted} fitted, {refused} refused"
    );
}
