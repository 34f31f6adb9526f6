//! `https://` (Streamable HTTP and legacy SSE) and `wss://` against a loopback TLS server whose
//! certificate is self-signed at test time: trusting it with `tls_root_certificates_pem` connects;
//! without it the connect fails fast with a typed error that names the server and the certificate
//! problem.

mod support_remote;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{Client, Error, ServerConfig};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::{ServerConnection, StreamOwned};
use serde_json::Value;
use support_remote::mcp::answer;
use tungstenite::handshake::server::{Request, Response};
use tungstenite::Message;

type Tls = StreamOwned<ServerConnection, TcpStream>;

const TIMEOUT: Duration = Duration::from_secs(5);

/// What the loopback server speaks once TLS is up.
#[derive(Clone, Copy)]
enum Speaks {
    /// Streamable HTTP: JSON replies to POSTs, 202 for notifications, 405 for GET.
    Http,
    /// WebSocket, subprotocol `mcp`, one message per text frame.
    WebSocket,
    /// Legacy HTTP+SSE: a GET stream whose `endpoint` is `/messages`, answers to POSTs on it.
    Sse,
}

/// A TLS server on 127.0.0.1, port 0; its accept thread (and every connection thread) is joined on
/// drop.
struct TlsServer {
    addr: SocketAddr,
    /// The certificate, PEM, that a client must trust.
    ca_pem: String,
    /// Dropped to tell the accept loop to stop.
    stop: Option<crossbeam_channel::Sender<()>>,
    accept: Option<JoinHandle<()>>,
}

impl TlsServer {
    fn start(speaks: Speaks) -> TlsServer {
        let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
            .expect("self-signed certificate");
        let chain = vec![CertificateDer::from(key.cert.der().to_vec())];
        let private =
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, private)
            .expect("server certificate");
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = crossbeam_channel::bounded::<()>(0);
        // Legacy SSE: answers to POSTs travel to the GET stream's connection.
        let (answers_tx, answers_rx) = crossbeam_channel::unbounded::<Value>();
        let accept = std::thread::Builder::new()
            .name("tls-accept".into())
            .spawn(move || {
                let mut conns = Vec::new();
                for tcp in listener.incoming() {
                    if stopped.try_recv() == Err(crossbeam_channel::TryRecvError::Disconnected) {
                        break;
                    }
                    let Ok(tcp) = tcp else { continue };
                    let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
                    let tls = ServerConnection::new(Arc::clone(&config)).expect("TLS session");
                    let stream = StreamOwned::new(tls, tcp);
                    let sse = (answers_tx.clone(), answers_rx.clone(), stopped.clone());
                    conns.push(
                        std::thread::Builder::new()
                            .name("tls-conn".into())
                            .spawn(move || match speaks {
                                Speaks::Http => serve_http(stream),
                                Speaks::WebSocket => serve_ws(stream),
                                Speaks::Sse => serve_sse(stream, sse),
                            })
                            .expect("spawn connection thread"),
                    );
                }
                for c in conns {
                    let _ = c.join();
                }
            })
            .expect("spawn accept thread");
        TlsServer {
            addr,
            ca_pem: key.cert.pem(),
            stop: Some(stop),
            accept: Some(accept),
        }
    }

    fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}/mcp", self.addr)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        drop(self.stop.take());
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// A minimal Streamable HTTP server on one connection.
fn serve_http(stream: Tls) {
    let mut reader = BufReader::new(stream);
    while let Some((method, body)) = read_request(&mut reader) {
        let out = reader.get_mut();
        let reply = match method.as_str() {
            "POST" => {
                let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                match answer(&msg) {
                    Some(a) => {
                        let a = a.to_string();
                        format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{a}",
                            a.len()
                        )
                    }
                    None => "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned(),
                }
            }
            _ => "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n".to_owned(),
        };
        if out.write_all(reply.as_bytes()).is_err() || out.flush().is_err() {
            return;
        }
    }
}

/// A minimal legacy HTTP+SSE server on one connection: a GET gets the event stream (chunked),
/// which announces `/messages` and carries the answers to every POST; a POST gets 202 and its
/// answer goes to the stream. `channels`: the answers' sender and receiver, and the server's stop
/// signal (disconnected when the server is dropped).
fn serve_sse(
    stream: Tls,
    channels: (
        crossbeam_channel::Sender<Value>,
        crossbeam_channel::Receiver<Value>,
        crossbeam_channel::Receiver<()>,
    ),
) {
    let (answers_tx, answers_rx, stopped) = channels;
    let mut reader = BufReader::new(stream);
    while let Some((method, body)) = read_request(&mut reader) {
        let out = reader.get_mut();
        if method == "POST" {
            let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            if let Some(a) = answer(&msg) {
                let _ = answers_tx.send(a);
            }
            let reply = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n";
            if out.write_all(reply.as_bytes()).is_err() || out.flush().is_err() {
                return;
            }
            continue;
        }
        let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                    Transfer-Encoding: chunked\r\n\r\n";
        if out.write_all(head.as_bytes()).is_err() {
            return;
        }
        let mut send = |text: &str| -> std::io::Result<()> {
            write!(out, "{:x}\r\n{text}\r\n", text.len())?;
            out.flush()
        };
        if send("event: endpoint\ndata: /messages\n\n").is_err() {
            return;
        }
        // Until the client goes away or the server is dropped; the comment probes the socket.
        while stopped.try_recv() != Err(crossbeam_channel::TryRecvError::Disconnected) {
            let event = match answers_rx.recv_timeout(Duration::from_millis(50)) {
                Ok(msg) => format!("event: message\ndata: {msg}\n\n"),
                Err(_) => ": ping\n\n".to_owned(),
            };
            if send(&event).is_err() {
                return;
            }
        }
        return;
    }
}

