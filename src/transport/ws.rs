//! WebSocket transport (not part of the MCP spec; the TS and Python SDKs' convention): subprotocol
//! `mcp`, one JSON-RPC message per text frame.
//!
//! ```text
//!  open ── TCP connect (timeout) ── TLS for wss ── HTTP upgrade, `Sec-WebSocket-Protocol: mcp`
//!                                                  + configured headers, auth provider
//!       └─> reader thread:  peek (no lock) ─> lock, non-blocking reads until WouldBlock ─> unlock
//!                           text ─> Sink::deliver; ping ─> pong; close/EOF ─> Sink::closed
//!  send ── lock, write one text frame (write timeout = the caller's deadline), unlock
//!  close ── close frame ── wait briefly for the reader ── shut the socket down ── join
//! ```
//!
//! tungstenite has one object for both directions, so it sits behind a mutex. The reader waits
//! for bytes with `peek` on a clone of the socket without holding the lock, so a writer never
//! waits behind a blocked read.

use crate::sync::lock;
use std::fmt;
use std::io::ErrorKind;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use super::http::{deliver_frame, Outbound, RequestHeaders};
use super::{Sink, Transport};
use crate::config::{header_pair, redact_url, WebSocketConfig};
use crate::error::{ConnectError, ConnectErrorKind, Error};

type Ws = WebSocket<MaybeTlsStream<TcpStream>>;

struct Inner {
    server: String,
    ws: Mutex<Ws>,
    /// A clone of the socket: waits for input, toggles blocking mode, shuts down on close.
    tcp: TcpStream,
    sink: Arc<dyn Sink>,
    closing: AtomicBool,
}

/// The WebSocket connection handle.
pub(crate) struct WsTransport {
    inner: Arc<Inner>,
    url: String,
    timeout: Duration,
    reader: Mutex<Option<(JoinHandle<()>, crossbeam_channel::Receiver<()>)>>,
}

impl fmt::Debug for WsTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WsTransport")
            .field("server", &self.inner.server)
            .field("url", &redact_url(&self.url))
            .finish_non_exhaustive()
    }
}

