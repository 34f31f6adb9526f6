//! What sender-constrained tokens cost the client: `Client::call_tool` over Streamable HTTP on
//! loopback with an OAuth `client_credentials` token sent as `Bearer`, against the same call with
//! [`OAuthConfig::dpop`]`(true)` and a token issued as `DPoP`, where every request carries
//! `Authorization: DPoP <token>` and a fresh ES256 proof (a new `jti`, the request's method and
//! URL, the token's hash). A server without authorization is shown too, for scale. One table
//! unpinned, then one pinned to one core (client and server threads alike).
//!
//! | row     | what is timed                                                                     |
//! |---------|-----------------------------------------------------------------------------------|
//! | no auth | a full `call_tool` (id, pending slot, POST, read, parse, route, decode)            |
//! | Bearer  | the same, with `Authorization: Bearer <token>`                                     |
//! | DPoP    | the same, with `Authorization: DPoP <token>` and a `DPoP:` proof signed for the request |
//!
//! The token is obtained once, before timing (the server's first 401 starts discovery and the
//! grant); the timed calls are the ones a long-lived client makes with a token in hand.
//!
//! The server is the benchmark's own: one thread per connection, the protected resource and
//! authorization server metadata and a `/token` endpoint (a `DPoP` token when the token request
//! carried a proof, else a `Bearer` one), and `/mcp`, which answers 401 without an
//! `Authorization` header and otherwise a pre-built reply with the request's id put in. It does
//! not verify proofs, which is the server's cost and not the client's; it counts the `/mcp`
//! requests carrying a proof, under which scheme, and proofs equal to the one before them on
//! the same connection, so the table shows that every timed DPoP call had a proof of its own.
//! Its CPU time per call (its connection threads' time from `/proc/self/task/*/schedstat`) is
//! shown too. The benchmark exits with status 1 when a count is off.
//!
//! ```text
//! cargo run --release --example bench_dpop [-- <calls per row>]
//! ```

mod support;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mcp_blocking::auth::{MemoryTokenStore, OAuthConfig};
use mcp_blocking::{Client, ServerConfig};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

/// Rounds per row; rows are interleaved round by round and each row reports its median round,
/// so a busy machine disturbs all rows alike.
const ROUNDS: usize = 7;

/// Calls made on each client before timing (connections opened, the token in hand).
const WARM_UP: usize = 200;

/// The largest request head the server reads, and the largest body: a request over either
/// closes its connection (the client's requests are well under 2 KiB).
const MAX_HEAD: usize = 16 * 1024;
const MAX_BODY: usize = 64 * 1024;

/// How long a server connection waits for its next request before closing: longer than any
/// pause between one row's rounds, so every timed call finds its kept-alive connection.
const IDLE: Duration = Duration::from_secs(60);

fn main() {
    let calls: usize = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(14_000);
    let unpinned = run(calls);
    support::pin_to_core0();
    let pinned = run(calls);
    let per_round = (calls / ROUNDS).max(1);
    println!(
        "Streamable HTTP tools/call, loopback, {ROUNDS} interleaved rounds of {per_round} calls \
         per row; median round (spread: fastest-slowest round)"
    );
    let mut ok = true;
    for (label, table) in [
        ("Unpinned (2 cores)", &unpinned),
        ("Pinned to one core (client and server threads)", &pinned),
    ] {
        println!();
        println!("{label}");
        println!();
        println!(
            "| row | calls/s | µs/call | spread µs | vs Bearer | server CPU µs/call | \
             /mcp requests per call | with a proof | repeated proofs | scheme |"
        );
        println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|");
        let bearer = table.row("Bearer");
        for r in &table.rows {
            println!(
                "| {} | {:.0} | {:.1} | {:.1}-{:.1} | {:.2}x | {} | {:.2} | {} | {} | {} |",
                r.name,
                1.0 / r.per,
                r.per * 1e6,
                r.min * 1e6,
                r.max * 1e6,
                r.per / bearer.per,
                r.server_cpu
                    .map_or_else(|| "n/a".to_owned(), |s| format!("{:.1}", s * 1e6)),
                r.counts.requests as f64 / r.calls as f64,
                r.counts.proofs,
                r.counts.repeated,
                r.counts.scheme(),
            );
        }
        let dpop = table.row("DPoP");
        println!();
        println!(
            "DPoP / Bearer: {:.2}x (median rounds), {:+.1} µs per call; fastest rounds {:.2}x",
            dpop.per / bearer.per,
            (dpop.per - bearer.per) * 1e6,
            dpop.min / bearer.min,
        );
        println!(
            "for scale: one ES256 signature alone (ring, a proof-sized input): {:.1} µs",
            table.sign * 1e6
        );
        for r in &table.rows {
            let problem = r.check();
            println!(
                "proof check, {}: {} timed calls, {} /mcp requests, {} with a proof, {} under \
                 DPoP, {} under Bearer: {}",
                r.name,
                r.calls,
                r.counts.requests,
                r.counts.proofs,
                r.counts.dpop_scheme,
                r.counts.bearer_scheme,
                problem.as_deref().unwrap_or("ok"),
            );
            ok &= problem.is_none();
        }
    }
    if !ok {
        std::process::exit(1);
    }
}

