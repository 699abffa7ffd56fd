//! Calls and their results in words, for models that do not answer from the template's
//! own tool messages.
//!
//! A small model shown a result as its chat template's tool message often acts as if
//! it had never called anything: it calls again, or explains to the user how they
//! could call the tool. Shown the same result as the user's words, after its call as
//! it wrote it, with the user's request said again, it answers (measured in the task
//! benchmark, README "Small models"). Two uses:
//!
//! - a template that takes no tools (`prompt_tools`): the only way it can see
//!   calls and results at all;
//! - a model Cairn found needs it ([`crate::habits`]): `Restated`.
//!
//! messages → each assistant message with calls: its calls as text (as the model wrote
//! them, else in the `<tool_call>` convention) → each round's results: one user
//! message → (restated) the request the round serves, said again at its end.

use cairn_protocol::{ChatMessage, ToolCall};
use serde_json::Value;

use cairn_core::prompt;

use crate::habits::{Outcome, Restate};

/// The words around calls and results.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Words {
    /// Opens a round's results, so that the model tells them from the user's words.
    pub results_open: &'static str,
    /// Heads one result: `(tool, failed)`.
    pub result_head: fn(&str, bool) -> String,
    /// Whether the prose the model wrote beside its calls is shown again. A model
    /// whose calls were cut out of its prose left sentences around a hole ("Here's
    /// how you can do it:\n\n\n\nThis will…"), which it later copied as an answer.
    pub keep_prose: bool,
    /// The request said again after each round's results.
    pub restate: Option<Restate>,
}

/// The words for a model Cairn found answers from results put this way.
pub(crate) fn restated(restate: Restate) -> Words {
    Words {
        results_open: "",
        result_head: |tool, failed| {
            if failed {
                format!("{tool} failed:\n\n")
            } else {
                format!("The result of {tool}:\n\n")
            }
        },
        keep_prose: false,
        restate: Some(restate),
    }
}

/// `messages` with every call and result in words (see the module's doc).
pub(crate) fn in_words(messages: Vec<ChatMessage>, words: &Words) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    // The request a round of results serves: the user's last words before it.
    let mut request: Option<String> = None;
    // The round of results still open, if the last message out is one.
    let mut in_results: Option<Round> = None;
    for message in messages {
        match message {
            ChatMessage::Tool {
                name,
                content,
                is_error,
                ..
            } => {
                let result = format!(
                    "{}{}",
                    (words.result_head)(&name, is_error),
                    content.trim_end()
                );
                let this = Round {
                    changed: !is_error && CHANGING_TOOLS.contains(&name.as_str()),
                    failed: is_error,
                };
                match (out.last_mut(), &mut in_results) {
                    (Some(ChatMessage::User { content: open }), Some(round)) => {
                        open.push_str("\n\n");
                        open.push_str(&result);
                        round.changed |= this.changed;
                        round.failed &= this.failed;
                    }
                    _ => {
                        out.push(ChatMessage::user(format!("{}{result}", words.results_open)));
                        in_results = Some(this);
                    }
                }
                continue;
            }
            ChatMessage::Assistant {
                content,
                reasoning,
                tool_calls,
            } if !tool_calls.is_empty() => {
                if words.restate.is_some() && in_results.is_some_and(|round| round.failed) {
                    leave_out_failed_round(&mut out);
                    in_results = None;
                }
                close(&mut out, &mut in_results, words, request.as_deref());
                let mut text = if words.keep_prose {
                    content
                } else {
                    String::new()
                };
                let mut previous: Option<&str> = None;
                for call in &tool_calls {
                    let written = written(call);
                    // A block of several calls was written once.
                    if call.written.is_some() && previous == call.written.as_deref() {
                        continue;
                    }
                    previous = call.written.as_deref();
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(&written);
                }
                out.push(ChatMessage::Assistant {
                    content: text,
                    reasoning,
                    tool_calls: Vec::new(),
                });
                continue;
            }
            ChatMessage::User { content } => {
                close(&mut out, &mut in_results, words, request.as_deref());
                // Restated without the thread's context: with it, the request read as a
                // permission notice and the model called again instead of answering.
                request = Some(prompt::split_context(&content).1.to_owned());
                out.push(ChatMessage::User { content });
                continue;
            }
            other => {
                close(&mut out, &mut in_results, words, request.as_deref());
                out.push(other);
            }
        }
    }
    close(&mut out, &mut in_results, words, request.as_deref());
    out
}