/// The method and body of the next request, `None` at the end of the connection.
fn read_request(reader: &mut impl BufRead) -> Option<(String, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let method = line.split_whitespace().next()?.to_owned();
    let mut len = 0;
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
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some((method, body))
}

/// A minimal WebSocket MCP server on one connection.
fn serve_ws(stream: Tls) {
    // The error type is tungstenite's, fixed by its callback signature.
    #[allow(clippy::result_large_err)]
    let callback = |_: &Request, mut resp: Response| {
        resp.headers_mut().insert(
            "sec-websocket-protocol",
            "mcp".parse().expect("header value"),
        );
        Ok(resp)
    };
    let Ok(mut ws) = tungstenite::accept_hdr(stream, callback) else {
        return;
    };
    while let Ok(msg) = ws.read() {
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
            if let Some(a) = answer(&v) {
                let _ = ws.send(Message::text(a.to_string()));
            }
        }
    }
}

/// Connects, lists the tools and closes.
fn lists_tools(config: ServerConfig) {
    let client = Client::connect(config).expect("connect");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    client.close().expect("close");
}

/// Connects, expecting a certificate error that names the server, well within the timeout.
fn refuses_the_certificate(config: ServerConfig) {
    let started = Instant::now();
    let err = Client::connect(config).expect_err("an untrusted certificate must not connect");
    assert!(
        started.elapsed() < TIMEOUT / 2,
        "took {:?}",
        started.elapsed()
    );
    assert!(
        matches!(&err, Error::Connect(e) if e.kind() == ConnectErrorKind::Unreachable),
        "{err:?}"
    );
    assert!(
        std::error::Error::source(&err).is_some(),
        "the TLS error is kept"
    );
    let text = err.to_string();
    assert!(text.contains("server `untrusted`"), "{text}");
    assert!(text.to_ascii_lowercase().contains("certificate"), "{text}");
}

#[test]
fn https_connects_when_the_private_ca_is_trusted() {
    let srv = TlsServer::start(Speaks::Http);
    let config = ServerConfig::http("trusted", srv.url("https"))
        .with_timeout(TIMEOUT)
        .with_tls_root_certificates_pem(&srv.ca_pem)
        .expect("PEM certificate");
    lists_tools(config);
}

#[test]
fn https_refuses_an_unknown_ca_with_a_certificate_error() {
    let srv = TlsServer::start(Speaks::Http);
    refuses_the_certificate(
        ServerConfig::http("untrusted", srv.url("https")).with_timeout(TIMEOUT),
    );
}

#[test]
fn wss_connects_when_the_private_ca_is_trusted() {
    let srv = TlsServer::start(Speaks::WebSocket);
    let config = ServerConfig::websocket("trusted", srv.url("wss"))
        .with_timeout(TIMEOUT)
        .with_tls_root_certificates_pem(&srv.ca_pem)
        .expect("PEM certificate");
    lists_tools(config);
}

#[test]
fn wss_refuses_an_unknown_ca_with_a_certificate_error() {
    let srv = TlsServer::start(Speaks::WebSocket);
    refuses_the_certificate(
        ServerConfig::websocket("untrusted", srv.url("wss")).with_timeout(TIMEOUT),
    );
}

#[test]
fn a_pem_without_a_certificate_is_a_config_error() {
    let err = ServerConfig::websocket("w", "wss://127.0.0.1:1")
        .with_tls_root_certificates_pem("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n")
        .expect_err("no certificate");
    assert_eq!(
        err.kind,
        mcp_blocking::config::ConfigErrorKind::InvalidValue
    );
}

#[test]
fn legacy_sse_over_https_connects_when_the_private_ca_is_trusted() {
    let srv = TlsServer::start(Speaks::Sse);
    let config = ServerConfig::sse("trusted", srv.url("https"))
        .with_timeout(TIMEOUT)
        .with_tls_root_certificates_pem(&srv.ca_pem)
        .expect("PEM certificate");
    lists_tools(config);
}

#[test]
fn legacy_sse_over_https_refuses_an_unknown_ca_with_a_certificate_error() {
    let srv = TlsServer::start(Speaks::Sse);
    refuses_the_certificate(ServerConfig::sse("untrusted", srv.url("https")).with_timeout(TIMEOUT));
}
