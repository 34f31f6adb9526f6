//! The TypeScript SDK v2 server (`@modelcontextprotocol/server` 2.4, `tests/peers/ts2_server.cjs`),
//! which serves protocol 2026-07-28 and, from the same server factory, the 2025 era, over stdio
//! (`serveStdio`: the opening exchange picks the era) and Streamable HTTP (`createMcpHandler`:
//! 2026-07-28 per request, the 2025 era through its stateless fallback). The same calls (one of
//! them asks the client to confirm, answered by the same elicitation handler: a server-to-client
//! `elicitation/create` in the legacy era, an `input_required` result in the modern one), a
//! resource and a prompt give the same results in the legacy era (`initialize`), the modern one
//! (`server/discover`) and `Auto`, which finds the modern one; the server's own `era` tool
//! says which era each connection got. The package is installed under `target/peers/npm` on
//! first use (see `common/peers.rs`).
//!
//! What the SDK serves, precisely: over stdio both eras fully. Over HTTP its default (the
//! 2025 era through a stateless fallback: one fresh instance per request, which never saw
//! `initialize`) cannot make client requests, so there the legacy `confirm` is the SDK's error
//! result `Client does not support form elicitation.`; with the 2025 era routed to sessions
//! (`http-sessions`) it asks as it does over stdio. Its `server/discover` offers only
//! `2026-07-28` and no tasks extension (the v2 SDK has no tasks runtime), so
//! `call_tool_as_task` is a typed error there.
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::launch::{self, Peer};
use common::peers;
use mcp_blocking::config::{ProtocolEra, ProtocolMode, MODERN_PROTOCOL_VERSION};
use mcp_blocking::error::TaskErrorKind;
use mcp_blocking::model::{ElicitParams, ElicitResult};
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Map, Value};

/// The server over Streamable HTTP: `http` (the SDK's default: a stateless fallback for the
/// 2025 era) or `http-sessions` (the 2025 era on sessions).
fn http_peer(mode: &str) -> Peer {
    let npm = peers::npm();
    let mut cmd = Command::new(peers::node());
    cmd.args(npm.ts2_args(mode));
    launch::start(cmd, Duration::from_secs(60), |line| {
        line.strip_prefix("PORT ")
            .and_then(|p| p.trim().parse().ok())
    })
    .unwrap_or_else(|e| panic!("TypeScript SDK v2 peer: {e}"))
}

/// What the calls return, as JSON, for comparison across eras. With `elicits` false (the
/// SDK's stateless 2025-era fallback over HTTP, where each request has an instance of its own
/// that never saw `initialize` and cannot be answered), `confirm` is the SDK's error result.
fn exercise(client: &Client, elicits: bool) -> Vec<Value> {
    let mut tools: Vec<String> = client
        .list_tools()
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    tools.sort();
    assert_eq!(tools, ["add", "confirm", "era", "shout"]);
    let add = client
        .call_tool("add", json!({"a": 2, "b": 40}))
        .expect("add");
    assert_eq!(add.text(), "42");
    let shout = client
        .call_tool("shout", json!({"text": "hi"}))
        .expect("shout");
    assert_eq!(shout.text(), "HI!");
    // Arguments the schema refuses: an error result, or a JSON-RPC error, the same in each era.
    let bad = client.call_tool("add", json!({"a": "two"}));
    if let Ok(r) = &bad {
        assert!(r.failed(), "{}", r.text());
    }
    let note = client.read_resource("note://today").expect("read");
    let resources: Vec<String> = client
        .list_resources()
        .expect("resources/list")
        .into_iter()
        .map(|r| r.uri)
        .collect();
    let confirm = client
        .call_tool("confirm", json!({"question": "sure?"}))
        .expect("confirm");
    if elicits {
        assert_eq!(confirm.text(), "confirmed: true");
    } else {
        assert!(confirm.failed());
        assert_eq!(confirm.text(), "Client does not support form elicitation.");
    }
    let prompts: Vec<String> = client
        .list_prompts()
        .expect("prompts/list")
        .into_iter()
        .map(|p| p.name)
        .collect();
    let prompt = client
        .get_prompt("review", json!({"code": "x = 1"}))
        .expect("prompt");
    vec![
        json!(tools),
        json!(add.content),
        json!(shout.content),
        json!(bad.is_ok()),
        json!(confirm.content),
        json!(resources),
        json!(note.contents),
        json!(prompts),
        json!(prompt.messages),
        json!(client.server_info().map(|i| i.name)),
        json!(client.instructions()),
    ]
}

/// Where `exercise` puts `confirm`'s content.
const CONFIRM_AT: usize = 4;

/// Legacy, Modern and Auto give the same results; `legacy_elicits`: whether the server can
/// elicit in the legacy era.
fn across_eras(config: impl Fn() -> ServerConfig, legacy_elicits: bool) {
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
        // The server's side of it: the instance its factory made for this era.
        let served = client.call_tool("era", json!({})).expect("era").text();
        let expected = match era {
            ProtocolEra::Legacy => "legacy",
            _ => "modern",
        };
        assert_eq!(served, expected, "{mode}");
        if era == ProtocolEra::Modern {
            let e = client
                .call_tool_as_task("add", json!({"a": 1, "b": 2}), &CallOptions::new())
                .expect_err("no tasks extension");
            assert!(
                matches!(
                    &e,
                    Error::Task {
                        kind: TaskErrorKind::Unsupported,
                        ..
                    }
                ),
                "{e}"
            );
            assert_eq!(
                client.protocol_version().as_deref(),
                Some(MODERN_PROTOCOL_VERSION),
                "{mode}"
            );
        }
        let mut r = exercise(&client, era == ProtocolEra::Modern || legacy_elicits);
        if !legacy_elicits {
            // `confirm` (checked in `exercise`) cannot agree across eras there.
            r[CONFIRM_AT] = Value::Null;
        }
        results.push(r);
        client.close().expect("close");
    }
    assert_eq!(results[0], results[1], "legacy and modern differ");
    assert_eq!(results[1], results[2], "modern and auto differ");
}

#[test]
fn typescript_sdk_2_over_stdio_in_both_eras() {
    across_eras(|| peers::npm().ts2_stdio("ts2"), true);
}

/// The SDK's default HTTP serving: the 2025 era is stateless, so its `confirm` cannot ask.
#[test]
fn typescript_sdk_2_over_streamable_http_in_both_eras() {
    let peer = http_peer("http");
    let url = format!("http://127.0.0.1:{}/mcp", peer.port);
    across_eras(
        || ServerConfig::http("ts2-http", &url).with_timeout_secs(peers::PEER_TIMEOUT_SECS),
        false,
    );
}

/// The 2025 era on sessions beside the modern handler: `confirm` asks in both eras.
#[test]
fn typescript_sdk_2_over_streamable_http_with_legacy_sessions_in_both_eras() {
    let peer = http_peer("http-sessions");
    let url = format!("http://127.0.0.1:{}/mcp", peer.port);
    across_eras(
        || ServerConfig::http("ts2-sessions", &url).with_timeout_secs(peers::PEER_TIMEOUT_SECS),
        true,
    );
}
