//! `mcpb chat` streaming and Ctrl-C, through a real mcpb process: the answer's text is printed
//! as it arrives (a piece is on stdout while the model still holds the rest), and SIGINT in the
//! middle of a model's answer or of a slow tool call ends mcpb (exit 130) at once, the tool's
//! server having been sent `notifications/cancelled`.

#[cfg(unix)]
use std::io::{BufRead, BufReader};
use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::json;

mod common;

use common::mcpb::command;
use common::tempdir::TempDir;

fn config(dir: &TempDir, flags: &[&str]) -> String {
    let doc = json!({"mcpServers": {
        "other": {"command": common::fixture::path(), "args": flags},
    }});
    dir.file("mcp.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

fn chat(file: &str, url: &str, verbose: bool) -> Child {
    let mut args = vec![
        "--config",
        file,
        "chat",
        "--server",
        "other",
        "--model-url",
        url,
    ];
    if verbose {
        args.push("-v");
    }
    command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads `from` byte by byte until what was read contains `want` (the test fails at the end
/// of the stream).
fn read_until(from: &mut impl Read, want: &str, seen: &mut String) {
    let mut byte = [0u8; 1];
    while !seen.contains(want) {
        match from.read(&mut byte) {
            Ok(1) => seen.push(char::from(byte[0])),
            _ => panic!("the output ended before `{want}`:\n{seen}"),
        }
    }
}

#[cfg(unix)]
fn interrupt(child: &Child) -> Instant {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    Instant::now()
}

/// Waits for mcpb to exit after the interruption at `since`; the time it took.
#[cfg(unix)]
fn exited_130(mut child: Child, since: Instant, what: &str) -> (Duration, String) {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = common::mcpb::wait_within(child, what, Duration::from_secs(20)).status;
    let took = since.elapsed();
    eprintln!("{what}: mcpb exited {took:?} after SIGINT");
    assert_eq!(status.code(), Some(130), "{what}: {err}");
    assert!(
        took < Duration::from_secs(3),
        "{what}: mcpb took {took:?} to exit after Ctrl-C (the bar is 1 s)\n{err}"
    );
    (took, err)
}

#[test]
fn chat_prints_the_answer_as_it_arrives() {
    let dir = TempDir::new("agent-cli-stream");
    let file = config(&dir, &[]);
    let model = ScriptedModel::start(vec![
        Step::Gated("streamed to the terminal".into()),
        calls(vec![call("echo", json!({"text": "tool says hi"}))]),
        Step::Summary("then: ".into()),
    ])
    .unwrap();
    let mut child = chat(&file, &model.base_url(), false);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"first\n").unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    // The first piece is printed while the model still holds the rest of its answer.
    read_until(&mut out, "str", &mut seen);
    assert!(!seen.contains("terminal"), "{seen}");
    model.release();
    read_until(&mut out, "streamed to the terminal\n", &mut seen);
    stdin.write_all(b"second\n").unwrap();
    drop(stdin);
    let _ = out.read_to_string(&mut seen);
    let status = common::mcpb::wait_within(child, "mcpb chat", Duration::from_secs(30)).status;
    assert_eq!(status.code(), Some(0));
    assert_eq!(seen, "streamed to the terminal\nthen: tool says hi\n");
    let reqs = model.requests();
    assert!(reqs.iter().all(|r| r.body["stream"] == true));
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[test]
#[cfg(unix)] // Ctrl-C is sent as SIGINT.
fn ctrl_c_during_a_slow_model_answer_exits_130_at_once() {
    let dir = TempDir::new("agent-cli-stream");
    let file = config(&dir, &[]);
    // The model sends a piece, then never the rest.
    let model = ScriptedModel::start(vec![Step::Gated("never finished".into())]).unwrap();
    let mut child = chat(&file, &model.base_url(), false);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = String::new();
    read_until(&mut out, "nev", &mut seen);
    let since = interrupt(&child);
    let (_, err) = exited_130(child, since, "slow model");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(model.requests().len(), 1);
}

#[test]
#[cfg(unix)] // Ctrl-C is sent as SIGINT.
fn ctrl_c_during_a_slow_tool_exits_130_at_once_and_the_server_is_told() {
    let dir = TempDir::new("agent-cli-stream");
    // The server logs each line it receives (shown with -v).
    let file = config(&dir, &["--verbose"]);
    let model = ScriptedModel::start(vec![
        calls(vec![call("slow", json!({"ms": 60000}))]),
        Step::Text("never".into()),
    ])
    .unwrap();
    let mut child = chat(&file, &model.base_url(), true);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"wait\n").unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut l = String::new();
        if err.read_line(&mut l).unwrap() == 0 {
            panic!("mcpb ended early:\n{seen}");
        }
        seen.push_str(&l);
        if l.contains(r#""method":"tools/call""#) {
            break;
        }
    }
    let since = interrupt(&child);
    child.stderr = None;
    let _ = err.read_to_string(&mut seen);
    exited_130(child, since, "slow tool");
    // mcpb's log of the notification sent (the server's own echo may be cut off by the close).
    assert!(
        seen.contains("`tools/call` cancelled: sent notifications/cancelled"),
        "{seen}"
    );
    assert_eq!(model.requests().len(), 1, "{seen}");
}