struct Table {
    rows: Vec<Row>,
    /// Seconds per ES256 signature alone (median round), for scale.
    sign: f64,
}

impl Table {
    fn row(&self, name: &str) -> &Row {
        self.rows
            .iter()
            .find(|r| r.name == name)
            .expect("every table has this row")
    }
}

struct Row {
    name: &'static str,
    /// Seconds per call: the median round, the fastest and the slowest.
    per: f64,
    min: f64,
    max: f64,
    /// The server's CPU seconds per call, where `/proc` gives them.
    server_cpu: Option<f64>,
    /// Timed calls, and what the server saw during them.
    calls: usize,
    counts: Counts,
}

impl Row {
    /// What is wrong with the server's counts for this row, if anything: one `/mcp` request per
    /// call, and a fresh proof under the `DPoP` scheme on each (DPoP) or none at all.
    fn check(&self) -> Option<String> {
        let c = &self.counts;
        if c.requests != self.calls {
            return Some(format!(
                "MISMATCH: {} requests for {} calls",
                c.requests, self.calls
            ));
        }
        let want = match self.name {
            "DPoP" => (self.calls, self.calls, 0),
            "Bearer" => (0, 0, self.calls),
            _ => (0, 0, 0),
        };
        if (c.proofs, c.dpop_scheme, c.bearer_scheme) != want || c.repeated != 0 {
            return Some(format!(
                "MISMATCH: expected {} proofs, {} under DPoP, {} under Bearer, none repeated",
                want.0, want.1, want.2
            ));
        }
        None
    }
}

/// What a server saw on `/mcp`; a snapshot of [`Shared`]'s counters, or the difference of two.
#[derive(Clone, Copy, Default)]
struct Counts {
    requests: usize,
    proofs: usize,
    repeated: usize,
    dpop_scheme: usize,
    bearer_scheme: usize,
}

impl Counts {
    fn since(self, before: Counts) -> Counts {
        Counts {
            requests: self.requests - before.requests,
            proofs: self.proofs - before.proofs,
            repeated: self.repeated - before.repeated,
            dpop_scheme: self.dpop_scheme - before.dpop_scheme,
            bearer_scheme: self.bearer_scheme - before.bearer_scheme,
        }
    }

    fn add(&mut self, other: Counts) {
        self.requests += other.requests;
        self.proofs += other.proofs;
        self.repeated += other.repeated;
        self.dpop_scheme += other.dpop_scheme;
        self.bearer_scheme += other.bearer_scheme;
    }

    /// The `Authorization` scheme every request carried.
    fn scheme(&self) -> &'static str {
        match (self.dpop_scheme, self.bearer_scheme) {
            (0, 0) => "none",
            (_, 0) => "DPoP",
            (0, _) => "Bearer",
            _ => "mixed",
        }
    }
}

/// One row being measured: its client, the server it talks to, its rounds.
struct Bench<'a> {
    name: &'static str,
    client: Client,
    srv: &'a BenchServer,
    times: Vec<f64>,
    cpu: f64,
    counts: Counts,
}

