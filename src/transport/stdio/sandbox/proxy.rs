//! The loopback proxy a sandboxed server's network goes through: HTTP `CONNECT` (for TLS and
//! anything else) and plain HTTP requests in absolute form, admitted only for the hosts and
//! ports of the server's [`Network::Domains`](crate::config::Network::Domains) rules.
//!
//! One per sandboxed connection: a listener on `127.0.0.1`, port 0, served by one named
//! thread, which runs each connection on a named thread of its own (at most
//! [`MAX_CONNECTIONS`] at once); `stop` (and drop) shuts every socket and joins every thread.
//!
//! ```text
//!   accept ─> head (16 KiB, 10 s) ─> parse ─> admit (allow and not deny) ─> dial (10 s) ─> relay
//!                  │ 431 / close          │ 400       │ 403                    │ 502      │ idle 5 min
//! ```
//!
//! A request is admitted when one of the `allow` rules matches its host and port and none of
//! the `deny` rules does. Hosts are compared in one spelling: names in lower case, IPv4
//! addresses in dotted decimal, IPv6 addresses in their shortest bracketed form (`[::1]`, for
//! the rules too), and a name that only looks like an address (`127.1`, `0x7f.1`) is refused
//! as malformed, so that no other spelling of a denied address gets through.
//!
//! The name lookup and connect to an admitted host run on a thread of their own (`dial`), which
//! the connection waits for until the connect deadline or until the proxy stops. The system
//! resolver cannot be interrupted, so a dial still running then is left to finish on its own
//! (its connect is bounded by the same deadline) and is joined by a later dial or stop; while
//! [`MAX_PENDING_DIALS`] are left so, new requests are answered `502` without dialing.

use std::collections::HashMap;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{
    IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs,
};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use crate::config::DomainRule;
use crate::sync::{join_finished, lock};

/// Connections served at once; one more is answered `503` and closed.
pub(crate) const MAX_CONNECTIONS: usize = 64;
/// The longest request head (request line and headers, with the blank line that ends them);
/// a longer one is answered `431`.
pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a client has to send its whole request head; a slower one is closed unanswered.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the name lookup and the connect to an admitted host may take, together.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a relayed connection may pass no byte either way before both sides are closed.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Dials left running after their connection gave up on them (process-wide).
pub(crate) const MAX_PENDING_DIALS: usize = 8;

/// The buffer of each relayed direction.
const RELAY_BUFFER: usize = 16 * 1024;
/// How long an error answer may take to write, and how long the client's unread bytes are
/// drained after it (so that closing does not reset the connection before the answer is read).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);
/// How much of a refused client's unread request is drained before closing.
const MAX_DRAIN_BYTES: usize = 256 * 1024;
/// How long the acceptor waits before accepting again after an error such as running out of
/// file descriptors (which `accept` would otherwise report again at once).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Dials whose connection stopped waiting for them, joined once finished (see the module docs).
static PENDING_DIALS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// The deadlines of a proxy: the constants above, shorter in tests.
#[derive(Debug, Clone, Copy)]
struct Timeouts {
    head: Duration,
    connect: Duration,
    idle: Duration,
}

impl Timeouts {
    const DEFAULT: Timeouts = Timeouts {
        head: HEAD_TIMEOUT,
        connect: CONNECT_TIMEOUT,
        idle: IDLE_TIMEOUT,
    };
}

/// A running proxy.
pub(crate) struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Dropped by `stop`: the disconnection wakes every connection waiting for a dial and the
    /// acceptor waiting out an accept error.
    stop_tx: Option<Sender<()>>,
    acceptor: Option<JoinHandle<()>>,
}

/// What the acceptor and every connection thread share.
struct Shared {
    server: String,
    allow: Vec<DomainRule>,
    deny: Vec<DomainRule>,
    timeouts: Timeouts,
    stop_rx: Receiver<()>,
    live: Mutex<Live>,
    /// Dials started, for the debug log and the tests.
    dials: AtomicUsize,
}

/// The sockets open now (clones, shut by `stop` to end the reads and writes blocked on them).
#[derive(Default)]
struct Live {
    stopping: bool,
    next_id: u64,
    sockets: HashMap<u64, TcpStream>,
}

impl Proxy {
    /// Starts the proxy for `server` (named in its threads and log lines), admitting hosts
    /// that one of `allow` matches and none of `deny`.
    pub(crate) fn start(
        server: &str,
        allow: Vec<DomainRule>,
        deny: Vec<DomainRule>,
    ) -> io::Result<Proxy> {
        Proxy::start_with(server, allow, deny, Timeouts::DEFAULT)
    }

    fn start_with(
        server: &str,
        allow: Vec<DomainRule>,
        deny: Vec<DomainRule>,
        timeouts: Timeouts,
    ) -> io::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = crossbeam_channel::bounded(0);
        let shared = Arc::new(Shared {
            server: server.to_owned(),
            allow: allow.into_iter().map(canonical_rule).collect(),
            deny: deny.into_iter().map(canonical_rule).collect(),
            timeouts,
            stop_rx,
            live: Mutex::new(Live::default()),
            dials: AtomicUsize::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name(thread_name("mcp-sandbox-proxy", server))
                .spawn(move || accept_loop(&listener, &shared))?
        };
        log::debug!("server `{server}`: sandbox proxy listening on {addr}");
        Ok(Proxy {
            addr,
            shared,
            stop_tx: Some(stop_tx),
            acceptor: Some(acceptor),
        })
    }

