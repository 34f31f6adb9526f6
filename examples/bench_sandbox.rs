//! What a sandbox costs at spawn: the cold start of the fixture server (spawn, handshake,
//! one `tools/list`, close) plain, sandboxed (Landlock ruleset, rlimits, `no_new_privs`), and
//! sandboxed with a domain list (the loopback proxy started and stopped too), and the time of
//! a call in each once connected (20 `echo` calls per connection).
//!
//! The three kinds run interleaved, round after round, so that a machine's drift touches them
//! alike; the table gives the median and the 90th percentile of each, and each median's ratio
//! to the plain one. Linux only (elsewhere a sandbox cannot be applied).
//!
//! Run: `cargo run --release --example bench_sandbox` (`BENCH_ROUNDS=N`, default 200). To
//! compare call times, pin it to one core (`taskset -c 1 target/release/examples/bench_sandbox`):
//! unpinned, a server spawned right after the proxy's thread is often placed on the other core,
//! and every call then pays for a wake-up across cores (about 35 µs here), which is the
//! scheduler's doing, not the sandbox's.

mod support;

use std::time::{Duration, Instant};

use mcp_blocking::config::Sandbox;
use mcp_blocking::{Client, ServerConfig};
use serde_json::json;

fn main() -> std::process::ExitCode {
    support::main(run)
}

fn kinds() -> Result<Vec<(&'static str, ServerConfig)>, Box<dyn std::error::Error>> {
    let plain = support::fixture_server("bench", &[])?;
    Ok(vec![
        ("plain", plain.clone()),
        ("sandboxed", plain.clone().with_sandbox(Sandbox::new())),
        (
            "sandboxed + proxy",
            plain.with_sandbox(Sandbox::new().allow_domain("example.com")),
        ),
    ])
}

/// Calls made on each connection, timed together.
const CALLS: u32 = 20;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    if !cfg!(target_os = "linux") {
        return Err("sandboxes are applied on Linux only".into());
    }
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let kinds = kinds()?;
    let mut starts: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); kinds.len()];
    let mut calls: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); kinds.len()];
    // One warm-up round, not counted.
    for round in 0..=rounds {
        for (i, (_, config)) in kinds.iter().enumerate() {
            let t = Instant::now();
            let client = Client::connect(config.clone())?;
            client.list_tools()?;
            let started = t.elapsed();
            let t = Instant::now();
            for _ in 0..CALLS {
                client.call_tool("echo", json!({"text": "x"}))?;
            }
            let called = t.elapsed();
            client.close()?;
            let total = started + t.elapsed().saturating_sub(called);
            if round > 0 {
                starts[i].push(total);
                calls[i].push(called / CALLS);
            }
        }
    }
    println!("cold start of the fixture server (connect + tools/list + close), {rounds} rounds, interleaved");
    println!();
    println!("| kind | start median | start p90 | ratio to plain | call median |");
    println!("|---|---:|---:|---:|---:|");
    let mut base = None;
    for (i, (name, _)) in kinds.iter().enumerate() {
        starts[i].sort();
        calls[i].sort();
        let med = percentile(&starts[i], 0.5);
        let b = *base.get_or_insert(med);
        println!(
            "| {name} | {:.2} ms | {:.2} ms | {:.2}× | {:.1} µs |",
            med.as_secs_f64() * 1e3,
            percentile(&starts[i], 0.9).as_secs_f64() * 1e3,
            med.as_secs_f64() / b.as_secs_f64(),
            percentile(&calls[i], 0.5).as_secs_f64() * 1e6,
        );
    }
    Ok(())
}
