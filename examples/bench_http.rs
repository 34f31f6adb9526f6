//! `tools/call` over Streamable HTTP on loopback, against a raw keep-alive floor: the same HTTP
//! request bytes the client sends, written on a kept-alive `TcpStream` and the response read by
//! hand (no HTTP library, no MCP layer). JSON replies and event-stream replies, sequential and 8
//! callers (8 connections); every table unpinned, then pinned to one core (client and server
//! threads alike). A bare ureq POST of the same body is shown too, for scale.
//!
//! | row                          | what is timed                                                   |
//! |------------------------------|-----------------------------------------------------------------|
//! | raw keep-alive (floor)       | write the pre-built request, read the head and the body to its end (`Content-Length`, or chunked to its last chunk) |
//! | bare ureq POST               | `agent.post(url).send(body)` + read the body to its end          |
//! | `Client::call_tool`          | a full call: id, pending slot, POST, read, parse, route, decode  |
//!
//! The server is the benchmark's own (not the tests' scripted one): one thread per connection,
//! replies pre-built with the request's id put in, so that it costs little next to a client. Its
//! CPU time per call (its threads' time from `/proc/self/task/*/schedstat` while the floor runs)
//! is printed with the tables. The last column counts the TCP connections the server accepted
//! per 1,000 calls after warm-up: 0 when every call reuses a kept-alive connection.
//!
//! ```text
//! cargo run --release --example bench_http [-- <calls>]
//! cargo run --release --example bench_http -- --only raw|ureq|json|sse [calls]   # one row, for strace -c / perf
//! ```

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use mcp_blocking::{Client, ServerConfig};

mod support;
use serde_json::json;

/// Rounds per row; rows are interleaved round by round and each row reports its median round,
/// so a busy machine disturbs all rows alike.
const ROUNDS: usize = 7;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--only") {
        // `--only raw|ureq|json|sse [calls]`: one row's sequential calls and nothing else
        // (after connecting and warming up), for `strace -c` or `perf` to look at.
        let calls = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
        return only(args.get(1).map_or("", String::as_str), calls);
    }
    let calls: usize = args.first().and_then(|n| n.parse().ok()).unwrap_or(14_000);
    let unpinned = run(calls);
    support::pin_to_core0();
    let pinned = run(calls);
    println!(
        "Streamable HTTP tools/call, loopback, {ROUNDS} interleaved rounds of {} calls per row; \
         median round (spread: fastest-slowest round); new TCP connections per 1,000 calls after \
         warm-up",
        (calls / ROUNDS).max(8)
    );
    for (label, table) in [
        ("Unpinned (2 cores)", unpinned),
        ("Pinned to one core (client and server threads)", pinned),
    ] {
        println!();
        println!("{label}");
        println!();
        println!(
            "| row | calls/s | µs/call | spread µs | vs floor | fastest vs fastest | conns / 1,000 calls |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|");
        for r in &table.rows {
            println!(
                "| {} | {:.0} | {:.1} | {:.1}-{:.1} | {:.2}x | {:.2}x | {:.1} |",
                r.name,
                1.0 / r.per,
                r.per * 1e6,
                r.min * 1e6,
                r.max * 1e6,
                r.per / r.floor,
                r.min / r.floor_min,
                r.conns_per_1000
            );
        }
        println!();
        println!(
            "server CPU per call while the floor ran (sequential): JSON {:.1} µs, event-stream \
             {:.1} µs",
            table.server_json * 1e6,
            table.server_sse * 1e6
        );
    }
}

struct Table {
    rows: Vec<Row>,
    /// The server's CPU seconds per call during the sequential floor rows.
    server_json: f64,
    server_sse: f64,
}

struct Row {
    name: &'static str,
    /// Seconds per call (for 8 callers: wall time divided by all their calls), median round.
    per: f64,
    min: f64,
    max: f64,
    floor: f64,
    /// The floor's fastest round (unpinned, rounds swing between two modes on some machines).
    floor_min: f64,
    conns_per_1000: f64,
}