    /// Where it listens (`127.0.0.1` and its port).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, shuts every open connection and joins every thread. Idempotent.
    pub(crate) fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        {
            let mut live = lock(&self.shared.live);
            live.stopping = true;
            for socket in live.sockets.values() {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
        // After `stopping` is set, so that a connection woken from its dial finds it set and
        // closes without an answer.
        drop(self.stop_tx.take());
        // The acceptor is blocked in `accept`: a connection of our own ends it, as it finds
        // `stopping` set on whatever `accept` returns.
        match TcpStream::connect_timeout(&self.addr, ANSWER_TIMEOUT) {
            Ok(_) => {
                let _ = acceptor.join();
            }
            Err(e) => {
                // Only when this process is out of descriptors: the acceptor ends at the next
                // connection or accept error instead, and is not waited for.
                log::error!(
                    "server `{}`: cannot wake the sandbox proxy to stop it ({e}); it stops at its next connection",
                    self.shared.server
                );
            }
        }
        join_finished_dials();
        log::debug!("server `{}`: sandbox proxy stopped", self.shared.server);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `prefix:server`, as the crate names its threads (a NUL, which a thread name cannot hold,
/// replaced).
fn thread_name(prefix: &str, server: &str) -> String {
    format!("{prefix}:{}", server.replace('\0', "?"))
}

/// `rule` with an IPv6 address in its shortest form, the form requests are compared in.
fn canonical_rule(rule: DomainRule) -> DomainRule {
    let text = rule.to_string();
    let Some(inner) = text.strip_prefix('[') else {
        return rule;
    };
    let Some((addr, rest)) = inner.split_once(']') else {
        return rule;
    };
    match addr.parse::<Ipv6Addr>() {
        Ok(ip) => DomainRule::parse(&format!("[{ip}]{rest}")).unwrap_or(rule),
        Err(_) => rule,
    }
}

impl Shared {
    fn server(&self) -> &str {
        &self.server
    }

    fn admits(&self, host: &str, port: u16) -> bool {
        self.allow.iter().any(|r| r.matches(host, port))
            && !self.deny.iter().any(|r| r.matches(host, port))
    }

    /// Keeps a clone of `socket` for `stop` to shut; `None` once stopping (or when the
    /// socket cannot be cloned), in which case the caller drops it.
    fn register(&self, socket: &TcpStream) -> Option<u64> {
        let clone = socket.try_clone().ok()?;
        let mut live = lock(&self.live);
        if live.stopping {
            return None;
        }
        let id = live.next_id;
        live.next_id += 1;
        live.sockets.insert(id, clone);
        Some(id)
    }

    fn unregister(&self, id: u64) {
        lock(&self.live).sockets.remove(&id);
    }

    fn stopping(&self) -> bool {
        lock(&self.live).stopping
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut connections: Vec<JoinHandle<()>> = Vec::new();
    loop {
        let accepted = listener.accept();
        if shared.stopping() {
            break;
        }
        let client = match accepted {
            Ok((client, _)) => client,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Interrupted | ErrorKind::ConnectionAborted
                ) =>
            {
                continue;
            }
            Err(e) => {
                log::warn!(
                    "server `{}`: sandbox proxy cannot accept: {e}",
                    shared.server()
                );
                // Out of descriptors, say: waited out, or until `stop` disconnects the channel.
                let _ = shared.stop_rx.recv_timeout(ACCEPT_BACKOFF);
                continue;
            }
        };
        join_finished(&mut connections);
        if connections.len() >= MAX_CONNECTIONS {
            log::warn!(
                "server `{}`: sandbox proxy already serves {MAX_CONNECTIONS} connections; one more refused",
                shared.server()
            );
            refuse_busy(client);
            continue;
        }
        let Some(id) = shared.register(&client) else {
            continue;
        };
        let conn_shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name(thread_name("mcp-sandbox-conn", shared.server()))
            .spawn(move || {
                let mut ids = vec![id];
                serve(client, &conn_shared, &mut ids);
                for id in ids {
                    conn_shared.unregister(id);
                }
            });
        match spawned {
            Ok(h) => connections.push(h),
            Err(e) => {
                shared.unregister(id);
                log::warn!(
                    "server `{}`: sandbox proxy cannot start a connection thread: {e}",
                    shared.server()
                );
            }
        }
    }
    for h in connections {
        let _ = h.join();
    }
}

/// Answers `503` on the acceptor's thread, so without waiting: a short write that the socket
/// buffer takes, then whatever of the request has arrived is read so that closing sends no reset.
fn refuse_busy(mut client: TcpStream) {
    let _ = client.set_write_timeout(Some(ANSWER_TIMEOUT));
    let _ = client.write_all(&answer(
        503,
        "Service Unavailable",
        &format!("the sandbox proxy already serves {MAX_CONNECTIONS} connections\n"),
    ));
    let _ = client.shutdown(Shutdown::Write);
    if client.set_nonblocking(true).is_ok() {
        let mut buf = [0u8; 4096];
        let mut drained = 0;
        while drained < MAX_DRAIN_BYTES {
            match client.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    }
}

/// An error answer, `Connection: close`, with a one-line text body.
fn answer(status: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends an error answer and closes: the write side first, then the client's unread bytes are
/// drained for a moment, so that the close does not reset the connection under the answer.
fn answer_and_close(mut client: TcpStream, status: u16, reason: &str, body: &str) {
    let _ = client.set_write_timeout(Some(ANSWER_TIMEOUT));
    if client.write_all(&answer(status, reason, body)).is_err() {
        return;
    }
    let _ = client.shutdown(Shutdown::Write);
    let _ = client.set_read_timeout(Some(ANSWER_TIMEOUT));
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < MAX_DRAIN_BYTES && Instant::now() < deadline {
        match client.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained += n,
        }
    }
}

/// One connection, from its head to the end of its relay. Every socket it opens is added to
/// `ids` (registered for `stop`).
fn serve(mut client: TcpStream, shared: &Shared, ids: &mut Vec<u64>) {
    let server = shared.server();
    let (head, rest) = match read_head(&mut client, shared.timeouts.head) {
        HeadRead::Complete { head, rest } => (head, rest),
        HeadRead::TooLarge => {
            log::warn!(
                "server `{server}`: sandbox proxy: a request head over {MAX_HEAD_BYTES} bytes"
            );
            answer_and_close(
                client,
                431,
                "Request Header Fields Too Large",
                &format!("the request head is over {MAX_HEAD_BYTES} bytes\n"),
            );
            return;
        }
        HeadRead::Closed => return,
        HeadRead::TimedOut => {
            log::debug!(
                "server `{server}`: sandbox proxy: no complete request head in time; closed"
            );
            return;
        }
    };
    let request = match parse_head(&head) {
        Ok(r) => r,
        Err(why) => {
            log::warn!("server `{server}`: sandbox proxy: bad request ({why})");
            answer_and_close(client, 400, "Bad Request", &format!("{why}\n"));
            return;
        }
    };
    drop(head);
    let (host, port) = (request.host(), request.port());
    if !shared.admits(host, port) {
        log::warn!(
            "server `{server}`: sandbox proxy refused {host}:{port}, which is not on its sandbox network list"
        );
        answer_and_close(
            client,
            403,
            "Forbidden",
            &format!("{host}:{port} is not on this server's sandbox network list\n"),
        );
        return;
    }
    let deadline = Instant::now() + shared.timeouts.connect;
    let upstream = match dial(shared, &PENDING_DIALS, host, port, deadline) {
        Ok(s) => s,
        Err(e) => {
            if shared.stopping() {
                return;
            }
            log::warn!("server `{server}`: sandbox proxy cannot reach {host}:{port}: {e}");
            answer_and_close(
                client,
                502,
                "Bad Gateway",
                &format!("{host}:{port} cannot be reached: {e}\n"),
            );
            return;
        }
    };
    let Some(id) = shared.register(&upstream) else {
        return;
    };
    ids.push(id);
    log::debug!(
        "server `{server}`: sandbox proxy: {} {host}:{port}",
        request.method()
    );
    let idle = shared.timeouts.idle;
    let _ = client.set_write_timeout(Some(idle));
    let _ = upstream.set_write_timeout(Some(idle));
    let first = match &request {
        Request::Connect { .. } => {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .is_err()
            {
                return;
            }
            rest
        }
        Request::Http { .. } => {
            let mut first = request.origin_head();
            first.extend_from_slice(&rest);
            first
        }
    };
    if !first.is_empty() && (&upstream).write_all(&first).is_err() {
        return;
    }
    relay(&client, &upstream, shared);
}

enum HeadRead {
    /// The head (ending with its blank line) and the bytes read after it.
    Complete {
        head: Vec<u8>,
        rest: Vec<u8>,
    },
    TooLarge,
    Closed,
    TimedOut,
}

/// Reads until the blank line that ends a request head, within [`MAX_HEAD_BYTES`] and `limit`.
fn read_head(client: &mut TcpStream, limit: Duration) -> HeadRead {
    let deadline = Instant::now() + limit;
    let mut buf = vec![0u8; MAX_HEAD_BYTES];
    let mut len = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || client.set_read_timeout(Some(left)).is_err() {
            return HeadRead::TimedOut;
        }
        let n = match client.read(&mut buf[len..]) {
            Ok(0) => return HeadRead::Closed,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return HeadRead::TimedOut
            }
            Err(_) => return HeadRead::Closed,
        };
        let from = len.saturating_sub(3);
        len += n;
        if let Some(at) = memchr::memmem::find(&buf[from..len], b"\r\n\r\n") {
            let end = from + at + 4;
            let rest = buf[end..len].to_vec();
            buf.truncate(end);
            return HeadRead::Complete { head: buf, rest };
        }
        if len == buf.len() {
            return HeadRead::TooLarge;
        }
    }
}

/// A request the proxy serves.
#[derive(Debug, PartialEq, Eq)]
enum Request {
    /// `CONNECT host:port`: a tunnel.
    Connect { host: String, port: u16 },
    /// A plain HTTP request in absolute form, to be sent on in origin form.
    Http {
        method: String,
        host: String,
        port: u16,
        /// The path and query (`/` when the URI has none).
        origin: String,
        version: String,
        /// The header lines (name, value) as received.
        headers: Vec<(String, Vec<u8>)>,
    },
}

impl Request {
    fn host(&self) -> &str {
        match self {
            Request::Connect { host, .. } | Request::Http { host, .. } => host,
        }
    }

    fn port(&self) -> u16 {
        match self {
            Request::Connect { port, .. } | Request::Http { port, .. } => *port,
        }
    }

    fn method(&self) -> &str {
        match self {
            Request::Connect { .. } => "CONNECT",
            Request::Http { method, .. } => method,
        }
    }

    /// The head to send to the origin server: the request line in origin form, `Host` set to
    /// the URI's host, the proxy's own and the hop-by-hop headers left out, and
    /// `Connection: close` (one request per connection). Empty for `CONNECT`.
    fn origin_head(&self) -> Vec<u8> {
        let Request::Http {
            method,
            host,
            port,
            origin,
            version,
            headers,
        } = self
        else {
            return Vec::new();
        };
        // Headers that `Connection` names are hop-by-hop too.
        let named: Vec<String> = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
            .flat_map(|(_, value)| {
                String::from_utf8_lossy(value)
                    .split(',')
                    .map(|t| t.trim().to_ascii_lowercase())
                    .filter(|t| !t.is_empty())
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut out = format!("{method} {origin} {version}\r\n").into_bytes();
        if *port == 80 {
            out.extend_from_slice(format!("Host: {host}\r\n").as_bytes());
        } else {
            out.extend_from_slice(format!("Host: {host}:{port}\r\n").as_bytes());
        }
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            let hop = matches!(
                lower.as_str(),
                "host" | "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive"
            ) || named.contains(&lower);
            if !hop {
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b": ");
                out.extend_from_slice(value);
                out.extend_from_slice(b"\r\n");
            }
        }
        out.extend_from_slice(b"Connection: close\r\n\r\n");
        out
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Reads a request head (ending with its blank line). The error says what is wrong, for the
/// `400` answer.
fn parse_head(head: &[u8]) -> Result<Request, String> {
    // Each line, the last one included, ends with CRLF once the blank line is taken off.
    let head = head.strip_suffix(b"\r\n").unwrap_or(head);
    let mut lines = head
        .split_inclusive(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r\n"));
    let line = lines
        .next()
        .flatten()
        .filter(|l| l.iter().all(|b| (0x20..0x7f).contains(b)))
        .and_then(|l| std::str::from_utf8(l).ok())
        .ok_or("the request line is not a line of printable ASCII")?;
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the request line is not `METHOD TARGET HTTP/1.x`".into());
    };
    if !is_token(method) || !(version == "HTTP/1.1" || version == "HTTP/1.0") {
        return Err("the request line is not `METHOD TARGET HTTP/1.x`".into());
    }
    let mut headers = Vec::new();
    for line in lines {
        // A bare LF or CR inside the head, or a folded line, could be read differently by the
        // origin server: refused.
        let line = line.ok_or("a header line does not end with CRLF")?;
        if line.contains(&b'\r') || line.contains(&0) {
            return Err("a header line holds a CR or a NUL".into());
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or("a header line has no `:`")?;
        let name = std::str::from_utf8(&line[..colon])
            .ok()
            .filter(|n| is_token(n))
            .ok_or("a header name is not a token")?;
        let value = line[colon + 1..].trim_ascii();
        headers.push((name.to_owned(), value.to_vec()));
    }
    if method == "CONNECT" {
        let (host, port) = parse_authority(target, None)?;
        return Ok(Request::Connect { host, port });
    }
    let scheme_end = target.find("://").unwrap_or(0);
    let scheme = &target[..scheme_end];
    if scheme.eq_ignore_ascii_case("https") {
        return Err("an https:// URI needs CONNECT, not a plain request".into());
    }
    if !scheme.eq_ignore_ascii_case("http") {
        return Err("the target is not an absolute http:// URI".into());
    }
    let after = &target[scheme_end + 3..];
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(end);
    let (host, port) = parse_authority(authority, Some(80))?;
    let tail = tail.split('#').next().unwrap_or("");
    let origin = if tail.starts_with('/') {
        tail.to_owned()
    } else {
        format!("/{tail}")
    };
    Ok(Request::Http {
        method: method.to_owned(),
        host,
        port,
        origin,
        version: version.to_owned(),
        headers,
    })
}

/// Reads `host:port` (the port optional when `default` is given) into the spelling hosts are
/// compared in (see the module docs).
fn parse_authority(s: &str, default: Option<u16>) -> Result<(String, u16), String> {
    if s.contains('@') {
        // Not echoed: user info may hold a password.
        return Err("the target holds user info (`user@`)".into());
    }
    let bad = || {
        let shown: String = s.chars().take(100).collect();
        format!("`{}` is not a host and port", shown.escape_debug())
    };
    let (host, port) = if let Some(inner) = s.strip_prefix('[') {
        let (addr, rest) = inner.split_once(']').ok_or_else(bad)?;
        let ip = addr.parse::<Ipv6Addr>().map_err(|_| bad())?;
        (format!("[{ip}]"), rest)
    } else {
        let (host, rest) = match s.rfind(':') {
            Some(at) => (&s[..at], &s[at..]),
            None => (s, ""),
        };
        (canonical_host(host).ok_or_else(bad)?, rest)
    };
    let port = match port.strip_prefix(':') {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(bad)?
        }
        Some(_) => return Err(bad()),
        None if port.is_empty() => default.ok_or_else(bad)?,
        None => return Err(bad()),
    };
    Ok((host, port))
}

/// A host name in lower case, or an IPv4 address; `None` for anything else, including a name
/// whose last label starts with a digit without being a dotted-decimal address (`127.1`,
/// `0x7f.0.0.1`, `2130706433`: other spellings of an address that resolvers accept).
fn canonical_host(host: &str) -> Option<String> {
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty()
        || name.len() > 253
        || !name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
    {
        return None;
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if last.as_bytes()[0].is_ascii_digit() {
        return name.parse::<Ipv4Addr>().ok().map(|ip| ip.to_string());
    }
    Some(host.to_ascii_lowercase())
}

/// Looks up and connects to `host:port` on a `dial` thread, waited for until `deadline` or
/// until the proxy stops (see the module docs).
fn dial(
    shared: &Shared,
    pending_dials: &Mutex<Vec<JoinHandle<()>>>,
    host: &str,
    port: u16,
    deadline: Instant,
) -> io::Result<TcpStream> {
    {
        let mut pending = lock(pending_dials);
        join_finished(&mut pending);
        if pending.len() >= MAX_PENDING_DIALS {
            return Err(io::Error::other(format!(
                "{MAX_PENDING_DIALS} earlier connects are still running"
            )));
        }
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let target = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let handle = thread::Builder::new()
        .name(thread_name("mcp-sandbox-dial", shared.server()))
        .spawn(move || {
            let _ = tx.send(connect(&target, port, deadline));
        })?;
    shared.dials.fetch_add(1, Ordering::Relaxed);
    crossbeam_channel::select! {
        recv(rx) -> got => {
            let _ = handle.join();
            got.unwrap_or_else(|_| Err(io::Error::other("the connect thread ended without a result")))
        }
        recv(shared.stop_rx) -> _ => {
            lock(pending_dials).push(handle);
            Err(io::Error::new(ErrorKind::Interrupted, "the proxy stopped"))
        }
        default(deadline.saturating_duration_since(Instant::now())) => {
            lock(pending_dials).push(handle);
            Err(io::Error::new(ErrorKind::TimedOut, "the name lookup timed out"))
        }
    }
}

/// Each address of `host` (an IP address needs no lookup) tried in turn until one connects
/// or `deadline` passes.
fn connect(host: &str, port: u16, deadline: Instant) -> io::Result<TcpStream> {
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => (host, port).to_socket_addrs()?.collect(),
    };
    let mut last = io::Error::new(ErrorKind::NotFound, "the name has no address");
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(ErrorKind::TimedOut, "the connect timed out"));
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn join_finished_dials() {
    join_finished(&mut lock(&PENDING_DIALS));
}

/// Copies both ways until both sides have closed, or until no byte has passed either way for
/// the idle timeout, or until `stop` shuts the sockets. The other way runs on a named thread
/// joined here.
fn relay(client: &TcpStream, upstream: &TcpStream, shared: &Shared) {
    let idle = shared.timeouts.idle;
    let start = Instant::now();
    let last = AtomicU64::new(0);
    thread::scope(|scope| {
        let back = thread::Builder::new()
            .name(thread_name("mcp-sandbox-relay", shared.server()))
            .spawn_scoped(scope, || pump(upstream, client, idle, start, &last));
        if back.is_err() {
            log::warn!(
                "server `{}`: sandbox proxy cannot start a relay thread",
                shared.server()
            );
            let _ = client.shutdown(Shutdown::Both);
            let _ = upstream.shutdown(Shutdown::Both);
            return;
        }
        pump(client, upstream, idle, start, &last);
    });
}

/// One direction of a relay: `from` to `to`, passing on the end of `from` as the end of
/// writing to `to`. On an error or when idle, both sockets are shut so that the other
/// direction ends too. `last` is the time of the last byte either way, in milliseconds since
/// `start`.
fn pump(from: &TcpStream, to: &TcpStream, idle: Duration, start: Instant, last: &AtomicU64) {
    let mut buf = vec![0u8; RELAY_BUFFER];
    let end = || {
        let _ = from.shutdown(Shutdown::Both);
        let _ = to.shutdown(Shutdown::Both);
    };
    let (mut reader, mut writer) = (from, to);
    loop {
        let since = start
            .elapsed()
            .saturating_sub(Duration::from_millis(last.load(Ordering::Relaxed)));
        let left = idle.saturating_sub(since);
        if left.is_zero() || from.set_read_timeout(Some(left)).is_err() {
            return end();
        }
        match reader.read(&mut buf) {
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Ok(n) => {
                last.store(
                    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
                    Ordering::Relaxed,
                );
                if writer.write_all(&buf[..n]).is_err() {
                    return end();
                }
            }
            // A timeout: the loop measures again, as the other way may have passed bytes.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) => {}
            Err(_) => return end(),
        }
    }
}

// The proxy runs on Linux only (elsewhere no sandbox confines the server to it); Windows
// sockets shut down differently, and nothing there depends on them.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    const TEST_TIMEOUTS: Timeouts = Timeouts {
        head: Duration::from_secs(30),
        connect: Duration::from_secs(10),
        idle: Duration::from_secs(60),
    };

    fn rule(s: &str) -> DomainRule {
        DomainRule::parse(s).unwrap()
    }

    fn proxy(allow: &[&str], deny: &[&str]) -> Proxy {
        proxy_with(allow, deny, TEST_TIMEOUTS)
    }

    fn proxy_with(allow: &[&str], deny: &[&str], timeouts: Timeouts) -> Proxy {
        Proxy::start_with(
            "test",
            allow.iter().map(|s| rule(s)).collect(),
            deny.iter().map(|s| rule(s)).collect(),
            timeouts,
        )
        .unwrap()
    }

    /// A client of `proxy`, whose reads give up after 20 s (so that a failing test ends).
    fn client(proxy: &Proxy) -> TcpStream {
        let s = TcpStream::connect(proxy.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s
    }

    /// Everything until the peer closes.
    fn read_all(s: &mut TcpStream) -> String {
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Reads until `out` ends with `end` (or the peer closes).
    fn read_until(s: &mut TcpStream, end: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while !out.ends_with(end) {
            match s.read(&mut b).unwrap() {
                0 => break,
                _ => out.push(b[0]),
            }
        }
        out
    }

    /// The answer to one request sent on a fresh connection.
    fn ask(proxy: &Proxy, request: &str) -> String {
        let mut s = client(proxy);
        s.write_all(request.as_bytes()).unwrap();
        read_all(&mut s)
    }

    /// An upstream that echoes what one connection sends, until it closes; the thread ends
    /// then (joined by the caller).
    fn echo_upstream() -> (u16, JoinHandle<()>) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let h = thread::Builder::new()
            .name("test-echo".into())
            .spawn(move || {
                let (mut s, _) = listener.accept().unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut buf = [0u8; 4096];
                loop {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            if s.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                    }
                }
            })
            .unwrap();
        (port, h)
    }

    /// An HTTP upstream for one request: returns the head and body it received, after
    /// answering `200` with body `ok`.
    fn http_upstream() -> (u16, JoinHandle<(String, Vec<u8>)>) {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let h = thread::Builder::new()
            .name("test-http".into())
            .spawn(move || {
                let (mut s, _) = listener.accept().unwrap();
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let head = String::from_utf8(read_until(&mut s, b"\r\n\r\n")).unwrap();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .map_or(0, |n| n.trim().parse::<usize>().unwrap());
                let mut body = vec![0u8; length];
                s.read_exact(&mut body).unwrap();
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                    .unwrap();
                (head, body)
            })
            .unwrap();
        (port, h)
    }

    /// A port nothing listens on (bound, then closed).
    fn closed_port() -> u16 {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    #[test]
    fn connect_to_a_listed_host_relays_both_ways_with_the_bytes_sent_early() {
        let (port, upstream) = echo_upstream();
        let p = proxy(&[&format!("localhost:{port}")], &[]);
        let mut s = client(&p);
        s.write_all(
            format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\nearly")
                .as_bytes(),
        )
        .unwrap();
        let head = read_until(&mut s, b"\r\n\r\n");
        assert_eq!(head, b"HTTP/1.1 200 Connection established\r\n\r\n");
        let mut got = [0u8; 5];
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"early");
        s.write_all(b"later").unwrap();
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"later");
        // The end of the client's writing reaches the upstream, whose close comes back.
        s.shutdown(Shutdown::Write).unwrap();
        assert_eq!(read_all(&mut s), "");
        upstream.join().unwrap();
    }

    #[test]
    fn plain_http_goes_on_in_origin_form_without_the_proxy_headers() {
        let (port, upstream) = http_upstream();
        let p = proxy(&[&format!("localhost:{port}")], &[]);
        let reply = ask(
            &p,
            &format!(
                "POST http://LocalHost:{port}/a/b?q=1#frag HTTP/1.1\r\nHost: elsewhere.example\r\n\
                 Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic c2VjcmV0\r\n\
                 Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nUser-Agent: t\r\nContent-Length: 5\r\n\r\nhello"
            ),
        );
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.ends_with("\r\n\r\nok"), "{reply}");
        let (head, body) = upstream.join().unwrap();
        assert_eq!(
            head,
            format!(
                "POST /a/b?q=1 HTTP/1.1\r\nHost: localhost:{port}\r\nUser-Agent: t\r\n\
                 Content-Length: 5\r\nConnection: close\r\n\r\n"
            )
        );
        assert_eq!(body, b"hello");
    }

    #[test]
    fn plain_http_without_a_path_asks_for_the_root() {
        let (port, upstream) = http_upstream();
        let p = proxy(&[&format!("localhost:{port}")], &[]);
        let reply = ask(
            &p,
            &format!("GET http://localhost:{port}?x=1 HTTP/1.0\r\n\r\n"),
        );
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        let (head, _) = upstream.join().unwrap();
        assert!(head.starts_with("GET /?x=1 HTTP/1.0\r\n"), "{head}");
    }

    #[test]
    fn hosts_and_ports_not_listed_are_refused_without_a_connect() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let other = closed_port();
        let p = proxy(&[&format!("localhost:{port}")], &[]);
        for (request, named) in [
            (
                format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"),
                format!("127.0.0.1:{port}"),
            ),
            (
                format!("CONNECT localhost:{other} HTTP/1.1\r\n\r\n"),
                format!("localhost:{other}"),
            ),
            (
                format!("GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n"),
                format!("127.0.0.1:{port}"),
            ),
            (
                format!("CONNECT sub.localhost:{port} HTTP/1.1\r\n\r\n"),
                format!("sub.localhost:{port}"),
            ),
        ] {
            let reply = ask(&p, &request);
            assert!(
                reply.starts_with("HTTP/1.1 403 Forbidden\r\n"),
                "{request}: {reply}"
            );
            assert!(
                reply.ends_with(&format!(
                    "\r\n\r\n{named} is not on this server's sandbox network list\n"
                )),
                "{reply}"
            );
        }
        // The answers came before any connect would have been made: none was.
        assert_eq!(listener.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    }

    #[test]
    fn a_denied_host_is_refused_even_when_a_rule_allows_it() {
        let listed = format!("localhost:{}", closed_port());
        let p = proxy(&[&listed, "*.example.com"], &[&listed, "bad.example.com"]);
        for request in [
            format!("CONNECT {listed} HTTP/1.1\r\n\r\n"),
            "CONNECT bad.example.com:443 HTTP/1.1\r\n\r\n".to_owned(),
            "GET http://BAD.example.com./ HTTP/1.1\r\n\r\n".to_owned(),
        ] {
            let reply = ask(&p, &request);
            assert!(reply.starts_with("HTTP/1.1 403 "), "{request}: {reply}");
        }
        // The wildcard admits the others (checked without dialing: no network here).
        assert!(p.shared.admits("good.example.com", 443));
        assert!(!p.shared.admits("bad.example.com", 443));
        assert!(!p.shared.admits("good.example.com", 8443));
    }

    #[test]
    fn addresses_are_compared_in_one_spelling() {
        let p = proxy(
            &["[0:0::1]:8080", "127.0.0.1:8080", "*.0.1:8080"],
            &["[::1]:9090", "127.0.0.1:9090"],
        );
        let (host, port) = parse_authority("[0:0:0::1]:8080", None).unwrap();
        assert_eq!(host, "[::1]");
        assert!(p.shared.admits(&host, port));
        // Another spelling of a denied IPv4 address is not a host at all.
        for other in [
            "127.1:9090",
            "0x7f.0.0.1:9090",
            "2130706433:9090",
            "127.000.0.1:9090",
        ] {
            assert!(parse_authority(other, None).is_err(), "{other}");
        }
        let reply = ask(&p, "CONNECT 127.1:8080 HTTP/1.1\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 400 "), "{reply}");
        // IPv6: the denied address in a longer spelling is still denied.
        let p = proxy(&["[::1]:9090"], &["[0::1]:9090"]);
        let (host, port) = parse_authority("[0:0::1]:9090", None).unwrap();
        assert!(!p.shared.admits(&host, port));
    }

    #[test]
    fn the_connection_past_the_cap_gets_503_and_a_freed_slot_serves_again() {
        let (port, upstream) = echo_upstream();
        let p = proxy(&[&format!("localhost:{port}")], &[]);
        // Idle connections, each held by its thread reading a head that does not come.
        let mut idle: Vec<TcpStream> = (0..MAX_CONNECTIONS).map(|_| client(&p)).collect();
        let mut over = client(&p);
        let reply = read_all(&mut over);
        assert!(
            reply.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
            "{reply}"
        );
        // Once one of them ends, a new connection is served (its thread is reaped at the next
        // accept once finished; waited for with a deadline).
        idle.pop().unwrap().shutdown(Shutdown::Both).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let mut s = client(&p);
            s.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").as_bytes())
                .unwrap();
            let head = read_until(&mut s, b"\r\n\r\n");
            if head.starts_with(b"HTTP/1.1 200 ") {
                break;
            }
            assert!(
                head.starts_with(b"HTTP/1.1 503 "),
                "{}",
                String::from_utf8_lossy(&head)
            );
            assert!(Instant::now() < deadline, "no slot freed within 10 s");
        }
        upstream.join().unwrap();
        drop(idle);
    }

