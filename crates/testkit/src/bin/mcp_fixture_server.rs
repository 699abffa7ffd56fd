//! The misbehaving MCP fixture (`cairn_testkit::mcp`) over stdio: one JSON-RPC message
//! per line. `--refuse` exits before answering anything, after a long log on stderr
//! (as `npx` servers write) that ends in its last words. With `MCP_FIXTURE_LOG` set,
//! every message received is appended to that file, one per line (tests read the
//! `notifications/cancelled` Cairn sends).

#![allow(clippy::print_stdout)]

use std::io::{BufRead, Write};

use cairn_testkit::mcp::{Act, act};
use serde_json::Value;

fn main() {
    if std::env::args().any(|arg| arg == "--refuse") {
        // More than a pipe holds: the last words are still in the pipe when the
        // process is gone, and a reader that quotes them must read to the end first.
        let mut stderr = std::io::stderr().lock();
        for n in 0..4_000 {
            let _ = writeln!(stderr, "fixture: loading module {n} of 4000 …");
        }
        let _ = writeln!(stderr, "fixture: refusing to start");
        std::process::exit(3);
    }
    let mut log = std::env::var_os("MCP_FIXTURE_LOG").and_then(|path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()
    });
    let stdin = std::io::stdin();
    let mut out = Output::default();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(log) = &mut log {
            let _ = writeln!(log, "{line}");
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        out.perform(act(&message));
    }
}

#[derive(Default)]
struct Output {
    closed: bool,
}

impl Output {
    fn perform(&mut self, act: Act) {
        match act {
            Act::Send(message) => self.line(&message.to_string()),
            Act::Raw(text) => self.line(&text),
            Act::Stream(message) => self.line(&message.to_string()),
            Act::All(acts) => acts.into_iter().for_each(|act| self.perform(act)),
            Act::Nothing | Act::Hang => {}
            Act::Exit(code) => std::process::exit(code),
            Act::CloseOutput => {
                // The reader sees the end of the stream; the process goes on reading.
                if let Ok(null) = std::fs::File::create("/dev/null") {
                    let _ = rustix::stdio::dup2_stdout(&null);
                }
                self.closed = true;
            }
            Act::Stderr(bytes) => {
                let mut stderr = std::io::stderr().lock();
                let chunk = [b'e'; 8192];
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if stderr.write_all(&chunk[..n]).is_err() {
                        return;
                    }
                    left -= n;
                }
            }
        }
    }

    fn line(&self, text: &str) {
        if self.closed {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
        let _ = stdout.flush();
    }
}
