//! Real peers over the remote transports: `@modelcontextprotocol/server-everything` in its
//! Streamable HTTP and SSE modes, and a Python `mcp` SDK server (uvicorn) over Streamable HTTP and
//! SSE. Each: list tools, call a tool, read a resource, get a prompt, and a progress-reporting
//! tool. The peers are installed under `target/peers/` on first use (see `common/peers.rs`).
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_blocking::{CallOptions, Client, ServerConfig};
use serde_json::json;

use common::launch::{self, Peer};
use common::peers;

fn text(r: &mcp_blocking::model::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

fn everything(mode: &str) -> Peer {
    let port = launch::free_port();
    let mut cmd = Command::new(peers::node());
    cmd.arg(peers::npm().entry(peers::EVERYTHING))
        .arg(mode)
        .env("PORT", port.to_string())
        .env("PATH", peers::path_with_node());
    launch::start(cmd, Duration::from_secs(30), move |line| {
        (line.contains("listening on port") || line.contains("running on port")).then_some(port)
    })
    .unwrap_or_else(|e| panic!("server-everything {mode}: {e}"))
}

fn python(mode: &str) -> Peer {
    let py = peers::python().python();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/support_remote/python_peer.py"
    );
    let mut cmd = Command::new(py);
    cmd.arg(script).arg(mode);
    launch::start(cmd, Duration::from_secs(30), |line| {
        line.strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
    })
    .unwrap_or_else(|e| panic!("python peer {mode}: {e}"))
}

fn exercise_everything(client: &Client) {
    let tools = client.list_tools().expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "get-sum"), "{tools:?}");
    let r = client
        .call_tool("get-sum", json!({"a": 2, "b": 40}))
        .expect("get-sum");
    assert!(text(&r).contains("42"), "{}", text(&r));
    let r = client
        .call_tool("echo", json!({"message": "hi"}))
        .expect("echo");
    assert!(text(&r).contains("hi"));
    let resources = client.list_resources().expect("resources/list");
    let first = resources.first().expect("a resource");
    let read = client.read_resource(&first.uri).expect("resources/read");
    assert!(!read.contents.is_empty());
    let prompt = client
        .get_prompt("simple-prompt", json!({}))
        .expect("prompts/get");
    assert!(!prompt.messages.is_empty());
    let steps = Arc::new(Mutex::new(Vec::new()));
    let s = steps.clone();
    let opts = CallOptions::new()
        .timeout(Duration::from_secs(20))
        .on_progress(move |p| s.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 3}),
            &opts,
        )
        .expect("long-running operation");
    assert!(text(&r).contains("completed"), "{}", text(&r));
    assert_eq!(*steps.lock().unwrap(), vec![1.0, 2.0, 3.0]);
}

fn exercise_python(client: &Client) {
    let tools = client.list_tools().expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "add"));
    let r = client
        .call_tool("add", json!({"a": 1.5, "b": 2}))
        .expect("add");
    assert_eq!(text(&r), "3.5");
    let read = client
        .read_resource("test://greeting")
        .expect("resources/read");
    let v = serde_json::to_value(&read).expect("json");
    assert_eq!(v["contents"][0]["text"], "hello from python");
    let prompt = client
        .get_prompt("review", json!({"code": "x = 1"}))
        .expect("prompts/get");
    assert_eq!(prompt.messages.len(), 1);
    let steps = Arc::new(Mutex::new(Vec::new()));
    let s = steps.clone();
    let opts = CallOptions::new().on_progress(move |p| s.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with("count", json!({"steps": 3}), &opts)
        .expect("count");
    assert_eq!(text(&r), "counted 3");
    assert_eq!(*steps.lock().unwrap(), vec![1.0, 2.0, 3.0]);
}

#[test]
fn server_everything_over_streamable_http() {
    let peer = everything("streamableHttp");
    let url = format!("http://127.0.0.1:{}/mcp", peer.port);
    let client = Client::connect(ServerConfig::http("everything", url).with_timeout_secs(20.0))
        .expect("connect");
    exercise_everything(&client);
    client.close().expect("close");
}

#[test]
fn server_everything_over_legacy_sse() {
    let peer = everything("sse");
    let url = format!("http://127.0.0.1:{}/sse", peer.port);
    let client = Client::connect(ServerConfig::sse("everything-sse", url).with_timeout_secs(20.0))
        .expect("connect");
    exercise_everything(&client);
    client.close().expect("close");
}

#[test]
fn python_sdk_over_streamable_http() {
    let peer = python("streamable-http");
    let url = format!("http://127.0.0.1:{}/mcp", peer.port);
    let client = Client::connect(ServerConfig::http("python", url).with_timeout_secs(20.0))
        .expect("connect");
    exercise_python(&client);
    client.close().expect("close");
}

#[test]
fn python_sdk_over_legacy_sse() {
    let peer = python("sse");
    let url = format!("http://127.0.0.1:{}/sse", peer.port);
    let client = Client::connect(ServerConfig::sse("python-sse", url).with_timeout_secs(20.0))
        .expect("connect");
    exercise_python(&client);
    client.close().expect("close");
}
