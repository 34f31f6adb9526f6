//! `mcpb --url` against the in-repo loopback servers: Streamable HTTP, legacy SSE (explicit and
//! auto-detected) and WebSocket, with the same output and exit codes as stdio, and `--header` on
//! each.

mod common;
mod support_remote;

use std::process::Output;

use serde_json::Value;
use support_remote::mcp::{McpHttp, McpSse, Options};
use support_remote::ws::WsServer;

use common::mcpb::mcpb;

#[track_caller]
fn tool_names(o: &Output) -> Vec<String> {
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let tools = doc
        .get("tools")
        .and_then(Value::as_array)
        .or_else(|| doc.as_array())
        .expect("a tool list");
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn streamable_http() {
    let srv = McpHttp::start(Options::default());
    let names = tool_names(&mcpb(&["--url", &srv.url(), "--json", "tools"]));
    assert!(names.contains(&"add".to_owned()), "{names:?}");
    let o = mcpb(&[
        "--url",
        &srv.url(),
        "--transport",
        "http",
        "call",
        "add",
        "a=2",
        "b=3",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains('5'));
}

#[test]
fn legacy_sse_explicit_and_detected() {
    // One server per run: the loopback SSE server serves one stream at a time.
    let first = McpSse::start("/messages?sid=1");
    let url = first.server.url("/sse");
    let explicit = tool_names(&mcpb(&[
        "--url",
        &url,
        "--transport",
        "sse",
        "--json",
        "tools",
    ]));
    // Without --transport: Streamable HTTP is tried first, and its 405 sends it to legacy SSE.
    let second = McpSse::start("/messages?sid=1");
    let url = second.server.url("/sse");
    let detected = tool_names(&mcpb(&["--url", &url, "--json", "tools"]));
    assert!(!explicit.is_empty());
    assert_eq!(explicit, detected);
    assert_eq!(
        second.server.requests()[0].method,
        "POST",
        "Streamable HTTP was tried first"
    );
}

#[test]
fn websocket() {
    let srv = WsServer::start(true);
    let names = tool_names(&mcpb(&[
        "--url",
        &srv.url(),
        "--transport",
        "ws",
        "--json",
        "tools",
    ]));
    assert!(!names.is_empty());
}

#[test]
fn a_ws_url_is_websocket_without_transport() {
    let srv = WsServer::start(true);
    let url = srv.url();
    assert!(url.starts_with("ws://"), "{url}");
    let names = tool_names(&mcpb(&["--url", &url, "--json", "tools"]));
    assert!(!names.is_empty());
    let o = mcpb(&["--url", &url, "--json", "info"]);
    let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc["transport"], "websocket");
}

#[test]
fn header_goes_to_sse_and_websocket_servers() {
    let sse = McpSse::start("/messages?sid=1");
    let url = sse.server.url("/sse");
    let args = [
        "--transport",
        "sse",
        "--header",
        "X-Team: blue",
        "--json",
        "tools",
    ];
    let names = tool_names(&mcpb(&[&["--url", url.as_str()][..], &args[..]].concat()));
    assert!(!names.is_empty());
    let reqs = sse.server.requests();
    assert!(reqs.iter().any(|r| r.method == "GET"), "{reqs:?}");
    assert!(
        reqs.iter().all(|r| r.header("x-team") == Some("blue")),
        "{reqs:?}"
    );

    let ws = WsServer::start(true);
    let url = ws.url();
    let args = [
        "--transport",
        "ws",
        "--header",
        "X-Team: blue",
        "--json",
        "tools",
    ];
    let names = tool_names(&mcpb(&[&["--url", url.as_str()][..], &args[..]].concat()));
    assert!(!names.is_empty());
    assert_eq!(ws.handshake_header("x-team"), ["blue"]);
}

#[test]
fn a_server_that_never_answers_the_handshake_exits_3() {
    // Accepts the WebSocket upgrade and never answers: the handshake cannot complete.
    let srv = WsServer::start(false);
    let o = mcpb(&[
        "--url",
        &srv.url(),
        "--transport",
        "ws",
        "--timeout",
        "1",
        "tools",
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("initialize"));
}