/// One table. The servers are started here, so that after pinning their threads are pinned
/// too.
fn run(calls: usize) -> Table {
    let per_round = (calls / ROUNDS).max(1);
    let open = BenchServer::start(false);
    let protected = BenchServer::start(true);
    let oauth = || {
        OAuthConfig::client_credentials("bench-client", "bench-secret")
            .token_store(MemoryTokenStore::new())
    };
    let mut benches = [
        ("no auth", &open, None),
        ("Bearer", &protected, Some(oauth().dpop(false))),
        ("DPoP", &protected, Some(oauth().dpop(true))),
    ]
    .map(|(name, srv, oauth)| {
        let mut config =
            ServerConfig::http(name.replace(' ', "-"), srv.url()).with_timeout_secs(10.0);
        if let Some(oauth) = oauth {
            config = config.with_oauth(oauth);
        }
        let client = Client::connect(config).expect("connect");
        calls_on(&client, WARM_UP);
        Bench {
            name,
            client,
            srv,
            times: Vec::new(),
            cpu: 0.0,
            counts: Counts::default(),
        }
    });
    assert_eq!(
        protected.tokens_issued(),
        [1, 1],
        "one Bearer and one DPoP token, obtained before timing"
    );
    let signer = Signer::new();
    let mut signs = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        signer.sign(per_round);
        signs.push(started.elapsed().as_secs_f64() / per_round as f64);
        for b in &mut benches {
            let counts = b.srv.counts();
            let cpu = b.srv.cpu_secs();
            let started = Instant::now();
            calls_on(&b.client, per_round);
            let t = started.elapsed().as_secs_f64();
            b.cpu += b.srv.cpu_secs().unwrap_or(0.0) - cpu.unwrap_or(0.0);
            b.counts.add(b.srv.counts().since(counts));
            b.times.push(t / per_round as f64);
        }
    }
    let rows = benches
        .into_iter()
        .map(|mut b| {
            let timed = ROUNDS * per_round;
            let server_cpu = b.srv.cpu_secs().map(|_| b.cpu / timed as f64);
            b.client.close().expect("close");
            b.times.sort_by(f64::total_cmp);
            Row {
                name: b.name,
                per: b.times[b.times.len() / 2],
                min: b.times[0],
                max: b.times[b.times.len() - 1],
                server_cpu,
                calls: timed,
                counts: b.counts,
            }
        })
        .collect();
    signs.sort_by(f64::total_cmp);
    Table {
        rows,
        sign: signs[signs.len() / 2],
    }
}

/// An ES256 signature alone, with the library's crypto (ring): a P-256 key and an input the
/// size of a proof's signed part, timed in the same rounds as the calls.
struct Signer {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
    input: Vec<u8>,
}