    #[test]
    fn a_head_at_the_cap_is_read_and_one_byte_more_gets_431() {
        let p = proxy(&["localhost:1"], &[]);
        let request = |len: usize| {
            let start = "CONNECT other.example:443 HTTP/1.1\r\nX-Pad: ";
            let pad = len - start.len() - 4;
            format!("{start}{}\r\n\r\n", "a".repeat(pad))
        };
        let at_cap = request(MAX_HEAD_BYTES);
        assert_eq!(at_cap.len(), MAX_HEAD_BYTES);
        let reply = ask(&p, &at_cap);
        assert!(reply.starts_with("HTTP/1.1 403 "), "{reply}");
        let reply = ask(&p, &request(MAX_HEAD_BYTES + 1));
        assert!(
            reply.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
            "{reply}"
        );
    }

    #[test]
    fn a_head_not_complete_in_time_is_closed_unanswered() {
        let p = proxy_with(
            &["localhost:1"],
            &[],
            Timeouts {
                head: Duration::from_millis(300),
                ..TEST_TIMEOUTS
            },
        );
        let mut s = client(&p);
        s.write_all(b"CONNECT localhost:1 HTTP/1.1\r\n").unwrap();
        assert_eq!(read_all(&mut s), "");
    }

    #[test]
    fn malformed_requests_get_400() {
        let p = proxy(&["localhost"], &[]);
        for request in [
            "hello\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
            "GET https://localhost/ HTTP/1.1\r\n\r\n",
            "CONNECT localhost HTTP/1.1\r\n\r\n",
            "CONNECT localhost:0 HTTP/1.1\r\n\r\n",
            "CONNECT localhost:99999 HTTP/1.1\r\n\r\n",
            "CONNECT [::1:443 HTTP/1.1\r\n\r\n",
            "GET http://user@localhost/ HTTP/1.1\r\n\r\n",
            "GET http://localhost/ HTTP/2\r\n\r\n",
            "GET  http://localhost/ HTTP/1.1\r\n\r\n",
            "GET http://localhost/ HTTP/1.1\r\nX: a\nY: b\r\n\r\n",
            "GET http://localhost/ HTTP/1.1\r\nNo colon\r\n\r\n",
            "GET http://localhost/ HTTP/1.1\r\n folded: x\r\n\r\n",
            "\u{1}\u{2}\r\n\r\n",
        ] {
            let reply = ask(&p, request);
            assert!(
                reply.starts_with("HTTP/1.1 400 Bad Request\r\n"),
                "{request:?}: {reply}"
            );
        }
        let reply = ask(&p, "GET http://user:s3cret@localhost/ HTTP/1.1\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 400 "), "{reply}");
        assert!(!reply.contains("s3cret"), "{reply}");
    }

    #[test]
    fn an_unreachable_upstream_gets_502() {
        let port = closed_port();
        let p = proxy(&[&format!("localhost:{port}")], &[]);
        let reply = ask(&p, &format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n"));
        assert!(reply.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{reply}");
        let reply = ask(
            &p,
            &format!("GET http://localhost:{port}/ HTTP/1.1\r\n\r\n"),
        );
        assert!(reply.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{reply}");
    }

    #[test]
    fn a_relay_idle_past_its_timeout_is_closed_both_ways() {
        let (port, upstream) = echo_upstream();
        let p = proxy_with(
            &[&format!("localhost:{port}")],
            &[],
            Timeouts {
                idle: Duration::from_millis(300),
                ..TEST_TIMEOUTS
            },
        );
        let mut s = client(&p);
        s.write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .unwrap();
        assert!(read_until(&mut s, b"\r\n\r\n").starts_with(b"HTTP/1.1 200 "));
        // Nothing sent: the proxy closes the client, and the upstream sees its end too.
        assert_eq!(read_all(&mut s), "");
        upstream.join().unwrap();
    }

    #[test]
    fn stop_ends_idle_and_relaying_connections_and_joins_every_thread() {
        let (port, upstream) = echo_upstream();
        let mut p = proxy(&[&format!("localhost:{port}")], &[]);
        let mut relaying = client(&p);
        relaying
            .write_all(format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\nping").as_bytes())
            .unwrap();
        assert!(read_until(&mut relaying, b"\r\n\r\n").starts_with(b"HTTP/1.1 200 "));
        let mut got = [0u8; 4];
        relaying.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        let mut idle = client(&p);
        let started = Instant::now();
        p.stop();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(5), "stop took {took:?}");
        // Every thread held the shared state: all joined, only the proxy's own is left.
        assert_eq!(Arc::strong_count(&p.shared), 1);
        assert_eq!(read_all(&mut relaying), "");
        // The idle client was either being served (closed) or still queued (reset).
        let mut rest = Vec::new();
        match idle.read_to_end(&mut rest) {
            Ok(_) => assert!(rest.is_empty()),
            Err(e) => assert_eq!(e.kind(), ErrorKind::ConnectionReset),
        }
        upstream.join().unwrap();
        p.stop();
        assert!(
            TcpStream::connect(p.addr()).is_err(),
            "still listening after stop"
        );
    }

    #[test]
    fn no_dial_starts_while_the_pending_ones_are_at_their_cap() {
        let (port, upstream) = echo_upstream();
        let p = proxy(&[], &[]);
        let pending = Mutex::new(Vec::new());
        let (release, released) = crossbeam_channel::bounded::<()>(0);
        for _ in 0..MAX_PENDING_DIALS {
            let released = released.clone();
            let h = thread::Builder::new()
                .name("test-pending".into())
                .spawn(move || {
                    let _ = released.recv();
                })
                .unwrap();
            lock(&pending).push(h);
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let refused = dial(&p.shared, &pending, "localhost", port, deadline).unwrap_err();
        assert!(refused.to_string().contains("still running"), "{refused}");
        assert_eq!(p.shared.dials.load(Ordering::Relaxed), 0);
        // Once they end, the next dial joins them and goes ahead.
        drop((release, released));
        while !lock(&pending).iter().all(JoinHandle::is_finished) {
            assert!(Instant::now() < deadline, "the pending threads did not end");
            thread::yield_now();
        }
        let upstream_conn = dial(&p.shared, &pending, "localhost", port, deadline).unwrap();
        assert!(lock(&pending).is_empty());
        drop(upstream_conn);
        upstream.join().unwrap();
    }

    // Linux drops the SYN that finds an accept queue full, so the connect hangs; other systems
    // may refuse it at once.
    #[cfg(target_os = "linux")]
    #[test]
    fn stop_does_not_wait_for_a_connect_in_progress() {
        // An upstream whose accept queue is full: a further connect hangs (the SYN is dropped).
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut queued = Vec::new();
        while TcpStream::connect_timeout(
            &(Ipv4Addr::LOCALHOST, port).into(),
            Duration::from_millis(200),
        )
        .map(|s| queued.push(s))
        .is_ok()
        {
            assert!(queued.len() < 10_000, "the accept queue never filled");
        }
        let mut p = proxy_with(
            &[&format!("127.0.0.1:{port}")],
            &[],
            Timeouts {
                connect: Duration::from_secs(3),
                ..TEST_TIMEOUTS
            },
        );
        let mut s = client(&p);
        s.write_all(format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n").as_bytes())
            .unwrap();
        // Wait until the dial is running (then the connection waits for it).
        let deadline = Instant::now() + Duration::from_secs(10);
        while p.shared.dials.load(Ordering::Relaxed) == 0 {
            assert!(Instant::now() < deadline, "no dial started");
            thread::yield_now();
        }
        let started = Instant::now();
        p.stop();
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(2),
            "stop took {took:?}, waiting for the dial"
        );
        assert_eq!(Arc::strong_count(&p.shared), 1);
        assert_eq!(read_all(&mut s), "");
        drop(queued);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_connect_past_its_deadline_gets_502() {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut queued = Vec::new();
        while TcpStream::connect_timeout(
            &(Ipv4Addr::LOCALHOST, port).into(),
            Duration::from_millis(200),
        )
        .map(|s| queued.push(s))
        .is_ok()
        {
            assert!(queued.len() < 10_000, "the accept queue never filled");
        }
        let p = proxy_with(
            &[&format!("127.0.0.1:{port}")],
            &[],
            Timeouts {
                connect: Duration::from_millis(500),
                ..TEST_TIMEOUTS
            },
        );
        let reply = ask(&p, &format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n"));
        assert!(reply.starts_with("HTTP/1.1 502 Bad Gateway\r\n"), "{reply}");
        drop(queued);
    }

    #[test]
    fn parse_reads_connect_and_absolute_form() {
        assert_eq!(
            parse_head(b"CONNECT Example.COM:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
            Ok(Request::Connect {
                host: "example.com".into(),
                port: 443
            })
        );
        assert_eq!(
            parse_head(b"CONNECT [::1]:8443 HTTP/1.0\r\n\r\n"),
            Ok(Request::Connect {
                host: "[::1]".into(),
                port: 8443
            })
        );
        let Ok(Request::Http {
            host, port, origin, ..
        }) = parse_head(b"GET HTTP://[::1]:8080/x?y HTTP/1.1\r\n\r\n")
        else {
            panic!("not read");
        };
        assert_eq!(
            (host.as_str(), port, origin.as_str()),
            ("[::1]", 8080, "/x?y")
        );
        assert!(parse_head(b"CONNECT [fe80::1%eth0]:443 HTTP/1.1\r\n\r\n").is_err());
        assert!(parse_head("CONNECT ex\u{e9}mple.com:443 HTTP/1.1\r\n\r\n".as_bytes()).is_err());
    }
}
