//! Legacy HTTP+SSE through `Client`: the `endpoint` event (relative URLs, another origin
//! refused), POST + stream routing, a stream that ends, handshake timeouts, and auto-detection
//! from a URL given without a type.

mod common;
mod support_remote;

use std::time::{Duration, Instant};

use common::settle::settled;
use mcp_blocking::{Client, ConfigLoader, Error, ServerConfig};
use serde_json::json;
use support_remote::mcp::McpSse;
use support_remote::HttpServer;

fn text(r: &mcp_blocking::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

#[test]
fn lists_and_calls_tools_over_legacy_sse() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("old", srv.server.url("/sse")).timeout_secs(5.0))
            .expect("connect");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    let r = client
        .call_tool("add", json!({"a": 4, "b": 5}))
        .expect("call");
    assert_eq!(text(&r), "9");
    client.close().expect("close");
    let posts: Vec<_> = srv
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert!(posts.iter().all(|r| r.path == "/messages?sid=1"));
    assert_eq!(posts[0].rpc_method(), "initialize");
}

#[test]
fn a_relative_endpoint_resolves_against_the_stream_url() {
    let srv = McpSse::start("messages?sid=2");
    let client =
        Client::connect(ServerConfig::sse("rel", srv.server.url("/sse")).timeout_secs(5.0))
            .expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    let post = srv
        .server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a POST");
    assert_eq!(post.path, "/messages?sid=2");
}

#[test]
fn an_endpoint_on_another_origin_is_refused() {
    let srv = McpSse::start("http://evil.example/messages?sid=1");
    let err = Client::connect(ServerConfig::sse("o", srv.server.url("/sse")).timeout_secs(5.0))
        .expect_err("refused");
    assert!(err.to_string().contains("origin"), "{err}");
    assert!(srv.server.requests().iter().all(|r| r.method != "POST"));
}

#[test]
fn an_endpoint_on_another_port_is_refused() {
    let srv = McpSse::start("http://127.0.0.1:1/messages");
    let err = Client::connect(ServerConfig::sse("p", srv.server.url("/sse")).timeout_secs(5.0))
        .expect_err("refused");
    assert!(err.to_string().contains("origin"), "{err}");
}

#[test]
fn a_stream_that_ends_fails_the_pending_call_at_once() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("end", srv.server.url("/sse")).timeout_secs(10.0))
            .expect("connect");
    let started = Instant::now();
    let err = client
        .call_tool("die", json!({}))
        .expect_err("stream ended");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    client.close().expect("close");
}

#[test]
fn a_stream_without_an_endpoint_event_times_out_on_time() {
    let srv = HttpServer::start(|_req, conn| {
        conn.sse_start(&[]);
        conn.wait_for_peer_close();
    });
    let started = Instant::now();
    let err = Client::connect(ServerConfig::sse("mute", srv.url("/sse")).timeout_secs(0.5))
        .expect_err("no endpoint");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
    assert!(err.to_string().contains("mute"), "{err}");
}

#[test]
fn a_404_on_the_stream_is_a_typed_error() {
    let srv = HttpServer::start(|_req, conn| conn.respond(404, &[], b"no such stream"));
    let err = Client::connect(ServerConfig::sse("nf", srv.url("/sse")).timeout_secs(2.0))
        .expect_err("404");
    match err {
        Error::Transport { status, .. } => assert_eq!(status, Some(404)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_url_without_a_type_falls_back_to_legacy_sse() {
    let srv = McpSse::start("/messages?sid=1");
    let doc = format!(
        r#"{{"mcpServers": {{"auto": {{"url": "{}", "timeout": 5}}}}}}"#,
        srv.server.url("/sse")
    );
    let report = ConfigLoader::new().load_str(&doc).expect("config");
    let cfg = report.server("auto").expect("server").clone();
    let client = Client::connect(cfg).expect("connect");
    let r = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .expect("call");
    assert_eq!(text(&r), "2");
    client.close().expect("close");
    let reqs = srv.server.requests();
    assert_eq!(reqs[0].method, "POST", "Streamable HTTP is tried first");
    assert_eq!(reqs[0].path, "/sse");
    assert!(reqs.iter().any(|r| r.method == "GET" && r.path == "/sse"));
}

#[test]
fn without_detection_a_405_is_an_error() {
    let srv = McpSse::start("/messages?sid=1");
    let err =
        Client::connect(ServerConfig::http("strict", srv.server.url("/sse")).timeout_secs(2.0))
            .expect_err("405");
    assert!(err.to_string().contains("405"), "{err}");
}

#[test]
fn the_stream_thread_ends_on_close() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("thr2", srv.server.url("/sse")).timeout_secs(5.0))
            .expect("connect");
    assert!(thread_names().iter().any(|n| n == "mcp-sse:thr2"));
    let started = Instant::now();
    client.close().expect("close");
    assert!(started.elapsed() < Duration::from_secs(2));
    let left = settled(thread_names, |names| {
        !names.iter().any(|n| n == "mcp-sse:thr2")
    });
    assert!(!left.iter().any(|n| n == "mcp-sse:thr2"), "{left:?}");
}

fn thread_names() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|s| s.trim().to_owned())
        .collect()
}