impl Signer {
    fn new() -> Signer {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("a P-256 key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng)
            .expect("the key just made");
        Signer {
            pair,
            rng,
            // A proof's header (with its JWK) and claims, base64url: about 450 bytes.
            input: vec![b'e'; 450],
        }
    }

    fn sign(&self, n: usize) {
        for _ in 0..n {
            let sig = self.pair.sign(&self.rng, &self.input).expect("signed");
            assert_eq!(sig.as_ref().len(), 64, "an ES256 signature is r || s");
        }
    }
}

fn calls_on(client: &Client, calls: usize) {
    for i in 0..calls {
        let r = client
            .call_tool("add", json!({"a": i, "b": 2}))
            .expect("call");
        assert_eq!(r.is_error, Some(false), "the tool answered");
    }
}

/// The benchmark's server: MCP over Streamable HTTP with pre-built replies, one thread per
/// connection; when `protected`, also an OAuth protected resource and its authorization server
/// (see the module documentation).
struct BenchServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    protected: bool,
    /// The metadata documents and the 401 challenge naming the first, built once.
    resource_metadata: String,
    as_metadata: String,
    challenge: String,
    stop: AtomicBool,
    /// Tokens issued: `Bearer`, then `DPoP`.
    bearer_tokens: AtomicUsize,
    dpop_tokens: AtomicUsize,
    /// Requests to `/mcp`, those with a `DPoP` header, those whose proof equals the one before
    /// it on its connection, and those under each `Authorization` scheme.
    requests: AtomicUsize,
    proofs: AtomicUsize,
    repeated: AtomicUsize,
    dpop_scheme: AtomicUsize,
    bearer_scheme: AtomicUsize,
    /// Connection threads: their Linux thread ids (for CPU time), and each one's stream (to
    /// shut down) and handle (to join).
    tids: Mutex<Vec<i32>>,
    conns: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

impl BenchServer {
    fn start(protected: bool) -> BenchServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let origin = format!("http://{addr}");
        let shared = Arc::new(Shared {
            protected,
            resource_metadata: json!({
                "resource": format!("{origin}/mcp"),
                "authorization_servers": [origin],
            })
            .to_string(),
            as_metadata: json!({
                "issuer": origin,
                "token_endpoint": format!("{origin}/token"),
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "dpop_signing_alg_values_supported": ["ES256"],
                // The client checks for PKCE before any grant, even one without a code.
                "code_challenge_methods_supported": ["S256"],
            })
            .to_string(),
            challenge: format!(
                "Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
            ),
            stop: AtomicBool::new(false),
            bearer_tokens: AtomicUsize::new(0),
            dpop_tokens: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            proofs: AtomicUsize::new(0),
            repeated: AtomicUsize::new(0),
            dpop_scheme: AtomicUsize::new(0),
            bearer_scheme: AtomicUsize::new(0),
            tids: Mutex::new(Vec::new()),
            conns: Mutex::new(Vec::new()),
        });
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("bench-accept".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = stream.set_nodelay(true);
                    let _ = stream.set_read_timeout(Some(IDLE));
                    let Ok(copy) = stream.try_clone() else {
                        continue;
                    };
                    let conn_sh = Arc::clone(&sh);
                    let h = std::thread::Builder::new()
                        .name("bench-conn".into())
                        .spawn(move || {
                            lock(&conn_sh.tids).extend(thread_id());
                            let _ = serve(stream, &conn_sh);
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

    /// Tokens issued so far: `[Bearer, DPoP]`.
    fn tokens_issued(&self) -> [usize; 2] {
        [
            self.shared.bearer_tokens.load(Ordering::SeqCst),
            self.shared.dpop_tokens.load(Ordering::SeqCst),
        ]
    }

    fn counts(&self) -> Counts {
        let s = &self.shared;
        Counts {
            requests: s.requests.load(Ordering::SeqCst),
            proofs: s.proofs.load(Ordering::SeqCst),
            repeated: s.repeated.load(Ordering::SeqCst),
            dpop_scheme: s.dpop_scheme.load(Ordering::SeqCst),
            bearer_scheme: s.bearer_scheme.load(Ordering::SeqCst),
        }
    }

    /// CPU seconds used so far by the connection threads alive now; `None` where `/proc` does
    /// not give them.
    fn cpu_secs(&self) -> Option<f64> {
        let tids = lock(&self.shared.tids);
        let mut total = None;
        for tid in tids.iter() {
            let Ok(s) = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")) else {
                continue;
            };
            if let Some(ns) = s
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<f64>().ok())
            {
                *total.get_or_insert(0.0) += ns / 1e9;
            }
        }
        total
    }
}

impl Drop for BenchServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stop`.
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The id of the calling thread, whose CPU time `/proc` gives.
#[cfg(unix)]
fn thread_id() -> Option<i32> {
    Some(rustix::thread::gettid().as_raw_nonzero().get())
}

/// No thread ids where there is no `/proc`: the server's CPU time is shown as n/a.
#[cfg(not(unix))]
fn thread_id() -> Option<i32> {
    None
}

/// One request's parts, borrowed from the connection's buffer.
struct Request<'a> {
    method: &'a [u8],
    path: &'a [u8],
    authorization: Option<&'a [u8]>,
    dpop: Option<&'a [u8]>,
    body: &'a [u8],
}

/// Serves one connection until it closes, idles for [`IDLE`], or sends a request over the
/// limits.
fn serve(mut stream: TcpStream, sh: &Shared) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut out: Vec<u8> = Vec::with_capacity(1024);
    // The proof of the connection's previous request, to count a proof sent twice.
    let mut last_proof: Vec<u8> = Vec::new();
    loop {
        let Some(used) = next_request(&mut stream, &mut buf)? else {
            return Ok(());
        };
        let req = parse(&buf[..used]);
        out.clear();
        respond(&req, sh, &mut last_proof, &mut out);
        stream.write_all(&out)?;
        buf.drain(..used);
    }
}

/// Reads until `buf` starts with a whole request; its length, or `None` when the peer closed
/// between requests.
fn next_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> io::Result<Option<usize>> {
    loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            let head_end = i + 4;
            let len = header(&buf[..head_end], b"content-length")
                .and_then(|v| std::str::from_utf8(v).ok()?.parse::<usize>().ok())
                .unwrap_or(0);
            if len > MAX_BODY {
                return Err(io::Error::other("request body over the limit"));
            }
            if buf.len() >= head_end + len {
                return Ok(Some(head_end + len));
            }
        } else if buf.len() > MAX_HEAD {
            return Err(io::Error::other("request head over the limit"));
        }
        let len = buf.len();
        buf.resize(len + 4096, 0);
        let n = stream.read(&mut buf[len..]);
        buf.truncate(len + *n.as_ref().unwrap_or(&0));
        match n? {
            0 if len == 0 => return Ok(None),
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            _ => {}
        }
    }
}

fn parse(request: &[u8]) -> Request<'_> {
    let head_end = find(request, b"\r\n\r\n").map_or(request.len(), |i| i + 4);
    let head = &request[..head_end];
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut words = line.split(|&b| b == b' ');
    Request {
        method: words.next().unwrap_or_default(),
        path: words.next().unwrap_or_default(),
        authorization: header(head, b"authorization"),
        dpop: header(head, b"dpop"),
        body: &request[head_end..],
    }
}

/// The response to one request, written to `out`.
fn respond(req: &Request, sh: &Shared, last_proof: &mut Vec<u8>, out: &mut Vec<u8>) {
    match (req.method, req.path) {
        (b"GET", b"/.well-known/oauth-protected-resource/mcp") if sh.protected => {
            reply(
                out,
                "200 OK",
                "application/json",
                &[],
                sh.resource_metadata.as_bytes(),
            );
        }
        (b"GET", b"/.well-known/oauth-authorization-server") if sh.protected => {
            reply(
                out,
                "200 OK",
                "application/json",
                &[],
                sh.as_metadata.as_bytes(),
            );
        }
        (b"POST", b"/token") if sh.protected => token(req, sh, out),
        (b"POST", b"/mcp") => mcp(req, sh, last_proof, out),
        // No server-to-client stream is offered.
        (b"GET", b"/mcp") => reply(out, "405 Method Not Allowed", "text/plain", &[], b""),
        (b"DELETE", b"/mcp") => reply(out, "200 OK", "text/plain", &[], b""),
        _ => reply(out, "404 Not Found", "text/plain", &[], b""),
    }
}

/// `POST /token`: a `client_credentials` grant authenticated with `client_secret_basic`; the
/// token is `DPoP` when the request carried a proof.
fn token(req: &Request, sh: &Shared, out: &mut Vec<u8>) {
    if !req.authorization.is_some_and(|a| a.starts_with(b"Basic ")) {
        let body = br#"{"error":"invalid_client"}"#;
        return reply(out, "401 Unauthorized", "application/json", &[], body);
    }
    if find(req.body, b"grant_type=client_credentials").is_none() {
        let body = br#"{"error":"unsupported_grant_type"}"#;
        return reply(out, "400 Bad Request", "application/json", &[], body);
    }
    let (kind, count) = if req.dpop.is_some() {
        ("DPoP", &sh.dpop_tokens)
    } else {
        ("Bearer", &sh.bearer_tokens)
    };
    let n = count.fetch_add(1, Ordering::SeqCst);
    let body = json!({
        "access_token": format!("bench-{}-token-{n}", kind.to_ascii_lowercase()),
        "token_type": kind,
        "expires_in": 3600,
    })
    .to_string();
    reply(
        out,
        "200 OK",
        "application/json",
        &[("cache-control", "no-store")],
        body.as_bytes(),
    );
}

/// The session id the server hands out.
const SESSION: &str = "bench-dpop-session";

/// `POST /mcp`: 401 without a token when protected, else the JSON-RPC answer.
fn mcp(req: &Request, sh: &Shared, last_proof: &mut Vec<u8>, out: &mut Vec<u8>) {
    if sh.protected && req.authorization.is_none() {
        let _ = write!(
            out,
            "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: {}\r\ncontent-length: 0\r\n\r\n",
            sh.challenge
        );
        return;
    }
    let authorization = req.authorization.unwrap_or_default();
    sh.requests.fetch_add(1, Ordering::SeqCst);
    if authorization.starts_with(b"DPoP ") {
        sh.dpop_scheme.fetch_add(1, Ordering::SeqCst);
    } else if authorization.starts_with(b"Bearer ") {
        sh.bearer_scheme.fetch_add(1, Ordering::SeqCst);
    }
    if let Some(proof) = req.dpop {
        sh.proofs.fetch_add(1, Ordering::SeqCst);
        if proof == last_proof.as_slice() {
            sh.repeated.fetch_add(1, Ordering::SeqCst);
        }
        last_proof.clear();
        last_proof.extend_from_slice(proof);
    }
    let Some(id) = json_token_after(req.body, b"\"id\"") else {
        // A notification.
        return reply(out, "202 Accepted", "text/plain", &[], b"");
    };
    let method = json_token_after(req.body, b"\"method\"").unwrap_or_default();
    let (head, tail): (&[u8], &[u8]) = match method {
        b"\"initialize\"" => (
            br#"{"jsonrpc":"2.0","id":"#,
            br#","result":{"capabilities":{"tools":{}},"serverInfo":{"name":"bench-dpop","version":"1.0.0"},"protocolVersion":"#,
        ),
        b"\"tools/call\"" => (
            br#"{"jsonrpc":"2.0","id":"#,
            br#","result":{"content":[{"type":"text","text":"3"}],"isError":false}}"#,
        ),
        _ => (br#"{"jsonrpc":"2.0","id":"#, br#","result":{}}"#),
    };
    // The initialize result echoes the version the client asked for.
    let version = (method == b"\"initialize\"").then(|| {
        json_token_after(req.body, b"\"protocolVersion\"").unwrap_or(&b"\"2025-11-25\""[..])
    });
    let len = head.len() + id.len() + tail.len() + version.map_or(0, |v| v.len() + 2);
    let _ = write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nmcp-session-id: {SESSION}\r\n\
         content-length: {len}\r\n\r\n"
    );
    out.extend_from_slice(head);
    out.extend_from_slice(id);
    out.extend_from_slice(tail);
    if let Some(v) = version {
        out.extend_from_slice(v);
        out.extend_from_slice(b"}}");
    }
}

/// A whole response with a `Content-Length` body.
fn reply(out: &mut Vec<u8>, status: &str, ty: &str, extra: &[(&str, &str)], body: &[u8]) {
    let _ = write!(out, "HTTP/1.1 {status}\r\ncontent-type: {ty}\r\n");
    for (name, value) in extra {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    let _ = write!(out, "content-length: {}\r\n\r\n", body.len());
    out.extend_from_slice(body);
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The value of header `name` (lower-case) in a request head.
fn header<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let colon = line.iter().position(|&b| b == b':')?;
        line[..colon]
            .eq_ignore_ascii_case(name)
            .then(|| line[colon + 1..].trim_ascii())
    })
}

/// The raw JSON token after `key`: `"id": 7` gives `7`, `"method":"x"` gives `"x"` (quotes
/// kept). Strings with escaped quotes are not needed here.
fn json_token_after<'a>(body: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let at = find(body, key)? + key.len();
    let rest = body[at..]
        .trim_ascii_start()
        .strip_prefix(b":")?
        .trim_ascii_start();
    let end = if rest.first() == Some(&b'"') {
        2 + rest[1..].iter().position(|&b| b == b'"')?
    } else {
        rest.iter()
            .position(|&b| b == b',' || b == b'}' || b.is_ascii_whitespace())?
    };
    Some(&rest[..end])
}
