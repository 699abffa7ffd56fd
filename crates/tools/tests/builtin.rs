//! The built-in tools on real folders, real processes and a real (local) web server.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use cairn_core::tool::Leave;
use cairn_protocol::ApprovalPreview;
use cairn_testkit::{FakeServer, Piece, Reply};
use cairn_tools::{
    EditFile, ListDir, MemoryList, MemoryRead, MemoryStore, MemoryWrite, ReadFile, RunCommand,
    SearchFiles, Subject, TodoWrite, Tool, ToolContext, ToolError, WebFetch, Workspace, WriteFile,
};
use common::workspace;
use serde_json::json;

async fn text(tool: &impl Tool, args: serde_json::Value, ctx: &ToolContext) -> String {
    tool.call(args, ctx).await.unwrap().content
}

#[tokio::test]
async fn search_files_finds_lines_and_skips_what_a_search_should() {
    let (dir, ctx) = workspace();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    run(config);\n}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("src/deep/lib.rs"),
        "pub fn run(config: Config) {}\n",
    )
    .unwrap();
    std::fs::write(root.join(".git/config"), "run(config)").unwrap();
    std::fs::write(root.join("node_modules/x/i.js"), "run(config)").unwrap();
    std::fs::write(root.join("blob.bin"), b"run(config)\0\x01\x02").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc", root.join("etc_link")).unwrap();

    let found = text(&SearchFiles, json!({"pattern": "run\\(config"}), &ctx).await;
    assert_eq!(
        found,
        "src/deep/lib.rs:1: pub fn run(config: Config) {}\nsrc/main.rs:2: run(config);\n"
    );
    // Not a valid expression: searched as written.
    let literal = text(&SearchFiles, json!({"pattern": "run(config"}), &ctx).await;
    assert_eq!(literal.lines().count(), 2, "{literal}");
    let scoped = text(
        &SearchFiles,
        json!({"pattern": "fn", "path": "src/deep"}),
        &ctx,
    )
    .await;
    assert_eq!(scoped, "src/deep/lib.rs:1: pub fn run(config: Config) {}\n");
    let none = text(&SearchFiles, json!({"pattern": "nowhere"}), &ctx).await;
    assert_eq!(
        none,
        "no matches in 3 files (a search finds the text as written; they are short, so \
         here is every line, to judge by what they say):\nsrc/deep/lib.rs:1: pub fn run(config: Config) {}\nsrc/main.rs:1: \
         fn main() {\nsrc/main.rs:2: run(config);\nsrc/main.rs:3: }\n",
        "few short files are shown whole (not the binary one), to be judged by meaning \
         when a word is not there"
    );
    // More, or longer, files are only named, to be read.
    std::fs::write(root.join("long.txt"), "words ".repeat(400)).unwrap();
    let named = text(&SearchFiles, json!({"pattern": "nowhere"}), &ctx).await;
    assert_eq!(
        named,
        "no matches in 4 files: blob.bin, long.txt, src/deep/lib.rs, src/main.rs\n(a search \
         finds the text as written; to find what it means, read the files)\n",
    );
    std::fs::remove_file(root.join("long.txt")).unwrap();
    for name in ["a", "b", "c", "d"] {
        std::fs::write(root.join(format!("{name}.txt")), name).unwrap();
    }
    let many = text(&SearchFiles, json!({"pattern": "nowhere"}), &ctx).await;
    assert!(
        many.starts_with("no matches in 7 files: a.txt, ")
            && many.ends_with("to find what it means, read the files)\n"),
        "six short texts are more than are shown: {many}"
    );
    for name in ["a", "b", "c", "d"] {
        std::fs::remove_file(root.join(format!("{name}.txt"))).unwrap();
    }
    // A file is searched as itself.
    let in_file = text(
        &SearchFiles,
        json!({"pattern": ".", "path": "./src/main.rs"}),
        &ctx,
    )
    .await;
    assert_eq!(
        in_file,
        "src/main.rs:1: fn main() {\nsrc/main.rs:2: run(config);\nsrc/main.rs:3: }\n"
    );
    let not_in_file = text(
        &SearchFiles,
        json!({"pattern": "nowhere", "path": "src/main.rs"}),
        &ctx,
    )
    .await;
    assert_eq!(
        not_in_file,
        "no matches in 1 file (a search finds the text as written; it is short, so here \
         is every line, to judge by what it says):\nsrc/main.rs:1: fn main() {\n\
         src/main.rs:2: run(config);\nsrc/main.rs:3: }\n"
    );
    assert!(
        SearchFiles
            .call(json!({"pattern": "x", "path": "../"}), &ctx)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn listing_a_file_points_to_read_file() {
    let (dir, ctx) = workspace();
    std::fs::write(dir.path().join("people.csv"), "name\nada\n").unwrap();
    let err = ListDir
        .call(json!({"path": "people.csv"}), &ctx)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "`people.csv` is not a directory (to see a file's contents, use read_file)"
    );
}