/// What a model shown folded results is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// To answer or go on, after the results, the request last: a model Cairn found
    /// needs its results folded.
    AnswerOrCall,
    /// Only to answer, the request first: a stuck level's last word, which offers no
    /// tools. With the request last, the 0.5B said it back word for word, or the last
    /// line of the file it had read; put first, it answered (README "Small models").
    AnswerOnly,
}

impl Ask {
    /// The turn's message: `context`, then `request` and what the tools returned
    /// (`results`) in this ask's order and words.
    fn message(self, context: &str, request: &str, results: &str) -> String {
        match self {
            Self::AnswerOrCall => format!(
                "{context}What the tools returned so far:\n{results}\n\nWith this, answer in \
                 one sentence, or call the next tool: {request}"
            ),
            Self::AnswerOnly => format!(
                "{context}{request}\n\nWhat the tools returned:\n{results}\n\nAnswer in one \
                 sentence."
            ),
        }
    }
}

/// One user's turn being folded: where its message is in what goes out, the calls
/// made for it, and what they returned, in words.
struct Folding {
    at: usize,
    calls: Vec<ToolCall>,
    results: Vec<String>,
    /// The calls (as [`called`] says them) that returned without failing.
    succeeded: Vec<String>,
}

impl Folding {
    fn new(at: usize) -> Self {
        Self {
            at,
            calls: Vec::new(),
            results: Vec::new(),
            succeeded: Vec::new(),
        }
    }

    /// Adds a result, unless it says nothing new: the same words again (a call made
    /// twice), or a failure of a call that has returned (a repeat refused).
    fn add(&mut self, what: String, content: &str, failed: bool) {
        if failed && self.succeeded.contains(&what) {
            return;
        }
        let said = if failed { " failed" } else { "" };
        let line = format!("{what}{said}:\n{}", content.trim_end());
        if self.results.contains(&line) {
            return;
        }
        if !failed {
            self.succeeded.push(what);
        }
        self.results.push(line);
    }

    /// Folds what was returned into the turn's message in `out`.
    fn close(self, out: &mut [ChatMessage], ask: Ask) {
        if self.results.is_empty() {
            return;
        }
        if let Some(ChatMessage::User { content }) = out.get_mut(self.at) {
            let (context, request) = prompt::split_context(content);
            *content = ask.message(context, request.trim(), &self.results.join("\n"));
        }
    }
}

/// `messages` with each turn's calls and results folded into the user's message that
/// asked for them (see [`crate::habits::Results::Folded`]): the thread's context, then
/// what the tools returned so far (one call at a time, each once) and the request, in
/// the order and words of `ask`. An answer that ended a turn stays the assistant's.
pub(crate) fn folded(messages: Vec<ChatMessage>, ask: Ask) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(messages.len());
    let mut turn: Option<Folding> = None;
    for message in messages {
        match message {
            ChatMessage::User { .. } => {
                if let Some(done) = turn.take() {
                    done.close(&mut out, ask);
                }
                turn = Some(Folding::new(out.len()));
                out.push(message);
            }
            ChatMessage::Assistant { tool_calls, .. }
                if !tool_calls.is_empty() && turn.is_some() =>
            {
                if let Some(open) = turn.as_mut() {
                    open.calls.extend(tool_calls);
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
                is_error,
                ..
            } if turn.is_some() => {
                if let Some(open) = turn.as_mut() {
                    let call = open.calls.iter().find(|call| call.id == tool_call_id);
                    let what = call.map_or_else(|| name.clone(), called);
                    open.add(what, &content, is_error);
                }
            }
            other => {
                if matches!(other, ChatMessage::Assistant { .. })
                    && let Some(done) = turn.take()
                {
                    done.close(&mut out, ask);
                }
                out.push(other);
            }
        }
    }
    if let Some(done) = turn {
        done.close(&mut out, ask);
    }
    out
}

