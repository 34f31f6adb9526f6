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
//! | idle client RSS | a child process holding one connected client after a call | the minimal client, the same |
//!
//! Every row also runs a minimal blocking client ([`Minimal`]: the thread-per-caller client of
//! about 80 lines one might write by hand, with no timeouts, no typed results and no stderr
//! handling), for scale.
//!
//! Each row is the median of interleaved client/floor/minimal rounds; the client's fastest and
//! slowest rounds are printed as its spread. `BENCH_QUICK=1` runs fewer, shorter rounds;
//! `BENCH_ROWS=seq,8` only the rows whose names contain one of the words; `BENCH_NO_PROBES=1`
//! only the pinned rows (no memory probes; `BENCH_UNPINNED=1` with it: only the unpinned
//! rows), and `BENCH_SIDE=client`, `floor` or `minimal` one
//! side of the 8-thread row: for counting syscalls and context switches per call with
//! `perf stat`.
//!
//! Every row runs unpinned and then pinned to one core (the process and everything it spawns).
//! Run: `cargo run --release --example bench_stdio` (the servers are this executable, started again
//! with `--serve-fixture`).

mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use mcp_blocking::{Client, ConnectionPoller, ServerConfig};
use serde_json::{json, Value};

/// The fixture server with piped stdin and stdout and stderr discarded, as the floor and the
/// minimal client start it.
fn spawn_fixture() -> Child {
    support::fixture_command()
        .expect("the path of this executable")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fixture")
}

struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Raw {
    fn spawn() -> Raw {
        let mut child = spawn_fixture();
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

/// A minimal thread-per-caller blocking client, as one might write it by hand: a lock around
/// stdin, a reader thread that parses each line into a `Value` and hands it to the caller
/// waiting for its id through a channel. No timeouts, no typed results, stderr discarded.
struct Minimal {
    child: Child,
    stdin: Mutex<Option<ChildStdin>>,
    pending: Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>>,
    next: AtomicU64,
    reader: Option<JoinHandle<()>>,
}

impl Minimal {
    fn connect() -> Minimal {
        let mut child = spawn_fixture();
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let pending: Arc<Mutex<HashMap<u64, mpsc::Sender<Value>>>> = Arc::default();
        let routes = Arc::clone(&pending);
        let reader = std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let tx = msg["id"]
                    .as_u64()
                    .and_then(|id| routes.lock().unwrap().remove(&id));
                if let Some(tx) = tx {
                    let _ = tx.send(msg);
                }
            }
        });
        let m = Minimal {
            stdin: Mutex::new(child.stdin.take()),
            child,
            pending,
            next: AtomicU64::new(0),
            reader: Some(reader),
        };
        m.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "minimal", "version": "0"}}),
        );
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).expect("encode");
        line.push(b'\n');
        let mut stdin = self.stdin.lock().unwrap();
        stdin
            .as_mut()
            .expect("open")
            .write_all(&line)
            .expect("write");
    }

    /// The result of `method`.
    fn request(&self, method: &str, params: Value) -> Value {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut reply = rx.recv().expect("a reply");
        reply["result"].take()
    }

    fn call(&self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    fn close(mut self) {
        drop(self.stdin.lock().unwrap().take());
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
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
    /// The minimal blocking client's median.
    minimal: f64,
}

fn seq_call(n: usize) -> (f64, f64, f64) {
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

    let m = Minimal::connect();
    for _ in 0..1000 {
        m.call("echo", json!({"text": "hello"}));
    }
    let t = Instant::now();
    for _ in 0..n {
        m.call("echo", json!({"text": "hello"}));
    }
    let minimal_us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
    m.close();
    (client_us, floor_us, minimal_us)
}

/// `BENCH_SIDE=client`, `floor` or `minimal` measures one side only (the others read 0), for counting
/// syscalls and context switches per call (`perf stat`, `strace -c -f`).
fn side(name: &str) -> bool {
    std::env::var("BENCH_SIDE").map_or(true, |s| s == name)
}

fn threads8(n_per_thread: usize) -> (f64, f64, f64) {
    let measure = |name: &str, f: fn(usize) -> f64| {
        if side(name) {
            f(n_per_thread)
        } else {
            0.0
        }
    };
    (
        measure("client", threads8_client),
        measure("floor", threads8_floor),
        measure("minimal", threads8_minimal),
    )
}

fn threads8_minimal(n_per_thread: usize) -> f64 {
    let m = Minimal::connect();
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..n_per_thread {
                    m.call("echo", json!({"text": "hello"}));
                }
            });
        }
    });
    let rps = (8 * n_per_thread) as f64 / t.elapsed().as_secs_f64();
    m.close();
    rps
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

fn lifecycle(n: usize) -> (f64, f64, f64) {
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
    let t = Instant::now();
    for _ in 0..n {
        let m = Minimal::connect();
        m.request("tools/list", json!({}));
        m.close();
    }
    let minimal_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    (client_ms, floor_ms, minimal_ms)
}

