//! `cairn rules list|add|remove`.

use cairn_protocol::RuleList;

use crate::args::{RulesAction, RulesArgs};
use crate::exit::{Exit, Failure};

pub async fn rules(args: RulesArgs) -> Exit {
    match act(args).await {
        Ok(()) => Exit::OK,
        Err(failure) => failure.report(),
    }
}

async fn act(args: RulesArgs) -> Result<(), Failure> {
    let runtime = args.db.open().await?;
    match args.action {
        RulesAction::List { json } => {
            let rules = runtime.rules().await?;
            if json {
                let text = serde_json::to_string(&rules)
                    .map_err(|err| Failure::Usage(format!("cannot print JSON: {err}")))?;
                println!("{text}");
            } else if rules.is_empty() {
                println!("no rules: every call follows the thread's mode");
            } else {
                for list in [RuleList::Deny, RuleList::Ask, RuleList::Allow] {
                    for rule in rules.iter().filter(|rule| rule.list == list) {
                        println!("{}\t{}\t{}", rule.id, list.as_str(), rule.rule);
                    }
                }
            }
        }
        RulesAction::Add { list, rule } => {
            let list: RuleList = list.parse().map_err(Failure::Usage)?;
            let stored = runtime.add_rule(list, &rule).await?;
            println!("{}\t{}\t{}", stored.id, stored.list.as_str(), stored.rule);
        }
        RulesAction::Remove { id } => {
            if !runtime.remove_rule(id).await? {
                return Err(Failure::Usage(format!(
                    "no rule {id}; `cairn rules list` shows their ids"
                )));
            }
            println!("removed rule {id}");
        }
    }
    Ok(())
}
