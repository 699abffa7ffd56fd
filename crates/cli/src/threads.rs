//! `cairn threads …`: the stored threads, from the same database the desktop uses.

use std::io::Write;

use cairn_protocol::describe::call_time;
use cairn_protocol::{ExecutionTree, MessageStatus, Piece, Role, ThreadInfo, pieces};
use cairn_runtime::{Runtime, RuntimeError};
use serde_json::json;

use crate::args::{ThreadsAction, ThreadsArgs};
use crate::exit::{Exit, Failure};

pub async fn threads(args: ThreadsArgs) -> Exit {
    let runtime = match args.db.open().await {
        Ok(runtime) => runtime,
        Err(failure) => return failure.report(),
    };
    match act(&runtime, args.action).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(runtime: &Runtime, action: ThreadsAction) -> Result<(), Failure> {
    match action {
        ThreadsAction::List {
            limit,
            offset,
            json,
        } => {
            let threads = runtime.list_threads(limit, offset).await?;
            if json {
                print_json(&threads)?;
            } else if threads.is_empty() {
                println!("no threads yet");
            } else {
                for thread in &threads {
                    println!("{}", summary(thread));
                }
            }
        }
        ThreadsAction::Show { id, json } => {
            let thread = runtime.thread(&id).await?;
            let messages = runtime.messages(&id).await?;
            if json {
                print_json(&json!({"thread": thread, "messages": messages}))?;
            } else {
                println!("# {}\n", thread.title);
                for message in &messages {
                    let who = match (&message.role, &message.handover) {
                        // A hand-over's follow-up is Cairn's, written for the new agent.
                        (Role::User, Some(handover)) => format!("Cairn, for {}", handover.to),
                        (Role::User, None) => "You".to_owned(),
                        (Role::Assistant, _) => "Cairn".to_owned(),
                    };
                    let status = match message.status {
                        MessageStatus::Complete => String::new(),
                        other => format!(" ({})", other.as_str()),
                    };
                    println!("{who}{status}:");
                    let mut out = String::new();
                    transcript_level(
                        &mut out,
                        message.execution_tree.as_ref(),
                        // A question Cairn wrote for the user's action shows the action.
                        message.shown.as_deref().unwrap_or(&message.content),
                        None,
                        0,
                    );
                    println!("{out}");
                    if !message.restorable.is_empty() {
                        println!(
                            "(changed {}: `cairn threads restore {id} --answer {}` puts them back)\n",
                            message.restorable.join(", "),
                            message.id
                        );
                    }
                }
            }
        }
        ThreadsAction::Search { query, limit, json } => {
            let hits = runtime.search_threads(&query.join(" "), limit).await?;
            if json {
                print_json(&hits)?;
            } else if hits.is_empty() {
                println!("no messages match");
            } else {
                for hit in &hits {
                    println!(
                        "{}\t{}\t{}",
                        hit.thread_id,
                        hit.thread_title,
                        hit.snippet.replace('\n', " ")
                    );
                }
            }
        }
        ThreadsAction::Export { id, format, output } => {
            let export = runtime.export_thread(&id, format).await?;
            match output {
                Some(path) => std::fs::write(&path, export.contents).map_err(|err| {
                    Failure::Usage(format!("cannot write {}: {err}", path.display()))
                })?,
                None => {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{}", export.contents);
                }
            }
        }
        ThreadsAction::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|err| Failure::Usage(format!("cannot read {}: {err}", file.display())))?;
            // A thread answering under the same id is left alone, as for a delete.
            let thread = runtime
                .import_thread(&text)
                .await
                .map_err(|err| match err {
                    RuntimeError::NotAnExport(err) => Failure::Usage(format!(
                        "{} is not a thread exported as JSON: {err}",
                        file.display()
                    )),
                    other => other.into(),
                })?;
            println!("imported {}", summary(&thread));
        }
        // A thread answering, here or in the app, is left alone.
        ThreadsAction::Rename { id, title } => {
            let thread = runtime.rename_thread(&id, &title.join(" ")).await?;
            println!("{}", summary(&thread));
        }
        ThreadsAction::Delete { id } => {
            runtime.delete_thread(&id).await?;
            println!("deleted {id}");
        }
        ThreadsAction::Restore {
            id,
            answer,
            dry_run,
            json,
        } => restore(runtime, &id, answer.as_deref(), dry_run, json).await?,
    }
    Ok(())
}

/// Shows what restoring an answer's files changes, then (unless `dry_run`) does it.
async fn restore(
    runtime: &Runtime,
    thread_id: &str,
    answer: Option<&str>,
    dry_run: bool,
    json: bool,
) -> Result<(), Failure> {
    let plan = runtime.restore_plan(thread_id, answer).await?;
    if json {
        print_json(&plan)?;
    } else {
        print!("{}", restore_said(&plan));
    }
    if dry_run {
        return match plan.refusal() {
            Some(refusal) => Err(Failure::Usage(refusal)),
            None => Ok(()),
        };
    }
    let done = runtime.restore(thread_id, &plan.answer_id).await?;
    if !json {
        let count = done.files.len();
        println!("restored {count} file{}", if count == 1 { "" } else { "s" });
    }
    Ok(())
}

/// A restore in words: each file, what happens to it (or why it cannot), its diff.
fn restore_said(plan: &cairn_protocol::RestorePlan) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "Files answer {} changed in {}:\n",
        plan.answer_id, plan.workspace
    );
    for file in &plan.files {
        let _ = match &file.problem {
            Some(problem) => writeln!(out, "  ✗ {}: {problem}", file.path),
            None => writeln!(out, "  {}: {}", file.path, file.action.said()),
        };
        for line in file.diff.lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
    out
}

/// A stored answer as `cairn run` showed it: text, then each call on its own line
/// (`✓` done, `✗` failed), a subtask's text and calls indented under it.
fn transcript_level(
    out: &mut String,
    tree: Option<&ExecutionTree>,
    content: &str,
    parent: Option<&str>,
    depth: usize,
) {
    use std::fmt::Write as _;
    let indent = "  ".repeat(depth);
    for piece in pieces(tree, content, parent) {
        match piece {
            Piece::Text(text) => {
                for line in text.trim_end().lines() {
                    let _ = writeln!(out, "{indent}{line}");
                }
            }
            Piece::Call(node) => {
                let mark = if node.is_error == Some(true) {
                    "✗"
                } else {
                    "✓"
                };
                let args = node
                    .args_preview
                    .as_deref()
                    .and_then(|text| serde_json::from_str(text).ok());
                let label = crate::output::call_label(
                    &node.name,
                    node.title.as_deref(),
                    node.subject.as_deref(),
                    args.as_ref(),
                );
                let result = node
                    .result_preview
                    .as_deref()
                    .map(|result| format!(" · {}", crate::output::one_line(result)))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{indent}  {mark} {label} · {}{result}",
                    call_time(node.duration_ms, node.waited_ms)
                );
                transcript_level(out, tree, content, Some(&node.id), depth + 1);
            }
        }
    }
}

fn summary(thread: &ThreadInfo) -> String {
    let last = match thread.last_status {
        Some(MessageStatus::Complete) => "answered",
        Some(MessageStatus::Partial) => "answer partial",
        Some(MessageStatus::Cancelled) => "stopped",
        Some(MessageStatus::Failed) => "failed",
        None => "no answer",
    };
    format!(
        "{}\t{}\t{} messages\t{}\t{last}",
        thread.id, thread.title, thread.message_count, thread.mode
    )
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string(value)
        .map_err(|err| Failure::Usage(format!("cannot print JSON: {err}")))?;
    println!("{text}");
    Ok(())
}
