//! WebSocket transport (not part of the MCP spec; the TS and Python SDKs' convention): subprotocol
//! `mcp`, one JSON-RPC message per text frame.
//!
//! ```text
//!  open ── resolve the host (named thread, by the deadline) ── TCP connect
//!       ── [proxy: CONNECT host:port] ── TLS for wss ── HTTP upgrade, `Sec-WebSocket-Protocol: mcp`
//!          + configured headers, auth provider                     (all by one deadline)
//!       └─> I/O thread `mcp-ws:NAME`, the only owner of the socket (non-blocking):
//!             loop ┬ write: take one queued frame, write it; the next only once it is out
//!                  ├ read: at most 64 frames or 1 MiB, then back to writing
//!                  │       text ─> Sink::deliver; ping ─> one pong per batch; close ─> Sink::closed
//!                  └ wait: poll(socket, wake-up socket) until input, room to write, a caller's
//!                          deadline, or a wake-up
//!  send ── queue the frame (bounded queue, by the deadline) ── wake the thread
//!       ── wait for "written" (by the deadline)
//!  close ── ask the thread: close frame, wait for the server's at most min(timeout, 2 s) ── join
//!  close(Abort) ── shut the socket down (no close frame, no grace: a handshake that failed) ── join
//! ```
//!
//! Nothing a caller does waits on the socket: a caller only queues its frame and waits, with its
//! own deadline, for the I/O thread to say it is written. The thread never blocks on the socket
//! either; between batches of reads it goes back to writing, so a server that floods frames
//! (pings, notifications) delays a write by at most one batch: 64 frames or 1 MiB, plus one
//! message of at most `max_message_bytes`. A send that cannot finish by its deadline fails with
//! [`Error::Timeout`]; a frame already partly written is finished later (the stream stays
//! well-formed) and the frames queued behind it wait.
//!
//! Memory a server can make this transport hold: one message of at most
//! [`Limits::max_message_bytes`] being assembled, a 64 KiB read buffer, one pending pong (a
//! flood of pings gets one pong per batch of reads, and none while our writes are blocked beyond
//! [`PONG_ROOM`]), and the frame being written. An oversized message is skipped as it arrives,
//! never held: a response whose id comes first fails its request at once with an error naming
//! `max_message_bytes`; an oversized notification or server request is dropped with a warning;
//! anything else ends the connection with that error.
//!
//! Frames are read by this module (headers, fragments, control frames, the size cap) rather than
//! by tungstenite, which handles the handshake and writes (masking) only; its own read limits are
//! set to the same cap all the same.

use std::fmt;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender};
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::protocol::frame::{CloseFrame, Utf8Bytes};
use tungstenite::protocol::WebSocketConfig as TungsteniteConfig;
use tungstenite::{Bytes, Message, WebSocket};

use super::proxy::{self, Route, Target, TunnelError};
use super::web::{deliver_frame, RequestHeaders};
use super::{Closing, Outgoing, Sink, Transport};
use crate::config::{header_pair, redact_url, Limits, WebSocketConfig};
use crate::error::{ConnectError, ConnectErrorKind, Error, InvalidArgumentKind};
use crate::protocol::jsonrpc::{peek_id_prefix, RequestId};
use crate::sync::lock;

mod wait;

/// Frames waiting for the I/O thread; a sender beyond it waits (by its deadline) for room.
const OUTGOING_QUEUE: usize = 64;
/// The most frames read in one go before the I/O thread turns back to writing.
const READ_BATCH_FRAMES: usize = 64;
/// The most bytes read in one go before the I/O thread turns back to writing.
const READ_BATCH_BYTES: u64 = 1024 * 1024;
/// One read from the socket.
const READ_CHUNK: usize = 64 * 1024;
/// Room in tungstenite's write buffer for pongs and the close frame on top of our frame; a pong
/// that does not fit is not queued (the latest one waits in tungstenite's single slot).
pub(crate) const PONG_ROOM: usize = 16 * 1024;
/// The longest wait for the server's close frame after ours.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// How much of an oversized message is looked at to tell whose answer it was.
const HEAD: usize = 256;
/// DNS lookups that outlived their connect deadline and still run; beyond this, connecting
/// fails at once instead of starting another.
const MAX_PENDING_LOOKUPS: usize = 8;

/// What the handle and the I/O thread share.
struct Shared {
    server: String,
    /// `close()` was called.
    closing: AtomicBool,
    /// The I/O thread has stopped taking frames (set before it drains the queue).
    ended: AtomicBool,
    /// Written to wake the I/O thread (non-blocking; a full buffer means it is awake anyway).
    wake: wait::Waker,
}

impl Shared {
    fn wake(&self) {
        self.wake.wake();
    }
}

/// A frame handed to the I/O thread.
struct Job {
    text: Utf8Bytes,
    deadline: Instant,
    done: Sender<Result<(), Failure>>,
}

/// Why the I/O thread could not write a frame.
enum Failure {
    TimedOut,
    Closed(String),
    Failed(String),
}

/// The WebSocket connection handle.
pub(crate) struct WsTransport {
    shared: Arc<Shared>,
    url: String,
    timeout: Duration,
    jobs: Sender<Job>,
    /// A clone of the socket, shut down if the I/O thread does not end in time on close.
    socket: TcpStream,
    io: Mutex<Option<(JoinHandle<()>, Receiver<()>)>>,
}

impl fmt::Debug for WsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WsTransport")
            .field("server", &self.shared.server)
            .field("url", &redact_url(&self.url))
            .finish_non_exhaustive()
    }
}

