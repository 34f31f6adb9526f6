//! The HTTP peers on a raw `TcpListener` (127.0.0.1:0), speaking just enough HTTP/1.1 with
//! keep-alive: Streamable HTTP at `/mcp` (replies as JSON or as an event stream; session ids in
//! the legacy era; `DELETE` answered, or stalled; the GET stream refused with 405), and legacy
//! HTTP+SSE (the GET stream at `/sse`, whose `endpoint` is `/message`; POSTs answered 202, the
//! answers on the stream).

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::Value;

use super::brain::{decide, Decision};
use super::wire::{client_gone, stalled, Bytes};
use crate::support_remote::{read_request, Req};

use super::{Acceptor, Plan, Shared, Stall};

/// Which HTTP transport the peer serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Streamable HTTP, answers as `application/json`.
    Json,
    /// Streamable HTTP, answers as `text/event-stream`.
    Sse,
    /// Legacy HTTP+SSE.
    Legacy,
}

/// What the legacy GET stream is asked to send.
enum Out {
    Msg(Duration, Value),
    Stall(Value),
}

pub struct HttpPeer {
    pub shared: Arc<Shared>,
    kind: Kind,
    acceptor: Acceptor,
}

struct Ctx {
    shared: Arc<Shared>,
    kind: Kind,
    sessions: AtomicUsize,
    /// Legacy: the latest GET stream.
    stream: Mutex<Option<Sender<Out>>>,
}

impl HttpPeer {
    pub fn start(kind: Kind, plan: Plan) -> HttpPeer {
        let shared = Shared::new(plan);
        let ctx = Arc::new(Ctx {
            shared: shared.clone(),
            kind,
            sessions: AtomicUsize::new(0),
            stream: Mutex::new(None),
        });
        let acceptor = Acceptor::start("http", &shared, move |_, stream| serve(&ctx, stream));
        HttpPeer {
            shared,
            kind,
            acceptor,
        }
    }

    /// The URL a client is given.
    pub fn url(&self) -> String {
        match self.kind {
            Kind::Legacy => format!("http://{}/sse", self.acceptor.addr),
            _ => format!("http://{}/mcp", self.acceptor.addr),
        }
    }
}

/// What to do with the connection after a request.
enum Next {
    Serve,
    Close,
}

fn serve(ctx: &Ctx, stream: TcpStream) {
    let (Ok(read), Ok(mut probe)) = (stream.try_clone(), stream.try_clone()) else {
        return;
    };
    let mut reader = BufReader::new(read);
    let mut w = stream;
    while let Some(req) = read_request(0, &mut reader) {
        let next = match ctx.kind {
            Kind::Legacy => legacy(ctx, &req, &mut w, &mut probe),
            _ => streamable(ctx, &req, &mut w, &mut probe),
        };
        if matches!(next, Next::Close) || ctx.shared.stopping() {
            return;
        }
    }
}

/// A whole response with a body; `Connection: close` when the plan says so.
fn respond(ctx: &Ctx, w: &mut TcpStream, status: &str, headers: &[String], body: &[u8]) -> Next {
    let mut head = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if ctx.shared.plan.close_each {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let ok = w
        .write_all(head.as_bytes())
        .and_then(|()| w.write_all(body))
        .and_then(|()| w.flush())
        .is_ok();
    if ok && !ctx.shared.plan.close_each {
        Next::Serve
    } else {
        Next::Close
    }
}

/// The answer `v` as Streamable HTTP bytes (head and body) for this peer's kind.
fn answer_bytes(ctx: &Ctx, v: &Value, msg: &Value) -> Bytes {
    let mut headers = String::new();
    if msg["method"] == "initialize" {
        let n = ctx.sessions.fetch_add(1, Ordering::SeqCst) + 1;
        headers.push_str(&format!("Mcp-Session-Id: s-{n}\r\n"));
    }
    if ctx.shared.plan.close_each {
        headers.push_str("Connection: close\r\n");
    }
    match ctx.kind {
        Kind::Sse => Bytes {
            head: format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                 Transfer-Encoding: chunked\r\n{headers}\r\n"
            )
            .into_bytes(),
            body: format!("event: message\ndata: {v}\n\n").into_bytes(),
            chunked: true,
        },
        _ => {
            let body = v.to_string().into_bytes();
            Bytes {
                head: format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     {headers}\r\n",
                    body.len()
                )
                .into_bytes(),
                body,
                chunked: false,
            }
        }
    }
}

fn write_whole(w: &mut TcpStream, b: &Bytes) -> bool {
    let mut out = b.head.clone();
    if b.chunked {
        out.extend_from_slice(format!("{:x}\r\n", b.body.len()).as_bytes());
        out.extend_from_slice(&b.body);
        out.extend_from_slice(b"\r\n0\r\n\r\n");
    } else {
        out.extend_from_slice(&b.body);
    }
    w.write_all(&out).and_then(|()| w.flush()).is_ok()
}

/// Holds an HTTP request's own connection stalled until the client closes it.
fn stall_request(ctx: &Ctx, w: &mut TcpStream, probe: &mut TcpStream, b: &Bytes) -> Next {
    let shared = &ctx.shared;
    stalled(
        w,
        b,
        shared.plan.stall,
        &mut || client_gone(probe, shared),
        &|| false,
    );
    Next::Close
}

