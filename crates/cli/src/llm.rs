//! `cairn llm show|set|reset`: the model's parameters, as defaults or a thread's own.

use cairn_protocol::{LLM_KEYS, LlmSource, LlmView};

use crate::args::{LlmAction, LlmArgs};
use crate::exit::{Exit, Failure};

pub async fn llm(args: LlmArgs) -> Exit {
    match act(args).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(args: LlmArgs) -> Result<(), Failure> {
    let runtime = args.db.open().await?;
    let thread = args.thread.as_deref();
    let settings = match &args.action {
        LlmAction::Show => runtime.llm_settings(thread).await?,
        LlmAction::Set { key, value } => runtime.set_llm(thread, key, value).await?,
        LlmAction::Reset { key } => runtime.reset_llm(thread, key.as_deref()).await?,
    };
    print(&settings, args.json);
    Ok(())
}

fn print(settings: &LlmView, json: bool) {
    let effective = &settings.effective;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(settings).unwrap_or_default()
        );
        return;
    }
    for key in LLM_KEYS {
        let from = match settings.source(key) {
            Some(LlmSource::Thread) => " (this thread)",
            Some(LlmSource::Default) => " (default)",
            None => "",
        };
        let value = effective
            .get(key)
            .unwrap_or_else(|| "not set: the server's or the flag's".to_owned());
        println!("{key:<12} {value}{from}");
    }
}
