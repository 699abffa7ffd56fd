//! The window judged by axe-core, the accessibility engine behind the browsers' own
//! audits, run inside the real app. scripts/test installs it and names it in
//! CAIRN_AXE_JS.

use serde_json::{Value, json};

use crate::harness::App;

/// The impacts that fail a screen: what a user of a screen reader or of low vision
/// cannot get past. (Minor and moderate findings are reported, not failed.)
const FAILING: [&str; 2] = ["serious", "critical"];

/// Runs axe-core over the whole window as it is now and fails on any serious or
/// critical violation, naming each rule and the elements it found.
pub async fn assert_accessible(app: &App, screen: &str) {
    let path = std::env::var_os("CAIRN_AXE_JS")
        .expect("CAIRN_AXE_JS names axe.min.js (scripts/test installs it)");
    let source = std::fs::read_to_string(&path).expect("axe.min.js reads");
    // Loaded once per page: the script defines `window.axe` as a browser global.
    let loaded = app.js("return typeof window.axe === 'object';").await;
    if loaded != json!(true) {
        app.driver
            .execute(&source, Vec::new())
            .await
            .expect("axe-core loads into the window");
    }
    let found = app
        .driver
        .execute_async(
            "const done = arguments[arguments.length - 1];\n\
             axe.run(document, { resultTypes: ['violations'] })\n\
               .then(result => done(result.violations.map(v => ({\n\
                 id: v.id, impact: v.impact, help: v.help,\n\
                 nodes: v.nodes.map(n => n.target.join(' ') + ': ' + n.failureSummary),\n\
               }))))\n\
               .catch(err => done({ error: String(err) }));",
            Vec::new(),
        )
        .await
        .expect("axe-core runs")
        .json()
        .clone();
    let Value::Array(violations) = found else {
        panic!("axe-core failed on {screen}: {found}");
    };
    let (failing, other): (Vec<&Value>, Vec<&Value>) = violations
        .iter()
        .partition(|violation| FAILING.contains(&violation["impact"].as_str().unwrap_or("")));
    for violation in &other {
        eprintln!(
            "{screen}: axe-core, {}: {}",
            violation["impact"], violation["id"]
        );
    }
    assert!(
        failing.is_empty(),
        "{screen}: {} serious or critical accessibility violations:\n{}",
        failing.len(),
        failing
            .iter()
            .map(|violation| format!(
                "- {} ({}): {}\n    {}",
                violation["id"],
                violation["impact"],
                violation["help"],
                violation["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|node| node.as_str().unwrap_or_default().replace('\n', " "))
                    .collect::<Vec<_>>()
                    .join("\n    ")
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
