//! The client against real MCP servers over stdio: the reference `server-everything` and
//! `server-filesystem` (npm) and a server on the official Python SDK, each installed under
//! `target/peers/` on first use (see `common/peers.rs`).
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mcp_blocking::model::{Progress, SUPPORTED_PROTOCOL_VERSIONS};
use mcp_blocking::{CallOptions, Client, ServerConfig};
use serde_json::json;

use common::peers;

/// Tags a server's environment so that its processes (and any children) can be found in /proc.
fn tagged(config: ServerConfig, tag: &str) -> ServerConfig {
    config.with_env("MCP_BLOCKING_PEER_TAG", tag)
}

fn unique_tag(what: &str) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "{what}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Pids of live processes (zombies included) whose environment holds the tag.
fn tagged_pids(tag: &str) -> Vec<u32> {
    let needle = format!("MCP_BLOCKING_PEER_TAG={tag}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("read /proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            pids.push(pid);
        }
    }
    pids
}

/// Asserts that closing `client` ends every process of the server, leaving no zombie.
fn close_leaves_no_process(client: Client, tag: &str) {
    let before = tagged_pids(tag);
    assert!(
        !before.is_empty(),
        "no process carries the tag `{tag}`: the check would prove nothing"
    );
    client.close().expect("close");
    let left: Vec<u32> = before
        .iter()
        .copied()
        .filter(|pid| Path::new(&format!("/proc/{pid}")).exists())
        .collect();
    assert!(
        left.is_empty(),
        "processes left after close: {left:?} (of {before:?})"
    );
    assert!(
        tagged_pids(tag).is_empty(),
        "a new tagged process appeared after close"
    );
}

/// Calls `tool` asking for progress; returns the result's text and the progress received.
fn call_with_progress(
    client: &Client,
    tool: &str,
    args: serde_json::Value,
) -> (String, Vec<Progress>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let opts = CallOptions::new()
        .on_progress(move |p| sink.lock().expect("progress lock").push(p.clone()));
    let result = client
        .call_tool_with(tool, args, &opts)
        .expect("call with progress");
    assert!(!result.failed(), "{tool} failed: {}", result.text());
    let progress = seen.lock().expect("progress lock").clone();
    (result.text(), progress)
}

// ---- @modelcontextprotocol/server-everything ----------------------------------------------------

fn everything() -> (Client, String) {
    let tag = unique_tag("everything");
    let client = Client::connect(tagged(peers::npm().everything(), &tag))
        .expect("connect to server-everything");
    (client, tag)
}

#[test]
fn everything_handshake() {
    let (client, _tag) = everything();
    let info = client.server_info().expect("server info");
    assert_eq!(info.name, "mcp-servers/everything");
    let version = client.protocol_version().expect("protocol version");
    assert!(
        SUPPORTED_PROTOCOL_VERSIONS.contains(&version.as_str()),
        "{version}"
    );
    assert!(client.capabilities().expect("capabilities").tools.is_some());
    assert!(client
        .instructions()
        .unwrap_or_default()
        .contains("Everything Server"));
    client.ping().expect("ping");
}