/// Opens a WebSocket: DNS, TCP, the proxy tunnel (if any), TLS (wss) and the upgrade, all by one
/// deadline `timeout` away. The upgrade request carries the configured headers and the auth
/// provider's `Authorization`.
pub(crate) fn open(
    server: &str,
    cfg: &WebSocketConfig,
    timeout: Duration,
    limits: &Limits,
    sink: Arc<dyn Sink>,
) -> Result<Arc<dyn Transport>, Error> {
    let started = Instant::now();
    let deadline = crate::deadline::add(started, timeout);
    let url = cfg.url.as_str();
    let shown = redact_url(url);
    let fail = |kind: ConnectErrorKind, detail: String| {
        ConnectError::new(server, &shown, kind, format!("{shown}: {detail}"))
    };
    let err = |detail: String| fail(ConnectErrorKind::Unreachable, detail);
    let timed_out = |what: &str| {
        let secs = started.elapsed().as_secs_f64();
        fail(
            ConnectErrorKind::TimedOut,
            format!("{what} timed out after {secs:.1} s"),
        )
    };
    let mut request = url
        .into_client_request()
        .map_err(|e| err(format!("not a WebSocket URL: {e}")).with_source(e))?;
    request.headers_mut().insert(
        "Sec-WebSocket-Protocol",
        tungstenite::http::HeaderValue::from_static("mcp"),
    );
    add_headers(server, cfg, request.headers_mut())
        .map_err(|e| e.into_connect(&shown, String::new))?;
    let target = Target::parse(url).map_err(err)?;
    let route = proxy::route_for(&cfg.proxy, url).map_err(err)?;

    // TCP to the server, or to the proxy and through it.
    let (host, port) = match &route {
        Route::Direct => (target.host.as_str(), target.port),
        Route::Proxy(p) => (p.host.as_str(), p.port),
    };
    let mut tcp = match connect_tcp(server, host, port, deadline) {
        Ok(tcp) => tcp,
        Err(Dial::TimedOut(what)) => return Err(timed_out(what).into()),
        Err(Dial::Failed(detail, e)) => return Err(err(detail).with_source(e).into()),
    };
    if let Route::Proxy(p) = &route {
        let through = format!("the proxy {} (from {})", p.shown(), p.source);
        match proxy::connect_tunnel(&mut tcp, p, &target.host, target.port, deadline) {
            Ok(()) => log::debug!("server `{server}`: tunnel open through {through}"),
            Err(TunnelError::TimedOut) => {
                return Err(timed_out(&format!("opening a tunnel through {through}")).into())
            }
            Err(TunnelError::Status(status, reason)) => {
                let kind = if status == 407 {
                    ConnectErrorKind::Auth
                } else {
                    ConnectErrorKind::Unreachable
                };
                let detail = format!(
                    "{through} refused to open a tunnel to {}:{}: HTTP {status} {reason}",
                    target.host, target.port
                );
                let cause = Error::Transport {
                    server: server.to_owned(),
                    status: Some(status),
                    detail: detail.clone(),
                    source: None,
                };
                return Err(fail(kind, detail).with_source(cause).into());
            }
            Err(TunnelError::Failed(detail, source)) => {
                let e = err(format!("{through}: {detail}"));
                return Err(match source {
                    Some(s) => e.with_source(s),
                    None => e,
                }
                .into());
            }
        }
    }
    let _ = tcp.set_nodelay(true);
    let io_err = |e: io::Error| err(format!("socket setup: {e}")).with_source(e);
    let socket = tcp.try_clone().map_err(io_err)?;
    let tcp = Tcp {
        sock: tcp,
        deadline: Some(deadline),
    };
    let conn = if target.scheme == "wss" {
        let config = tls_config(&cfg.root_certificates).map_err(err)?;
        let name = rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| err(format!("`{}` is not a TLS server name: {e}", target.host)))?;
        let tls = rustls::ClientConnection::new(config, name)
            .map_err(|e| err(format!("TLS setup: {e}")).with_source(e))?;
        let mut tls = Tls { conn: tls, tcp };
        while tls.conn.is_handshaking() {
            match tls.conn.complete_io(&mut tls.tcp) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {
                    return Err(timed_out("the TLS handshake").with_source(e).into())
                }
                Err(e) => {
                    return Err(err(format!("TLS handshake failed: {e}"))
                        .with_source(e)
                        .into())
                }
            }
        }
        Conn::Tls(Box::new(tls))
    } else {
        Conn::Plain(tcp)
    };
    let max = limits.max_message_bytes;
    let config = TungsteniteConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
        .write_buffer_size(0)
        .max_write_buffer_size(PONG_ROOM);
    let stream = Stream {
        conn,
        head: Some(HeadScan::default()),
        held: Vec::new(),
        held_pos: 0,
    };
    let (mut ws, response) =
        match tungstenite::client::client_with_config(request, stream, Some(config)) {
            Ok(ok) => ok,
            Err(HandshakeError::Interrupted(_)) => {
                return Err(timed_out("the WebSocket handshake").into())
            }
            Err(HandshakeError::Failure(tungstenite::Error::Io(e))) if is_timeout(&e) => {
                return Err(timed_out("the WebSocket handshake").with_source(e).into())
            }
            Err(HandshakeError::Failure(tungstenite::Error::Http(resp))) => {
                let body = resp
                    .body()
                    .as_deref()
                    .map(|b| String::from_utf8_lossy(&b[..b.len().min(300)]).into_owned())
                    .unwrap_or_default();
                let refused = Error::Transport {
                    server: server.to_owned(),
                    status: Some(resp.status().as_u16()),
                    detail: format!("{shown}: upgrade refused: HTTP {}: {body}", resp.status()),
                    source: None,
                };
                return Err(refused.into_connect(&shown, String::new));
            }
            Err(HandshakeError::Failure(e)) => {
                return Err(err(format!("handshake failed: {e}")).with_source(e).into())
            }
        };
    log::debug!(
        "server `{server}`: WebSocket open, subprotocol {:?}",
        response.headers().get("sec-websocket-protocol")
    );
    let stream = ws.get_mut();
    stream.head = None;
    stream.conn.tcp_mut().deadline = None;
    stream
        .conn
        .tcp_mut()
        .sock
        .set_nonblocking(true)
        .map_err(io_err)?;
    let (wake, wake_rx) = wait::pair().map_err(io_err)?;
    let shared = Arc::new(Shared {
        server: server.to_owned(),
        closing: AtomicBool::new(false),
        ended: AtomicBool::new(false),
        wake,
    });
    let (jobs, jobs_rx) = crossbeam_channel::bounded(OUTGOING_QUEUE);
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    let io = Io {
        shared: Arc::clone(&shared),
        ws,
        reader: FrameReader::new(max),
        sink,
        jobs: jobs_rx,
        wake_rx,
        writing: None,
        unflushed: false,
        pong: None,
        close_by: None,
        close_grace: timeout.min(CLOSE_GRACE),
    };
    let handle = std::thread::Builder::new()
        .name(format!("mcp-ws:{server}"))
        .spawn(move || {
            io.run();
            drop(done_tx);
        })
        .map_err(|e| err(format!("could not start the I/O thread: {e}")).with_source(e))?;
    Ok(Arc::new(WsTransport {
        shared,
        url: url.to_owned(),
        timeout,
        jobs,
        socket,
        io: Mutex::new(Some((handle, done_rx))),
    }))
}

