//! Loopback test servers for the remote transports: a tiny HTTP/1.1 server (keep-alive, chunked
//! SSE replies) on `std::net::TcpListener`, a scripted MCP server on top of it, and a WebSocket
//! MCP server. Port 0 only; every thread is joined when the server is dropped.
#![allow(dead_code)] // each test binary uses a different part of this module

pub mod mcp;
pub mod ws;

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use serde_json::Value;

/// One HTTP request as the server saw it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Which TCP connection (in accept order) carried it.
    pub conn: usize,
    /// When its head had been read.
    pub at: Instant,
}

impl Req {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of header `name` (any case), in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of the body, or "" (responses, GET, DELETE).
    pub fn rpc_method(&self) -> String {
        self.json()["method"].as_str().unwrap_or("").to_owned()
    }
}

/// The server side of one connection, handed to the handler.
pub struct Conn {
    stream: TcpStream,
    chunked: bool,
    keep_alive: bool,
}

impl Conn {
    fn write_head(&mut self, status: u16, headers: &[(&str, &str)], body_len: Option<usize>) {
        let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        match body_len {
            Some(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
            None => {
                head.push_str("Transfer-Encoding: chunked\r\n");
                self.chunked = true;
            }
        }
        head.push_str("\r\n");
        let _ = self.stream.write_all(head.as_bytes());
    }

    /// A complete response with a body.
    pub fn respond(&mut self, status: u16, headers: &[(&str, &str)], body: &[u8]) {
        self.write_head(status, headers, Some(body.len()));
        let _ = self.stream.write_all(body);
        let _ = self.stream.flush();
    }

    /// A redirect to `location` with a short body.
    pub fn redirect(&mut self, status: u16, location: &str) {
        self.respond(
            status,
            &[("Location", location), ("Content-Type", "text/plain")],
            b"moved",
        );
    }

    /// Starts a chunked reply with these headers (no `Content-Length`).
    pub fn chunked_start(&mut self, status: u16, headers: &[(&str, &str)]) {
        self.write_head(status, headers, None);
        let _ = self.stream.flush();
    }

    /// Writes raw bytes as one chunk.
    pub fn chunk_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        write!(self.stream, "{:x}\r\n", bytes.len())?;
        self.stream.write_all(bytes)?;
        self.stream.write_all(b"\r\n")?;
        self.stream.flush()
    }

    /// A JSON response.
    pub fn json(&mut self, status: u16, extra: &[(&str, &str)], body: &Value) {
        let mut headers = vec![("Content-Type", "application/json")];
        headers.extend_from_slice(extra);
        self.respond(status, &headers, body.to_string().as_bytes());
    }

    /// 202 Accepted with no body.
    pub fn accepted(&mut self) {
        self.respond(202, &[], b"");
    }

    /// Starts a chunked `text/event-stream` reply.
    pub fn sse_start(&mut self, extra: &[(&str, &str)]) {
        let mut headers = vec![
            ("Content-Type", "text/event-stream"),
            ("Cache-Control", "no-cache"),
        ];
        headers.extend_from_slice(extra);
        self.write_head(200, &headers, None);
        let _ = self.stream.flush();
    }

