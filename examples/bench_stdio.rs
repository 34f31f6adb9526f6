//! Benchmark of the stdio client against a raw floor, in one run, printing a table.
//!
//! | row | client | floor (no MCP layer) |
//! |---|---|---|
//! | sequential call | `call_tool("echo")` round trips | write the same line, read the reply line |
//! | 8 threads | 8 threads sharing one `Client` | one writer + one reader thread, pipelined |
//! | spawn+init+list+close | `Client::connect`, `list_tools`, `close` | same messages by hand |
//! | 32 servers in parallel | 32 threads, shared poller | 32 threads by hand |
//! | 16 MB result | `call_tool("large")` | read the same reply line |
//! | peak RSS | a child process with one client | — |
//! | peak RSS, 16 MB results | a child process, two `call_tool("large")` | the same by hand |
//! | idle client RSS | a child process holding one connected client after a call | — |
//!
//! Each row is the median of interleaved client/floor rounds; the client's fastest and slowest
//! rounds are printed as its spread. `BENCH_QUICK=1` runs fewer, shorter rounds;
//! `BENCH_ROWS=seq,8` only the rows whose names contain one of the words; `BENCH_NO_PROBES=1`
//! only the pinned rows (no memory probes), and `BENCH_SIDE=client` or `floor` one side of the
//! 8-thread row: for counting syscalls and context switches per call with `perf stat`.
//!
//! Every row runs unpinned and then pinned to one core (the process and everything it spawns).
//! Run: `cargo run --release --example bench_stdio` (the servers are this executable, started again
//! with `--serve-fixture`).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Instant;

use mcp_blocking::{Client, ConnectionPoller, ServerConfig};
use serde_json::json;

struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Raw {
    fn spawn() -> Raw {
        let mut child = support::fixture_command()
            .expect("the path of this executable")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn fixture");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(256 * 1024, child.stdout.take().expect("stdout"));
        Raw {
            child,
            stdin,
            stdout,
            line: String::new(),
        }
    }
    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write");
        self.stdin.write_all(b"\n").expect("write");
        self.stdin.flush().expect("flush");
    }
    fn recv(&mut self) -> usize {
        self.line.clear();
        self.stdout.read_line(&mut self.line).expect("read")
    }
    fn handshake(&mut self) {
        self.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floor","version":"0"}}}"#);
        self.recv();
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }
    fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

const ECHO: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn fixture(name: impl Into<String>) -> ServerConfig {
    support::fixture_server(name, &[]).expect("the path of this executable")
}

fn client() -> Client {
    Client::connect(fixture("bench")).expect("connect")
}

struct Row {
    name: &'static str,
    unit: &'static str,
    client: f64,
    floor: f64,
    /// true when a bigger number is better (throughput)
    higher_better: bool,
    /// The client's fastest and slowest round.
    spread: (f64, f64),
    /// The floor's fastest and slowest round.
    floor_spread: (f64, f64),
}

fn seq_call(n: usize) -> (f64, f64) {
    let c = client();
    for _ in 0..1000 {
        c.call_tool("echo", json!({"text": "hello"})).unwrap();
    }
    let t = Instant::now();
    for _ in 0..n {
        c.call_tool("echo", json!({"text": "hello"})).unwrap();
    }
    let client_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    c.close().unwrap();

    let mut raw = Raw::spawn();
    raw.handshake();
    for _ in 0..1000 {
        raw.send(ECHO);
        raw.recv();
    }
    let t = Instant::now();
    for _ in 0..n {
        raw.send(ECHO);
        raw.recv();
    }
    let floor_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    raw.close();
    (client_us, floor_us)
}

/// `BENCH_SIDE=client` or `floor` measures one side only (the other reads 0), for counting
/// syscalls and context switches per call (`perf stat`, `strace -c -f`).
fn side(name: &str) -> bool {
    std::env::var("BENCH_SIDE").map_or(true, |s| s == name)
}

fn threads8(n_per_thread: usize) -> (f64, f64) {
    let client_rps = if side("client") {
        threads8_client(n_per_thread)
    } else {
        0.0
    };
    let floor_rps = if side("floor") {
        threads8_floor(n_per_thread)
    } else {
        0.0
    };
    (client_rps, floor_rps)
}

fn threads8_client(n_per_thread: usize) -> f64 {
    let c = Arc::new(client());
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..8 {
            let c = Arc::clone(&c);
            s.spawn(move || {
                for _ in 0..n_per_thread {
                    c.call_tool("echo", json!({"text": "hello"})).unwrap();
                }
            });
        }
    });
    let client_rps = (8 * n_per_thread) as f64 / t.elapsed().as_secs_f64();
    c.close().unwrap();
    client_rps
}

fn threads8_floor(n_per_thread: usize) -> f64 {
    let mut raw = Raw::spawn();
    raw.handshake();
    let total = 8 * n_per_thread;
    let Raw {
        child,
        mut stdin,
        mut stdout,
        ..
    } = raw;
    let t = Instant::now();
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut line = String::new();
            for _ in 0..total {
                line.clear();
                stdout.read_line(&mut line).unwrap();
            }
        });
        let mut w = std::io::BufWriter::new(&mut stdin);
        for _ in 0..total {
            w.write_all(ECHO.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
        }
        w.flush().unwrap();
    });
    let floor_rps = total as f64 / t.elapsed().as_secs_f64();
    drop(stdin);
    let mut child = child;
    let _ = child.wait();
    floor_rps
}

