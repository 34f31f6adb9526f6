//! `mcpb run` end to end: the mcpb binary, a config file naming two fixture servers, and the
//! scripted model on loopback (no key needed for a loopback URL).

use std::time::Duration;

use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::{json, Value};

mod common;

use common::mcpb::{command, mcpb, output_within};
use common::tempdir::TempDir;

fn config(dir: &TempDir) -> String {
    let fixture = common::fixture::path();
    let doc = json!({"mcpServers": {
        "fx": {"command": fixture, "args": ["--extra-tool", "files.read"]},
        "other": {"command": fixture},
    }});
    dir.file("mcp.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn run_prints_the_answer_and_with_v_each_tool_call() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("fx__add", json!({"a": 20, "b": 22})),
            call("files_read", json!({"text": "notes"})),
        ]),
        Step::Summary("The answer: ".into()),
    ])
    .unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--server",
        "fx",
        "--server",
        "other",
        "--model-url",
        &url,
        "-v",
        "what is 20 + 22?",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "The answer: 42\nnotes\n");
    let err = text(&out.stderr);
    assert!(err.contains("-> fx/add {\"a\":20,\"b\":22}"), "{err}");
    assert!(err.contains("<- fx/add ok"), "{err}");
    assert!(err.contains("-> fx/files.read"), "{err}");
    // Both servers' tools were offered (`add` collides, so it is prefixed).
    let names = model.requests()[0].tool_names();
    assert!(names.contains(&"fx__add".to_string()) && names.contains(&"other__add".to_string()));
    assert_eq!(model.requests()[0].body["model"], "gpt-4o-mini");
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[test]
fn run_json_reports_text_turns_tool_calls_and_usage() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let model = ScriptedModel::start(vec![
        calls(vec![call("fail", json!({}))]),
        Step::Text("It failed.".into()),
    ])
    .unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "--json",
        "run",
        "--server",
        "other",
        "--model",
        "local-model",
        "--model-url",
        &url,
        "try it",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc,
        json!({"text": "It failed.", "turns": 2,
            "tool_calls": [{"server": "other", "tool": "fail", "arguments": {}, "is_error": true}],
            "usage": {"input_tokens": 20, "output_tokens": 10}})
    );
    assert_eq!(model.requests()[0].body["model"], "local-model");
}

#[test]
fn the_turn_limit_exits_8_and_a_missing_key_2() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let step = || calls(vec![call("echo", json!({"text": "x"}))]);
    let model = ScriptedModel::start(vec![step(), step(), step()]).unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--server",
        "other",
        "--model-url",
        &url,
        "--max-turns",
        "2",
        "--json",
        "loop",
    ]);
    assert_eq!(out.status.code(), Some(8), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "turn_limit");
    assert_eq!(doc["error"]["tool_calls"].as_array().map(Vec::len), Some(2));
    assert!(text(&out.stderr).contains("--max-turns"));

    // A remote model URL needs a key; the variable named is the one reported.
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--model-url",
        "https://models.example.com/v1",
        "--api-key-env",
        "MCPB_TEST_NO_SUCH_KEY",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("MCPB_TEST_NO_SUCH_KEY"),
        "{}",
        text(&out.stderr)
    );
    // An unknown server is a config error.
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--server",
        "nope",
        "--model-url",
        &url,
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`nope`"));
}

#[test]
fn a_failing_model_exits_9() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let model = ScriptedModel::start(vec![Step::Status(400, None)]).unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--server",
        "other",
        "--model-url",
        &url,
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("HTTP 400"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_template_gives_the_system_prompt_model_and_allow_list() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let template = dir.file(
        "helper.md",
        "---\ndescription: test helper\nmodel: templ-model\ntools: [echo]\n---\nYou are a test.\n",
    );
    let model = ScriptedModel::start(vec![Step::Text("hi".into())]).unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--server",
        "other",
        "--template",
        template.to_str().unwrap(),
        "--model-url",
        &url,
        "hello",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let req = &model.requests()[0];
    assert_eq!(req.body["model"], "templ-model");
    assert_eq!(
        req.body["messages"][0],
        json!({"role": "system", "content": "You are a test."})
    );
    assert_eq!(req.tool_names(), ["echo"]);
}

