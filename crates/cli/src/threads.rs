//! `cairn threads …`: the stored threads, from the same database the desktop uses.

use std::io::Write;

use cairn_protocol::{MessageStatus, Role, ThreadInfo};
use cairn_store::{Page, Store, ThreadExport, markdown};
use serde_json::json;

use crate::args::{ThreadsAction, ThreadsArgs};
use crate::exit::{Exit, Failure};

pub async fn threads(args: ThreadsArgs) -> Exit {
    let store = match args.db.open().await {
        Ok(store) => store,
        Err(failure) => return failure.report(),
    };
    match act(&store, args.action).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(store: &Store, action: ThreadsAction) -> Result<(), Failure> {
    let fail = |err: cairn_store::StoreError| Failure::Usage(err.to_string());
    match action {
        ThreadsAction::List {
            limit,
            offset,
            json,
        } => {
            let threads = store
                .list_threads(Page { limit, offset })
                .await
                .map_err(fail)?;
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
            let thread = store.thread(&id).await.map_err(fail)?;
            let messages = store.messages(&id).await.map_err(fail)?;
            if json {
                print_json(&json!({"thread": thread, "messages": messages}))?;
            } else {
                println!("# {}\n", thread.title);
                for message in &messages {
                    let who = match message.role {
                        Role::User => "You",
                        Role::Assistant => "Cairn",
                    };
                    let status = match message.status {
                        MessageStatus::Complete => String::new(),
                        other => format!(" ({})", other.as_str()),
                    };
                    let tools = message
                        .execution_tree
                        .as_ref()
                        .filter(|tree| !tree.is_empty())
                        .map(|tree| format!(" [{} tool calls]", tree.nodes.len()))
                        .unwrap_or_default();
                    println!("{who}{status}{tools}:\n{}\n", message.content);
                }
            }
        }
        ThreadsAction::Search { query, limit, json } => {
            let hits = store.search(&query.join(" "), limit).await.map_err(fail)?;
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
            let export = store.export_json(&id).await.map_err(fail)?;
            let text = if format == "json" {
                serde_json::to_string_pretty(&export)
                    .map_err(|err| Failure::Usage(format!("cannot write the export: {err}")))?
            } else {
                markdown(&export)
            };
            match output {
                Some(path) => std::fs::write(&path, text).map_err(|err| {
                    Failure::Usage(format!("cannot write {}: {err}", path.display()))
                })?,
                None => {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{text}");
                }
            }
        }
        ThreadsAction::Import { file } => {
            let text = std::fs::read_to_string(&file)
                .map_err(|err| Failure::Usage(format!("cannot read {}: {err}", file.display())))?;
            let export: ThreadExport = serde_json::from_str(&text).map_err(|err| {
                Failure::Usage(format!(
                    "{} is not a thread exported as JSON: {err}",
                    file.display()
                ))
            })?;
            let thread = store.import(&export).await.map_err(fail)?;
            println!("imported {}", summary(&thread));
        }
        ThreadsAction::Rename { id, title } => {
            let thread = store
                .rename_thread(&id, &title.join(" "))
                .await
                .map_err(fail)?;
            println!("{}", summary(&thread));
        }
        ThreadsAction::Delete { id } => {
            if !store.delete_thread(&id).await.map_err(fail)? {
                return Err(Failure::Usage(format!("no thread `{id}`")));
            }
            println!("deleted {id}");
        }
    }
    Ok(())
}

fn summary(thread: &ThreadInfo) -> String {
    format!(
        "{}\t{}\t{} messages\t{}",
        thread.id, thread.title, thread.message_count, thread.mode
    )
}

fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    let text = serde_json::to_string(value)
        .map_err(|err| Failure::Usage(format!("cannot print JSON: {err}")))?;
    println!("{text}");
    Ok(())
}