/// A call as one line: its tool and what it acted on (the argument that names it,
/// else its first text argument).
fn called(call: &ToolCall) -> String {
    const NAMING: [&str; 5] = ["path", "command", "url", "pattern", "key"];
    let subject = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .and_then(|args| {
            let args = args.as_object()?;
            NAMING
                .iter()
                .find_map(|key| args.get(*key)?.as_str())
                .or_else(|| args.values().find_map(Value::as_str))
                .map(str::to_owned)
        });
    match subject {
        Some(subject) => format!("{} {subject}", call.name),
        None => call.name.clone(),
    }
}

/// The tools whose success changed a file: after one, the model is asked what it did
/// rather than offered the change again (the 1.5B read and wrote the same file ten
/// times over, offered the change after each write).
const CHANGING_TOOLS: [&str; 2] = ["write_file", "edit_file"];

/// A round of results being put in words.
#[derive(Debug, Clone, Copy)]
struct Round {
    /// One of its calls changed a file.
    changed: bool,
    /// Every one of its calls failed.
    failed: bool,
}

impl Round {
    fn outcome(self) -> Outcome {
        match self {
            Self { changed: true, .. } => Outcome::Changed,
            Self { failed: true, .. } => Outcome::Failed,
            Self { .. } => Outcome::Read,
        }
    }
}

/// Takes a round whose every call failed, and which the model has since tried again,
/// out of what it is shown: its calls and their results. Shown its failed call before
/// the one that worked, the 1.5B model ran the one that worked again and again
/// (task benchmark, README "Small models"): a pattern of calls it continued.
fn leave_out_failed_round(out: &mut Vec<ChatMessage>) {
    let results = out.pop();
    debug_assert!(matches!(results, Some(ChatMessage::User { .. })));
    if matches!(out.last(), Some(ChatMessage::Assistant { .. })) {
        out.pop();
    }
}

/// Ends an open round of results with the request said again, when the words say so.
fn close(
    out: &mut [ChatMessage],
    in_results: &mut Option<Round>,
    words: &Words,
    request: Option<&str>,
) {
    let Some(round) = in_results.take() else {
        return;
    };
    if let (Some(restate), Some(request), Some(ChatMessage::User { content })) =
        (words.restate, request, out.last_mut())
    {
        content.push_str("\n\n");
        content.push_str(&restate.words(request.trim(), round.outcome()));
    }
}