#[test]
fn everything_tools() {
    let (client, _tag) = everything();
    let tools = client.list_tools().expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for want in [
        "echo",
        "get-sum",
        "trigger-long-running-operation",
        "get-structured-content",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let echo = client
        .call_tool("echo", json!({"message": "hi there"}))
        .expect("echo");
    assert_eq!(echo.text(), "Echo: hi there");
    assert!(!echo.failed());
    let sum = client
        .call_tool("get-sum", json!({"a": 2, "b": 40}))
        .expect("get-sum");
    assert_eq!(sum.text(), "The sum of 2 and 40 is 42.");
    let weather = client
        .call_tool("get-structured-content", json!({"location": "Chicago"}))
        .expect("get-structured-content");
    let structured = weather.structured_content.expect("structured content");
    assert!(structured.get("temperature").is_some(), "{structured}");
}

#[test]
fn everything_unknown_tool_is_an_error() {
    let (client, _tag) = everything();
    match client.call_tool("no-such-tool", json!({})) {
        // The TypeScript SDK answers an unknown tool either way, by version.
        Err(mcp_blocking::Error::Rpc { code, message, .. }) => {
            assert!(message.contains("no-such-tool"), "{code}: {message}")
        }
        Ok(r) => assert!(r.failed() && r.text().contains("no-such-tool"), "{r:?}"),
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn everything_resources() {
    let (client, _tag) = everything();
    let resources = client.list_resources().expect("resources/list");
    let uri = "demo://resource/static/document/architecture.md";
    assert!(resources.iter().any(|r| r.uri == uri), "{resources:?}");
    let doc = client.read_resource(uri).expect("read static");
    let text = doc.contents[0].as_text().expect("text contents");
    assert!(text.starts_with('#'), "{text}");

    let templates = client
        .list_resource_templates()
        .expect("resources/templates/list");
    assert!(templates
        .iter()
        .any(|t| t.uri_template == "demo://resource/dynamic/text/{resourceId}"));
    let dynamic = client
        .read_resource("demo://resource/dynamic/text/7")
        .expect("read dynamic");
    let text = dynamic.contents[0].as_text().expect("text contents");
    assert!(
        text.starts_with("Resource 7: This is a plaintext resource"),
        "{text}"
    );
}

#[test]
fn everything_prompts() {
    let (client, _tag) = everything();
    let prompts = client.list_prompts().expect("prompts/list");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"simple-prompt") && names.contains(&"args-prompt"),
        "{names:?}"
    );
    let simple = client
        .get_prompt("simple-prompt", json!(null))
        .expect("simple-prompt");
    assert_eq!(
        simple.messages[0].content.as_text(),
        Some("This is a simple prompt without arguments.")
    );
    let args = client
        .get_prompt("args-prompt", json!({"city": "Paris"}))
        .expect("args-prompt");
    assert_eq!(
        args.messages[0].content.as_text(),
        Some("What's weather in Paris?")
    );
}

#[test]
fn everything_progress() {
    let (client, _tag) = everything();
    let (text, progress) = call_with_progress(
        &client,
        "trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
    );
    assert_eq!(
        text,
        "Long running operation completed. Duration: 0.3 seconds, Steps: 3."
    );
    let steps: Vec<(f64, Option<f64>)> = progress.iter().map(|p| (p.progress, p.total)).collect();
    assert_eq!(
        steps,
        vec![(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );
}

#[test]
fn everything_close_leaves_no_process() {
    let (client, tag) = everything();
    client.ping().expect("ping");
    close_leaves_no_process(client, &tag);
}

// ---- @modelcontextprotocol/server-filesystem ----------------------------------------------------

/// A temporary directory holding `notes.txt`, removed on drop.
struct Sandbox(PathBuf);

impl Sandbox {
    fn new() -> Self {
        let dir = std::env::temp_dir()
            .canonicalize()
            .expect("temp dir")
            .join(unique_tag("mcp-blocking-fs"));
        std::fs::create_dir_all(&dir).expect("create sandbox");
        std::fs::write(dir.join("notes.txt"), "hello from a file\nsecond line\n")
            .expect("write notes");
        Sandbox(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().expect("utf-8").to_owned()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn filesystem(sandbox: &Sandbox) -> (Client, String) {
    let tag = unique_tag("filesystem");
    let config = tagged(peers::npm().filesystem(&sandbox.0), &tag);
    (
        Client::connect(config).expect("connect to server-filesystem"),
        tag,
    )
}

#[test]
fn filesystem_reads_lists_and_writes() {
    let sandbox = Sandbox::new();
    let (client, _tag) = filesystem(&sandbox);
    assert_eq!(
        client.server_info().expect("info").name,
        "secure-filesystem-server"
    );
    let names: Vec<String> = client
        .list_tools()
        .expect("tools")
        .into_iter()
        .map(|t| t.name)
        .collect();
    for want in ["read_text_file", "write_file", "list_directory"] {
        assert!(
            names.iter().any(|n| n == want),
            "{want} missing from {names:?}"
        );
    }

    let read = client
        .call_tool("read_text_file", json!({"path": sandbox.path("notes.txt")}))
        .expect("read_text_file");
    assert_eq!(read.text(), "hello from a file\nsecond line\n");

    let head = client
        .call_tool(
            "read_text_file",
            json!({"path": sandbox.path("notes.txt"), "head": 1}),
        )
        .expect("read_text_file head");
    assert_eq!(head.text(), "hello from a file");

    let written = client
        .call_tool(
            "write_file",
            json!({"path": sandbox.path("new.txt"), "content": "written by the client"}),
        )
        .expect("write_file");
    assert!(!written.failed(), "{}", written.text());
    assert_eq!(
        std::fs::read_to_string(sandbox.0.join("new.txt")).expect("read back"),
        "written by the client"
    );

    let listing = client
        .call_tool("list_directory", json!({"path": sandbox.path("")}))
        .expect("list_directory");
    let mut lines: Vec<String> = listing.text().lines().map(str::to_owned).collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["[FILE] new.txt", "[FILE] notes.txt"]);
}

#[test]
fn filesystem_refuses_paths_outside_its_root() {
    let sandbox = Sandbox::new();
    let (client, _tag) = filesystem(&sandbox);
    let outside = client
        .call_tool("read_text_file", json!({"path": "/etc/hostname"}))
        .expect("a refusal is a tool result");
    assert!(
        outside.failed(),
        "read outside the root: {}",
        outside.text()
    );
    assert!(
        outside.text().contains("Access denied"),
        "{}",
        outside.text()
    );
}

#[test]
fn filesystem_close_leaves_no_process() {
    let sandbox = Sandbox::new();
    let (client, tag) = filesystem(&sandbox);
    client.list_tools().expect("tools");
    close_leaves_no_process(client, &tag);
}

// ---- a server on the Python SDK -----------------------------------------------------------------

fn python() -> (Client, String) {
    let tag = unique_tag("python");
    let config = tagged(
        peers::python().script("python-peer", "python_stdio_server.py"),
        &tag,
    );
    (
        Client::connect(config).expect("connect to the Python server"),
        tag,
    )
}

#[test]
fn python_handshake_and_tools() {
    let (client, _tag) = python();
    assert_eq!(client.server_info().expect("info").name, "python-peer");
    assert_eq!(
        client.instructions().as_deref(),
        Some("A Python SDK server used by mcp-blocking's tests.")
    );
    let tools = client.list_tools().expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, vec!["add", "shout", "count_down", "fail"]);
    let add = tools.iter().find(|t| t.name == "add").expect("add");
    assert_eq!(add.input_schema["required"], json!(["a", "b"]));

    let sum = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .expect("add");
    assert_eq!(sum.text(), "5");
    assert_eq!(sum.structured_content, Some(json!({"result": 5})));

    let shout = client
        .call_tool("shout", json!({"text": "quiet"}))
        .expect("shout");
    assert_eq!(shout.text(), "QUIET!");

    let fail = client
        .call_tool("fail", json!({}))
        .expect("a tool error is a result");
    assert!(fail.failed());
    assert!(
        fail.text().contains("this tool fails on purpose"),
        "{}",
        fail.text()
    );
}

#[test]
fn python_progress() {
    let (client, _tag) = python();
    let (text, progress) = call_with_progress(&client, "count_down", json!({"steps": 3}));
    assert_eq!(text, "counted down from 3");
    let seen: Vec<(f64, Option<f64>, Option<String>)> = progress
        .into_iter()
        .map(|p| (p.progress, p.total, p.message))
        .collect();
    assert_eq!(
        seen,
        (1..=3)
            .map(|i| (f64::from(i), Some(3.0), Some(format!("step {i} of 3"))))
            .collect::<Vec<_>>()
    );
}

#[test]
fn python_resources_and_prompts() {
    let (client, _tag) = python();
    let resources = client.list_resources().expect("resources/list");
    assert_eq!(
        resources.iter().map(|r| r.uri.as_str()).collect::<Vec<_>>(),
        vec!["note://today"]
    );
    let today = client.read_resource("note://today").expect("read");
    assert_eq!(today.contents[0].as_text(), Some("Water the plants."));
    assert_eq!(today.contents[0].mime_type(), Some("text/plain"));

    let templates = client.list_resource_templates().expect("templates");
    assert_eq!(templates[0].uri_template, "note://by-day/{day}");
    let monday = client
        .read_resource("note://by-day/monday")
        .expect("read template");
    assert_eq!(monday.contents[0].as_text(), Some("Note for monday."));

    let prompt = client
        .get_prompt("review", json!({"language": "Rust"}))
        .expect("prompt");
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Review this Rust code, looking for bugs.")
    );
    let focused = client
        .get_prompt("review", json!({"language": "Go", "focus": "races"}))
        .expect("prompt with both arguments");
    assert_eq!(
        focused.messages[0].content.as_text(),
        Some("Review this Go code, looking for races.")
    );
}

#[test]
fn python_close_leaves_no_process() {
    let (client, tag) = python();
    client.ping().expect("ping");
    close_leaves_no_process(client, &tag);
}