fn lifecycle(n: usize) -> (f64, f64) {
    let t = Instant::now();
    for _ in 0..n {
        let c = client();
        c.list_tools().unwrap();
        c.close().unwrap();
    }
    let client_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    let t = Instant::now();
    for _ in 0..n {
        let mut raw = Raw::spawn();
        raw.handshake();
        raw.send(LIST);
        raw.recv();
        raw.close();
    }
    let floor_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    (client_ms, floor_ms)
}

fn parallel32() -> (f64, f64) {
    let poller = ConnectionPoller::new();
    let t = Instant::now();
    std::thread::scope(|s| {
        for i in 0..32 {
            let poller = &poller;
            s.spawn(move || {
                let c = Client::builder(fixture(format!("s{i}")))
                    .poller(poller)
                    .connect()
                    .unwrap();
                c.list_tools().unwrap();
                c.close().unwrap();
            });
        }
    });
    let client_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..32 {
            s.spawn(|| {
                let mut raw = Raw::spawn();
                raw.handshake();
                raw.send(LIST);
                raw.recv();
                raw.close();
            });
        }
    });
    let floor_ms = t.elapsed().as_secs_f64() * 1e3;
    (client_ms, floor_ms)
}

fn large(n: usize) -> (f64, f64) {
    let bytes = 16 * 1024 * 1024;
    let c = client();
    c.call_tool("large", json!({"bytes": bytes})).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        let r = c.call_tool("large", json!({"bytes": bytes})).unwrap();
        assert_eq!(r.content[0].as_text().map(str::len), Some(bytes));
    }
    let client_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    c.close().unwrap();
    let req = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"large","arguments":{{"bytes":{bytes}}}}}}}"#
    );
    let mut raw = Raw::spawn();
    raw.handshake();
    raw.send(&req);
    raw.recv();
    let t = Instant::now();
    for _ in 0..n {
        raw.send(&req);
        assert!(raw.recv() > bytes);
    }
    let floor_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    raw.close();
    (client_ms, floor_ms)
}

fn rss_probe() {
    let arg = |name: &str| std::env::args().any(|a| a == name);
    if arg("--large") {
        rss_large(arg("--floor"));
        return;
    }
    if arg("--idle") {
        // One connected client, idle after a call: what it keeps resident.
        let c = client();
        c.call_tool("echo", json!({"text": "hello"})).unwrap();
        println!("{} 0", status_kb("VmRSS:"));
        c.close().unwrap();
        return;
    }
    if std::env::args().any(|a| a == "--baseline") {
        // The same process doing nothing: what the binary and the C runtime cost by themselves.
        let _ = std::hint::black_box(fixture("baseline"));
    } else {
        rss_client();
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("0")
            .to_owned()
    };
    println!("{} {}", field("VmHWM:"), field("RssAnon:"));
}

/// A field of /proc/self/status, in kB.
fn status_kb(name: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("0")
        .to_owned()
}

/// Two 16 MB results, by the client or by hand; prints the peak RSS.
fn rss_large(floor: bool) {
    let bytes = 16 * 1024 * 1024;
    if floor {
        let req = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"large","arguments":{{"bytes":{bytes}}}}}}}"#
        );
        let mut raw = Raw::spawn();
        raw.handshake();
        for _ in 0..2 {
            raw.send(&req);
            assert!(raw.recv() > bytes);
        }
        println!("{} 0", status_kb("VmHWM:"));
        raw.close();
    } else {
        let c = client();
        for _ in 0..2 {
            let r = c.call_tool("large", json!({"bytes": bytes})).unwrap();
            assert_eq!(r.content[0].as_text().map(str::len), Some(bytes));
        }
        println!("{} 0", status_kb("VmHWM:"));
        c.close().unwrap();
    }
}

/// The first number a probe child prints, in kB.
fn probe_kb(args: &[&str]) -> f64 {
    let out = Command::new(std::env::current_exe().unwrap())
        .arg("--rss-probe")
        .args(args)
        .output()
        .expect("probe");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

fn rss_client() {
    let c = client();
    for _ in 0..2000 {
        c.call_tool("echo", json!({"text": "hello"})).unwrap();
    }
    c.list_tools().unwrap();
    c.close().unwrap();
}

/// (peak RSS, anonymous RSS at the end) in kB of a child process running the probe.
fn peak_rss_kb(baseline: bool) -> (f64, f64) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.arg("--rss-probe");
    if baseline {
        cmd.arg("--baseline");
    }
    let out = cmd.output().expect("probe");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut it = text.split_whitespace().map(|v| v.parse().unwrap_or(0.0));
    (it.next().unwrap_or(0.0), it.next().unwrap_or(0.0))
}