/// Adds the configured headers and the auth provider's `Authorization` (called now) to the
/// handshake request; each replaces a header of the same name the handshake set.
fn add_headers(
    server: &str,
    cfg: &WebSocketConfig,
    map: &mut tungstenite::http::HeaderMap,
) -> Result<(), Error> {
    let headers = RequestHeaders::new(cfg.headers.clone(), cfg.auth.clone());
    let mut pairs = Vec::new();
    for (name, value) in headers.resolve(server, "GET", &cfg.url)? {
        pairs.push(header_pair(name, &value).map_err(|e| e.for_server(Some(server)))?);
    }
    for (name, _) in &pairs {
        map.remove(name);
    }
    for (name, value) in pairs {
        map.append(name, value);
    }
    Ok(())
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Why a TCP connection could not be opened.
enum Dial {
    /// The deadline passed; says during what.
    TimedOut(&'static str),
    Failed(String, io::Error),
}

/// Resolves `host` and connects to the first address that answers, all by `deadline`.
fn connect_tcp(server: &str, host: &str, port: u16, deadline: Instant) -> Result<TcpStream, Dial> {
    let addrs = resolve(server, host, port, deadline).map_err(|e| {
        if e.kind() == ErrorKind::TimedOut {
            Dial::TimedOut("resolving the host")
        } else {
            Dial::Failed(format!("could not resolve `{host}`: {e}"), e)
        }
    })?;
    let mut last = None;
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) if e.kind() == ErrorKind::TimedOut => Err(Dial::TimedOut("the TCP connect")),
        Some(e) => Err(Dial::Failed(e.to_string(), e)),
        None => Err(Dial::TimedOut("the TCP connect")),
    }
}

/// Lookups that outlived their deadline: joined by a later lookup once they end.
static PENDING_LOOKUPS: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// The addresses of `host:port`, by `deadline`. An IP address needs no lookup; a name is looked
/// up on a thread named `mcp-dns:NAME` (the system resolver cannot be interrupted), waited for
/// until the deadline. A lookup still running then is left to finish and is joined by a later
/// lookup; at most [`MAX_PENDING_LOOKUPS`] may be left so.
fn resolve(server: &str, host: &str, port: u16, deadline: Instant) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    {
        let mut pending = lock(&PENDING_LOOKUPS);
        crate::sync::join_finished(&mut pending);
        if pending.len() >= MAX_PENDING_LOOKUPS {
            return Err(io::Error::other(format!(
                "{MAX_PENDING_LOOKUPS} earlier DNS lookups are still running"
            )));
        }
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let name = host.to_owned();
    let handle = std::thread::Builder::new()
        .name(format!("mcp-dns:{server}"))
        .spawn(move || {
            let _ = tx.send((name.as_str(), port).to_socket_addrs().map(Vec::from_iter));
        })?;
    match rx.recv_deadline(deadline) {
        Ok(result) => {
            let _ = handle.join();
            let addrs = result?;
            if addrs.is_empty() {
                return Err(io::Error::new(ErrorKind::NotFound, "no address found"));
            }
            Ok(addrs)
        }
        Err(_) => {
            lock(&PENDING_LOOKUPS).push(handle);
            Err(io::Error::new(
                ErrorKind::TimedOut,
                "the DNS lookup timed out",
            ))
        }
    }
}

/// The TLS configuration: the webpki (Mozilla) roots and `extra` (DER). The one without extra
/// roots is built once per process.
fn tls_config(extra: &[Vec<u8>]) -> Result<Arc<rustls::ClientConfig>, String> {
    static WEBPKI_ONLY: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if extra.is_empty() {
        if let Some(config) = WEBPKI_ONLY.get() {
            return Ok(Arc::clone(config));
        }
        let config = Arc::new(build_tls_config(&[])?);
        return Ok(Arc::clone(WEBPKI_ONLY.get_or_init(|| config)));
    }
    build_tls_config(extra).map(Arc::new)
}

fn build_tls_config(extra: &[Vec<u8>]) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
    for (i, der) in extra.iter().enumerate() {
        roots
            .add(rustls::pki_types::CertificateDer::from(der.as_slice()).into_owned())
            .map_err(|e| format!("root certificate {i} is not usable: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The TCP socket. While `deadline` is set (the blocking handshake), every read and write is
/// bounded by it; afterwards the socket is non-blocking.
struct Tcp {
    sock: TcpStream,
    deadline: Option<Instant>,
}

impl Tcp {
    fn arm(&self, read: bool) -> io::Result<()> {
        let Some(deadline) = self.deadline else {
            return Ok(());
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        if read {
            self.sock.set_read_timeout(Some(left))
        } else {
            self.sock.set_write_timeout(Some(left))
        }
    }
}

impl Read for Tcp {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.arm(true)?;
        self.sock.read(buf)
    }
}

impl Write for Tcp {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.arm(false)?;
        self.sock.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// TLS over [`Tcp`], driven by hand so that reading never waits for writing: a server that stops
/// reading blocks our writes, not our reads.
struct Tls {
    conn: rustls::ClientConnection,
    tcp: Tcp,
}

impl Tls {
    /// Writes the TLS records rustls holds; `WouldBlock` when the socket is full.
    fn push(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            if self.conn.write_tls(&mut self.tcp)? == 0 {
                return Err(ErrorKind::WriteZero.into());
            }
        }
        Ok(())
    }
}

impl Read for Tls {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            self.conn.read_tls(&mut self.tcp)?;
            self.conn
                .process_new_packets()
                .map_err(|e| io::Error::new(ErrorKind::InvalidData, e))?;
            // Alerts and key updates rustls wants to send; whatever does not fit goes later.
            let _ = self.push();
        }
    }
}

impl Write for Tls {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for _ in 0..2 {
            let n = self.conn.writer().write(buf)?;
            match self.push() {
                Ok(()) => {}
                Err(_) if n > 0 => return Ok(n),
                Err(e) => return Err(e),
            }
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
        }
        Err(ErrorKind::WriteZero.into())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.conn.writer().flush()?;
        self.push()
    }
}

enum Conn {
    Plain(Tcp),
    Tls(Box<Tls>),
}

impl Conn {
    fn tcp(&self) -> &Tcp {
        match self {
            Conn::Plain(t) => t,
            Conn::Tls(t) => &t.tcp,
        }
    }

    fn tcp_mut(&mut self) -> &mut Tcp {
        match self {
            Conn::Plain(t) => t,
            Conn::Tls(t) => &mut t.tcp,
        }
    }