/// A call as the model wrote it, else in the `<tool_call>` convention every text-call
/// reader here reads back.
pub(crate) fn written(call: &ToolCall) -> String {
    if let Some(written) = &call.written {
        return written.clone();
    }
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Default::default()));
    // In the order the description shows: small models copy what they see.
    let name = Value::from(call.name.as_str());
    format!("<tool_call>{{\"name\": {name}, \"arguments\": {arguments}}}</tool_call>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, path: &str, written: Option<&str>) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({"path": path}).to_string(),
            written: written.map(str::to_owned),
        }
    }

    fn result(id: &str, content: &str, is_error: bool) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            name: "read_file".into(),
            content: content.into(),
            is_error,
            images: Vec::new(),
        }
    }

    #[test]
    fn results_come_as_the_users_words_with_the_request_said_again() {
        let fenced = "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.md\"}}\n```";
        let sent = in_words(
            vec![
                ChatMessage::system("s"),
                ChatMessage::user("Copy the code word in a.md into b.md."),
                ChatMessage::Assistant {
                    content: "Here's how you can do it:\n\n\n\nThis will return it.".into(),
                    reasoning: None,
                    tool_calls: vec![call("c1", "a.md", Some(fenced)), call("c2", "b.md", None)],
                },
                result("c1", "The code word is COBALT.", false),
                result("c2", "no such file", true),
            ],
            &restated(Restate::AnswerOrChange),
        );
        assert_eq!(
            sent,
            vec![
                ChatMessage::system("s"),
                ChatMessage::user("Copy the code word in a.md into b.md."),
                ChatMessage::assistant(format!(
                    "{fenced}\n<tool_call>{{\"name\": \"read_file\", \"arguments\": {{\"path\":\"b.md\"}}}}</tool_call>"
                )),
                ChatMessage::user(
                    "The result of read_file:\n\nThe code word is COBALT.\n\nread_file failed:\n\n\
                     no such file\n\nWith this result, answer in one sentence, or make the change \
                     with the next tool: Copy the code word in a.md into b.md."
                ),
            ]
        );
    }

    #[test]
    fn after_a_file_is_changed_the_model_is_asked_what_it_did() {
        let request = "Read a.md and write its code word into b.md.";
        let wrote = |id: &str, is_error: bool| ChatMessage::Tool {
            tool_call_id: id.into(),
            name: "write_file".into(),
            content: "created `b.md` (6 bytes)".into(),
            is_error,
            images: Vec::new(),
        };
        let calling = |id: &str| ChatMessage::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![call(id, "b.md", None)],
        };
        let sent = in_words(
            vec![
                ChatMessage::user(request),
                calling("c1"),
                result("c1", "The code word is COBALT.", false),
                calling("c2"),
                wrote("c2", false),
                calling("c3"),
                wrote("c3", true),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c4", "a.md", None), call("c5", "c.md", None)],
                },
                result("c4", "The code word is COBALT.", false),
                result("c5", "Error: no such file", true),
            ],
            &restated(Restate::AnswerOrChange),
        );
        let asked = |sent: &[ChatMessage], at: usize| {
            sent[at].content().rsplit("\n\n").next().unwrap().to_owned()
        };
        assert_eq!(
            asked(&sent, 2),
            format!(
                "With this result, answer in one sentence, or make the change with the next tool: {request}"
            )
        );
        assert_eq!(
            asked(&sent, 4),
            format!("With this result, say in one sentence what you did: {request}")
        );
        assert_eq!(
            asked(&sent, 6),
            format!(
                "With this result, answer in one sentence, or make the change with the next tool: {request}"
            ),
            "a round that also read something did not fail"
        );
        assert_eq!(sent.len(), 7, "the failed write, tried again, is left out");
        let failed_last = in_words(
            vec![
                ChatMessage::user(request),
                calling("c1"),
                result("c1", "The code word is COBALT.", false),
                calling("c3"),
                wrote("c3", true),
            ],
            &restated(Restate::AnswerOrChange),
        );
        assert_eq!(
            asked(&failed_last, 4),
            format!("It failed. Do what the error says, then: {request}"),
            "a write that failed changed nothing, and the model is asked to try again"
        );
    }

    #[test]
    fn a_failed_round_tried_again_is_left_out() {
        let tried_again = || {
            let calling = |id: &str, path: &str| ChatMessage::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![call(id, path, None)],
            };
            vec![
                ChatMessage::system("s"),
                ChatMessage::user("What is in a.md?"),
                calling("c1", "w/a.md"),
                result("c1", "no such file", true),
                calling("c2", "a.md"),
                result("c2", "alpha", false),
            ]
        };
        assert_eq!(
            in_words(tried_again(), &restated(Restate::Answer)),
            vec![
                ChatMessage::system("s"),
                ChatMessage::user("What is in a.md?"),
                ChatMessage::assistant(
                    "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\":\"a.md\"}}</tool_call>"
                ),
                ChatMessage::user(
                    "The result of read_file:\n\nalpha\n\nWith this result, answer in one \
                     sentence: What is in a.md?"
                ),
            ]
        );
        let unrestated = Words {
            restate: None,
            ..restated(Restate::Answer)
        };
        assert_eq!(
            in_words(tried_again(), &unrestated).len(),
            6,
            "kept where nothing is restated"
        );
    }

    #[test]
    fn each_round_restates_the_request_it_served() {
        let sent = in_words(
            vec![
                ChatMessage::user("first"),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c1", "a", None)],
                },
                result("c1", "A", false),
                ChatMessage::assistant("Done."),
                ChatMessage::user("second"),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c2", "b", None)],
                },
                result("c2", "B", false),
            ],
            &restated(Restate::Answer),
        );
        assert_eq!(
            sent[2].content(),
            "The result of read_file:\n\nA\n\nWith this result, answer in one sentence: first"
        );
        assert_eq!(
            sent[6].content(),
            "The result of read_file:\n\nB\n\nWith this result, answer in one sentence: second"
        );
        assert_eq!(sent.len(), 7);
    }

    #[test]
    fn the_request_is_restated_without_the_threads_context() {
        let first = format!(
            "{}Permission mode: auto.\nWorkspace: /w.\n{}What is in a.md?",
            prompt::CONTEXT_OPEN,
            prompt::CONTEXT_CLOSE
        );
        let sent = in_words(
            vec![
                ChatMessage::user(first.clone()),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c1", "a.md", None)],
                },
                result("c1", "alpha\n", false),
            ],
            &restated(Restate::Answer),
        );
        assert_eq!(sent[0].content(), first, "what was sent stays as it was");
        assert_eq!(
            sent[2].content(),
            "The result of read_file:\n\nalpha\n\nWith this result, answer in one sentence: \
             What is in a.md?"
        );
    }

    #[test]
    fn folded_results_join_the_users_turn_and_leave_no_call_to_copy() {
        let first = format!(
            "{}Workspace (file paths are relative to it): the folder `w`.\n{}What is in a.md?",
            prompt::CONTEXT_OPEN,
            prompt::CONTEXT_CLOSE
        );
        let sent = folded(
            vec![
                ChatMessage::system("s"),
                ChatMessage::user(first),
                ChatMessage::Assistant {
                    content: "Let me read it.".into(),
                    reasoning: None,
                    tool_calls: vec![call("c1", "a.md", Some("{}"))],
                },
                result("c1", "alpha\n", false),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c2", "b.md", None)],
                },
                result("c2", "no such file", true),
                ChatMessage::assistant("It says alpha."),
                ChatMessage::user("And b.md?"),
            ],
            Ask::AnswerOrCall,
        );
        assert_eq!(
            sent,
            vec![
                ChatMessage::system("s"),
                ChatMessage::user(format!(
                    "{}Workspace (file paths are relative to it): the folder `w`.\n{}What the tools returned so far:\n\
                     read_file a.md:\nalpha\nread_file b.md failed:\nno such file\n\n\
                     With this, answer in one sentence, or call the next tool: What is in a.md?",
                    prompt::CONTEXT_OPEN,
                    prompt::CONTEXT_CLOSE
                )),
                ChatMessage::assistant("It says alpha."),
                ChatMessage::user("And b.md?"),
            ]
        );
    }

    #[test]
    fn a_last_word_sees_each_result_once_and_is_asked_only_to_answer() {
        let calls = |id: &str| ChatMessage::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![call(id, "memo.txt", None)],
        };
        let refused = "this call repeats your previous call and was not run";
        let sent = folded(
            vec![
                ChatMessage::system("s"),
                ChatMessage::user("What is the code word in memo.txt?"),
                calls("c1"),
                result("c1", "the code word is OSPREY\n", false),
                calls("c2"),
                result("c2", "the code word is OSPREY\n", false),
                calls("c3"),
                result("c3", refused, true),
                calls("c4"),
                result("c4", refused, true),
            ],
            Ask::AnswerOnly,
        );
        assert_eq!(
            sent,
            vec![
                ChatMessage::system("s"),
                ChatMessage::user(
                    "What is the code word in memo.txt?\n\nWhat the tools returned:\n\
                     read_file memo.txt:\nthe code word is OSPREY\n\nAnswer in one sentence."
                ),
            ]
        );
    }

    #[test]
    fn a_failure_before_the_call_worked_is_kept() {
        let sent = folded(
            vec![
                ChatMessage::user("q"),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c1", "a", None), call("c2", "a", None)],
                },
                result("c1", "busy", true),
                result("c2", "A", false),
            ],
            Ask::AnswerOnly,
        );
        assert_eq!(
            sent[0].content(),
            "q\n\nWhat the tools returned:\nread_file a failed:\nbusy\nread_file a:\nA\n\n\
             Answer in one sentence."
        );
    }

    #[test]
    fn a_block_of_several_calls_is_written_back_once() {
        let block = "[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}]";
        let sent = in_words(
            vec![
                ChatMessage::user("q"),
                ChatMessage::Assistant {
                    content: String::new(),
                    reasoning: None,
                    tool_calls: vec![call("c1", "a", Some(block)), call("c2", "b", Some(block))],
                },
                result("c1", "A", false),
                result("c2", "B", false),
            ],
            &restated(Restate::Answer),
        );
        assert_eq!(sent[1].content(), block);
    }
}
