//! WebSocket through `Client`: subprotocol `mcp`, text frames, ping/pong, the close handshake in
//! both directions, and timeouts on a silent server.

mod common;
mod support_remote;

use std::time::{Duration, Instant};

use common::settle::settled;
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::json;
use support_remote::ws::WsServer;
use support_remote::HttpServer;

fn text(r: &mcp_blocking::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

fn connect(srv: &WsServer, name: &str) -> Client {
    Client::connect(ServerConfig::websocket(name, srv.url()).timeout_secs(5.0)).expect("connect")
}

#[test]
fn lists_and_calls_tools_with_the_mcp_subprotocol() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "ws");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    let r = client
        .call_tool("add", json!({"a": 20, "b": 22}))
        .expect("call");
    assert_eq!(text(&r), "42");
    client.close().expect("close");
    let seen = srv.seen();
    assert_eq!(seen.subprotocol.as_deref(), Some("mcp"));
    assert!(seen.texts[0].contains("\"initialize\""));
    for t in &seen.texts {
        serde_json::from_str::<serde_json::Value>(t).expect("one JSON message per text frame");
    }
}

#[test]
fn a_ping_is_answered_with_a_pong() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "ping");
    let r = client.call_tool("ping-me", json!({})).expect("call");
    assert_eq!(text(&r), "pong received");
    client.close().expect("close");
    assert_eq!(srv.seen().pongs, 1);
}

#[test]
fn close_sends_a_close_frame_and_ends_the_reader() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "thr3");
    client.list_tools().expect("list");
    assert!(thread_names().iter().any(|n| n == "mcp-ws:thr3"));
    let started = Instant::now();
    client.close().expect("close");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(srv.seen().close_frames, 1);
    let left = settled(thread_names, |names| {
        !names.iter().any(|n| n == "mcp-ws:thr3")
    });
    assert!(!left.iter().any(|n| n == "mcp-ws:thr3"), "{left:?}");
}

#[test]
fn a_server_close_fails_the_pending_call_at_once() {
    let srv = WsServer::start(true);
    let client = Client::connect(ServerConfig::websocket("c", srv.url()).timeout_secs(10.0))
        .expect("connect");
    let started = Instant::now();
    let err = client.call_tool("close-me", json!({})).expect_err("closed");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    client.close().expect("close");
}

#[test]
fn a_silent_server_times_out_on_time() {
    let srv = WsServer::start(false);
    let started = Instant::now();
    let err = Client::connect(ServerConfig::websocket("silent", srv.url()).timeout_secs(0.5))
        .expect_err("no initialize answer");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(err.to_string().contains("silent"), "{err}");
}

#[test]
fn a_call_times_out_on_time() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "slow");
    let started = Instant::now();
    let err = client
        .call_tool_with(
            "unknown-never",
            json!({}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .err();
    // The loopback server answers unknown tools with nothing: a timeout.
    assert!(matches!(err, Some(Error::Timeout { .. })), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(1500));
    client.close().expect("close");
}

#[test]
fn a_handshake_that_never_answers_times_out_on_time() {
    let srv = HttpServer::start(|_req, conn| conn.wait_for_peer_close());
    let url = format!("ws://127.0.0.1:{}/", srv.port());
    let started = Instant::now();
    let err = Client::connect(ServerConfig::websocket("hs", url).timeout_secs(0.5))
        .expect_err("no upgrade");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
    assert!(
        matches!(err, Error::Timeout { .. } | Error::Connect { .. }),
        "{err:?}"
    );
}

#[test]
fn a_refused_upgrade_is_a_typed_error() {
    let srv = HttpServer::start(|_req, conn| conn.respond(403, &[], b"forbidden"));
    let url = format!("ws://127.0.0.1:{}/", srv.port());
    let err =
        Client::connect(ServerConfig::websocket("no", url).timeout_secs(2.0)).expect_err("403");
    match err {
        Error::Transport { status, .. } => assert_eq!(status, Some(403)),
        other => panic!("{other:?}"),
    }
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
