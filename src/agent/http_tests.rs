//! The model request's one deadline against a loopback endpoint that stalls: whatever part of
//! the exchange the deadline cuts (the head, the body) it is a [`ModelError::Timeout`], and
//! retries after 429 or 5xx and the hops of a redirect run under the same deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::json;

use super::http::{Endpoint, HttpOptions};
use super::types::ModelError;

/// What the endpoint does with one request.
#[derive(Clone, Copy)]
enum Reply {
    /// Writes these bytes after this long, then closes the connection.
    Answer(Duration, &'static [u8]),
    /// Writes these bytes, then holds the connection until the client lets it go.
    Stall(&'static [u8]),
}

const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\
    Connection: close\r\n\r\n";

/// A loopback endpoint answering its n-th connection with the n-th reply.
struct Server {
    addr: std::net::SocketAddr,
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(replies: Vec<Reply>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("addr");
        let url = format!("http://{addr}/v1/chat");
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("test-model-endpoint".into())
            .spawn(move || {
                for reply in replies {
                    let Ok((stream, _)) = listener.accept() else {
                        return;
                    };
                    if stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    serve(stream, reply);
                }
            })
            .expect("spawn");
        Server {
            addr,
            url,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes an accept that waits for a request the client never made.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request (head and body), then replies.
fn serve(stream: TcpStream, reply: Reply) {
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mut stream = reader.into_inner();
    match reply {
        Reply::Answer(after, bytes) => {
            // A slow model, not a wait for an event.
            std::thread::sleep(after);
            let _ = stream.write_all(bytes);
        }
        Reply::Stall(bytes) => {
            let _ = stream.write_all(bytes);
            let mut sink = [0u8; 256];
            while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
        }
    }
}

fn endpoint(server: &Server, timeout: Duration) -> Endpoint {
    let mut e = Endpoint::new(server.url.clone());
    e.options = HttpOptions {
        timeout,
        base_delay: Duration::from_millis(10),
        ..HttpOptions::default()
    };
    e
}

/// Posts to `server` under `timeout`: the outcome and how long it took.
fn post(server: &Server, timeout: Duration) -> (Result<serde_json::Value, ModelError>, Duration) {
    let e = endpoint(server, timeout);
    let started = Instant::now();
    let r = e.post(&[], &json!({"model": "m"}), None);
    (r, started.elapsed())
}

#[test]
fn a_stall_after_the_head_or_inside_the_body_is_a_timeout() {
    let timeout = Duration::from_millis(500);
    for (what, bytes) in [
        (
            "head",
            &b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"[..],
        ),
        (
            "half a body",
            &b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n\
               {\"id\":"[..],
        ),
        ("half a head", &b"HTTP/1.1 200 OK\r\nContent-Type: appl"[..]),
    ] {
        let server = Server::start(vec![Reply::Stall(bytes)]);
        let (r, took) = post(&server, timeout);
        assert!(
            matches!(&r, Err(ModelError::Timeout { after, .. }) if *after == timeout),
            "{what}: {r:?}"
        );
        assert!(took < timeout + Duration::from_secs(1), "{what}: {took:?}");
    }
}

#[test]
fn retries_run_under_the_request_s_one_deadline() {
    // Each 503 comes just before the timeout: a retry with a fresh timeout would wait again.
    let slow = Reply::Answer(Duration::from_millis(700), UNAVAILABLE);
    let server = Server::start(vec![slow, slow, slow, Reply::Stall(b"")]);
    let timeout = Duration::from_secs(1);
    let (r, took) = post(&server, timeout);
    assert!(matches!(&r, Err(ModelError::Timeout { .. })), "{r:?}");
    assert!(took < timeout + Duration::from_secs(1), "{took:?}");
}

#[test]
fn a_retry_whose_wait_outlasts_the_deadline_is_not_made() {
    let later = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 5\r\nContent-Length: 0\r\n\
        Connection: close\r\n\r\n";
    let server = Server::start(vec![
        Reply::Answer(Duration::ZERO, later),
        Reply::Stall(b""),
    ]);
    let timeout = Duration::from_secs(1);
    let (r, took) = post(&server, timeout);
    assert!(
        matches!(&r, Err(ModelError::Status { status: 429, .. })),
        "{r:?}"
    );
    assert!(took < timeout, "{took:?}");
}

#[test]
fn a_redirect_hop_runs_under_the_request_s_one_deadline() {
    // The 307 comes just before the deadline and sends the request to an endpoint that stalls:
    // a hop with a fresh timeout would wait a whole timeout more.
    let moved = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /v2/chat\r\nContent-Length: 0\r\n\
        Connection: close\r\n\r\n";
    let server = Server::start(vec![
        Reply::Answer(Duration::from_millis(1_900), moved),
        Reply::Stall(b""),
    ]);
    let timeout = Duration::from_secs(2);
    let (r, took) = post(&server, timeout);
    assert!(
        matches!(&r, Err(ModelError::Timeout { after, .. }) if *after == timeout),
        "{r:?}"
    );
    assert!(took < timeout + Duration::from_secs(1), "{took:?}");
}
