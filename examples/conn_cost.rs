//! What one connection costs: resident memory of an idle process holding clients, and one
//! connect/close to trace.
//!
//! | mode | what it does |
//! |---|---|
//! | `idle` | connects one client to the fixture server, makes a call, prints the memory of the idle process |
//! | `idle-hub N` | connects a Hub of N fixture servers (`connect_all`), prints the memory of the idle process; then again after a `resolve` whose tool set is dropped |
//! | `baseline` | prints the memory of the same process holding nothing |
//! | `cycle N` | N times: connect, `list_tools`, close; prints the time per cycle (and serves `strace -f -c`) |
//! | `cycle-legacy N` | the same with `ProtocolMode::Legacy` (no `server/discover` probe) |
//! | `cycle-shared N` | the same with one `ConnectionPoller` given to every client |
//! | `floor N` | the same messages by hand, no MCP layer |
//!
//! Memory is printed from `/proc/self/smaps_rollup`: resident (`Rss`), of which anonymous (heap,
//! stacks) and file-backed (code of the binary and libc, mostly shared), the thread count, and
//! the bytes the program holds on the heap (counted by this example's allocator), which tells
//! live data from what the allocator keeps. `CONN_COST_SMAPS=FILE` copies `/proc/self/smaps`
//! there; `CONN_COST_EXIT=1` exits right after printing, so a heap profiler (`heaptrack`) lists
//! what was held at that moment as leaked.
//!
//! Run: `cargo run --release --example conn_cost -- idle` (the servers are this executable,
//! started again with `--serve-fixture`).

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{BufRead, BufReader, Write};
use std::process::{ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use mcp_blocking::config::ProtocolMode;
use mcp_blocking::hub::Run;
use mcp_blocking::{Client, ConnectionPoller, Hub};
use serde_json::json;

/// Counts the bytes the program holds on the heap, to tell them from what the allocator keeps.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new)
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn kb(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One line: resident, anonymous and file-backed kB, and threads.
fn report(what: &str) {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    let threads = std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count());
    if let Some(path) = std::env::var_os("CONN_COST_SMAPS") {
        let _ = std::fs::copy("/proc/self/smaps", path);
    }
    let rss = kb(&rollup, "Rss:");
    let leave = std::env::var_os("CONN_COST_EXIT").is_some();
    let anon = kb(&rollup, "Anonymous:");
    println!(
        "{what}: resident {:.2} MB (anonymous {:.2} MB, file-backed {:.2} MB), {threads} threads; \
         the program holds {:.2} MB on the heap",
        rss as f64 / 1024.0,
        anon as f64 / 1024.0,
        rss.saturating_sub(anon) as f64 / 1024.0,
        LIVE.load(Ordering::Relaxed) as f64 / (1024.0 * 1024.0)
    );
    if leave {
        // What is still allocated now shows as leaked in a heap profiler.
        std::process::exit(0);
    }
}

fn fixture(name: String, flags: &[&str]) -> mcp_blocking::ServerConfig {
    support::fixture_server(name, flags).expect("the path of this executable")
}

fn floor_cycle() {
    let mut child = support::fixture_command()
        .expect("the path of this executable")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fixture");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut send = |s: &str| {
        stdin.write_all(s.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
    };
    send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#,
    );
    stdout.read_line(&mut line).expect("read");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    line.clear();
    stdout.read_line(&mut line).expect("read");
    drop(stdin);
    let _ = child.wait();
}

fn main() -> ExitCode {
    if let Some(code) = support::serve_fixture_if_asked() {
        return code;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = args
        .get(1)
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1);
    let n: usize = n;
    match args.first().map(String::as_str) {
        Some("idle") => {
            let c = Client::connect(fixture("idle".into(), &[])).expect("connect");
            c.call_tool("echo", json!({"text": "hello"})).expect("call");
            report("one idle client");
            c.close().expect("close");
        }
        Some("idle-hub") => {
            let configs =
                (0..n).map(|i| fixture(format!("s{i}"), &["--extra-tools", &(i % 5).to_string()]));
            let hub = Hub::new(configs.collect::<Vec<_>>());
            let failed = hub.connect_all();
            assert!(failed.is_empty(), "{failed:?}");
            report(&format!("a Hub of {n} idle servers"));
            // What the allocator keeps of a whole tool set, built and dropped.
            let set = hub.resolve(&Run::new());
            assert!(set.failed.is_empty(), "{:?}", set.failed);
            let tools = set.tools.len();
            drop(set);
            report(&format!(
                "the same after a resolve of its {tools} tools, dropped"
            ));
            hub.disconnect();
        }
        Some("baseline") => {
            let _ = std::hint::black_box(fixture("baseline".into(), &[]));
            report("the same process holding nothing");
        }
        Some(mode @ ("cycle" | "cycle-legacy" | "cycle-shared")) => {
            let poller = ConnectionPoller::new();
            let t = Instant::now();
            for _ in 0..n {
                let mut config = fixture("cycle".into(), &[]);
                if mode == "cycle-legacy" {
                    config = config.with_protocol(ProtocolMode::Legacy);
                }
                let mut b = Client::builder(config);
                if mode == "cycle-shared" {
                    b = b.poller(&poller);
                }
                let c = b.connect().expect("connect");
                c.list_tools().expect("list");
                c.close().expect("close");
            }
            println!(
                "{mode}: {:.3} ms per cycle",
                t.elapsed().as_secs_f64() * 1e3 / n as f64
            );
        }
        Some("floor") => {
            let t = Instant::now();
            for _ in 0..n {
                floor_cycle();
            }
            println!(
                "floor: {:.3} ms per cycle",
                t.elapsed().as_secs_f64() * 1e3 / n as f64
            );
        }
        _ => {
            eprintln!("usage: conn_cost idle | idle-hub N | baseline | cycle N | floor N");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
