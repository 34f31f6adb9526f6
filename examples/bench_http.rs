//! Sequential `tools/call` over Streamable HTTP against the in-repo loopback server, next to the
//! floor: a bare ureq POST of the same body on the same kept-alive connection.
//!
//! | row                              | what is timed                                              |
//! |----------------------------------|------------------------------------------------------------|
//! | bare ureq POST (floor)           | `agent.post(url).send(body)` + read the JSON reply         |
//! | Client::call_tool, JSON reply    | a full call: id, pending slot, POST, parse, route, decode  |
//! | Client::call_tool, SSE reply     | the same with the reply as a `text/event-stream`           |
//!
//! ```text
//! cargo run --release --example bench_http [-- <calls>]
//! ```

#[path = "../tests/support_remote/mod.rs"]
#[allow(unreachable_pub, missing_docs)] // test-support code shared with the tests
mod support_remote;

use std::io::Read;
use std::time::{Duration, Instant};

use mcp_blocking::{Client, ServerConfig};
use serde_json::json;
use support_remote::mcp::{McpHttp, Options};

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5000);

    let json_srv = McpHttp::start(Options::default());
    let floor = bare_ureq(&json_srv.url(), calls);
    let json_reply = client_calls(&json_srv, calls);
    let sse_srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let sse_reply = client_calls(&sse_srv, calls);

    println!("Sequential tools/call over Streamable HTTP, loopback, {calls} calls each");
    println!();
    println!("| row                            |   req/s | µs/call | vs floor | TCP conns |");
    println!("|--------------------------------|--------:|--------:|---------:|----------:|");
    let row = |name: &str, (took, conns): (Duration, usize)| {
        let per = took.as_secs_f64() / calls as f64;
        println!(
            "| {name:<30} | {:>7.0} | {:>7.1} | {:>7.2}x | {conns:>9} |",
            1.0 / per,
            per * 1e6,
            took.as_secs_f64() / floor.0.as_secs_f64(),
        );
    };
    row("bare ureq POST (floor)", floor);
    row("Client::call_tool, JSON reply", json_reply);
    row("Client::call_tool, SSE reply", sse_reply);
}

fn bare_ureq(url: &str, calls: usize) -> (Duration, usize) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    .to_string();
    let one = || {
        let resp = agent
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .send(body.as_bytes())
            .expect("POST");
        let mut buf = Vec::new();
        resp.into_body()
            .into_reader()
            .read_to_end(&mut buf)
            .expect("body");
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("JSON");
        assert!(v["result"].is_object());
    };
    for _ in 0..200 {
        one();
    }
    let started = Instant::now();
    for _ in 0..calls {
        one();
    }
    (started.elapsed(), 1)
}

fn client_calls(srv: &McpHttp, calls: usize) -> (Duration, usize) {
    let client = Client::connect(ServerConfig::http("bench", srv.url()).timeout_secs(10.0))
        .expect("connect");
    for _ in 0..200 {
        client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .expect("call");
    }
    let before = srv.server.connections();
    let started = Instant::now();
    for i in 0..calls {
        client
            .call_tool("add", json!({"a": i, "b": 2}))
            .expect("call");
    }
    let took = started.elapsed();
    let conns = srv.server.connections() - before;
    client.close().expect("close");
    (took, conns)
}
