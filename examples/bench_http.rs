//! `tools/call` over Streamable HTTP against the in-repo loopback server, next to the floor: a
//! bare ureq POST of the same body on a kept-alive connection. Sequential, and 8 callers at once;
//! every table unpinned, then pinned to one core (client and server threads alike).
//!
//! | row                              | what is timed                                              |
//! |----------------------------------|------------------------------------------------------------|
//! | bare ureq POST (floor)           | `agent.post(url).send(body)` + read the JSON reply         |
//! | Client::call_tool, JSON reply    | a full call: id, pending slot, POST, parse, route, decode  |
//! | Client::call_tool, event-stream  | the same with the reply as a `text/event-stream`           |
//!
//! The last column counts the TCP connections the server accepted per 1,000 calls after
//! warm-up: 0 when every call reuses a kept-alive connection.
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
    let unpinned = run(calls);
    pin_to_core0();
    let pinned = run(calls);
    println!(
        "Streamable HTTP tools/call, loopback, {ROUNDS} interleaved rounds; median round; \
         new TCP connections per 1,000 calls after warm-up"
    );
    for (label, rows) in [
        ("Unpinned (2 cores)", unpinned),
        ("Pinned to one core (client and server threads)", pinned),
    ] {
        println!();
        println!("{label}");
        println!();
        println!("| row | calls/s | µs/call | vs floor | conns / 1,000 calls |");
        println!("|---|---:|---:|---:|---:|");
        for r in rows {
            println!(
                "| {} | {:.0} | {:.1} | {:.2}x | {:.1} |",
                r.name,
                1.0 / r.per,
                r.per * 1e6,
                r.per / r.floor,
                r.conns_per_1000
            );
        }
    }
}

struct Row {
    name: &'static str,
    /// Seconds per call (for 8 callers: wall time divided by all their calls).
    per: f64,
    floor: f64,
    conns_per_1000: f64,
}

/// Pins this process (and every thread it starts later) to core 0.
fn pin_to_core0() {
    let mut set = rustix::thread::CpuSet::new();
    set.set(0);
    if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
        eprintln!("could not pin to core 0: {e}");
    }
}

/// One table: servers started here (so after pinning their threads are pinned too).
fn run(calls: usize) -> Vec<Row> {
    let per_round = (calls / ROUNDS).max(1);
    let json_srv = McpHttp::start(Options::default());
    let sse_srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let floor = Floor::new(&json_srv.url());
    let json_client = connect(&json_srv);
    let sse_client = connect(&sse_srv);
    let count = |srv: &McpHttp| srv.server.connections();

    let mut rows = Vec::new();
    // Sequential.
    let (mut t_floor, mut t_json, mut t_sse) = (Vec::new(), Vec::new(), Vec::new());
    let (mut c_json, mut c_sse) = (0, 0);
    for _ in 0..ROUNDS {
        t_floor.push(floor.run(per_round));
        let before = count(&json_srv);
        t_json.push(calls_on(&json_client, per_round));
        c_json += count(&json_srv) - before;
        let before = count(&sse_srv);
        t_sse.push(calls_on(&sse_client, per_round));
        c_sse += count(&sse_srv) - before;
    }
    let total = (ROUNDS * per_round) as f64 / 1000.0;
    let floor_per = median(&mut t_floor) / per_round as f64;
    rows.push(Row {
        name: "sequential: bare ureq POST, kept alive (floor)",
        per: floor_per,
        floor: floor_per,
        conns_per_1000: 0.0,
    });
    rows.push(Row {
        name: "sequential: Client::call_tool, JSON reply",
        per: median(&mut t_json) / per_round as f64,
        floor: floor_per,
        conns_per_1000: c_json as f64 / total,
    });
    rows.push(Row {
        name: "sequential: Client::call_tool, event-stream reply",
        per: median(&mut t_sse) / per_round as f64,
        floor: floor_per,
        conns_per_1000: c_sse as f64 / total,
    });
    // 8 callers: the floor is 8 threads sharing one ureq agent (one kept-alive connection each),
    // the client 8 threads sharing one Client.
    let per_thread = (per_round / 8).max(1);
    let (mut t_floor, mut t_json, mut t_sse) = (Vec::new(), Vec::new(), Vec::new());
    let (mut c_json, mut c_sse) = (0, 0);
    for _ in 0..ROUNDS {
        t_floor.push(threads8(|| {
            for _ in 0..per_thread {
                floor.one();
            }
        }));
        let before = count(&json_srv);
        t_json.push(threads8(|| {
            calls_on(&json_client, per_thread);
        }));
        c_json += count(&json_srv) - before;
        let before = count(&sse_srv);
        t_sse.push(threads8(|| {
            calls_on(&sse_client, per_thread);
        }));
        c_sse += count(&sse_srv) - before;
    }
    let n = (8 * per_thread) as f64;
    let total = ROUNDS as f64 * n / 1000.0;
    let floor8 = median(&mut t_floor) / n;
    rows.push(Row {
        name: "8 callers: bare ureq POSTs, one agent (floor)",
        per: floor8,
        floor: floor8,
        conns_per_1000: 0.0,
    });
    rows.push(Row {
        name: "8 callers: one Client, JSON reply",
        per: median(&mut t_json) / n,
        floor: floor8,
        conns_per_1000: c_json as f64 / total,
    });
    rows.push(Row {
        name: "8 callers: one Client, event-stream reply",
        per: median(&mut t_sse) / n,
        floor: floor8,
        conns_per_1000: c_sse as f64 / total,
    });
    json_client.close().expect("close");
    sse_client.close().expect("close");
    rows
}

/// Runs `f` on 8 threads at once; the wall time in seconds.
fn threads8(f: impl Fn() + Sync) -> f64 {
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(&f);
        }
    });
    started.elapsed().as_secs_f64()
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
            .max_idle_connections_per_host(16)
            .build()
            .into();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
        .to_string();
        let f = Floor {
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

    fn run(&self, calls: usize) -> f64 {
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
