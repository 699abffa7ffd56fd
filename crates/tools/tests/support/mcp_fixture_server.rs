//! A minimal MCP server over stdio, written from the protocol (JSON-RPC 2.0 lines),
//! for tests: `echo` (read-only), `shout`, `fail` (an error result), `crash` (the
//! process dies mid-call). With `--refuse` it exits before answering anything.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    if std::env::args().any(|arg| arg == "--refuse") {
        eprintln!("fixture: refusing to start");
        std::process::exit(3);
    }
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else {
            continue; // a notification
        };
        let method = message["method"].as_str().unwrap_or("");
        let reply = match method {
            "initialize" => json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fixture", "version": "1.0.0"}
            }),
            "ping" => json!({}),
            "tools/list" => json!({"tools": [
                {"name": "echo", "description": "Echo the text back",
                 "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                 "annotations": {"readOnlyHint": true}},
                {"name": "shout", "description": "Upper-case the text",
                 "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
                {"name": "fail", "description": "Always fails", "inputSchema": {"type": "object"}},
                {"name": "crash", "description": "Dies mid-call", "inputSchema": {"type": "object"}}
            ]}),
            "tools/call" => {
                let text = message["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                match message["params"]["name"].as_str().unwrap_or("") {
                    "echo" => json!({"content": [{"type": "text", "text": text}]}),
                    "shout" => json!({"content": [{"type": "text", "text": text.to_uppercase()}]}),
                    "fail" => {
                        json!({"content": [{"type": "text", "text": "the fixture failed on purpose"}], "isError": true})
                    }
                    "crash" => std::process::exit(9),
                    other => {
                        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": format!("no tool {other}")}});
                        let _ = writeln!(stdout, "{error}");
                        let _ = stdout.flush();
                        continue;
                    }
                }
            }
            _ => {
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}});
                let _ = writeln!(stdout, "{error}");
                let _ = stdout.flush();
                continue;
            }
        };
        let _ = writeln!(
            stdout,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "result": reply})
        );
        let _ = stdout.flush();
    }
}