#[tokio::test]
async fn a_path_that_is_not_a_file_says_what_the_nearest_folder_holds() {
    let (dir, ctx) = workspace();
    let root = dir.path();
    std::fs::create_dir_all(root.join("notes/old")).unwrap();
    std::fs::write(root.join("summary.txt"), "sun\n").unwrap();
    std::fs::write(root.join("notes/a.md"), "a\n").unwrap();
    std::fs::create_dir(root.join("empty")).unwrap();
    let failed = |err: ToolError| match err {
        ToolError::Failed(why) => why,
        other => panic!("not a plain failure: {other:?}"),
    };
    let read = |path: &str| ReadFile.call(json!({ "path": path }), &ctx);

    assert_eq!(
        failed(read("animal.txt").await.unwrap_err()),
        "`animal.txt` does not exist. The workspace's top folder holds: empty/, notes/, \
         summary.txt."
    );
    // The nearest folder that exists, however deep the guess.
    assert_eq!(
        failed(read("notes/new/deeper/b.md").await.unwrap_err()),
        "`notes/new/deeper/b.md` does not exist. The folder `notes` holds: a.md, old/."
    );
    assert_eq!(
        failed(read("./notes").await.unwrap_err()),
        "`./notes` is a directory, not a file. The folder `notes` holds: a.md, old/."
    );
    // The workspace's own name, given as a file, is its top folder.
    let own_name = root.file_name().unwrap().to_str().unwrap().to_owned();
    let said = failed(read(&own_name).await.unwrap_err());
    assert!(
        said.ends_with("The workspace's top folder holds: empty/, notes/, summary.txt."),
        "{said}"
    );
    assert_eq!(
        failed(read("empty").await.unwrap_err()),
        "`empty` is a directory, not a file. The folder `empty` is empty."
    );

    let edit = json!({"path": "notes/b.md", "old_text": "x", "new_text": "y"});
    assert_eq!(
        failed(EditFile.call(edit, &ctx).await.unwrap_err()),
        "`notes/b.md` does not exist. The folder `notes` holds: a.md, old/."
    );
    assert_eq!(
        failed(
            ListDir
                .call(json!({"path": "notes/new"}), &ctx)
                .await
                .unwrap_err()
        ),
        "`notes/new` does not exist. The folder `notes` holds: a.md, old/."
    );
    // A path refused is still refused, with nothing listed.
    let err = read("../outside.txt").await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Refused(why) if !why.contains("holds")),
        "{err:?}"
    );
}

#[tokio::test]
async fn edit_file_replaces_exactly_one_occurrence() {
    let (dir, ctx) = workspace();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\nalpha\n").unwrap();
    let edit = |old: &str, new: &str| json!({"path": "a.txt", "old_text": old, "new_text": new});
    let err = EditFile.call(edit("alpha", "x"), &ctx).await.unwrap_err();
    assert!(err.to_string().contains("appears 2 times"), "{err}");
    let err = EditFile.call(edit("gamma", "x"), &ctx).await.unwrap_err();
    assert!(err.to_string().contains("was not found"), "{err}");
    let err = EditFile.call(edit("", "x"), &ctx).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments(_)));
    let err = EditFile.call(edit("beta", "beta"), &ctx).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArguments(why) if why.contains("the same, so `a.txt` was not changed")),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "alpha\nbeta\nalpha\n",
        "nothing was written"
    );
    assert_eq!(
        text(&EditFile, edit("beta\nalpha", "BETA"), &ctx).await,
        "edited `a.txt`: 2 lines replaced with 1"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "alpha\nBETA\n"
    );
}

