//! A host file's policy keys enforced by `mcpb`, end to end (the mcpb binary, the fixture
//! server, the scripted model on loopback): an excluded tool is neither listed, nor callable
//! (exit 2 naming the key and the file), nor offered to the model; a tool left out of an
//! auto-approve list is refused by `mcpb run` without a terminal (the model and the user are
//! told to rerun with `--yes`), and runs with `--yes`; `chat` never reads an answer from
//! its messages.

use std::time::Duration;

use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::{json, Value};

mod common;

use common::mcpb::{command, mcpb, wait_within};
use common::tempdir::TempDir;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A Gemini CLI `settings.json` whose server excludes `add` and `slo*`, beside one that does not.
fn gemini_file(dir: &TempDir) -> String {
    let fixture = common::fixture::path();
    let doc = json!({"mcpServers": {
        "gem": {"command": fixture, "excludeTools": ["add", "slo*"]},
        "other": {"command": fixture},
    }});
    dir.file("settings.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

/// A Cline `cline_mcp_settings.json` whose server auto-approves `echo` only.
fn cline_file(dir: &TempDir) -> String {
    let fixture = common::fixture::path();
    let doc = json!({"mcpServers": {
        "fx": {"command": fixture, "autoApprove": ["echo"]},
    }});
    dir.file("cline_mcp_settings.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

#[test]
fn tools_does_not_list_an_excluded_tool() {
    let dir = TempDir::new("cli-policy");
    let file = gemini_file(&dir);
    let out = mcpb(&["--config", &file, "--server", "gem", "--json", "tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = doc["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"echo"), "{names:?}");
    assert!(
        !names.contains(&"add") && !names.contains(&"slow"),
        "{names:?}"
    );
}

#[test]
fn call_of_an_excluded_tool_exits_2_naming_the_key_and_the_file() {
    let dir = TempDir::new("cli-policy");
    let file = gemini_file(&dir);
    let out = mcpb(&[
        "--config", &file, "--server", "gem", "call", "add", "a=1", "b=2",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("server `gem`: tool `add` is excluded by `excludeTools`"),
        "{err}"
    );
    assert!(err.contains("mcpServers.gem.excludeTools"), "{err}");
    assert!(err.contains("settings.json"), "{err}");
    assert!(out.stdout.is_empty());

    // A glob, with --json: the refusal's kind, tool, key and file.
    let out = mcpb(&[
        "--config", &file, "--server", "gem", "--json", "call", "slow", "ms=1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "tool_not_allowed");
    assert_eq!(doc["error"]["server"], "gem");
    assert_eq!(doc["error"]["tool"], "slow");
    assert_eq!(doc["error"]["key"], "mcpServers.gem.excludeTools");
    assert!(doc["error"]["file"]
        .as_str()
        .is_some_and(|f| f.ends_with("settings.json")));
}

#[test]
fn across_the_files_servers_an_excluded_tool_is_refused_by_its_server() {
    let dir = TempDir::new("cli-policy");
    let file = gemini_file(&dir);
    // Named by its server: refused.
    let out = mcpb(&["--config", &file, "--json", "call", "gem/add", "a=1", "b=2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "tool_not_allowed");
    assert_eq!(doc["error"]["server"], "gem");
    // By its bare name: the server that allows it runs it.
    let out = mcpb(&["--config", &file, "call", "add", "a=1", "b=2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "3");
    // Every tool listing leaves `gem`'s excluded tools out.
    let out = mcpb(&["--config", &file, "--json", "tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    for s in doc["servers"].as_array().unwrap() {
        let names: Vec<&str> = s["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(
            names.contains(&"add"),
            s["server"] == "other",
            "{}: {names:?}",
            s["server"]
        );
    }
}

fn run(file: &str, model: &ScriptedModel, extra: &[&str]) -> std::process::Output {
    let url = model.base_url();
    let mut args = vec!["--config", file, "run", "--model-url", &url];
    args.extend_from_slice(extra);
    args.push("count, then echo");
    mcpb(&args)
}

/// The model calls `counter` (not auto-approved) and `echo` (auto-approved), then repeats
/// their results.
fn counter_and_echo() -> ScriptedModel {
    ScriptedModel::start(vec![
        calls(vec![
            call("counter", json!({})),
            call("echo", json!({"text": "ok"})),
        ]),
        Step::Summary(String::new()),
    ])
    .unwrap()
}

#[test]
fn run_without_a_terminal_refuses_a_tool_that_needs_approval() {
    let dir = TempDir::new("cli-policy");
    let file = cline_file(&dir);
    let model = counter_and_echo();
    let out = run(&file, &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer = text(&out.stdout);
    // The model was told the tool needs approval and to have the user rerun with --yes.
    assert!(
        answer.starts_with("Not run: the tool `counter` of server `fx` needs the user's approval"),
        "{answer}"
    );
    assert!(answer.contains("--yes"), "{answer}");
    assert!(answer.contains("mcpServers.fx.autoApprove"), "{answer}");
    assert!(answer.trim_end().ends_with("ok"), "{answer}");
    // The user too.
    let err = text(&out.stderr);
    assert!(
        err.contains("server `fx`: tool `counter` needs approval"),
        "{err}"
    );
    assert!(err.contains("run again with --yes"), "{err}");
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[test]
fn run_with_yes_approves_every_call() {
    let dir = TempDir::new("cli-policy");
    let file = cline_file(&dir);
    let model = counter_and_echo();
    let out = run(&file, &model, &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1\nok\n");
    assert!(!text(&out.stderr).contains("needs approval"));
}

#[test]
fn run_never_offers_an_excluded_tool_to_the_model() {
    let dir = TempDir::new("cli-policy");
    let file = gemini_file(&dir);
    let model = ScriptedModel::start(vec![
        calls(vec![call("gem__add", json!({"a": 1, "b": 2}))]),
        Step::Summary(String::new()),
    ])
    .unwrap();
    let out = run(&file, &model, &["--server", "gem", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let offered = model.requests()[0].tool_names();
    assert!(offered.contains(&"echo".to_string()), "{offered:?}");
    assert!(
        !offered
            .iter()
            .any(|n| n.ends_with("add") || n.contains("slow")),
        "{offered:?}"
    );
    // Called anyway, it is not found: nothing ran.
    assert!(
        text(&out.stdout).starts_with("Tool not found: `gem__add`"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn chat_does_not_take_an_approval_from_its_messages() {
    use std::io::Write;
    use std::process::Stdio;
    let dir = TempDir::new("cli-policy");
    let file = cline_file(&dir);
    let model = ScriptedModel::start(vec![
        calls(vec![call("counter", json!({}))]),
        Step::Summary(String::new()),
        Step::Text("a message".into()),
    ])
    .unwrap();
    let url = model.base_url();
    let mut child = command(&["--config", &file, "chat", "--model-url", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The `y` after the first message is the next message, not an answer to a question.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"count\ny\n").unwrap();
    drop(stdin);
    let out = wait_within(child, "mcpb chat", Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answers = text(&out.stdout);
    assert!(
        answers.starts_with("Not run: the tool `counter` of server `fx` needs the user's approval"),
        "{answers}"
    );
    assert!(answers.ends_with("a message\n"), "{answers}");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    let last = reqs[2].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["content"], "y");
}

/// A VS Code `mcp.json` whose server asked for a sandbox.
fn sandboxed_file(dir: &TempDir) -> String {
    let fixture = common::fixture::path();
    let doc = json!({"servers": {
        "boxed": {"command": fixture, "sandboxEnabled": true,
                  "sandbox": {"filesystem": {"allowWrite": ["."]}}},
    }});
    dir.file("mcp.json", &doc.to_string())
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_server_that_asked_for_a_sandbox_starts_in_it() {
    let dir = TempDir::new("cli-policy");
    let file = sandboxed_file(&dir);
    let out = mcpb(&[
        "--config", &file, "--server", "boxed", "call", "echo", "text=hi",
    ]);
    if !cfg!(target_os = "linux") {
        // No sandbox applies here: the server does not start without one.
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains("servers.boxed.sandboxEnabled"), "{err}");
        assert!(err.contains("applied on Linux"), "{err}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("hi"), "{}", text(&out.stdout));
    // Confined as the file asks: a file outside its paths is refused to it, and read by the
    // same server from a file without the sandbox.
    let outside = TempDir::new("cli-policy-outside");
    let secret = outside.file("secret.txt", "the key");
    let read = |file: &str| {
        let path = format!("path={}", secret.display());
        let out = mcpb(&[
            "--config",
            file,
            "--server",
            "boxed",
            "call",
            "escape",
            "what=read",
            &path,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let shown = read(&file);
    assert!(
        shown.contains("refused") && shown.contains("errno 13"),
        "{shown}"
    );
    let plain = dir.file(
        "plain.json",
        &json!({"servers": {"boxed": {"command": common::fixture::path()}}}).to_string(),
    );
    let shown = read(&plain.to_string_lossy());
    assert!(shown.contains("ok: the key"), "{shown}");
}

#[test]
fn servers_shows_what_each_servers_policy_limits() {
    let dir = TempDir::new("cli-policy-servers");
    let gemini = gemini_file(&dir);
    let out = mcpb(&["--config", &gemini, "servers"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("excludes: add, slo* (`excludeTools`)"),
        "{shown}"
    );
    let out = mcpb(&["--config", &gemini, "--json", "servers"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        doc["servers"][0]["policy"],
        json!({"exclude": {"tools": ["add", "slo*"], "key": "mcpServers.gem.excludeTools"}})
    );
    // A server the file does not limit has no policy.
    assert_eq!(doc["servers"][1]["policy"], Value::Null);

    let cline = cline_file(&dir);
    let out = mcpb(&["--config", &cline, "servers"]);
    let shown = text(&out.stdout);
    assert!(
        shown.contains("asks before every tool but: echo (`autoApprove`)"),
        "{shown}"
    );
}

/// Every host's own spelling of an exclusion, through `mcpb`: Codex's `disabled_tools`,
/// Windsurf's and Roo Code's `disabledTools`; Zed's file (whose entries hold no tool keys)
/// offers every tool.
#[test]
fn each_hosts_exclusion_is_enforced_by_mcpb() {
    let dir = TempDir::new("cli-policy-hosts");
    let fixture = common::fixture::path();
    let codex = dir.file(
        "config.toml",
        &format!("[mcp_servers.fx]\ncommand = '{fixture}'\ndisabled_tools = [\"add\"]\n"),
    );
    let windsurf = dir.file(
        "mcp_config.json",
        &json!({"mcpServers": {"fx": {"command": fixture, "disabledTools": ["add"]}}}).to_string(),
    );
    let roo = dir.file(
        "mcp_settings.json",
        &json!({"mcpServers": {"fx": {"command": fixture, "alwaysAllow": ["echo"],
                                      "disabledTools": ["add"]}}})
        .to_string(),
    );
    let zed = dir.file(
        "settings.json",
        &json!({"theme": "One Dark", "context_servers": {
            "fx": {"source": "custom", "command": fixture, "args": []}}})
        .to_string(),
    );
    for (file, key) in [
        (&codex, "mcp_servers.fx.disabled_tools"),
        (&windsurf, "mcpServers.fx.disabledTools"),
        (&roo, "mcpServers.fx.disabledTools"),
    ] {
        let file = file.to_string_lossy();
        let out = mcpb(&["--config", &file, "--json", "tools"]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<&str> = doc["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            names.contains(&"echo") && !names.contains(&"add"),
            "{file}: {names:?}"
        );
        let out = mcpb(&["--config", &file, "--json", "call", "add", "a=1", "b=2"]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", text(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["error"]["kind"], "tool_not_allowed", "{file}");
        assert_eq!(doc["error"]["key"], key, "{file}");
        assert_eq!(doc["error"]["file"], file.as_ref(), "{file}");
    }
    let zed = zed.to_string_lossy();
    let out = mcpb(&["--config", &zed, "call", "add", "a=1", "b=2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "3");
}

/// Codex's approval modes reach `mcpb run`: with `default_tools_approval_mode = "prompt"` and
/// `echo` set to `approve`, `counter` is refused without a terminal and `echo` runs.
#[test]
fn codex_approval_modes_make_run_ask() {
    let dir = TempDir::new("cli-policy-codex");
    let fixture = common::fixture::path();
    let file = dir.file(
        "config.toml",
        &format!(
            "[mcp_servers.fx]\ncommand = '{fixture}'\ndefault_tools_approval_mode = \"prompt\"\n\n\
             [mcp_servers.fx.tools.echo]\napproval_mode = \"approve\"\n"
        ),
    );
    let model = counter_and_echo();
    let out = run(&file.to_string_lossy(), &model, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let answer = text(&out.stdout);
    assert!(
        answer.starts_with("Not run: the tool `counter` of server `fx` needs the user's approval"),
        "{answer}"
    );
    assert!(answer.trim_end().ends_with("ok"), "{answer}");
    let model = counter_and_echo();
    let out = run(&file.to_string_lossy(), &model, &["--yes"]);
    assert_eq!(text(&out.stdout), "1\nok\n", "{}", text(&out.stderr));
}