    /// Whether TLS records wait for room in the socket.
    fn wants_write(&self) -> bool {
        matches!(self, Conn::Tls(t) if t.conn.wants_write())
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(t) => t.read(buf),
            Conn::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(t) => t.write(buf),
            Conn::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(t) => t.flush(),
            Conn::Tls(t) => t.flush(),
        }
    }
}

/// Finds the end (`\r\n\r\n`) of the upgrade response's head.
#[derive(Default)]
struct HeadScan {
    /// The first bytes of the head (the status line's start).
    start: Vec<u8>,
    /// How much of `\r\n\r\n` was just seen.
    matched: u8,
}

/// What tungstenite reads and writes. During the handshake the bytes after a `101` response's
/// head are held back, so that tungstenite (which handles the handshake only) never takes the
/// server's first frames: they are [`FrameReader`]'s.
struct Stream {
    conn: Conn,
    /// Set until the handshake's response head has been read.
    head: Option<HeadScan>,
    held: Vec<u8>,
    held_pos: usize,
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.held_pos < self.held.len() {
            let n = buf.len().min(self.held.len() - self.held_pos);
            buf[..n].copy_from_slice(&self.held[self.held_pos..self.held_pos + n]);
            self.held_pos += n;
            if self.held_pos == self.held.len() {
                self.held = Vec::new();
                self.held_pos = 0;
            }
            return Ok(n);
        }
        let n = self.conn.read(buf)?;
        let Some(scan) = &mut self.head else {
            return Ok(n);
        };
        for (i, &b) in buf[..n].iter().enumerate() {
            if scan.start.len() < 12 {
                scan.start.push(b);
            }
            scan.matched = match (scan.matched, b) {
                (0 | 2, b'\r') | (1 | 3, b'\n') => scan.matched + 1,
                (_, b'\r') => 1,
                _ => 0,
            };
            if scan.matched == 4 {
                let end = i + 1;
                let switching = scan.start.ends_with(b" 101") && scan.start.starts_with(b"HTTP/");
                self.head = None;
                if switching && end < n {
                    self.held = buf[end..n].to_vec();
                    return Ok(end);
                }
                return Ok(n);
            }
        }
        Ok(n)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.conn.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.conn.flush()
    }
}

/// What the frame reader found.
#[derive(Debug, PartialEq)]
enum Event {
    /// A complete text or binary message.
    Message(Vec<u8>),
    Ping(Bytes),
    Pong,
    /// A close frame, with its status code when it had one.
    Close(Option<u16>),
    /// A message over the cap, being skipped: its first bytes.
    TooLarge(Vec<u8>),
}

/// Why reading ended.
#[derive(Debug)]
enum ReadEnd {
    /// The stream ended (EOF).
    Eof,
    Io(io::Error),
    /// The server broke the framing rules.
    Protocol(String),
}

impl From<io::Error> for ReadEnd {
    fn from(e: io::Error) -> Self {
        ReadEnd::Io(e)
    }
}

#[derive(Clone, Copy, Debug)]
struct Header {
    fin: bool,
    opcode: u8,
    len: u64,
}

enum ReadState {
    Header,
    /// Reading the payload of a frame (at most `max_message` bytes).
    Payload {
        header: Header,
        data: Vec<u8>,
    },
    /// Dropping `left` more bytes of an oversized frame.
    Skip {
        left: u64,
        fin: bool,
    },
}

/// An oversized message being skipped.
struct Discard {
    head: Vec<u8>,
    reported: bool,
    /// More (continuation) frames of it are to come.
    until_fin: bool,
}

/// Reads server frames (RFC 6455) from a non-blocking stream, holding at most one message of
/// `max_message` bytes plus one read chunk.
struct FrameReader {
    /// Bytes read: `buf[pos..end]` are not yet used. Whole payloads never stay here (they move
    /// to the message as they arrive), so at most a partial header is left when reading more.
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    max_message: usize,
    state: ReadState,
    /// The fragments so far of a message sent in several frames.
    partial: Option<Vec<u8>>,
    discard: Option<Discard>,
    /// Bytes read from the stream so far.
    consumed: u64,
}

impl FrameReader {
    fn new(max_message: usize) -> Self {
        FrameReader {
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            max_message,
            state: ReadState::Header,
            partial: None,
            discard: None,
            consumed: 0,
        }
    }