#[tokio::test]
async fn a_write_or_an_edit_tells_its_card_the_change_it_made() {
    let (dir, ctx) = workspace();
    std::fs::write(dir.path().join("a.txt"), "alpha\nbeta\n").unwrap();
    let change = |output: cairn_tools::ToolOutput| output.change.expect("the change");
    let made = change(
        WriteFile
            .call(json!({"path": "b.txt", "content": "new\n"}), &ctx)
            .await
            .unwrap(),
    );
    assert_eq!(
        made,
        ApprovalPreview::NewFile {
            path: "b.txt".into(),
            content: "new\n".into()
        }
    );
    let replaced = change(
        WriteFile
            .call(json!({"path": "a.txt", "content": "alpha\nBETA\n"}), &ctx)
            .await
            .unwrap(),
    );
    let ApprovalPreview::Diff { path, diff } = replaced else {
        panic!("a replaced file shows its diff: {replaced:?}");
    };
    assert_eq!(path, "a.txt");
    assert!(diff.contains("-beta\n+BETA"), "{diff}");
    let edited = change(
        EditFile
            .call(
                json!({"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"}),
                &ctx,
            )
            .await
            .unwrap(),
    );
    let ApprovalPreview::Diff { diff, .. } = edited else {
        panic!("an edit shows its diff: {edited:?}");
    };
    assert!(diff.contains("-alpha\n+ALPHA"), "{diff}");
    // A rewrite of a large file keeps the start of its change, and says what it left out.
    let long: String = (0..5_000).map(|n| format!("line {n}\n")).collect();
    let cut = change(
        WriteFile
            .call(json!({"path": "long.txt", "content": long}), &ctx)
            .await
            .unwrap(),
    );
    let ApprovalPreview::NewFile { content, .. } = cut else {
        panic!("{cut:?}");
    };
    assert!(content.len() <= 20_100, "{}", content.len());
    assert!(
        content.ends_with("more lines\n"),
        "{}",
        &content[content.len() - 60..]
    );
}

#[tokio::test]
async fn run_command_reports_exit_code_and_both_streams_from_the_workspace_root() {
    let (dir, ctx) = workspace();
    let out = RunCommand
        .call(json!({"command": "pwd; echo oops >&2; exit 3"}), &ctx)
        .await
        .unwrap();
    let root = dir.path().canonicalize().unwrap();
    assert_eq!(
        out.content,
        format!(
            "$ pwd; echo oops >&2; exit 3\n\
             exit code: 3\nIt printed:\n{}\n[stderr]\noops\n\n\
             (sandboxed: writes only in the workspace and the temp folder, no network)\n",
            root.display()
        )
    );
    assert!(out.failed, "a non-zero exit is a failed call");
    let out = RunCommand
        .call(json!({"command": "echo fine"}), &ctx)
        .await
        .unwrap();
    assert_eq!(
        (out.content.as_str(), out.failed),
        (
            "$ echo fine\nexit code: 0\nIt printed:\nfine\n\n\
             (sandboxed: writes only in the workspace and the temp folder, no network)\n",
            false
        )
    );
}