/// Opens a WebSocket: TCP, TLS (wss) and the upgrade, all bounded by `timeout`. The upgrade
/// request carries the configured headers and the auth provider's `Authorization`.
pub(crate) fn open(
    server: &str,
    cfg: &WebSocketConfig,
    timeout: Duration,
    sink: Arc<dyn Sink>,
) -> Result<Arc<dyn Transport>, Error> {
    let started = Instant::now();
    let url = cfg.url.as_str();
    let shown = redact_url(url);
    let fail = |kind: ConnectErrorKind, detail: String| {
        ConnectError::new(server, &shown, kind, format!("{shown}: {detail}"))
    };
    let err = |detail: String| fail(ConnectErrorKind::Unreachable, detail);
    let timed_out = || {
        let secs = started.elapsed().as_secs_f64();
        fail(
            ConnectErrorKind::TimedOut,
            format!("the WebSocket handshake timed out after {secs:.1} s"),
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
    let uri = request.uri().clone();
    let host = uri
        .host()
        .ok_or_else(|| err("no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("wss") {
            443
        } else {
            80
        });
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| err(format!("could not resolve the host: {e}")).with_source(e))?
        .collect();
    let mut last = None;
    let mut tcp = None;
    for addr in addrs {
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let tcp = match (tcp, last) {
        (Some(t), _) => t,
        (None, Some(e)) if e.kind() == ErrorKind::TimedOut => {
            return Err(timed_out().with_source(e).into())
        }
        (None, Some(e)) => return Err(err(e.to_string()).with_source(e).into()),
        (None, None) => return Err(timed_out().into()),
    };
    let _ = tcp.set_nodelay(true);
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    let io_err = |e: std::io::Error| err(format!("socket setup: {e}")).with_source(e);
    tcp.set_read_timeout(Some(left)).map_err(io_err)?;
    tcp.set_write_timeout(Some(left)).map_err(io_err)?;
    let clone = tcp.try_clone().map_err(io_err)?;
    // Plain `ws://` needs no connector; `wss://` always gets ours (tungstenite is built
    // without a root store of its own).
    let connector = if url.len() >= 6 && url[..6].eq_ignore_ascii_case("wss://") {
        Some(tls_connector(&cfg.root_certificates).map_err(err)?)
    } else {
        None
    };
    let (ws, response) = match tungstenite::client_tls_with_config(request, tcp, None, connector) {
        Ok(ok) => ok,
        Err(HandshakeError::Interrupted(_)) => return Err(timed_out().into()),
        Err(HandshakeError::Failure(tungstenite::Error::Io(e)))
            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
        {
            return Err(timed_out().with_source(e).into())
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
    clone.set_read_timeout(None).map_err(io_err)?;
    clone.set_write_timeout(Some(timeout)).map_err(io_err)?;
    let inner = Arc::new(Inner {
        server: server.to_owned(),
        ws: Mutex::new(ws),
        tcp: clone,
        sink,
        closing: AtomicBool::new(false),
    });
    let (done_tx, done_rx) = crossbeam_channel::bounded::<()>(0);
    let handle = {
        let inner = Arc::clone(&inner);
        std::thread::Builder::new()
            .name(format!("mcp-ws:{server}"))
            .spawn(move || {
                inner.read_loop();
                drop(done_tx);
            })
            .map_err(|e| err(format!("could not start the reader thread: {e}")).with_source(e))?
    };
    Ok(Arc::new(WsTransport {
        inner,
        url: url.to_owned(),
        timeout,
        reader: Mutex::new(Some((handle, done_rx))),
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
    for (name, value) in headers.resolve(server)? {
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

/// A rustls connector that trusts the webpki (Mozilla) roots and `extra` (DER). The TLS
/// configuration without extra roots is built once per process.
fn tls_connector(extra: &[Vec<u8>]) -> Result<tungstenite::Connector, String> {
    static WEBPKI_ONLY: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    let config = match (extra.is_empty(), WEBPKI_ONLY.get()) {
        (true, Some(config)) => Arc::clone(config),
        (true, None) => {
            let config = Arc::new(tls_config(&[])?);
            Arc::clone(WEBPKI_ONLY.get_or_init(|| config))
        }
        (false, _) => Arc::new(tls_config(extra)?),
    };
    Ok(tungstenite::Connector::Rustls(config))
}

fn tls_config(extra: &[Vec<u8>]) -> Result<rustls::ClientConfig, String> {
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

impl Inner {
    fn read_loop(&self) {
        let mut probe = [0u8; 1];
        let end = 'outer: loop {
            // Wait for input without holding the lock.
            if let Err(e) = self.tcp.peek(&mut probe) {
                break format!("the WebSocket connection failed: {e}");
            }
            let mut inbox = Vec::new();
            let outcome = {
                let mut ws = lock(&self.ws);
                if let Err(e) = self.tcp.set_nonblocking(true) {
                    break format!("the WebSocket connection failed: {e}");
                }
                let outcome = loop {
                    match ws.read() {
                        Ok(Message::Text(t)) => inbox.push(t.as_bytes().to_vec()),
                        Ok(Message::Binary(b)) => {
                            log::debug!("server `{}`: binary frame read as JSON", self.server);
                            inbox.push(b.to_vec());
                        }
                        Ok(Message::Ping(_)) | Ok(Message::Pong(_)) | Ok(Message::Frame(_)) => {}
                        Ok(Message::Close(frame)) => {
                            // A close frame (the server's, or the answer to ours) ends the
                            // connection; tungstenite has queued our reply, flushed below.
                            log::debug!("server `{}`: close frame {frame:?}", self.server);
                            break Some("the server closed the WebSocket".to_owned());
                        }
                        Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => {
                            break None;
                        }
                        Err(
                            tungstenite::Error::ConnectionClosed
                            | tungstenite::Error::AlreadyClosed,
                        ) => break Some("the server closed the WebSocket".to_owned()),
                        Err(e) => break Some(format!("the WebSocket connection failed: {e}")),
                    }
                };
                let _ = self.tcp.set_nonblocking(false);
                // Sends a queued pong (or close reply), if any.
                match ws.flush() {
                    Ok(()) => {}
                    Err(tungstenite::Error::Io(e)) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(
                        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed,
                    ) => {}
                    Err(e) => log::debug!("server `{}`: flush failed: {e}", self.server),
                }
                outcome
            };
            for frame in inbox {
                deliver_frame(&self.server, &*self.sink, &frame, None);
            }
            if let Some(end) = outcome {
                break 'outer end;
            }
        };
        if !self.closing.load(Ordering::SeqCst) {
            log::debug!("server `{}`: {end}", self.server);
            let _ = self.tcp.shutdown(Shutdown::Both);
            self.sink.closed(end, String::new());
        }
    }
}

impl Transport for WsTransport {
    fn send(&self, frame: Vec<u8>, deadline: Option<Instant>) -> Result<(), Error> {
        let inner = &self.inner;
        let started = Instant::now();
        if inner.closing.load(Ordering::SeqCst) {
            return Err(Error::Closed {
                server: inner.server.clone(),
                detail: "the client closed the connection".into(),
                stderr_tail: String::new(),
            });
        }
        let text = String::from_utf8(frame).map_err(|_| Error::InvalidArgument {
            server: inner.server.clone(),
            detail: "a JSON-RPC frame was not UTF-8".into(),
        })?;
        let mut ws = lock(&inner.ws);
        let left = deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(self.timeout);
        if left.is_zero() {
            return Err(Error::Timeout {
                server: inner.server.clone(),
                method: Outbound::peek(text.as_bytes()).label().to_owned(),
                after: started.elapsed(),
            });
        }
        let _ = inner.tcp.set_write_timeout(Some(left));
        ws.send(Message::text(text.clone())).map_err(|e| match e {
            tungstenite::Error::Io(io)
                if matches!(io.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Error::Timeout {
                    server: inner.server.clone(),
                    method: Outbound::peek(text.as_bytes()).label().to_owned(),
                    after: started.elapsed(),
                }
            }
            tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
                Error::Closed {
                    server: inner.server.clone(),
                    detail: "the WebSocket is closed".into(),
                    stderr_tail: String::new(),
                }
            }
            e => Error::Transport {
                server: inner.server.clone(),
                status: None,
                detail: format!("WebSocket write failed: {e}"),
                source: Some(Box::new(e)),
            },
        })
    }

    fn close(&self) -> Result<(), Error> {
        let inner = &self.inner;
        inner.closing.store(true, Ordering::SeqCst);
        let Some((handle, done)) = lock(&self.reader).take() else {
            return Ok(());
        };
        {
            let mut ws = lock(&inner.ws);
            let _ = inner
                .tcp
                .set_write_timeout(Some(self.timeout.min(Duration::from_secs(2))));
            let _ = ws.close(None);
            let _ = ws.flush();
        }
        // Give the server a moment to answer the close frame, then stop waiting for it.
        let _ = done.recv_timeout(self.timeout.min(Duration::from_secs(2)));
        let _ = inner.tcp.shutdown(Shutdown::Both);
        if handle.join().is_err() {
            log::warn!("server `{}`: the WebSocket reader panicked", inner.server);
        }
        Ok(())
    }
}

impl Drop for WsTransport {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