/// The id of the calling thread, whose CPU time `/proc` gives (none where there is no `/proc`).
#[cfg(unix)]
fn thread_id() -> Option<i32> {
    Some(rustix::thread::gettid().as_raw_nonzero().get())
}

/// The id of the calling thread, whose CPU time `/proc` gives (none where there is no `/proc`).
#[cfg(not(unix))]
fn thread_id() -> Option<i32> {
    None
}

/// What one row measures: a name, a way to run `n` calls on one caller, and the server whose
/// accepted connections it counts.
struct Bench<'a> {
    name: &'static str,
    srv: &'a BenchServer,
    /// Runs this many calls; one per caller thread (`threads8` gives each its own state).
    run: Box<dyn Fn(usize) + Sync + 'a>,
    times: Vec<f64>,
    conns: usize,
}

impl<'a> Bench<'a> {
    /// A row named `names[0]` when `seq`, else `names[1]` (its 8-caller name).
    fn new(
        seq: bool,
        names: [&'static str; 2],
        srv: &'a BenchServer,
        run: Box<dyn Fn(usize) + Sync + 'a>,
    ) -> Self {
        Bench {
            name: names[usize::from(!seq)],
            srv,
            run,
            times: Vec::new(),
            conns: 0,
        }
    }
}

/// One table: servers started here (so after pinning their threads are pinned too).
fn run(calls: usize) -> Table {
    let per_round = (calls / ROUNDS).max(8);
    let json_srv = BenchServer::start(false);
    let sse_srv = BenchServer::start(true);
    let json_client = connect(&json_srv);
    let sse_client = connect(&sse_srv);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    .to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_idle_connections_per_host(16)
        .build()
        .into();

    let mut table = Table {
        rows: Vec::new(),
        server_json: 0.0,
        server_sse: 0.0,
    };
    for callers in [1usize, 8] {
        let n = (per_round / callers).max(1);
        let seq = callers == 1;
        // Raw connections are kept across rounds (one per caller), like the clients' pools.
        let raw = |srv: &BenchServer| {
            let (body, url) = (body.clone(), srv.url());
            let pool: Mutex<Vec<RawFloor>> = Mutex::new(Vec::new());
            move |n: usize| {
                let popped = lock(&pool).pop();
                let mut floor = popped.unwrap_or_else(|| RawFloor::connect(&url, &body));
                floor.calls(n);
                lock(&pool).push(floor);
            }
        };
        let mut benches = vec![
            Bench::new(
                seq,
                [
                    "sequential: raw keep-alive, JSON reply (floor)",
                    "8 callers: raw keep-alive, JSON reply (floor)",
                ],
                &json_srv,
                Box::new(raw(&json_srv)),
            ),
            Bench::new(
                seq,
                [
                    "sequential: bare ureq POST, JSON reply",
                    "8 callers: bare ureq POSTs (one agent), JSON reply",
                ],
                &json_srv,
                Box::new(|n| ureq_calls(&agent, &json_srv.url(), &body, n)),
            ),
            Bench::new(
                seq,
                [
                    "sequential: Client::call_tool, JSON reply",
                    "8 callers: one Client, JSON reply",
                ],
                &json_srv,
                Box::new(|n| calls_on(&json_client, n)),
            ),
            Bench::new(
                seq,
                [
                    "sequential: raw keep-alive, event-stream reply (floor)",
                    "8 callers: raw keep-alive, event-stream reply (floor)",
                ],
                &sse_srv,
                Box::new(raw(&sse_srv)),
            ),
            Bench::new(
                seq,
                [
                    "sequential: Client::call_tool, event-stream reply",
                    "8 callers: one Client, event-stream reply",
                ],
                &sse_srv,
                Box::new(|n| calls_on(&sse_client, n)),
            ),
        ];
        let (mut cpu_json, mut cpu_sse) = (0.0, 0.0);
        for _ in 0..ROUNDS {
            for (i, b) in benches.iter_mut().enumerate() {
                let before = b.srv.accepted();
                let cpu = b.srv.cpu_secs();
                let t = if seq {
                    let started = Instant::now();
                    (b.run)(n);
                    started.elapsed().as_secs_f64()
                } else {
                    threads8(|| (b.run)(n))
                };
                let cpu = b.srv.cpu_secs() - cpu;
                match i {
                    0 if seq => cpu_json += cpu,
                    3 if seq => cpu_sse += cpu,
                    _ => {}
                }
                b.times.push(t / (n * callers) as f64);
                b.conns += b.srv.accepted() - before;
            }
        }
        if seq {
            table.server_json = cpu_json / (ROUNDS * n) as f64;
            table.server_sse = cpu_sse / (ROUNDS * n) as f64;
        }
        let total = (ROUNDS * n * callers) as f64 / 1000.0;
        let (mut floor, mut floor_min) = (0.0, 0.0);
        for (i, mut b) in benches.into_iter().enumerate() {
            let per = median(&mut b.times);
            if i == 0 || i == 3 {
                floor = per;
                floor_min = b.times[0];
            }
            let conns = b.conns;
            table.rows.push(Row {
                name: b.name,
                per,
                min: b.times[0],
                max: b.times[b.times.len() - 1],
                floor,
                floor_min,
                conns_per_1000: conns as f64 / total,
            });
        }
    }
    json_client.close().expect("close");
    sse_client.close().expect("close");
    table
}

/// One row's sequential calls, the server's started beforehand; prints the time per call and
/// the connections accepted.
fn only(row: &str, calls: usize) {
    let srv = BenchServer::start(row == "sse");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
    .to_string();
    let started;
    match row {
        "raw" => {
            let mut floor = RawFloor::connect(&srv.url(), &body);
            floor.calls(200);
            eprintln!("ready");
            started = Instant::now();
            floor.calls(calls);
        }
        "ureq" => {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .build()
                .into();
            ureq_calls(&agent, &srv.url(), &body, 200);
            eprintln!("ready");
            started = Instant::now();
            ureq_calls(&agent, &srv.url(), &body, calls);
        }
        "json" | "sse" => {
            let client = connect(&srv);
            eprintln!("ready");
            started = Instant::now();
            calls_on(&client, calls);
        }
        _ => {
            eprintln!("--only raw|ureq|json|sse [calls]");
            std::process::exit(2);
        }
    }
    let per = started.elapsed().as_secs_f64() / calls as f64;
    println!(
        "{row}: {:.1} µs/call, {} connections accepted",
        per * 1e6,
        srv.accepted()
    );
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

/// The median; leaves `secs` sorted.
fn median(secs: &mut [f64]) -> f64 {
    secs.sort_by(|a, b| a.total_cmp(b));
    secs[secs.len() / 2]
}

fn connect(srv: &BenchServer) -> Client {
    let client = Client::connect(ServerConfig::http("bench", srv.url()).with_timeout_secs(10.0))
        .expect("connect");
    calls_on(&client, 200);
    client
}

fn calls_on(client: &Client, calls: usize) {
    for i in 0..calls {
        client
            .call_tool("add", json!({"a": i, "b": 2}))
            .expect("call");
    }
}

fn ureq_calls(agent: &ureq::Agent, url: &str, body: &str, calls: usize) {
    for _ in 0..calls {
        let resp = agent
            .post(url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", SESSION)
            .header("MCP-Protocol-Version", "2025-11-25")
            .send(body.as_bytes())
            .expect("POST");
        let mut buf = Vec::new();
        resp.into_body()
            .into_reader()
            .read_to_end(&mut buf)
            .expect("body");
        assert!(find(&buf, b"\"result\"").is_some());
    }
}

/// The raw floor: one kept-alive connection, the request pre-built (the headers the client
/// sends), the response read to its end by hand.
struct RawFloor {
    stream: TcpStream,
    request: Vec<u8>,
    buf: Vec<u8>,
}

impl RawFloor {
    fn connect(url: &str, body: &str) -> RawFloor {
        let authority = url
            .strip_prefix("http://")
            .and_then(|s| s.split('/').next())
            .expect("an http:// URL");
        let stream = TcpStream::connect(authority).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {authority}\r\naccept: application/json, \
             text/event-stream\r\ncontent-type: application/json\r\nmcp-session-id: {SESSION}\r\n\
             mcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        RawFloor {
            stream,
            request,
            buf: Vec::with_capacity(4096),
        }
    }

    fn calls(&mut self, n: usize) {
        for _ in 0..n {
            self.stream.write_all(&self.request).expect("write");
            let body = read_response(&mut self.stream, &mut self.buf).expect("response");
            assert!(find(&self.buf[body], b"\"result\"").is_some());
        }
    }
}

/// Reads one HTTP response into `buf` (cleared first); the range of its body (for a chunked
/// body, the raw chunks, read to the last one).
fn read_response(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<std::ops::Range<usize>> {
    buf.clear();
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        fill(stream, buf)?;
    };
    let head = &buf[..head_end];
    if let Some(len) = header_value(head, b"content-length") {
        let len: usize = std::str::from_utf8(len)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| io::Error::other("bad content-length"))?;
        while buf.len() < head_end + len {
            fill(stream, buf)?;
        }
        return Ok(head_end..head_end + len);
    }
    // Chunked: read until the last chunk and the blank line after it.
    while !buf[head_end..].ends_with(b"0\r\n\r\n") {
        fill(stream, buf)?;
    }
    Ok(head_end..buf.len())
}

fn fill(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<()> {
    let len = buf.len();
    buf.resize(len + 4096, 0);
    match stream.read(&mut buf[len..]) {
        Ok(0) => {
            buf.truncate(len);
            Err(io::ErrorKind::UnexpectedEof.into())
        }
        Ok(n) => {
            buf.truncate(len + n);
            Ok(())
        }
        Err(e) => {
            buf.truncate(len);
            Err(e)
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The value of header `name` (lower-case) in a response or request head.
fn header_value<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon]
            .eq_ignore_ascii_case(name)
            .then(|| line[colon + 1..].trim_ascii())
    })
}

/// The session id the benchmark server hands out.
const SESSION: &str = "bench-session";

/// The benchmark's server: MCP over Streamable HTTP with pre-built replies, one thread per
/// connection, `tools/call` answered with `{"content":[{"type":"text","text":"3"}]}` as JSON or
/// as one SSE event in a chunked body (written with its end in one write).
struct BenchServer {
    addr: std::net::SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    accepted: AtomicUsize,
    stop: AtomicBool,
    /// Connection threads: their Linux thread ids (for CPU time) and handles.
    tids: Mutex<Vec<i32>>,
    conns: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

impl BenchServer {
    fn start(sse: bool) -> BenchServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared::default());
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("bench-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    sh.accepted.fetch_add(1, Ordering::SeqCst);
                    let _ = stream.set_nodelay(true);
                    let Ok(copy) = stream.try_clone() else {
                        continue;
                    };
                    let sh2 = Arc::clone(&sh);
                    let h = std::thread::Builder::new()
                        .name("bench-conn".into())
                        .spawn(move || {
                            lock(&sh2.tids).extend(thread_id());
                            let _ = serve(stream, sse);
                        })
                        .expect("spawn");
                    lock(&sh.conns).push((copy, h));
                }
            })
            .expect("spawn");
        BenchServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn accepted(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// CPU seconds used so far by the connection threads alive now.
    fn cpu_secs(&self) -> f64 {
        lock(&self.shared.tids)
            .iter()
            .filter_map(|tid| {
                let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
                s.split_whitespace().next()?.parse::<f64>().ok()
            })
            .sum::<f64>()
            / 1e9
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
        for (stream, h) in lock(&self.shared.conns).drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = h.join();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serves one connection until it closes.
fn serve(mut stream: TcpStream, sse: bool) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut out: Vec<u8> = Vec::with_capacity(1024);
    let mut start = 0;
    loop {
        // One request: its head, then its body by Content-Length.
        let (head_end, body_end) = loop {
            if let Some(i) = find(&buf[start..], b"\r\n\r\n") {
                let head_end = start + i + 4;
                let len = header_value(&buf[start..head_end], b"content-length")
                    .and_then(|v| std::str::from_utf8(v).ok()?.parse::<usize>().ok())
                    .unwrap_or(0);
                if buf.len() >= head_end + len {
                    break (head_end, head_end + len);
                }
            }
            if start > 0 {
                buf.drain(..start);
                start = 0;
                continue;
            }
            if let Err(e) = fill(&mut stream, &mut buf) {
                return if e.kind() == io::ErrorKind::UnexpectedEof {
                    Ok(())
                } else {
                    Err(e)
                };
            }
        };
        let head = &buf[start..head_end];
        let body = &buf[head_end..body_end];
        out.clear();
        respond(head, body, sse, &mut out);
        stream.write_all(&out)?;
        start = body_end;
        if start == buf.len() {
            buf.clear();
            start = 0;
        }
    }
}

/// The response to one request, appended to `out`.
fn respond(head: &[u8], body: &[u8], sse: bool, out: &mut Vec<u8>) {
    let empty = |out: &mut Vec<u8>, status: &str| {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(status.as_bytes());
        out.extend_from_slice(b"\r\ncontent-length: 0\r\n\r\n");
    };
    if head.starts_with(b"GET ") {
        return empty(out, "405 Method Not Allowed");
    }
    if head.starts_with(b"DELETE ") {
        return empty(out, "200 OK");
    }
    let method = json_string_after(body, b"\"method\"").unwrap_or_default();
    let Some(id) = json_token_after(body, b"\"id\"") else {
        // A notification.
        return empty(out, "202 Accepted");
    };
    let result: &[u8] = match method {
        b"initialize" => {
            br#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bench","version":"1.0.0"}}"#
        }
        b"tools/list" => {
            br#"{"tools":[{"name":"add","description":"a + b","inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}}]}"#
        }
        b"tools/call" => br#"{"content":[{"type":"text","text":"3"}],"isError":false}"#,
        _ => b"{}",
    };
    let msg_len = br#"{"jsonrpc":"2.0","id":,"result":}"#.len() + id.len() + result.len();
    let msg = |out: &mut Vec<u8>| {
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        out.extend_from_slice(id);
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(result);
        out.push(b'}');
    };
    if sse {
        // One event in one chunk, then the last chunk: "event: message\ndata: {msg}\n\n".
        let event_len = "event: message\ndata: ".len() + msg_len + 2;
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
             mcp-session-id: {SESSION}\r\ntransfer-encoding: chunked\r\n\r\n{event_len:x}\r\n\
             event: message\ndata: "
        );
        msg(out);
        out.extend_from_slice(b"\n\n\r\n0\r\n\r\n");
    } else {
        let _ = write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: {SESSION}\r\n\
             content-length: {msg_len}\r\n\r\n"
        );
        msg(out);
    }
}

/// The raw JSON value token after `key` (`"id": 7` gives `7`, `"id":"a"` gives `"a"`).
fn json_token_after<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = find(body, key)? + key.len();
    let rest = body[at..]
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let end = if rest.first() == Some(&b'"') {
        1 + rest[1..].iter().position(|&b| b == b'"')? + 1
    } else {
        rest.iter()
            .position(|&b| b == b',' || b == b'}' || b.is_ascii_whitespace())?
    };
    Some(&rest[..end])
}

/// The string value after `key`, without its quotes.
fn json_string_after<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let tok = json_token_after(body, key)?;
    tok.strip_prefix(b"\"")?.strip_suffix(b"\"")
}
