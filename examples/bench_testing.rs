//! What a unit test pays: the in-process `TestServer` against the same work over a real process,
//! printing a table (feature `testing`).
//!
//! | row | what is measured |
//! |---|---|
//! | connect + `list_tools` + `call_tool` + close | one whole "test": a fresh client each time |
//! | `call_tool` round trip | one call on a connected client |
//!
//! Each row runs both ways in one run: `testing::TestServer` (in-process, no thread, no pipe) and
//! the bundled fixture server (this executable started again with `--serve-fixture`, over stdio).
//! Medians of interleaved rounds.
//!
//! Run: `cargo run --release --features testing --example bench_testing`.

mod support;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use mcp_blocking::model::{CallToolResult, Content, Tool};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{Client, ServerConfig};
use serde_json::json;

const ROUNDS: usize = 5;

fn test_server() -> TestServer {
    TestServer::new("unit").tool(Tool::new("echo", json!({"type": "object"})), |call| {
        let text = call.arguments()["text"].as_str().unwrap_or_default();
        Ok(CallToolResult::success(vec![Content::text(text)]))
    })
}

fn stdio() -> ServerConfig {
    support::fixture_server("fixture", &[]).expect("the path of this executable")
}

/// One whole test: connect, list, call, close.
fn whole(connect: &dyn Fn() -> Client) {
    let client = connect();
    assert!(!client.list_tools().expect("list").is_empty());
    let out = client
        .call_tool("echo", json!({"text": "hi"}))
        .expect("call");
    assert!(out.text().contains("hi"));
    client.close().expect("close");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median per-iteration time of `f` over `ROUNDS` rounds of `n` iterations.
fn per_iter(n: usize, f: &mut dyn FnMut()) -> Duration {
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        rounds.push(t.elapsed() / n as u32);
    }
    median(rounds)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() -> ExitCode {
    if let Some(code) = support::serve_fixture_if_asked() {
        return code;
    }
    let server = test_server();
    let in_process = || server.connect().expect("connect in-process");
    let over_stdio = || Client::connect(stdio()).expect("connect over stdio");

    let whole_mem = per_iter(2_000, &mut || whole(&in_process));
    let whole_stdio = per_iter(50, &mut || whole(&over_stdio));

    let mem = in_process();
    let proc = over_stdio();
    let call = |c: &Client| {
        c.call_tool("echo", json!({"text": "hi"})).expect("call");
    };
    let call_mem = per_iter(20_000, &mut || call(&mem));
    let call_stdio = per_iter(5_000, &mut || call(&proc));

    println!("| row | TestServer (in-process) | fixture over stdio | ratio |");
    println!("|---|---:|---:|---:|");
    for (row, a, b) in [
        ("connect + list + call + close", whole_mem, whole_stdio),
        ("`call_tool` round trip", call_mem, call_stdio),
    ] {
        println!(
            "| {row} | {} | {} | {:.0}x faster |",
            us(a),
            us(b),
            b.as_secs_f64() / a.as_secs_f64()
        );
    }
    ExitCode::SUCCESS
}