fn pin_to_core0() {
    let mut set = rustix_cpuset();
    set.set(0);
    if let Err(e) = rustix::thread::sched_setaffinity(None, &set) {
        eprintln!("could not pin to core 0: {e}");
    }
}

fn rustix_cpuset() -> rustix::thread::CpuSet {
    rustix::thread::CpuSet::new()
}

/// Runs `f` (one client measurement and one floor measurement) `rounds` times, interleaved, and
/// keeps the median of each: noise from other processes hits both sides alike.
/// The medians of `rounds` interleaved client/floor rounds, and each side's (min, max) round.
type Medians = (f64, f64, (f64, f64), (f64, f64));

fn median_of(rounds: usize, f: &mut dyn FnMut() -> (f64, f64)) -> Medians {
    let (mut cs, mut fs): (Vec<f64>, Vec<f64>) = (0..rounds).map(|_| f()).unzip();
    let mid = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (c, f) = (mid(&mut cs), mid(&mut fs));
    (c, f, (cs[0], cs[cs.len() - 1]), (fs[0], fs[fs.len() - 1]))
}

fn run(label: &str) -> Vec<Row> {
    let quick = std::env::var_os("BENCH_QUICK").is_some();
    let (k, rounds) = if quick { (1, 3) } else { (8, 9) };
    let mut rows = Vec::new();
    // BENCH_ROWS=seq,8 (substrings of row names) runs only those rows.
    let only = std::env::var("BENCH_ROWS").ok();
    let mut row = |name: &'static str, unit, higher_better, f: &mut dyn FnMut() -> (f64, f64)| {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|w| name.contains(w)))
        {
            return;
        }
        let (client, floor, spread, floor_spread) = median_of(rounds, f);
        eprintln!("[{label}] {name}: client {client:.1} floor {floor:.1} {unit}");
        rows.push(Row {
            name,
            unit,
            client,
            floor,
            higher_better,
            spread,
            floor_spread,
        });
    };
    row("sequential tools/call", "us/call", false, &mut || {
        seq_call(1000 * k)
    });
    row("8 threads, one connection", "calls/s", true, &mut || {
        threads8(250 * k)
    });
    row("spawn+init+list+close", "ms", false, &mut || {
        lifecycle(3 * k)
    });
    row("32 servers in parallel", "ms", false, &mut parallel32);
    row("16 MB result", "ms", false, &mut || large(k));
    rows
}

fn print(label: &str, rows: &[Row]) {
    println!("\n{label}");
    println!(
        "| workload | unit | client | floor | ratio | client spread (min-max round) | floor spread |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for r in rows {
        let ratio = r.client / r.floor;
        let note = if r.higher_better {
            " of floor"
        } else {
            "x floor"
        };
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2}{} | {:.1}-{:.1} | {:.1}-{:.1} |",
            r.name,
            r.unit,
            r.client,
            r.floor,
            ratio,
            note,
            r.spread.0,
            r.spread.1,
            r.floor_spread.0,
            r.floor_spread.1
        );
    }
}

fn main() -> ExitCode {
    if let Some(code) = support::serve_fixture_if_asked() {
        return code;
    }
    if std::env::args().any(|a| a == "--rss-probe") {
        rss_probe();
        return ExitCode::SUCCESS;
    }
    if std::env::var_os("BENCH_NO_PROBES").is_some() {
        // The rows only, pinned (for `perf stat` / `strace -c -f` counts per call).
        pin_to_core0();
        print("Pinned to one core", &run("pinned to core 0"));
        return ExitCode::SUCCESS;
    }
    let unpinned = run("unpinned");
    let rss = peak_rss_kb(false);
    let base = peak_rss_kb(true);
    pin_to_core0();
    let pinned = run("pinned to core 0");
    let pinned_rss = peak_rss_kb(false);
    let large_rss = (probe_kb(&["--large"]), probe_kb(&["--large", "--floor"]));
    let idle_rss = probe_kb(&["--idle"]);
    print("Unpinned (2 cores)", &unpinned);
    print("Pinned to one core (taskset -c 0 equivalent)", &pinned);
    let ((hwm, anon), (base_hwm, base_anon)) = (rss, base);
    println!(
        "\nmemory of a process with one client (2000 calls + list_tools, unpinned): peak RSS {:.2} MB \
         ({:.2} MB pinned), of which anonymous (heap, stacks) {:.2} MB; the same binary doing nothing: \
         peak RSS {:.2} MB, anonymous {:.2} MB. The rest is shared, file-backed code of the binary and libc.",
        hwm / 1024.0,
        pinned_rss.0 / 1024.0,
        anon / 1024.0,
        base_hwm / 1024.0,
        base_anon / 1024.0,
    );
    println!(
        "\npeak RSS over two 16 MB results: client {:.1} MB, floor {:.1} MB ({:+.0}%)",
        large_rss.0 / 1024.0,
        large_rss.1 / 1024.0,
        (large_rss.0 / large_rss.1 - 1.0) * 100.0
    );
    println!(
        "resident memory of a process holding one idle client (after a call): {:.2} MB",
        idle_rss / 1024.0
    );
    ExitCode::SUCCESS
}