#[tokio::test]
async fn a_command_writes_in_its_workspace_and_scratch_but_not_beside_them() {
    let (dir, ctx) = workspace();
    let home = std::env::var("HOME").unwrap();
    let outside =
        std::path::Path::new(&home).join(format!("cairn-tools-test-{}", std::process::id()));
    let script = format!(
        "echo in > inside.txt; echo scratch > \"$TMPDIR/s.txt\" && cat \"$TMPDIR/s.txt\"; \
         echo $TMPDIR > scratch.path; echo out > {}",
        outside.display()
    );
    let out = text(&RunCommand, json!({ "command": script }), &ctx).await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(out.contains("\nscratch\n"), "{out}");
    assert!(!outside.exists(), "{} was written", outside.display());
    assert!(out.contains("Permission denied"), "{out}");
    assert!(
        out.ends_with(
            "If that is what was denied above: for the network, call run_command again \
                       with network: true; to write elsewhere, with outside_sandbox: true. Either \
                       asks the user.\n"
        ),
        "the model reads why and what to do: {out}"
    );
    let scratch = std::fs::read_to_string(dir.path().join("scratch.path")).unwrap();
    assert!(
        !std::path::Path::new(scratch.trim()).exists(),
        "the scratch folder {scratch} is removed after"
    );
}

#[tokio::test]
async fn a_call_asking_for_the_network_or_no_sandbox_says_so_and_grants_that_way_out() {
    let plain = json!({"command": "cargo build"});
    let network = json!({"command": "cargo build", "network": true});
    let outside = json!({"command": "cargo build", "outside_sandbox": true});
    assert_eq!(RunCommand.leaves_sandbox(&plain), None);
    assert_eq!(RunCommand.leaves_sandbox(&network), Some(Leave::Network));
    assert_eq!(RunCommand.leaves_sandbox(&outside), Some(Leave::Unconfined));
    assert_eq!(
        RunCommand.session_grants(&plain),
        ["run_command(cargo build:*)"]
    );
    assert_eq!(
        RunCommand.session_grants(&network),
        ["run_command.network(cargo build:*)"]
    );
    assert_eq!(
        RunCommand.session_grants(&outside),
        ["run_command.unconfined(cargo build:*)"]
    );
    assert_eq!(RunCommand.describe(&plain).action, "run `cargo build`");
    assert_eq!(
        RunCommand.describe(&network).action,
        "run `cargo build` with network access"
    );
    assert_eq!(
        RunCommand.describe(&outside).action,
        "run `cargo build` outside the sandbox, free to write anywhere and use the network"
    );
}

#[tokio::test]
async fn long_output_keeps_its_start_and_end() {
    let (_dir, ctx) = workspace();
    let out = text(&RunCommand, json!({"command": "seq 1 100000"}), &ctx).await;
    assert!(out.contains("exit code: 0\nIt printed:\n1\n2\n3\n"));
    assert!(out.contains("bytes not shown"));
    assert!(
        out.ends_with("99999\n100000\n\n(sandboxed: writes only in the workspace and the temp folder, no network)\n"),
        "{}",
        &out[out.len() - 200..]
    );
    assert!(out.len() < 30_000);
}

/// Whether a process started by a test is still running, by the pid it wrote. A
/// killed process whose parent is gone may linger as a zombie until init reaps it:
/// that is dead too.
fn alive(pid_file: &std::path::Path) -> bool {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_timeout_ends_the_command_and_everything_it_started() {
    let (dir, ctx) = workspace();
    let started = Instant::now();
    let out = text(
        &RunCommand,
        json!({"command": "sleep 30 & echo $! > bg.pid; echo started; sleep 30", "timeout_ms": 300}),
        &ctx,
    )
    .await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        out.contains("timed out after 300 ms") && out.contains("started"),
        "{out}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !alive(&dir.path().join("bg.pid")),
        "the background sleep was killed with its group"
    );
}

#[tokio::test]
async fn stop_kills_the_whole_process_group() {
    let (dir, ctx) = workspace();
    let cancel = ctx.cancel.clone();
    let call = tokio::spawn(async move {
        RunCommand
            .call(
                json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
                &ctx,
            )
            .await
    });
    let pid_file = dir.path().join("bg.pid");
    while !pid_file.exists()
        || std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .is_empty()
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(alive(&pid_file));
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.unwrap_err(), ToolError::Cancelled);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!alive(&pid_file));
}

