//! Many processes opening one new database at the same moment: the desktop app and a
//! CLI on a first run, or a script that starts many runs at once.

use super::support::*;

const PROCESSES: usize = 50;
const ROUNDS: usize = 10;

#[tokio::test(flavor = "multi_thread")]
async fn fifty_processes_can_open_a_new_database_at_once() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..ROUNDS {
        let db = dir.path().join(format!("round-{round}.db"));
        let runs: Vec<Child> = (0..PROCESSES)
            .map(|_| {
                let mut command = cairn(&["threads", "list", "--json"]);
                command.env("CAIRN_DB", &db);
                command.spawn().unwrap()
            })
            .collect();
        let mut failures = Vec::new();
        for run in runs {
            let out = run.wait_with_output().await.unwrap();
            if !out.status.success() {
                failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
            }
        }
        assert!(
            failures.is_empty(),
            "round {round}: {} of {PROCESSES} failed: {:?}",
            failures.len(),
            failures.first()
        );
    }
}