    /// Writes raw bytes as one chunk (an event, a comment, or part of one).
    pub fn chunk(&mut self, text: &str) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        write!(self.stream, "{:x}\r\n{text}\r\n", text.len())?;
        self.stream.flush()
    }

    /// An `event: message` with a JSON body.
    pub fn event(&mut self, id: Option<&str>, msg: &Value) -> io::Result<()> {
        let mut s = String::from("event: message\n");
        if let Some(id) = id {
            s.push_str(&format!("id: {id}\n"));
        }
        s.push_str(&format!("data: {msg}\n\n"));
        self.chunk(&s)
    }

    /// Ends a chunked reply properly (the terminating chunk).
    pub fn sse_end(&mut self) {
        let _ = self.stream.write_all(b"0\r\n\r\n");
        let _ = self.stream.flush();
    }

    /// Drops the connection without finishing the reply.
    pub fn hang_up(&mut self) {
        self.keep_alive = false;
        let _ = self.stream.shutdown(Shutdown::Both);
    }

    /// Writes raw bytes on the socket.
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)?;
        self.stream.flush()
    }

    /// Keep the connection for further requests after this handler returns (default true).
    pub fn set_keep_alive(&mut self, keep: bool) {
        self.keep_alive = keep;
    }

    /// Blocks until the client closes the connection (or the server is dropped).
    pub fn wait_for_peer_close(&mut self) {
        let mut buf = [0u8; 256];
        while matches!(self.stream.read(&mut buf), Ok(n) if n > 0) {}
        self.keep_alive = false;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

pub type Handler = Arc<dyn Fn(&Req, &mut Conn) + Send + Sync>;

/// The requests seen so far, with a condition variable to wait for one.
#[derive(Default)]
pub struct Requests {
    list: Mutex<Vec<Req>>,
    added: Condvar,
}

impl Requests {
    fn push(&self, req: Req) {
        self.list.lock().unwrap().push(req);
        self.added.notify_all();
    }
}

/// A loopback HTTP/1.1 server. Dropping it closes every connection and joins every thread.
/// A loopback listener on port 0 that serves each accepted connection on its own named thread.
/// Dropping it stops accepting, shuts every connection down and joins every thread.
pub struct Acceptor {
    addr: std::net::SocketAddr,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
}

/// The longest one write of a test server may block.
const WRITE_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

impl Acceptor {
    /// Threads are named `test-{name}-accept` and `test-{name}-conn-N`; `serve` gets the
    /// connection's number (in accept order) and its stream.
    pub fn start(name: &str, serve: impl Fn(usize, TcpStream) + Send + Sync + 'static) -> Acceptor {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let conns = Arc::new(Mutex::new(Vec::new()));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let serve = Arc::new(serve);
        let accept = {
            let (conns, threads, stopping) = (conns.clone(), threads.clone(), stopping.clone());
            let name = name.to_owned();
            std::thread::Builder::new()
                .name(format!("test-{name}-accept"))
                .spawn(move || {
                    for (n, stream) in listener.incoming().enumerate() {
                        if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        let _ = stream.set_nodelay(true);
                        // A write the client no longer reads ends: under Wine, shutting the
                        // socket down from `drop` does not always wake a thread blocked in
                        // `send`, and the join would then wait for ever.
                        let _ = stream.set_write_timeout(Some(WRITE_LIMIT));
                        if let Ok(c) = stream.try_clone() {
                            conns.lock().unwrap().push(c);
                        }
                        let serve = serve.clone();
                        let h = std::thread::Builder::new()
                            .name(format!("test-{name}-conn-{n}"))
                            .spawn(move || serve(n, stream))
                            .expect("spawn");
                        threads.lock().unwrap().push(h);
                    }
                })
                .expect("spawn")
        };
        Acceptor {
            addr,
            conns,
            threads,
            accept: Some(accept),
            stopping,
        }
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.conns.lock().unwrap().len()
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.accept.take() {
            let _ = a.join();
        }
        for c in self.conns.lock().unwrap().iter() {
            let _ = c.shutdown(Shutdown::Both);
        }
        let threads: Vec<_> = self.threads.lock().unwrap().drain(..).collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

/// How long the upstream-to-client half of a [`tunnel`] waits for bytes before it looks whether
/// the client's half has ended.
const TUNNEL_LOOK: std::time::Duration = std::time::Duration::from_millis(50);

/// A proxy's tunnel (after its `200 Connection established`): bytes go both ways between the
/// client (`from_client` reads what it sends, `client` takes what it is sent) and `upstream`
/// until the client's half ends; then both connections are shut down and the upstream half's
/// thread (`test-proxy-back-N`) is joined.
///
/// The upstream half reads with a short timeout and stops once the client's half has ended: an
/// upstream such as an SSE stream never ends on its own, and a read blocked on a socket is woken
/// by that socket's `shutdown` on Linux but not on Windows, so waiting for either would hold the
/// proxy's drop for ever there.
pub fn tunnel(n: usize, mut from_client: impl Read, client: &TcpStream, upstream: TcpStream) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (Ok(mut up_read), Ok(mut down)) = (upstream.try_clone(), client.try_clone()) else {
        return;
    };
    if up_read.set_read_timeout(Some(TUNNEL_LOOK)).is_err() {
        return;
    }
    let client_ended = Arc::new(AtomicBool::new(false));
    let ended = client_ended.clone();
    let back = std::thread::Builder::new()
        .name(format!("test-proxy-back-{n}"))
        .spawn(move || {
            let mut buf = [0u8; 16 * 1024];
            loop {
                match up_read.read(&mut buf) {
                    Ok(0) => break,
                    Ok(k) => {
                        if down.write_all(&buf[..k]).is_err() {
                            break;
                        }
                    }
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        if ended.load(Ordering::SeqCst) {
                            break;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = down.shutdown(Shutdown::Both);
        })
        .expect("spawn the tunnel's upstream half");
    let _ = io::copy(&mut from_client, &mut &upstream);
    client_ended.store(true, Ordering::SeqCst);
    let _ = upstream.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
    let _ = back.join();
}

pub struct HttpServer {
    acceptor: Acceptor,
    requests: Arc<Requests>,
}

/// A redirect the server answers before its handler sees the request: a request whose path
/// (query included) equals `path` gets `status` with `Location: location` (`{port}` in it is
/// replaced by the server's port).
#[derive(Clone, Debug)]
pub struct Redirect {
    pub path: String,
    pub status: u16,
    pub location: String,
}

impl Redirect {
    pub fn new(path: &str, status: u16, location: &str) -> Redirect {
        Redirect {
            path: path.to_owned(),
            status,
            location: location.to_owned(),
        }
    }
}

impl HttpServer {
    pub fn start(handler: impl Fn(&Req, &mut Conn) + Send + Sync + 'static) -> HttpServer {
        HttpServer::start_redirecting(Vec::new(), handler)
    }

    /// A server that answers `redirects` itself and passes every other request to `handler`.
    pub fn start_redirecting(
        redirects: Vec<Redirect>,
        handler: impl Fn(&Req, &mut Conn) + Send + Sync + 'static,
    ) -> HttpServer {
        let port = Arc::new(std::sync::OnceLock::<u16>::new());
        let handler: Handler = {
            let port = port.clone();
            Arc::new(move |req: &Req, conn: &mut Conn| {
                if let Some(r) = redirects.iter().find(|r| r.path == req.path) {
                    let p = port.get().copied().unwrap_or(0).to_string();
                    conn.redirect(r.status, &r.location.replace("{port}", &p));
                    return;
                }
                handler(req, conn)
            })
        };
        let requests = Arc::new(Requests::default());
        let reqs = requests.clone();
        let acceptor = Acceptor::start("http", move |n, stream| {
            serve_conn(n, stream, handler.clone(), reqs.clone())
        });
        let _ = port.set(acceptor.addr().port());
        HttpServer { acceptor, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.acceptor.addr())
    }

    pub fn port(&self) -> u16 {
        self.acceptor.addr().port()
    }

    pub fn requests(&self) -> Vec<Req> {
        self.requests.list.lock().unwrap().clone()
    }

    /// Waits (up to `timeout`) for a request matching `pred`.
    pub fn wait_for(
        &self,
        timeout: std::time::Duration,
        pred: impl Fn(&Req) -> bool,
    ) -> Option<Req> {
        let list = self.requests.list.lock().unwrap();
        let (list, _) = self
            .requests
            .added
            .wait_timeout_while(list, timeout, |l| !l.iter().any(&pred))
            .unwrap();
        list.iter().find(|r| pred(r)).cloned()
    }

    /// Waits (up to `timeout`) until the requests seen so far satisfy `pred`; returns them.
    pub fn wait_until(
        &self,
        timeout: std::time::Duration,
        pred: impl Fn(&[Req]) -> bool,
    ) -> Vec<Req> {
        let list = self.requests.list.lock().unwrap();
        let (list, _) = self
            .requests
            .added
            .wait_timeout_while(list, timeout, |l| !pred(l))
            .unwrap();
        list.clone()
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.acceptor.connections()
    }
}

fn serve_conn(n: usize, stream: TcpStream, handler: Handler, requests: Arc<Requests>) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut conn = Conn {
        stream,
        chunked: false,
        keep_alive: true,
    };
    loop {
        let Some(req) = read_request(n, &mut reader) else {
            return;
        };
        requests.push(req.clone());
        conn.chunked = false;
        handler(&req, &mut conn);
        if !conn.keep_alive {
            let _ = conn.stream.shutdown(Shutdown::Both);
            return;
        }
    }
}

/// Reads one request (its body by `Content-Length`) of connection `n`; `None` at the end.
pub fn read_request(n: usize, reader: &mut impl BufRead) -> Option<Req> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Req {
        method,
        path,
        headers,
        body,
        conn: n,
        at: Instant::now(),
    })
}

/// The process's peak resident memory (`VmHWM`), in bytes; 0 where `/proc` has none.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Resets the peak resident memory to the current one (Linux `clear_refs` 5); false when the
/// kernel does not allow it (the peak then only ever grows).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A JSON-RPC result message.
pub fn result(id: &Value, result: Value) -> Value {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
}