#[tokio::test]
async fn dropping_a_running_command_kills_its_group_too() {
    let (dir, ctx) = workspace();
    let pid_file = dir.path().join("bg.pid");
    let call = RunCommand.call(
        json!({"command": "sleep 30 & echo $! > bg.pid; sleep 30"}),
        &ctx,
    );
    let _ = tokio::time::timeout(Duration::from_millis(500), call).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !alive(&pid_file),
        "the engine drops a call on Stop; that alone must end it"
    );
}

#[test]
fn commands_are_judged_and_granted_part_by_part() {
    let args = json!({"command": "cargo build && cargo test --release | tee log"});
    assert_eq!(
        RunCommand.subjects(&args),
        ["cargo build", "cargo test --release", "tee log"].map(|c| Subject::Command(c.into()))
    );
    assert_eq!(
        RunCommand.session_grants(&args),
        [
            "run_command(cargo build:*)",
            "run_command(cargo test:*)",
            "run_command(tee log:*)"
        ]
    );
    assert_eq!(
        RunCommand.subjects(&json!({"command": "echo 'x"})),
        [Subject::Unreadable("echo 'x".into())]
    );
}

fn http() -> reqwest::Client {
    cairn_providers::http::client_builder().build().unwrap()
}

#[tokio::test]
async fn web_fetch_reads_pages_as_text_and_refuses_what_it_cannot_read() {
    let server = FakeServer::start().await;
    server.push(
        "GET /page",
        Reply::new(200, "text/html; charset=utf-8")
            .then(Piece::Bytes(b"<html><body><h1>Hello</h1><p>Local &amp; private.</p><script>x()</script></body></html>".to_vec())),
    );
    server.push(
        "GET /image",
        Reply::new(200, "image/png").then(Piece::Bytes(vec![0x89, b'P', b'N', b'G'])),
    );
    server.push(
        "GET /missing",
        Reply::new(404, "text/plain").then(Piece::Bytes(b"no such page".to_vec())),
    );
    let fetch = WebFetch::new(http());
    let ctx = ToolContext::default();
    let out = text(
        &fetch,
        json!({"url": format!("{}/page", server.url())}),
        &ctx,
    )
    .await;
    assert_eq!(
        out,
        format!(
            "{}/page (HTTP 200)\n\nHello\nLocal & private.",
            server.url()
        )
    );
    let err = fetch
        .call(json!({"url": format!("{}/image", server.url())}), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`image/png`, not a page"), "{err}");
    let err = fetch
        .call(json!({"url": format!("{}/missing", server.url())}), &ctx)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("(HTTP 404)") && err.to_string().contains("no such page"),
        "{err}"
    );
    for bad in ["file:///etc/passwd", "not a url", "ftp://x/y"] {
        assert!(
            matches!(
                fetch.call(json!({"url": bad}), &ctx).await,
                Err(ToolError::InvalidArguments(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(
        fetch.subjects(&json!({"url": "https://a.b/c"})),
        [Subject::Url("https://a.b/c".into())]
    );
}

#[tokio::test]
async fn web_fetch_is_capped_in_bytes_and_in_time() {
    let server = FakeServer::start().await;
    server.push(
        "GET /huge",
        Reply::new(200, "text/plain").then(Piece::Filler(100 * 1024 * 1024)),
    );
    server.push(
        "GET /slow",
        Reply::new(200, "text/html")
            .then(Piece::Bytes(b"<p>The first part.</p>".to_vec()))
            .then(Piece::Hang),
    );
    server.push(
        "GET /silent",
        Reply::new(200, "text/html").head_delay(Duration::from_secs(120)),
    );
    let fetch = WebFetch::new(http()).with_deadline(Duration::from_secs(1));
    let ctx = ToolContext::default();
    let url = |path: &str| json!({"url": format!("{}/{path}", server.url())});

    let started = Instant::now();
    let huge = text(&fetch, url("huge"), &ctx).await;
    assert!(huge.len() < 3 * 1024 * 1024, "{} bytes kept", huge.len());
    assert!(huge.ends_with("[only the first 2097152 bytes were read]"));

    let slow = text(&fetch, url("slow"), &ctx).await;
    assert!(slow.contains("The first part."), "{slow}");
    assert!(slow.contains("still sending after 1 s"), "{slow}");

    let silent = fetch
        .call(url("silent"), &ctx)
        .await
        .unwrap_err()
        .to_string();
    assert!(silent.contains("sent no answer within 1 s"), "{silent}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "each fetch ends at its limit: {:?}",
        started.elapsed()
    );
}

#[derive(Debug, Default)]
struct Notes(Mutex<BTreeMap<String, String>>);

#[async_trait]
impl MemoryStore for Notes {
    async fn list(&self) -> Result<Vec<(String, String)>, cairn_core::PortError> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.lines().next().unwrap_or("").to_owned()))
            .collect())
    }
    async fn read(&self, key: &str) -> Result<Option<String>, cairn_core::PortError> {
        Ok(self.0.lock().unwrap().get(key).cloned())
    }
    async fn write(&self, key: &str, value: &str) -> Result<(), cairn_core::PortError> {
        self.0
            .lock()
            .unwrap()
            .insert(key.to_owned(), value.to_owned());
        Ok(())
    }
}

#[tokio::test]
async fn memory_tools_round_trip_through_their_store() {
    let notes: Arc<dyn MemoryStore> = Arc::new(Notes::default());
    let ctx = ToolContext::default();
    assert_eq!(
        text(&MemoryList::new(notes.clone()), json!({}), &ctx).await,
        "memory is empty"
    );
    assert_eq!(
        text(
            &MemoryWrite::new(notes.clone()),
            json!({"key": "user.editor", "value": "helix\nsince 2024"}),
            &ctx
        )
        .await,
        "remembered `user.editor`"
    );
    assert_eq!(
        text(&MemoryList::new(notes.clone()), json!({}), &ctx).await,
        "user.editor: helix"
    );
    assert_eq!(
        text(
            &MemoryRead::new(notes.clone()),
            json!({"key": "user.editor"}),
            &ctx
        )
        .await,
        "helix\nsince 2024"
    );
    assert!(
        MemoryRead::new(notes.clone())
            .call(json!({"key": "nope"}), &ctx)
            .await
            .unwrap_err()
            .to_string()
            .contains("memory_list")
    );
    assert!(
        MemoryWrite::new(notes)
            .call(json!({"key": " ", "value": "x"}), &ctx)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn todo_write_renders_the_list() {
    let out = text(
        &TodoWrite,
        json!({"items": [{"text": "read", "done": true}, {"text": "write"}]}),
        &ToolContext::default(),
    )
    .await;
    assert_eq!(out, "1 of 2 done\n- [x] read\n- [ ] write\n");
    assert!(
        TodoWrite
            .call(json!({"items": [{"text": ""}]}), &ToolContext::default())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn an_approval_previews_the_change_a_write_would_make() {
    use cairn_protocol::ApprovalPreview;
    use cairn_tools::WriteFile;
    let (dir, ctx) = workspace();
    std::fs::write(dir.path().join("notes.md"), "alpha\nbeta\ngamma\n").unwrap();
    let replaced = WriteFile
        .preview(
            &json!({"path": "notes.md", "content": "alpha\nBETA\ngamma\n"}),
            &ctx,
        )
        .await;
    assert_eq!(
        replaced,
        Some(ApprovalPreview::Diff {
            path: "notes.md".into(),
            diff: "@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n".into(),
        })
    );
    let created = WriteFile
        .preview(&json!({"path": "new/todo.md", "content": "- one\n"}), &ctx)
        .await;
    assert_eq!(
        created,
        Some(ApprovalPreview::NewFile {
            path: "new/todo.md".into(),
            content: "- one\n".into(),
        })
    );
    let edit = EditFile
        .preview(
            &json!({"path": "notes.md", "old_text": "gamma", "new_text": "delta"}),
            &ctx,
        )
        .await;
    assert_eq!(
        edit,
        Some(ApprovalPreview::Diff {
            path: "notes.md".into(),
            diff: "@@ -1,3 +1,3 @@\n alpha\n beta\n-gamma\n+delta\n".into(),
        })
    );
    // An edit that would fail (its text is not there) shows its arguments instead.
    let missing = EditFile
        .preview(
            &json!({"path": "notes.md", "old_text": "omega", "new_text": "x"}),
            &ctx,
        )
        .await;
    assert_eq!(missing, None);
    // Nothing was written by looking.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "alpha\nbeta\ngamma\n"
    );
    assert!(!dir.path().join("new").exists());
    let command = RunCommand
        .preview(&json!({"command": "cargo test"}), &ctx)
        .await;
    assert_eq!(
        command,
        Some(ApprovalPreview::Command {
            folder: dir.path().display().to_string(),
            command: "cargo test".into(),
        })
    );
}

/// Every built-in tool says how its calls read: what they do (an approval's line)
/// and what they act on (a card's header).
#[test]
fn each_builtin_says_what_its_call_does_and_acts_on() {
    let memory: Arc<dyn MemoryStore> = Arc::new(Notes::default());
    let mut tools = cairn_tools::workspace_tools();
    tools.extend(cairn_tools::common_tools(http(), memory));
    let tool = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name() == name)
            .unwrap_or_else(|| panic!("no built-in {name}"))
            .clone()
    };
    let cases = [
        (
            "read_file",
            json!({"path": "notes.md"}),
            "read notes.md",
            Some("notes.md"),
        ),
        ("list_dir", json!({"path": "src"}), "list src", Some("src/")),
        ("list_dir", json!({}), "list .", Some("./")),
        (
            "search_files",
            json!({"pattern": "TODO", "path": "src"}),
            "search src for “TODO”",
            Some("“TODO” in src/"),
        ),
        (
            "search_files",
            json!({"pattern": "todo"}),
            "search for “todo”",
            Some("“todo”"),
        ),
        (
            "write_file",
            json!({"path": "a.md", "content": "one\ntwo\n"}),
            "write a.md (2 lines)",
            Some("a.md"),
        ),
        (
            "write_file",
            json!({"path": "a.md", "content": "kept"}),
            "write a.md (1 line, 4 bytes)",
            Some("a.md"),
        ),
        (
            "edit_file",
            json!({"path": "a.rs"}),
            "edit a.rs",
            Some("a.rs"),
        ),
        (
            "run_command",
            json!({"command": "cargo   test\n--all"}),
            "run `cargo test --all`",
            Some("cargo test … (+1 line)"),
        ),
        (
            "run_command",
            json!({"command": "set -e\n\ncargo build\n"}),
            "run `set -e cargo build`",
            Some("set -e … (+1 line)"),
        ),
        (
            "web_fetch",
            json!({"url": "https://user@example.com:8080/a?b=c"}),
            "fetch https://user@example.com:8080/a?b=c",
            Some("example.com:8080"),
        ),
        (
            "memory_read",
            json!({"key": "name"}),
            "recall “name”",
            Some("name"),
        ),
        (
            "memory_write",
            json!({"key": "name", "value": "Ada"}),
            "remember “name”",
            Some("name"),
        ),
        ("memory_list", json!({}), "list what is remembered", None),
        (
            "todo_write",
            json!({"items": [{"text": "a", "done": false}]}),
            "update the to-do list",
            Some("1 item"),
        ),
    ];
    for (name, args, action, subject) in cases {
        let about = tool(name).describe(&args);
        assert_eq!(
            (about.action.as_str(), about.subject.as_deref()),
            (action, subject),
            "{name} {args}"
        );
    }
    // A long command is cut on a character boundary, in both.
    let long = tool("run_command").describe(&json!({"command": "é".repeat(200)}));
    assert!(long.action.ends_with("…`"), "{}", long.action);
    assert!(long.subject.is_some_and(|s| s.ends_with('…')));
}

/// A file a log was told of: its path, what it held, what it holds (`None`: gone).
type ToldFile = (String, cairn_tools::workspace::Before, Option<Vec<u8>>);

/// A write log that keeps what it is told.
#[derive(Default)]
struct Told(Mutex<Vec<ToldFile>>);

impl cairn_tools::workspace::WriteLog for Told {
    fn wrote(
        &self,
        _: &std::path::Path,
        path: &str,
        before: cairn_tools::workspace::Before,
        after: &[u8],
    ) {
        self.0
            .lock()
            .unwrap()
            .push((path.to_owned(), before, Some(after.to_vec())));
    }

    fn removed(&self, _: &std::path::Path, path: &str, before: cairn_tools::workspace::Before) {
        self.0.lock().unwrap().push((path.to_owned(), before, None));
    }
}

#[tokio::test]
async fn what_a_command_changes_is_told_to_the_workspaces_log() {
    use cairn_tools::workspace::Before;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "a draft\n").unwrap();
    std::fs::write(dir.path().join("old.txt"), "old\n").unwrap();
    let told = Arc::new(Told::default());
    let ctx = ToolContext {
        workspace: Some(Arc::new(
            Workspace::open(dir.path()).unwrap().with_log(told.clone()),
        )),
        ..ToolContext::default()
    };
    let out = RunCommand
        .call(
            json!({"command": "sed -i s/draft/final/ notes.md && printf made > made.txt && rm old.txt"}),
            &ctx,
        )
        .await
        .unwrap();
    assert!(
        out.content.ends_with("Restore can take them back.\n"),
        "{}",
        out.content
    );
    assert_eq!(
        out.changed,
        ["made.txt", "notes.md", "old.txt"],
        "for the window's Restore"
    );
    assert_eq!(
        *told.0.lock().unwrap(),
        [
            (
                "made.txt".to_owned(),
                Before::Absent,
                Some(b"made".to_vec())
            ),
            (
                "notes.md".to_owned(),
                Before::Held(b"a draft\n".to_vec()),
                Some(b"a final\n".to_vec())
            ),
            ("old.txt".to_owned(), Before::Held(b"old\n".to_vec()), None),
        ]
    );
}

#[tokio::test]
async fn a_written_file_that_does_not_parse_is_kept_and_the_call_fails_saying_why() {
    let (dir, ctx) = workspace();
    let out = WriteFile
        .call(json!({"path": "hi.py", "content": "Hello, Esther!"}), &ctx)
        .await
        .unwrap();
    assert!(out.failed);
    assert!(
        out.content.starts_with(
            "created `hi.py` (14 bytes)\n[check] `hi.py` is not valid Python: line 1: "
        ),
        "{}",
        out.content
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("hi.py")).unwrap(),
        "Hello, Esther!",
        "written all the same: Restore takes it back"
    );
    assert!(out.change.is_some(), "its card shows what it wrote");

    let fine = WriteFile
        .call(
            json!({"path": "hi.py", "content": "print('Hello')\n"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        (fine.content.as_str(), fine.failed),
        ("replaced `hi.py` (15 bytes)", false)
    );

    std::fs::write(dir.path().join("a.json"), "{\"a\": 1, \"b\": 2}\n").unwrap();
    let broken = EditFile
        .call(
            json!({"path": "a.json", "old_text": "\"b\": 2", "new_text": "\"b\": 2,"}),
            &ctx,
        )
        .await
        .unwrap();
    assert_eq!(
        (broken.content.as_str(), broken.failed),
        (
            "edited `a.json`: 1 lines replaced with 1\n[check] `a.json` is not valid JSON: \
             line 1: trailing comma at line 1 column 17\n",
            true
        )
    );
}

#[test]
fn a_call_being_written_shows_the_argument_that_grows() {
    assert_eq!(WriteFile.streams(), Some("content"));
    assert_eq!(EditFile.streams(), Some("new_text"));
    assert_eq!(RunCommand.streams(), Some("command"));
    // The rest show their arguments as they come.
    assert_eq!(ListDir.streams(), None);
    assert_eq!(SearchFiles.streams(), None);
    // Each names an argument the tool has.
    for (tool, argument) in [
        (&WriteFile as &dyn Tool, "content"),
        (&EditFile, "new_text"),
        (&RunCommand, "command"),
    ] {
        assert!(
            tool.parameters()["properties"].get(argument).is_some(),
            "{}: {argument}",
            tool.name()
        );
    }
}