fn parallel32() -> (f64, f64, f64) {
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
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..32 {
            s.spawn(|| {
                let m = Minimal::connect();
                m.request("tools/list", json!({}));
                m.close();
            });
        }
    });
    let minimal_ms = t.elapsed().as_secs_f64() * 1e3;
    (client_ms, floor_ms, minimal_ms)
}

fn large(n: usize) -> (f64, f64, f64) {
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
    let m = Minimal::connect();
    m.call("large", json!({"bytes": bytes}));
    let t = Instant::now();
    for _ in 0..n {
        let r = m.call("large", json!({"bytes": bytes}));
        assert_eq!(r["content"][0]["text"].as_str().map(str::len), Some(bytes));
    }
    let minimal_ms = t.elapsed().as_secs_f64() * 1e3 / n as f64;
    m.close();
    (client_ms, floor_ms, minimal_ms)
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
    if arg("--idle-minimal") {
        // The same with the minimal client, for scale.
        let m = Minimal::connect();
        m.call("echo", json!({"text": "hello"}));
        println!("{} 0", status_kb("VmRSS:"));
        m.close();
        return;
    }
    if std::env::args().any(|a| a == "--baseline") {
        // The same process doing nothing: what the binary and the C runtime cost by themselves.
        let _ = std::hint::black_box(fixture("baseline"));
    } else {
        rss_client();
    }
    println!("{} {}", status_kb("VmHWM:"), status_kb("RssAnon:"));
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

/// Runs `f` (one client, one floor and one minimal-client measurement) `rounds` times,
/// interleaved, and keeps the median of each: noise from other processes hits every side alike.
/// The medians of the client, the floor and the minimal client, and the client's and the
/// floor's (min, max) round.
type Medians = (f64, f64, f64, (f64, f64), (f64, f64));

fn median_of(rounds: usize, f: &mut dyn FnMut() -> (f64, f64, f64)) -> Medians {
    let (mut cs, mut fs, mut ms) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (c, f, m) = f();
        cs.push(c);
        fs.push(f);
        ms.push(m);
    }
    let mid = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    };
    let (c, f, m) = (mid(&mut cs), mid(&mut fs), mid(&mut ms));
    (
        c,
        f,
        m,
        (cs[0], cs[cs.len() - 1]),
        (fs[0], fs[fs.len() - 1]),
    )
}

fn run(label: &str) -> Vec<Row> {
    let quick = std::env::var_os("BENCH_QUICK").is_some();
    let (k, rounds) = if quick { (1, 3) } else { (8, 9) };
    let mut rows = Vec::new();
    // BENCH_ROWS=seq,8 (substrings of row names) runs only those rows.
    let only = std::env::var("BENCH_ROWS").ok();
    let mut row =
        |name: &'static str, unit, higher_better, f: &mut dyn FnMut() -> (f64, f64, f64)| {
            if only
                .as_deref()
                .is_some_and(|o| !o.split(',').any(|w| name.contains(w)))
            {
                return;
            }
            let (client, floor, minimal, spread, floor_spread) = median_of(rounds, f);
            eprintln!(
                "[{label}] {name}: client {client:.1} floor {floor:.1} minimal {minimal:.1} {unit}"
            );
            rows.push(Row {
                name,
                unit,
                client,
                floor,
                higher_better,
                spread,
                floor_spread,
                minimal,
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
        "| workload | unit | client | floor | ratio | client spread (min-max round) | floor spread \
         | minimal client | its ratio |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let note = if r.higher_better {
            " of floor"
        } else {
            "x floor"
        };
        println!(
            "| {} | {} | {:.1} | {:.1} | {:.2}{} | {:.1}-{:.1} | {:.1}-{:.1} | {:.1} | {:.2}{} |",
            r.name,
            r.unit,
            r.client,
            r.floor,
            r.client / r.floor,
            note,
            r.spread.0,
            r.spread.1,
            r.floor_spread.0,
            r.floor_spread.1,
            r.minimal,
            r.minimal / r.floor,
            note,
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
        // The rows only, pinned unless BENCH_UNPINNED is set (for `perf stat` / `strace -c -f`
        // counts per call).
        if std::env::var_os("BENCH_UNPINNED").is_some() {
            print("Unpinned", &run("unpinned"));
        } else {
            support::pin_to_core0();
            print("Pinned to one core", &run("pinned to core 0"));
        }
        return ExitCode::SUCCESS;
    }
    let unpinned = run("unpinned");
    let rss = peak_rss_kb(false);
    let base = peak_rss_kb(true);
    support::pin_to_core0();
    let pinned = run("pinned to core 0");
    let pinned_rss = peak_rss_kb(false);
    let large_rss = (probe_kb(&["--large"]), probe_kb(&["--large", "--floor"]));
    let idle_rss = (probe_kb(&["--idle"]), probe_kb(&["--idle-minimal"]));
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
        "resident memory of a process holding one idle client (after a call): {:.2} MB \
         (the minimal client: {:.2} MB)",
        idle_rss.0 / 1024.0,
        idle_rss.1 / 1024.0
    );
    ExitCode::SUCCESS
}