    /// The next event, `Ok(None)` when the stream has nothing more for now.
    fn next(&mut self, io: &mut impl Read) -> Result<Option<Event>, ReadEnd> {
        loop {
            match &mut self.state {
                ReadState::Header => match parse_header(&self.buf[self.pos..self.end])? {
                    Some((header, used)) => {
                        self.pos += used;
                        if let Some(ev) = self.start_frame(header)? {
                            return Ok(Some(ev));
                        }
                    }
                    None => {
                        if !self.fill(io)? {
                            return Ok(None);
                        }
                    }
                },
                ReadState::Payload { header, data } => {
                    let want = header.len as usize - data.len();
                    let n = want.min(self.end - self.pos);
                    data.extend_from_slice(&self.buf[self.pos..self.pos + n]);
                    self.pos += n;
                    if data.len() as u64 == header.len {
                        let (header, data) =
                            match std::mem::replace(&mut self.state, ReadState::Header) {
                                ReadState::Payload { header, data } => (header, data),
                                _ => unreachable!("the state was Payload"),
                            };
                        if let Some(ev) = self.finish_frame(header, data) {
                            return Ok(Some(ev));
                        }
                    } else if !self.fill(io)? {
                        return Ok(None);
                    }
                }
                ReadState::Skip { left, fin } => {
                    let n = (self.end - self.pos).min(usize::try_from(*left).unwrap_or(usize::MAX));
                    let chunk = &self.buf[self.pos..self.pos + n];
                    self.pos += n;
                    *left -= n as u64;
                    let (left, fin) = (*left, *fin);
                    if let Some(d) = &mut self.discard {
                        let take = (HEAD - d.head.len().min(HEAD)).min(chunk.len());
                        d.head.extend_from_slice(&chunk[..take]);
                        if left == 0 {
                            self.state = ReadState::Header;
                        }
                        if !d.reported && (d.head.len() >= HEAD || left == 0) {
                            d.reported = true;
                            let head = d.head.clone();
                            if left == 0 && fin {
                                self.discard = None;
                            }
                            return Ok(Some(Event::TooLarge(head)));
                        }
                        if left == 0 && fin {
                            self.discard = None;
                        }
                    } else if left == 0 {
                        self.state = ReadState::Header;
                    }
                    if left > 0 && !self.fill(io)? {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Reads more bytes; `false` when none are available now.
    fn fill(&mut self, io: &mut impl Read) -> Result<bool, ReadEnd> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        loop {
            match io.read(&mut self.buf[self.end..]) {
                Ok(0) => return Err(ReadEnd::Eof),
                Ok(n) => {
                    self.end += n;
                    self.consumed += n as u64;
                    return Ok(true);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(ReadEnd::Io(e)),
            }
        }
    }

    /// Checks a frame header and decides what becomes of its payload.
    fn start_frame(&mut self, h: Header) -> Result<Option<Event>, ReadEnd> {
        let broke = |what: String| Err(ReadEnd::Protocol(what));
        match h.opcode {
            0x8..=0xA => {
                if !h.fin {
                    return broke("a fragmented control frame".into());
                }
                if h.len > 125 {
                    return broke("a control frame longer than 125 bytes".into());
                }
            }
            0x1 | 0x2 => {
                if self.partial.is_some() || self.discard.as_ref().is_some_and(|d| d.until_fin) {
                    return broke("a new message began before the last one ended".into());
                }
                if h.len > self.max_message as u64 {
                    self.discard = Some(Discard {
                        head: Vec::new(),
                        reported: false,
                        until_fin: !h.fin,
                    });
                    self.state = ReadState::Skip {
                        left: h.len,
                        fin: h.fin,
                    };
                    return Ok(None);
                }
            }
            0x0 => {
                if let Some(d) = &mut self.discard {
                    if d.until_fin {
                        d.until_fin = !h.fin;
                        self.state = ReadState::Skip {
                            left: h.len,
                            fin: h.fin,
                        };
                        return Ok(None);
                    }
                }
                let Some(partial) = &mut self.partial else {
                    return broke("a continuation frame with no message to continue".into());
                };
                if h.len > (self.max_message - partial.len()) as u64 {
                    let head = partial[..partial.len().min(HEAD)].to_vec();
                    self.partial = None;
                    self.discard = Some(Discard {
                        head: head.clone(),
                        reported: true,
                        until_fin: !h.fin,
                    });
                    self.state = ReadState::Skip {
                        left: h.len,
                        fin: h.fin,
                    };
                    return Ok(Some(Event::TooLarge(head)));
                }
            }
            other => return broke(format!("a frame of unknown type {other:#x}")),
        }
        // At most `max_message` (data) or 125 (control) bytes: the size fits in memory.
        let len = h.len as usize;
        self.state = ReadState::Payload {
            header: h,
            data: Vec::with_capacity(len),
        };
        Ok(None)
    }

    /// A frame's payload is in: what it means.
    fn finish_frame(&mut self, h: Header, data: Vec<u8>) -> Option<Event> {
        match h.opcode {
            0x8 => {
                let code = (data.len() >= 2).then(|| u16::from_be_bytes([data[0], data[1]]));
                Some(Event::Close(code))
            }
            0x9 => Some(Event::Ping(Bytes::from(data))),
            0xA => Some(Event::Pong),
            0x1 | 0x2 if h.fin => Some(Event::Message(data)),
            0x1 | 0x2 => {
                self.partial = Some(data);
                None
            }
            _ => {
                let partial = self.partial.as_mut()?;
                if partial.is_empty() {
                    *partial = data;
                } else {
                    partial.extend_from_slice(&data);
                }
                if h.fin {
                    self.partial.take().map(Event::Message)
                } else {
                    None
                }
            }
        }
    }
}

/// Reads a frame header from the start of `b`: `None` when it is not all there yet.
fn parse_header(b: &[u8]) -> Result<Option<(Header, usize)>, ReadEnd> {
    let broke = |what: &str| Err(ReadEnd::Protocol(what.to_owned()));
    if b.len() < 2 {
        return Ok(None);
    }
    if b[0] & 0x70 != 0 {
        return broke("a frame with reserved bits set");
    }
    if b[1] & 0x80 != 0 {
        return broke("a masked frame (servers must not mask)");
    }
    let (len, used) = match b[1] & 0x7f {
        126 => match b.get(2..4) {
            Some(n) => (u64::from(u16::from_be_bytes([n[0], n[1]])), 4),
            None => return Ok(None),
        },
        127 => match b.get(2..10) {
            Some(n) => {
                let len = u64::from_be_bytes(n.try_into().unwrap_or_default());
                if len >> 63 != 0 {
                    return broke("a frame length with its top bit set");
                }
                (len, 10)
            }
            None => return Ok(None),
        },
        n => (u64::from(n), 2),
    };
    Ok(Some((
        Header {
            fin: b[0] & 0x80 != 0,
            opcode: b[0] & 0x0f,
            len,
        },
        used,
    )))
}

/// The id of the response an oversized message starts, if it is one (`"result"` or `"error"`
/// comes before any `"method"`).
fn response_id(head: &[u8]) -> Option<RequestId> {
    let id = peek_id_prefix(head)?;
    let first = |pat: &[u8]| head.windows(pat.len()).position(|w| w == pat);
    let method = first(b"\"method\"").unwrap_or(usize::MAX);
    let answer = first(b"\"result\"")
        .into_iter()
        .chain(first(b"\"error\""))
        .min()?;
    (answer < method).then_some(id)
}

/// Whether an oversized message is a server request or notification (its `"method"` comes
/// before any `"result"` or `"error"`).
fn is_server_message(head: &[u8]) -> bool {
    let first = |pat: &[u8]| head.windows(pat.len()).position(|w| w == pat);
    match first(b"\"method\"") {
        Some(m) => [first(b"\"result\""), first(b"\"error\"")]
            .into_iter()
            .flatten()
            .all(|a| m < a),
        None => false,
    }
}

/// The I/O thread's state.
struct Io {
    shared: Arc<Shared>,
    ws: WebSocket<Stream>,
    reader: FrameReader,
    sink: Arc<dyn Sink>,
    jobs: Receiver<Job>,
    wake_rx: wait::WakeReceiver,
    /// The frame being written: its caller's deadline and reply channel.
    writing: Option<(Instant, Sender<Result<(), Failure>>)>,
    /// tungstenite (or rustls) holds bytes not yet written.
    unflushed: bool,
    /// The payload of the latest ping not yet answered.
    pong: Option<Bytes>,
    /// When closing: the latest moment to wait for the server's close frame.
    close_by: Option<Instant>,
    close_grace: Duration,
}

/// How a step of the I/O loop ended the connection: `None` for a close we asked for.
type End = Option<String>;

impl Io {
    fn run(mut self) {
        let end = loop {
            if self.close_by.is_none() && self.shared.closing.load(Ordering::SeqCst) {
                self.start_close();
            }
            if self.close_by.is_some_and(|by| Instant::now() >= by) {
                break None;
            }
            if let Err(end) = self.write_step() {
                break end;
            }
            let drained = match self.read_step() {
                Ok(drained) => drained,
                Err(end) => break end,
            };
            if drained {
                self.wait();
            }
        };
        self.shared.ended.store(true, Ordering::SeqCst);
        let closed = end
            .clone()
            .unwrap_or_else(|| "the client closed the connection".into());
        if let Some((_, done)) = self.writing.take() {
            let _ = done.send(Err(Failure::Closed(closed.clone())));
        }
        for job in self.jobs.try_iter() {
            let _ = job.done.send(Err(Failure::Closed(closed.clone())));
        }
        let _ = self.ws.get_ref().conn.tcp().sock.shutdown(Shutdown::Both);
        if let Some(end) = end {
            if !self.shared.closing.load(Ordering::SeqCst) {
                log::debug!("server `{}`: {end}", self.shared.server);
                self.sink.closed(end, String::new());
            }
        }
    }

    /// Our close frame goes out (after what is being written); queued frames fail.
    fn start_close(&mut self) {
        self.close_by = Some(crate::deadline::after(self.close_grace));
        for job in self.jobs.try_iter() {
            let _ = job.done.send(Err(Failure::Closed(
                "the client closed the connection".into(),
            )));
        }
        self.ws.set_config(|c| c.max_write_buffer_size = usize::MAX);
        match self.ws.close(None) {
            Ok(()) => {}
            Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => log::debug!("server `{}`: close frame: {e}", self.shared.server),
        }
        self.unflushed = true;
    }

    /// Writes: finishes the frame being written, then takes queued frames one at a time.
    fn write_step(&mut self) -> Result<(), End> {
        loop {
            if !self.unflushed && self.ws.get_ref().conn.wants_write() {
                self.unflushed = true;
            }
            if !self.unflushed {
                if self.close_by.is_some() {
                    return Ok(());
                }
                let Ok(job) = self.jobs.try_recv() else {
                    return Ok(());
                };
                if Instant::now() >= job.deadline {
                    let _ = job.done.send(Err(Failure::TimedOut));
                    continue;
                }
                let room = PONG_ROOM.saturating_add(job.text.len()).saturating_add(14);
                self.ws.set_config(|c| c.max_write_buffer_size = room);
                match self.ws.write(Message::Text(job.text)) {
                    Ok(()) => {}
                    Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => {
                        let detail = format!("WebSocket write failed: {e}");
                        let _ = job.done.send(Err(Failure::Failed(detail.clone())));
                        return Err(Some(format!("the WebSocket connection failed: {e}")));
                    }
                }
                self.writing = Some((job.deadline, job.done));
                self.unflushed = true;
            }
            match self.ws.flush() {
                Ok(()) => {
                    self.unflushed = false;
                    self.ws.set_config(|c| c.max_write_buffer_size = PONG_ROOM);
                    if let Some((_, done)) = self.writing.take() {
                        let _ = done.send(Ok(()));
                    }
                }
                Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => {
                    if let Some((deadline, _)) = &self.writing {
                        if Instant::now() >= *deadline {
                            if let Some((_, done)) = self.writing.take() {
                                let _ = done.send(Err(Failure::TimedOut));
                            }
                        }
                    }
                    return Ok(());
                }
                Err(tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed)
                    if self.close_by.is_some() =>
                {
                    self.unflushed = false;
                    return Ok(());
                }
                Err(e) => {
                    if let Some((_, done)) = self.writing.take() {
                        let detail = format!("WebSocket write failed: {e}");
                        let _ = done.send(Err(Failure::Failed(detail)));
                    }
                    return Err(Some(format!("the WebSocket connection failed: {e}")));
                }
            }
        }
    }

    /// Reads one batch; `Ok(true)` when the socket has nothing more for now.
    fn read_step(&mut self) -> Result<bool, End> {
        let start = self.reader.consumed;
        let mut frames = 0;
        let outcome = loop {
            if frames >= READ_BATCH_FRAMES || self.reader.consumed - start >= READ_BATCH_BYTES {
                break Ok(false);
            }
            let event = match self.reader.next(self.ws.get_mut()) {
                Ok(Some(event)) => event,
                Ok(None) => break Ok(true),
                Err(end) => break Err(self.read_end(end)),
            };
            frames += 1;
            if let Err(end) = self.on_event(event) {
                break Err(end);
            }
        };
        if let Some(payload) = self.pong.take() {
            if outcome.is_ok() && self.close_by.is_none() {
                match self.ws.write(Message::Pong(payload)) {
                    Ok(()) => {}
                    Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => log::debug!("server `{}`: pong: {e}", self.shared.server),
                }
                self.unflushed = true;
            }
        }
        outcome
    }

    fn read_end(&mut self, end: ReadEnd) -> End {
        if self.close_by.is_some() {
            return None;
        }
        Some(match end {
            ReadEnd::Eof => {
                "the server ended the connection without a WebSocket close frame".into()
            }
            ReadEnd::Io(e) => format!("the WebSocket connection failed: {e}"),
            ReadEnd::Protocol(what) => {
                let _ = self.ws.close(Some(CloseFrame {
                    code: CloseCode::Protocol,
                    reason: Utf8Bytes::from_static(""),
                }));
                format!("the server broke the WebSocket protocol: {what}")
            }
        })
    }

    fn on_event(&mut self, event: Event) -> Result<(), End> {
        let server = self.shared.server.as_str();
        match event {
            Event::Message(data) => {
                deliver_frame(server, &*self.sink, &data, None);
            }
            Event::Ping(payload) => self.pong = Some(payload),
            Event::Pong => {}
            Event::Close(code) => {
                if self.close_by.is_some() {
                    // The answer to our close frame.
                    return Err(None);
                }
                let echo = code
                    .map(CloseCode::from)
                    .filter(|c| c.is_allowed())
                    .map(|code| CloseFrame {
                        code,
                        reason: Utf8Bytes::from_static(""),
                    });
                self.ws.set_config(|c| c.max_write_buffer_size = usize::MAX);
                let _ = self.ws.close(echo);
                let shown = code.map(|c| format!(" (code {c})")).unwrap_or_default();
                return Err(Some(format!("the server closed the WebSocket{shown}")));
            }
            Event::TooLarge(head) => {
                let max = self.reader.max_message;
                let detail = format!(
                    "a message from the server exceeds the {max} byte limit \
                     (`max_message_bytes`) and was discarded"
                );
                if let Some(id) = response_id(&head) {
                    log::error!("server `{server}`: {detail} (the answer to request {id})");
                    self.sink.reject(id, detail);
                } else if is_server_message(&head) {
                    log::warn!("server `{server}`: {detail} (a request or notification)");
                } else {
                    log::error!("server `{server}`: {detail}; closing the connection");
                    return Err(Some(format!(
                        "{detail}; it could not be matched to a request, so the connection was \
                         closed"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Waits for the socket (input, or room when bytes wait to be written), a wake-up, the
    /// deadline of the frame being written, or the end of the close grace.
    fn wait(&mut self) {
        let until = [self.writing.as_ref().map(|w| w.0), self.close_by]
            .into_iter()
            .flatten()
            .min();
        let write = self.unflushed || self.ws.get_ref().conn.wants_write();
        let sock = &self.ws.get_ref().conn.tcp().sock;
        self.wake_rx.wait(sock, write, until);
    }
}

impl WsTransport {
    fn closed_error(&self, detail: String) -> Error {
        Error::Closed {
            server: self.shared.server.clone(),
            detail,
            stderr_tail: String::new(),
        }
    }

    /// Asks the I/O thread to close, waits up to `wait` for it to end, shuts the socket down
    /// (which ends it at once if it has not ended) and joins it. Idempotent.
    fn end(&self, wait: Duration) {
        self.shared.closing.store(true, Ordering::SeqCst);
        self.shared.wake();
        let Some((handle, done)) = lock(&self.io).take() else {
            return;
        };
        if done.recv_timeout(wait) == Err(RecvTimeoutError::Timeout) {
            log::warn!(
                "server `{}`: the WebSocket I/O thread is slow to end",
                self.shared.server
            );
        }
        let _ = self.socket.shutdown(Shutdown::Both);
        if handle.join().is_err() {
            log::warn!(
                "server `{}`: the WebSocket I/O thread panicked",
                self.shared.server
            );
        }
    }
}

impl Transport for WsTransport {
    fn send(&self, out: Outgoing) -> Result<(), Error> {
        let method = out.label().to_owned();
        let Outgoing {
            frame, deadline, ..
        } = out;
        let shared = &self.shared;
        let started = Instant::now();
        if shared.closing.load(Ordering::SeqCst) {
            return Err(self.closed_error("the client closed the connection".into()));
        }
        let text = Utf8Bytes::try_from(frame).map_err(|_| Error::InvalidArgument {
            server: shared.server.clone(),
            kind: InvalidArgumentKind::NotText,
            detail: "a JSON-RPC frame was not UTF-8".into(),
        })?;
        let deadline = deadline.unwrap_or_else(|| crate::deadline::after(self.timeout));
        let timed_out = |_: &Utf8Bytes| Error::Timeout {
            server: shared.server.clone(),
            method: method.clone(),
            after: started.elapsed(),
        };
        let (done_tx, done_rx) = crossbeam_channel::bounded(1);
        let job = Job {
            text: text.clone(),
            deadline,
            done: done_tx,
        };
        match self.jobs.send_deadline(job, deadline) {
            Ok(()) => {}
            Err(SendTimeoutError::Timeout(_)) => return Err(timed_out(&text)),
            Err(SendTimeoutError::Disconnected(_)) => {
                return Err(self.closed_error("the WebSocket is closed".into()))
            }
        }
        shared.wake();
        let outcome = if shared.ended.load(Ordering::SeqCst) {
            // The I/O thread may have drained the queue before this frame went in.
            done_rx
                .try_recv()
                .map_err(|_| RecvTimeoutError::Disconnected)
        } else {
            done_rx.recv_deadline(deadline)
        };
        match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(Failure::TimedOut)) | Err(RecvTimeoutError::Timeout) => Err(timed_out(&text)),
            Ok(Err(Failure::Closed(detail))) => Err(self.closed_error(detail)),
            Ok(Err(Failure::Failed(detail))) => Err(Error::Transport {
                server: shared.server.clone(),
                status: None,
                detail,
                source: None,
            }),
            Err(RecvTimeoutError::Disconnected) => {
                Err(self.closed_error("the WebSocket is closed".into()))
            }
        }
    }

    /// [`Closing::Abort`]: the socket is shut down first: the I/O thread finds it ended at its
    /// next step (its close frame cannot be written, nothing more can be read) and stops without
    /// a close grace.
    fn close(&self, how: Closing) -> Result<(), Error> {
        match how {
            // The I/O thread gives the server at most the close grace to answer, never blocking
            // on the socket; the extra second covers the frame it may be handing to the client.
            Closing::Graceful => self.end(self.timeout.min(CLOSE_GRACE) + Duration::from_secs(1)),
            Closing::Abort => {
                // Closing first, so that the thread takes the shut socket for our close, not
                // the server's end.
                self.shared.closing.store(true, Ordering::SeqCst);
                if lock(&self.io).is_some() {
                    let _ = self.socket.shutdown(Shutdown::Both);
                }
                // Only the frame it may be handing to the client is left to wait for.
                self.end(Duration::from_secs(1));
            }
        }
        Ok(())
    }
}

impl Drop for WsTransport {
    fn drop(&mut self) {
        let _ = self.close(Closing::Graceful);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server frame (unmasked).
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![(if fin { 0x80 } else { 0 }) | opcode];
        match payload.len() {
            n if n < 126 => f.push(n as u8),
            n if n <= 0xffff => {
                f.push(126);
                f.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                f.push(127);
                f.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        f.extend_from_slice(payload);
        f
    }

    /// Feeds `bytes` in pieces of `step`, then reports "nothing more for now".
    struct Drip {
        bytes: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl Read for Drip {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.at == self.bytes.len() {
                return Err(ErrorKind::WouldBlock.into());
            }
            let n = self.step.min(buf.len()).min(self.bytes.len() - self.at);
            buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn events(max: usize, bytes: Vec<u8>, step: usize) -> Vec<Event> {
        let mut r = FrameReader::new(max);
        let mut io = Drip { bytes, at: 0, step };
        let mut out = Vec::new();
        while let Some(ev) = r.next(&mut io).expect("no error") {
            out.push(ev);
        }
        out
    }

    #[test]
    fn reads_messages_fragments_and_control_frames_in_any_piece_size() {
        let mut bytes = frame(true, 1, b"{\"a\":1}");
        bytes.extend(frame(false, 1, b"{\"b\""));
        bytes.extend(frame(true, 9, b"hi"));
        bytes.extend(frame(false, 0, b":"));
        bytes.extend(frame(true, 0, b"2}"));
        bytes.extend(frame(true, 2, &[b'x'; 300]));
        bytes.extend(frame(true, 1, &vec![b'y'; 70_000]));
        bytes.extend(frame(true, 10, b""));
        bytes.extend(frame(true, 8, &[3, 232]));
        for step in [1, 3, 7, 64, 100_000] {
            let got = events(1 << 20, bytes.clone(), step);
            assert_eq!(
                got,
                vec![
                    Event::Message(b"{\"a\":1}".to_vec()),
                    Event::Ping(Bytes::from_static(b"hi")),
                    Event::Message(b"{\"b\":2}".to_vec()),
                    Event::Message(vec![b'x'; 300]),
                    Event::Message(vec![b'y'; 70_000]),
                    Event::Pong,
                    Event::Close(Some(1000)),
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn an_oversized_message_is_skipped_and_reported_once_with_its_head() {
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"text\":\"{}\"}}}}",
            "z".repeat(5000)
        );
        let mut bytes = frame(true, 1, big.as_bytes());
        bytes.extend(frame(true, 1, b"{\"after\":1}"));
        // The same message in fragments: the cap is crossed by the third.
        let b = big.as_bytes();
        bytes.extend(frame(false, 1, &b[..600]));
        bytes.extend(frame(false, 0, &b[600..900]));
        bytes.extend(frame(true, 9, b"p"));
        bytes.extend(frame(false, 0, &b[900..3000]));
        bytes.extend(frame(true, 0, &b[3000..]));
        bytes.extend(frame(true, 1, b"{\"after\":2}"));
        for step in [1, 5, 4096, 100_000] {
            let got = events(1000, bytes.clone(), step);
            assert_eq!(got.len(), 5, "step {step}: {got:?}");
            let Event::TooLarge(head) = &got[0] else {
                panic!("{got:?}")
            };
            assert_eq!(head.len(), HEAD);
            assert_eq!(response_id(head), Some(RequestId::Number(7)));
            assert_eq!(got[1], Event::Message(b"{\"after\":1}".to_vec()));
            assert_eq!(got[2], Event::Ping(Bytes::from_static(b"p")));
            let Event::TooLarge(head) = &got[3] else {
                panic!("{got:?}")
            };
            assert_eq!(response_id(head), Some(RequestId::Number(7)));
            assert_eq!(got[4], Event::Message(b"{\"after\":2}".to_vec()));
        }
    }

    #[test]
    fn a_frame_announcing_more_than_the_cap_is_not_allocated() {
        let mut bytes = vec![0x81, 127];
        bytes.extend_from_slice(&(1u64 << 40).to_be_bytes());
        bytes.extend_from_slice(br#"{"jsonrpc":"2.0","method":"notifications/message""#);
        let mut r = FrameReader::new(1 << 20);
        let mut io = Drip {
            bytes,
            at: 0,
            step: 1 << 16,
        };
        // The head is shorter than HEAD and the frame goes on: nothing reported yet, nothing held.
        assert_eq!(r.next(&mut io).expect("no error"), None);
        assert_eq!(r.buf.len(), READ_CHUNK);
        assert!(r.partial.is_none());
        assert!(matches!(r.state, ReadState::Skip { .. }));
    }

    #[test]
    fn framing_errors_end_reading() {
        for (bytes, what) in [
            (vec![0x81, 0x81, 0, 0, 0, 0, b'x'], "masked"),
            (vec![0xC1, 0x00], "reserved"),
            (frame(false, 9, b""), "fragmented control"),
            (frame(true, 0, b"x"), "continuation"),
            (frame(true, 3, b""), "unknown type"),
            (
                [frame(false, 1, b"a"), frame(true, 1, b"b")].concat(),
                "new message",
            ),
        ] {
            let mut r = FrameReader::new(1 << 20);
            let mut io = Drip {
                bytes,
                at: 0,
                step: 100,
            };
            let end = loop {
                match r.next(&mut io) {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("{what}: no error"),
                    Err(e) => break e,
                }
            };
            assert!(
                matches!(&end, ReadEnd::Protocol(p) if p.contains(what)),
                "{what}: {end:?}"
            );
        }
    }

    #[test]
    fn oversized_heads_are_told_apart() {
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"#),
            Some(RequestId::String("a".into()))
        );
        assert_eq!(
            response_id(br#"{"jsonrpc":"2.0","id":3,"method":"x","#),
            None
        );
        assert!(is_server_message(
            br#"{"jsonrpc":"2.0","id":3,"method":"x","#
        ));
        assert!(is_server_message(
            br#"{"jsonrpc":"2.0","method":"notifications/message""#
        ));
        assert!(!is_server_message(br#"{"jsonrpc":"2.0","result":{"#));
        assert_eq!(response_id(br#"{"result":{"text":"#), None);
    }

    #[test]
    fn the_handshake_stream_holds_back_what_follows_a_101_head() {
        let tcp_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let client = TcpStream::connect(tcp_listener.local_addr().expect("addr")).expect("connect");
        let (mut server, _) = tcp_listener.accept().expect("accept");
        server
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nA: b\r\n\r\n\x81\x02hi")
            .expect("write");
        let mut s = Stream {
            conn: Conn::Plain(Tcp {
                sock: client,
                deadline: Some(Instant::now() + Duration::from_secs(5)),
            }),
            head: Some(HeadScan::default()),
            held: Vec::new(),
            held_pos: 0,
        };
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while s.head.is_some() {
            let n = s.read(&mut buf).expect("read");
            got.extend_from_slice(&buf[..n]);
        }
        assert!(got.ends_with(b"\r\n\r\n"), "{got:?}");
        let mut rest = Vec::new();
        while rest.len() < 4 {
            let n = s.read(&mut buf).expect("read");
            rest.extend_from_slice(&buf[..n]);
        }
        assert_eq!(rest, b"\x81\x02hi");
    }
}
