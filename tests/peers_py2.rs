//! The official Python SDK 2.x (`mcp` 2.3, `MCPServer`), which speaks both protocol eras, over
//! stdio and Streamable HTTP: the same calls (one of them asks the client to confirm, answered
//! by the same elicitation handler) give the same results in the legacy era
//! (`initialize`), the modern one (2026-07-28, `server/discover`) and `Auto` (which finds the
//! modern one). The SDK is installed under `target/peers/py2` on first use (see
//! `common/peers.rs`).
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use std::process::Command;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::launch::{self, Peer};
use common::peers;
use mcp_blocking::config::{ProtocolEra, ProtocolMode};
use mcp_blocking::handler::{
    notification_channel, Notification, ServerNotification, NOTIFICATION_CHANNEL_CAPACITY,
};
use mcp_blocking::model::{ElicitParams, ElicitResult};
use mcp_blocking::{Client, ServerConfig};
use serde_json::{json, Map, Value};

fn http_peer() -> Peer {
    let py2 = peers::python2();
    let mut cmd = Command::new(py2.python());
    cmd.arg("-u").arg(py2.script()).arg("streamable-http");
    launch::start(cmd, Duration::from_secs(60), |line| {
        line.strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
    })
    .unwrap_or_else(|e| panic!("python 2.x peer: {e}"))
}

/// What the calls return, as JSON, for comparison across eras.
fn exercise(client: &Client) -> Vec<Value> {
    let tools: Vec<String> = client
        .list_tools()
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    let add = client
        .call_tool("add", json!({"a": 2, "b": 40}))
        .expect("add");
    assert!(add.text().contains("42"), "{}", add.text());
    let shout = client
        .call_tool("shout", json!({"text": "hi"}))
        .expect("shout");
    let note = client.read_resource("note://today").expect("read");
    let confirm = client
        .call_tool("confirm", json!({"question": "sure?"}))
        .expect("confirm");
    assert_eq!(confirm.text(), "confirmed: true (state asked)");
    let prompt = client
        .get_prompt("review", json!({"code": "x = 1"}))
        .expect("prompt");
    vec![
        json!(tools),
        json!(add.content),
        json!(shout.content),
        json!(confirm.content),
        json!(note.contents),
        json!(prompt.messages),
        json!(client.server_info().map(|i| i.name)),
        json!(client.instructions()),
    ]
}

fn across_eras(config: impl Fn() -> ServerConfig) {
    let mut results = Vec::new();
    for (mode, era) in [
        (ProtocolMode::Legacy, ProtocolEra::Legacy),
        (ProtocolMode::Modern, ProtocolEra::Modern),
        (ProtocolMode::Auto, ProtocolEra::Modern),
    ] {
        let client = Client::builder(config().with_protocol(mode))
            .elicitation(|_server: &str, p: ElicitParams| {
                let mut content = Map::new();
                content.insert("confirmed".into(), json!(p.message == "sure?"));
                Ok(ElicitResult::accept(content))
            })
            .connect()
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(client.protocol_era(), Some(era), "{mode}");
        results.push(exercise(&client));
        client.close().expect("close");
    }
    assert_eq!(results[0], results[1], "legacy and modern differ");
    assert_eq!(results[1], results[2], "modern and auto differ");
}

#[test]
fn python_sdk_2_over_stdio_in_both_eras() {
    across_eras(|| peers::python2().stdio("py2"));
}

#[test]
fn python_sdk_2_over_streamable_http_in_both_eras() {
    let peer = http_peer();
    let url = format!("http://127.0.0.1:{}/mcp", peer.port);
    across_eras(|| {
        ServerConfig::http("py2-http", &url).with_timeout_secs(peers::PEER_TIMEOUT_SECS)
    });
}

/// Waits for a notification `want` accepts.
fn wait_for(notes: &Receiver<ServerNotification>, want: impl Fn(&Notification) -> bool) -> bool {
    loop {
        match notes.recv_timeout(Duration::from_secs(10)) {
            Ok((_, n)) if want(&n) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

/// Modern era: `subscribe` (a `subscriptions/listen`) brings `resources/updated`; in both eras
/// the notification handlers hear of list changes (the SDK does not implement the legacy
/// `resources/subscribe`).
fn subscriptions(config: impl Fn() -> ServerConfig) {
    for mode in [ProtocolMode::Legacy, ProtocolMode::Modern] {
        let (notify, notes) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
        let builder = Client::builder(config().with_protocol(mode)).on_notification(notify);
        let client = builder.connect().unwrap_or_else(|e| panic!("{mode}: {e}"));
        if mode == ProtocolMode::Modern {
            client.subscribe("note://today").expect("subscribe");
            let touched = client.call_tool("touch", json!({"uri": "note://today"}));
            assert_eq!(touched.expect("touch").text(), "touched");
            assert!(
                wait_for(
                    &notes,
                    |n| matches!(n, Notification::ResourceUpdated(u) if u.uri == "note://today")
                ),
                "{mode}: no resources/updated"
            );
            client.unsubscribe("note://today").expect("unsubscribe");
        }
        assert_eq!(client.call_tool("grow", json!({})).unwrap().text(), "grown");
        assert!(
            wait_for(&notes, |n| matches!(n, Notification::ToolsListChanged)),
            "{mode}: no tools/list_changed"
        );
        client.close().expect("close");
    }
}

#[test]
fn python_sdk_2_subscriptions_over_stdio_in_both_eras() {
    subscriptions(|| peers::python2().stdio("py2"));
}

#[test]
fn python_sdk_2_subscriptions_over_streamable_http_in_both_eras() {
    let peer = http_peer();
    let url = format!("http://127.0.0.1:{}/mcp", peer.port);
    subscriptions(|| {
        ServerConfig::http("py2-http", &url).with_timeout_secs(peers::PEER_TIMEOUT_SECS)
    });
}