fn streamable(ctx: &Ctx, req: &Req, w: &mut TcpStream, probe: &mut TcpStream) -> Next {
    match req.method.as_str() {
        "POST" => {}
        "DELETE" => {
            if ctx.shared.pseudo("DELETE") {
                let body = vec![b' '; 40];
                let b = Bytes {
                    head: format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())
                        .into_bytes(),
                    body,
                    chunked: false,
                };
                return stall_request(ctx, w, probe, &b);
            }
            return respond(ctx, w, "200 OK", &[], b"");
        }
        "GET" if ctx.shared.pseudo("GET") => {
            // The standalone stream stalls: its status line and headers, half a notification,
            // or the notification one byte at a time.
            return stall_request(ctx, w, probe, &sse_open(&notification()));
        }
        _ => {
            return respond(
                ctx,
                w,
                "405 Method Not Allowed",
                &["Allow: POST, DELETE".into()],
                b"",
            )
        }
    }
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    match decide(&ctx.shared, &msg) {
        Decision::Ignore => respond(ctx, w, "202 Accepted", &[], b""),
        Decision::Expire => respond(
            ctx,
            w,
            "404 Not Found",
            &["Content-Type: text/plain".into()],
            b"session not found",
        ),
        Decision::Answer(v) => finish(ctx, w, &answer_bytes(ctx, &v, &msg)),
        Decision::Later(d, v) => {
            // A server that takes its time, then answers.
            std::thread::sleep(d);
            finish(ctx, w, &answer_bytes(ctx, &v, &msg))
        }
        Decision::Stall(v) => stall_request(ctx, w, probe, &answer_bytes(ctx, &v, &msg)),
    }
}

fn finish(ctx: &Ctx, w: &mut TcpStream, b: &Bytes) -> Next {
    if write_whole(w, b) && !ctx.shared.plan.close_each {
        Next::Serve
    } else {
        Next::Close
    }
}

/// A notification a server may send on a GET stream.
fn notification() -> Vec<u8> {
    let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "hello from the stream"}});
    event(&note)
}

/// The opening of an event stream (a GET's answer) whose first event is `first`.
fn sse_open(first: &[u8]) -> Bytes {
    Bytes {
        head: b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                Transfer-Encoding: chunked\r\n\r\n"
            .to_vec(),
        body: first.to_vec(),
        chunked: true,
    }
}

fn event(v: &Value) -> Vec<u8> {
    format!("event: message\ndata: {v}\n\n").into_bytes()
}

fn legacy(ctx: &Ctx, req: &Req, w: &mut TcpStream, probe: &mut TcpStream) -> Next {
    match (req.method.as_str(), req.path.starts_with("/sse")) {
        ("GET", true) => {
            get_stream(ctx, w, probe);
            return Next::Close;
        }
        ("POST", false) => {}
        _ => return respond(ctx, w, "405 Method Not Allowed", &[], b""),
    }
    let msg: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
    let out = match decide(&ctx.shared, &msg) {
        Decision::Ignore | Decision::Expire => None,
        Decision::Answer(v) => Some(Out::Msg(Duration::ZERO, v)),
        Decision::Later(d, v) => Some(Out::Msg(d, v)),
        Decision::Stall(_) if ctx.shared.plan.stall == Stall::Head => {
            // The POST itself stalls: its status line and headers, then nothing.
            let b = Bytes {
                head: b"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\n".to_vec(),
                body: b"ok".to_vec(),
                chunked: false,
            };
            return stall_request(ctx, w, probe, &b);
        }
        Decision::Stall(v) => Some(Out::Stall(v)),
    };
    let next = respond(ctx, w, "202 Accepted", &[], b"");
    if let (Some(out), Some(tx)) = (out, ctx.stream.lock().unwrap().as_ref()) {
        let _ = tx.send(out);
    }
    next
}

/// The legacy GET stream: the `endpoint` event, then the answers, until the client goes.
fn get_stream(ctx: &Ctx, w: &mut TcpStream, probe: &mut TcpStream) {
    let shared = &ctx.shared;
    if shared.pseudo("GET") {
        // The stream's opening stalls: the `endpoint` event never comes whole.
        let b = sse_open(b"event: endpoint\ndata: /message\n\n");
        stall_request(ctx, w, probe, &b);
        return;
    }
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
                Transfer-Encoding: chunked\r\n\r\n";
    let endpoint = b"event: endpoint\ndata: /message\n\n";
    let mut first = head.as_bytes().to_vec();
    first.extend_from_slice(format!("{:x}\r\n", endpoint.len()).as_bytes());
    first.extend_from_slice(endpoint);
    first.extend_from_slice(b"\r\n");
    if w.write_all(&first).and_then(|()| w.flush()).is_err() {
        return;
    }
    let (tx, rx): (Sender<Out>, Receiver<Out>) = crossbeam_channel::unbounded();
    *ctx.stream.lock().unwrap() = Some(tx);
    loop {
        // The 10 ms read timeout of this check paces the loop.
        if client_gone(probe, shared) {
            return;
        }
        let Ok(out) = rx.try_recv() else { continue };
        let goes_on = match out {
            Out::Msg(d, v) => {
                std::thread::sleep(d);
                let body = event(&v);
                let mut chunk = format!("{:x}\r\n", body.len()).into_bytes();
                chunk.extend_from_slice(&body);
                chunk.extend_from_slice(b"\r\n");
                w.write_all(&chunk).and_then(|()| w.flush()).is_ok()
            }
            Out::Stall(v) => {
                let b = Bytes {
                    head: Vec::new(),
                    body: event(&v),
                    chunked: true,
                };
                stalled(
                    w,
                    &b,
                    shared.plan.stall,
                    &mut || client_gone(probe, shared),
                    &|| shared.released(),
                )
            }
        };
        if !goes_on {
            return;
        }
    }
}
