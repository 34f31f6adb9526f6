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
use std::time::Instant;

use mcp_blocking::{Client, ServerConfig};
use serde_json::json;
use support_remote::mcp::{McpHttp, Options};

/// Rounds per row; rows are interleaved round by round and each row reports its median round,
/// so a busy machine disturbs all rows alike.
const ROUNDS: usize = 7;

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(7000);
    let per_round = (calls / ROUNDS).max(1);

    let json_srv = McpHttp::start(Options::default());
    let sse_srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let mut floor = Floor::new(&json_srv.url());
    let json_client = connect(&json_srv);
    let sse_client = connect(&sse_srv);
    let conns_before = (json_srv.server.connections(), sse_srv.server.connections());

    let (mut t_floor, mut t_json, mut t_sse) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        t_floor.push(floor.run(per_round));
        t_json.push(calls_on(&json_client, per_round));
        t_sse.push(calls_on(&sse_client, per_round));
    }
    let conns = (
        json_srv.server.connections() - conns_before.0,
        sse_srv.server.connections() - conns_before.1,
    );
    json_client.close().expect("close");
    sse_client.close().expect("close");

    let floor_per = median(&mut t_floor) / per_round as f64;
    println!(
        "Sequential tools/call over Streamable HTTP, loopback, {ROUNDS} interleaved rounds of \
         {per_round} calls; median round"
    );
    println!();
    println!("| row                            |   req/s | µs/call | vs floor | new TCP conns |");
    println!("|--------------------------------|--------:|--------:|---------:|--------------:|");
    let row = |name: &str, per: f64, conns: usize| {
        println!(
            "| {name:<30} | {:>7.0} | {:>7.1} | {:>7.2}x | {conns:>13} |",
            1.0 / per,
            per * 1e6,
            per / floor_per,
        );
    };
    row("bare ureq POST (floor)", floor_per, 0);
    row(
        "Client::call_tool, JSON reply",
        median(&mut t_json) / per_round as f64,
        conns.0,
    );
    row(
        "Client::call_tool, SSE reply",
        median(&mut t_sse) / per_round as f64,
        conns.1,
    );
}

fn median(secs: &mut [f64]) -> f64 {
    secs.sort_by(|a, b| a.total_cmp(b));
    secs[secs.len() / 2]
}

/// The floor: the same request body POSTed with a bare ureq agent, reply read and parsed.
struct Floor {
    agent: ureq::Agent,
    url: String,
    body: String,
}

impl Floor {
    fn new(url: &str) -> Floor {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
        .to_string();
        let mut f = Floor {
            agent,
            url: url.to_owned(),
            body,
        };
        f.run(200);
        f
    }

    fn one(&self) {
        let resp = self
            .agent
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .send(self.body.as_bytes())
            .expect("POST");
        let mut buf = Vec::new();
        resp.into_body()
            .into_reader()
            .read_to_end(&mut buf)
            .expect("body");
        let v: serde_json::Value = serde_json::from_slice(&buf).expect("JSON");
        assert!(v["result"].is_object());
    }

    fn run(&mut self, calls: usize) -> f64 {
        let started = Instant::now();
        for _ in 0..calls {
            self.one();
        }
        started.elapsed().as_secs_f64()
    }
}

fn connect(srv: &McpHttp) -> Client {
    let client = Client::connect(ServerConfig::http("bench", srv.url()).timeout_secs(10.0))
        .expect("connect");
    calls_on(&client, 200);
    client
}

fn calls_on(client: &Client, calls: usize) -> f64 {
    let started = Instant::now();
    for i in 0..calls {
        client
            .call_tool("add", json!({"a": i, "b": 2}))
            .expect("call");
    }
    started.elapsed().as_secs_f64()
}