#[test]
fn chat_keeps_one_conversation_over_the_lines_of_stdin() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let model = ScriptedModel::start(vec![
        Step::Text("first answer".into()),
        calls(vec![call("echo", json!({"text": "second"}))]),
        Step::Summary("echoed ".into()),
        Step::Text("never".into()),
    ])
    .unwrap();
    let url = model.base_url();
    let mut child = command(&[
        "--config",
        &file,
        "chat",
        "--server",
        "other",
        "--model-url",
        &url,
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"one\n\ntwo\n/exit\nthree\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "first answer\nechoed second\n");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3, "`/exit` ended it");
    // The second message's request carried the first exchange.
    assert_eq!(reqs[1].body["messages"].as_array().map(Vec::len), Some(3));
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[test]
#[cfg(unix)] // Ctrl-C is sent as SIGINT.
fn ctrl_c_cancels_a_run_and_exits_130() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let dir = TempDir::new("agent-cli");
    // The server logs each line it receives (shown with -v).
    let doc = json!({"mcpServers": {
        "other": {"command": common::fixture::path(), "args": ["--verbose"]},
    }});
    let file = dir.file("mcp.json", &doc.to_string());
    let file = file.to_string_lossy().into_owned();
    let model = ScriptedModel::start(vec![
        calls(vec![call("slow", json!({"ms": 60000}))]),
        Step::Text("never".into()),
    ])
    .unwrap();
    let url = model.base_url();
    let mut child = command(&[
        "--config",
        &file,
        "--json",
        "run",
        "--server",
        "other",
        "--model-url",
        &url,
        "-v",
        "wait",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // Wait until the server has the tool call.
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
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    let started = std::time::Instant::now();
    let _ = err.read_to_string(&mut seen);
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    let doc: Value = serde_json::from_str(&stdout).expect("one JSON document");
    assert_eq!(doc["error"]["kind"], "interrupted", "{doc}");
    assert_eq!(doc["error"]["exit"], 130);
    // The run stopped at once (well before the call's 15 s timeout), the server was told, and
    // the model was not asked again.
    assert!(started.elapsed() < Duration::from_secs(5), "{seen}");
    // (mcpb's own log line: the server's echo of it may be cut off by the close.)
    // (The run cancels its own tool calls: each is logged by the client.)
    assert!(
        seen.contains("`tools/call` cancelled: sent notifications/cancelled"),
        "{seen}"
    );
    assert_eq!(model.requests().len(), 1, "{seen}");
}

#[test]
fn run_refuses_options_it_does_not_take() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let out = mcpb(&["--stdio", "x", "run", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`run` does not take --stdio"),
        "{}",
        text(&out.stderr)
    );
    let out = mcpb(&["--config", &file, "--json", "chat", "extra"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "usage");
}

/// Whether `c` may reach a terminal from a `--json` document: nothing a terminal acts on.
fn unsafe_on_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[test]
fn run_json_and_chat_json_escape_the_same_controls() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let hostile = "a\u{1b}[2J b\u{9b}31m c\u{9d}8;;x\u{7} d\u{202e}e\u{2066} f\u{7f}";
    let model =
        ScriptedModel::start(vec![Step::Text(hostile.into()), Step::Text(hostile.into())]).unwrap();
    let url = model.base_url();
    let base = ["--config", &file, "--json"];
    let model_args = ["--server", "other", "--model-url", &url];
    let run = mcpb(&[&base[..], &["run"], &model_args[..], &["go"]].concat());
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let mut child = command(&[&base[..], &["chat"], &model_args[..]].concat())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let chat = child.wait_with_output().unwrap();
    assert_eq!(chat.status.code(), Some(0), "{}", text(&chat.stderr));
    for (what, out) in [("run", &run.stdout), ("chat", &chat.stdout)] {
        let out = text(out);
        assert!(!out.chars().any(unsafe_on_a_terminal), "{what}: {out:?}");
        let first = out.lines().next().unwrap_or_default();
        let doc: Value = if what == "run" {
            serde_json::from_str(&out).unwrap()
        } else {
            serde_json::from_str(first).unwrap()
        };
        assert_eq!(
            doc["text"], hostile,
            "{what}: the escapes mean the same text"
        );
    }
}

#[test]
fn a_stalled_model_ends_the_run_at_the_timeout() {
    // `--timeout` bounds every request mcpb makes, the model's included: a model that never
    // answers fails the run (exit 9) at the timeout, not after the model client's default 120 s.
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let model = ScriptedModel::start(vec![Step::Stall(Duration::from_secs(60))]).unwrap();
    let url = model.base_url();
    let args = [
        "--config",
        &file,
        "--timeout",
        "2",
        "run",
        "--server",
        "other",
        "--model-url",
        &url,
        "hi",
    ];
    // Bounded short of the model's 60 s stall: a run the stall holds fails the test here.
    let (out, took) = output_within(command(&args), "mcpb run", Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(
        took < Duration::from_secs(5),
        "a stalled model held the run for {took:?} with --timeout 2"
    );
}

#[test]
fn tool_search_result_budget_and_server_instructions_from_the_command_line() {
    let dir = TempDir::new("agent-cli-search");
    let file = config(&dir);
    let model = ScriptedModel::start(vec![
        calls(vec![call("search_tools", json!({"query": "large text"}))]),
        calls(vec![call("fx__large", json!({"bytes": 5000}))]),
        Step::Summary(String::new()),
    ])
    .unwrap();
    let url = model.base_url();
    let out = mcpb(&[
        "--config",
        &file,
        "run",
        "--model-url",
        &url,
        "--tool-search",
        "--max-result-bytes",
        "1000",
        "--server-instructions",
        "-v",
        "fetch some large text",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let requests = model.requests();
    assert_eq!(requests[0].tool_names(), ["search_tools"]);
    assert!(requests[1].tool_names().contains(&"fx__large".to_owned()));
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        system.contains("<server-instructions server=\"fx\">")
            && system.contains("<server-instructions server=\"other\">"),
        "{system}"
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("its text is 5000 bytes and only the first 1000 are shown"),
        "{stdout}"
    );
    let err = text(&out.stderr);
    assert!(err.contains("search \"large text\": "), "{err}");
    assert!(model.violations().is_empty(), "{:?}", model.violations());
}

#[test]
fn the_servers_of_a_run_are_answered_elicitation_roots_and_sampling() {
    let dir = TempDir::new("agent-cli");
    let file = config(&dir);
    let root = dir.path().join("shared data");
    std::fs::create_dir_all(&root).unwrap();
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("fx__elicit", json!({"message": "Who are you?"})),
            call("fx__roots", json!({})),
            call("fx__sample", json!({"prompt": "say hi"})),
        ]),
        Step::Summary("seen: ".into()),
    ])
    .unwrap();
    // The model that answers the server's sampling request: another endpoint.
    let sampler = ScriptedModel::start(vec![Step::Text("hi from the sampler".into())]).unwrap();
    let (url, sampling_url) = (model.base_url(), sampler.base_url());
    let out = mcpb(&[
        "--config",
        &file,
        "--input",
        "name=Ann",
        "--input",
        "age=33",
        "--root",
        root.to_str().unwrap(),
        "--sampling-model-url",
        &sampling_url,
        "--sampling-yes",
        "run",
        "--server",
        "fx",
        "--server",
        "other",
        "--model-url",
        &url,
        "go",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer = text(&out.stdout);
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines.len(), 3, "{answer}");
    // The form, answered by --input without a terminal.
    let elicited: Value = serde_json::from_str(lines[0].trim_start_matches("seen: ")).unwrap();
    assert_eq!(elicited["action"], "accept", "{answer}");
    assert_eq!(elicited["content"], json!({"name": "Ann", "age": 33}));
    // The root, as a file URI with its space encoded.
    assert!(
        lines[1].contains("file://") && lines[1].contains("shared%20data"),
        "{answer}"
    );
    // The sampling request, answered by the other model.
    assert!(lines[2].contains("hi from the sampler"), "{answer}");
    assert_eq!(sampler.requests().len(), 1);
    assert_eq!(model.violations(), Vec::<String>::new());
}
