//! Benchmark of the Hub with many stdio servers, printing a table.
//!
//! | row | what is measured |
//! |---|---|
//! | connect 1 / 10 / 50 servers | `Hub::resolve` wall time, all servers connecting in parallel |
//! | threads after connect | entries of `/proc/self/task` (the I/O is one poller thread whatever the count) |
//! | list all tools | `Hub::tools` (listed while connecting) and the OpenAI Chat export of every tool |
//! | 10,000 routed calls, 8 threads | `Hub::call_tool("sN__echo")` spread over all 50 servers |
//! | memory | `VmRSS` and `VmHWM` of this process from `/proc/self/status` (servers not included) |
//!
//! Run: `cargo run --release --example bench_hub` (the servers are this executable, started again
//! with `--serve-fixture`).

mod support;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_blocking::hub::Run;
use mcp_blocking::{Hub, ServerConfig};
use serde_json::json;

const SERVERS: usize = 50;
const CALLS: usize = 10_000;
const THREADS: usize = 8;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn servers(n: usize) -> Vec<ServerConfig> {
    (0..n)
        .map(|i| {
            support::fixture_server(format!("s{i}"), &["--extra-tools", &(i % 5).to_string()])
                .expect("the path of this executable")
                .with_description(format!("fixture server number {i}"))
        })
        .collect()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn connect(n: usize) -> (Hub, Duration, usize) {
    let hub = Hub::new(servers(n));
    let t = Instant::now();
    let set = hub.resolve(&Run::new());
    let took = t.elapsed();
    assert!(set.failed.is_empty(), "{:?}", set.failed);
    assert_eq!(hub.connected_servers().len(), n);
    (hub, took, threads())
}

fn main() -> ExitCode {
    if let Some(code) = support::serve_fixture_if_asked() {
        return code;
    }
    let base_threads = threads();
    let mut rows: Vec<(String, String)> = Vec::new();
    // Warm the page cache for the fixture server (this executable).
    drop(connect(1));

    for n in [1, 10] {
        let (hub, took, during) = connect(n);
        rows.push((format!("connect {n} server(s)"), ms(took)));
        rows.push((
            format!("threads after connecting {n}"),
            format!("{during} ({} above the start)", during - base_threads),
        ));
        hub.disconnect();
    }

    let (hub, took, during) = connect(SERVERS);
    rows.push((format!("connect {SERVERS} servers"), ms(took)));
    rows.push((
        format!("threads after connecting {SERVERS}"),
        format!("{during} ({} above the start)", during - base_threads),
    ));
    rows.push((
        format!("VmRSS after connecting {SERVERS}"),
        format!("{} kB", status_kb("VmRSS:")),
    ));

    let t = Instant::now();
    let tools = hub.tools();
    let listed = t.elapsed();
    let t = Instant::now();
    let set = hub.resolve(&Run::new());
    let exported = serde_json::to_string(&set.to_openai_chat()).expect("json");
    let export_took = t.elapsed();
    rows.push((
        format!("Hub::tools() of all servers ({} tools)", tools.len()),
        ms(listed),
    ));
    rows.push((
        format!(
            "resolve + OpenAI Chat export ({} kB JSON)",
            exported.len() / 1024
        ),
        ms(export_took),
    ));

    let hub = Arc::new(hub);
    let per_thread = CALLS / THREADS;
    let t = Instant::now();
    let mut peak_threads = 0;
    let latencies: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|w| {
                let hub = Arc::clone(&hub);
                std::thread::Builder::new()
                    .name(format!("bench-{w}"))
                    .spawn_scoped(s, move || {
                        let mut lat = Vec::with_capacity(per_thread);
                        for k in 0..per_thread {
                            let server = (w * per_thread + k) % SERVERS;
                            let tool = format!("s{server}__echo");
                            let c = Instant::now();
                            let r = hub.call_tool(&tool, json!({"text": "ping"})).expect("call");
                            lat.push(c.elapsed());
                            assert_eq!(r.text(), "ping");
                        }
                        lat
                    })
                    .expect("spawn")
            })
            .collect();
        peak_threads = threads();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker"))
            .collect()
    });
    let wall = t.elapsed();
    let mut sorted = latencies;
    sorted.sort();
    let pct = |p: f64| sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)];
    rows.push((
        format!("{CALLS} routed calls, {THREADS} threads"),
        format!(
            "{} ({:.0} calls/s)",
            ms(wall),
            CALLS as f64 / wall.as_secs_f64()
        ),
    ));
    rows.push((
        "  call latency p50 / p99".into(),
        format!("{} / {}", ms(pct(0.5)), ms(pct(0.99))),
    ));
    rows.push((
        "threads during the calls".into(),
        format!("{peak_threads} (main + {THREADS} callers + the Hub's)"),
    ));
    rows.push((
        "VmRSS / VmHWM at the end".into(),
        format!("{} kB / {} kB", status_kb("VmRSS:"), status_kb("VmHWM:")),
    ));

    let t = Instant::now();
    hub.disconnect();
    rows.push((format!("disconnect {SERVERS} servers"), ms(t.elapsed())));
    // Joined threads can stay listed for a moment while the kernel releases them.
    let mut left = threads();
    let settle = Instant::now() + Duration::from_secs(1);
    while left > base_threads && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(1));
        left = threads();
    }
    rows.push(("threads after disconnect".into(), left.to_string()));

    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    println!("| {:<width$} | result |", "measure");
    println!("|-{}-|--------|", "-".repeat(width));
    for (k, v) in rows {
        println!("| {k:<width$} | {v} |");
    }
    ExitCode::SUCCESS
}
