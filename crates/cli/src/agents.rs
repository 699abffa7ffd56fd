//! `cairn agents list`: every profile a thread could use, and every file skipped.

use cairn_protocol::AgentInfo;

use crate::args::{AgentsAction, AgentsArgs};
use crate::exit::Exit;

pub fn agents(args: AgentsArgs) -> Exit {
    match args.action {
        AgentsAction::List { workspace, json } => {
            let infos = cairn_runtime::agent_infos(workspace.as_deref());
            if json {
                match serde_json::to_string_pretty(&infos) {
                    Ok(text) => println!("{text}"),
                    Err(err) => {
                        eprintln!("cairn: the list cannot be written: {err}");
                        return Exit::FAILED;
                    }
                }
            } else {
                print!("{}", table(&infos));
            }
            Exit::OK
        }
    }
}

/// One line per usable profile, then the files skipped with why.
fn table(infos: &[AgentInfo]) -> String {
    let usable: Vec<&AgentInfo> = infos.iter().filter(|i| i.error.is_none()).collect();
    let width = usable.iter().map(|i| i.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    for info in &usable {
        let mut notes = vec![info.source.as_str().to_owned()];
        if let Some(base) = &info.base {
            notes.push(format!("base {base}"));
        }
        if let Some(model) = &info.model {
            notes.push(format!("model {model}"));
        }
        if let Some(server) = &info.server {
            notes.push(format!("on {server}"));
        }
        // What it is for: its role says it best; else who may pick it.
        match (info.role.as_deref(), info.hidden, info.runnable) {
            (Some("router"), ..) => notes.push("routes each request".into()),
            (Some("reviewer"), ..) => notes.push("reviews plans".into()),
            (_, true, true) => notes.push("subtasks only".into()),
            (_, false, false) => notes.push("not for subtasks".into()),
            (_, true, false) => notes.push("not offered".into()),
            (_, false, true) => {}
        }
        out.push_str(&format!(
            "{:width$}  {}  ({})\n",
            info.id,
            info.description,
            notes.join(", ")
        ));
    }
    for info in infos.iter().filter(|i| i.error.is_some()) {
        out.push_str(&format!(
            "skipped {}: {}\n",
            info.path.as_deref().unwrap_or(&info.id),
            info.error.as_deref().unwrap_or("")
        ));
    }
    out
}
