//! A scripted MCP server over Streamable HTTP and legacy HTTP+SSE, on [`HttpServer`].
//!
//! Tools: `add` {a, b}; `echo` {text}; `progress` (reports two progress notifications on the SSE
//! reply); `hang` (never answers); `drop` (hangs up mid-stream); `resume` (ends the stream after a
//! priming event; the answer comes on the resumption GET); `trickle` (SSE comments every 50 ms,
//! forever); `notify` (asks the standalone GET stream to push a notification); `big` {bytes,
//! line, chunked} (an answer of exactly `bytes` bytes written as lines of `line` bytes: one SSE
//! event of many `data:` lines, or a JSON body, chunked or not); `forbidden` (HTTP 403 with a
//! `WWW-Authenticate` challenge).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use super::{result, Conn, HttpServer, Redirect, Req};

/// How the Streamable HTTP server behaves.
#[derive(Clone, Default)]
pub struct Options {
    /// Answer requests with an SSE stream instead of JSON.
    pub sse: bool,
    /// Issue session ids (`s-1`, `s-2`, …) and demand them.
    pub sessions: bool,
    /// Serve the standalone GET stream (otherwise 405).
    pub get_stream: bool,
    /// Require this exact Authorization header value (401 otherwise).
    pub require_auth: Option<String>,
    /// The `WWW-Authenticate` header of that 401 (none when `None`).
    pub challenge: Option<String>,
    /// Redirects answered before the MCP handler sees a request.
    pub redirects: Vec<Redirect>,
}

/// Shared state of the scripted server.
pub struct State {
    opts: Options,
    session: Mutex<Option<String>>,
    sessions_issued: AtomicUsize,
    /// A pending `resume` call: its id, answered on the next GET with Last-Event-ID.
    resume_pending: Mutex<Option<Value>>,
    /// Messages to push on the standalone GET stream.
    push_tx: Sender<Value>,
    push_rx: Receiver<Value>,
    /// Set to stop stream loops.
    pub stop: AtomicBool,
}

impl State {
    /// Forgets the session, so the next request carrying it gets 404.
    pub fn expire_session(&self) {
        *self.session.lock().unwrap() = None;
    }

    pub fn sessions_issued(&self) -> usize {
        self.sessions_issued.load(Ordering::SeqCst)
    }

    /// Pushes a message on the standalone GET stream.
    pub fn push(&self, msg: Value) {
        let _ = self.push_tx.send(msg);
    }
}

/// A running Streamable HTTP MCP server at `/mcp`.
pub struct McpHttp {
    pub server: HttpServer,
    pub state: Arc<State>,
}

impl McpHttp {
    pub fn start(opts: Options) -> McpHttp {
        let (push_tx, push_rx) = crossbeam_channel::unbounded();
        let state = Arc::new(State {
            opts,
            session: Mutex::new(None),
            sessions_issued: AtomicUsize::new(0),
            resume_pending: Mutex::new(None),
            push_tx,
            push_rx,
            stop: AtomicBool::new(false),
        });
        let st = state.clone();
        let redirects = state.opts.redirects.clone();
        let server =
            HttpServer::start_redirecting(redirects, move |req, conn| handle(&st, req, conn));
        McpHttp { server, state }
    }

    pub fn url(&self) -> String {
        self.server.url("/mcp")
    }

    pub fn requests(&self) -> Vec<super::Req> {
        self.server.requests()
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
    }
}

/// The answer to a request, for the tools that answer at once.
pub fn answer(msg: &Value) -> Option<Value> {
    let id = msg.get("id")?;
    msg.get("method")?;
    let method = msg["method"].as_str().unwrap_or("");
    let params = &msg["params"];
    let r = match method {
        "initialize" => json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            "serverInfo": {"name": "loopback", "version": "1.0.0"}
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [
            {"name": "add", "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
            {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}
        ]}),
        "tools/call" => {
            let args = &params["arguments"];
            match params["name"].as_str().unwrap_or("") {
                "add" => {
                    let sum = args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0);
                    json!({"content": [{"type": "text", "text": format!("{sum}")}]})
                }
                "echo" | "progress" | "resume" | "notify" => {
                    json!({"content": [{"type": "text", "text": args["text"].as_str().unwrap_or("done")}]})
                }
                _ => return None,
            }
        }
        "resources/read" => {
            json!({"contents": [{"uri": params["uri"], "mimeType": "text/plain", "text": "hello"}]})
        }
        "prompts/get" => {
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "prompt"}}]})
        }
        _ => {
            return Some(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
            )
        }
    };
    Some(result(id, r))
}

fn handle(st: &Arc<State>, req: &Req, conn: &mut Conn) {
    if let Some(want) = &st.opts.require_auth {
        if req.header("authorization") != Some(want.as_str()) {
            match &st.opts.challenge {
                Some(c) => conn.respond(401, &[("WWW-Authenticate", c.as_str())], b"unauthorized"),
                None => conn.respond(401, &[], b"unauthorized"),
            }
            return;
        }
    }
    let msg = req.json();
    let method = msg["method"].as_str().unwrap_or("").to_owned();
    let is_init = method == "initialize";
    // Session checks.
    let mut new_session = None;
    if st.opts.sessions {
        if is_init && req.method == "POST" && req.header("mcp-session-id").is_some() {
            conn.respond(404, &[], b"unknown session");
            return;
        } else if is_init && req.method == "POST" {
            let n = st.sessions_issued.fetch_add(1, Ordering::SeqCst) + 1;
            let sid = format!("s-{n}");
            *st.session.lock().unwrap() = Some(sid.clone());
            new_session = Some(sid);
        } else {
            let current = st.session.lock().unwrap().clone();
            match (req.header("mcp-session-id"), current) {
                (None, _) => {
                    conn.respond(400, &[], b"missing session");
                    return;
                }
                (Some(got), Some(cur)) if got == cur => {}
                (Some(_), _) => {
                    conn.respond(404, &[("Content-Type", "text/plain")], b"session not found");
                    return;
                }
            }
        }
    }
    match req.method.as_str() {
        "GET" => return get_stream(st, req, conn),
        "DELETE" => {
            conn.respond(if st.opts.sessions { 200 } else { 405 }, &[], b"");
            return;
        }
        "POST" => {}
        _ => {
            conn.respond(405, &[], b"");
            return;
        }
    }
    let sid_header;
    let mut extra: Vec<(&str, &str)> = Vec::new();
    if let Some(sid) = &new_session {
        sid_header = sid.clone();
        extra.push(("Mcp-Session-Id", sid_header.as_str()));
    }
    if msg.get("id").is_none() || msg.get("method").is_none() {
        conn.accepted();
        return;
    }
    let tool = msg["params"]["name"].as_str().unwrap_or("").to_owned();
    let id = msg["id"].clone();
    if method == "tools/call" {
        match tool.as_str() {
            "hang" => {
                conn.wait_for_peer_close();
                return;
            }
            "trickle" => {
                conn.sse_start(&extra);
                while !st.stop.load(Ordering::SeqCst) && conn.chunk(": tick\n").is_ok() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                conn.set_keep_alive(false);
                return;
            }
            "drop" => {
                conn.sse_start(&extra);
                let _ = conn.chunk("event: message\ndata: {\"jsonrpc\":");
                conn.hang_up();
                return;
            }
            "resume" => {
                *st.resume_pending.lock().unwrap() = Some(id.clone());
                conn.sse_start(&extra);
                let _ = conn.chunk("id: ev-1\nretry: 100\ndata: \n\n");
                conn.sse_end();
                return;
            }
            "progress" => {
                let token = msg["params"]["_meta"]["progressToken"].clone();
                conn.sse_start(&extra);
                for p in [1, 2] {
                    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": p, "total": 2}});
                    let _ = conn.event(None, &note);
                }
                if let Some(a) = answer(&msg) {
                    let _ = conn.event(None, &a);
                }
                conn.sse_end();
                return;
            }
            "notify" => {
                st.push(json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "from the GET stream"}}));
            }
            "idless_error" => {
                // An error answer without an id, as a server that could not read the request
                // sends.
                let body = json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": "could not parse that"}});
                let mut headers = vec![("Content-Type", "application/json")];
                headers.extend_from_slice(&extra);
                conn.respond(200, &headers, body.to_string().as_bytes());
                return;
            }
            "forbidden" => {
                let challenge = r#"Bearer error="insufficient_scope", scope="admin""#;
                conn.respond(403, &[("WWW-Authenticate", challenge)], b"forbidden");
                return;
            }
            "big" => {
                let args = &msg["params"]["arguments"];
                let bytes = args["bytes"].as_u64().unwrap_or(1000) as usize;
                let line = args["line"].as_u64().unwrap_or(1000) as usize;
                let lines = big_answer_lines(&id, bytes, line);
                if st.opts.sse {
                    conn.sse_start(&extra);
                    let _ = conn.chunk("event: message\n");
                    for l in lines {
                        if conn.chunk(&format!("data: {l}\n")).is_err() {
                            return;
                        }
                    }
                    let _ = conn.chunk("\n");
                    conn.sse_end();
                } else if args["chunked"].as_bool() == Some(true) {
                    let mut headers = vec![("Content-Type", "application/json")];
                    headers.extend_from_slice(&extra);
                    conn.chunked_start(200, &headers);
                    for (i, l) in lines.enumerate() {
                        let sep = if i == 0 { "" } else { "\n" };
                        if conn.chunk(&format!("{sep}{l}")).is_err() {
                            return;
                        }
                    }
                    conn.sse_end();
                } else {
                    let mut headers = vec![("Content-Type", "application/json")];
                    headers.extend_from_slice(&extra);
                    let body = lines.collect::<Vec<_>>().join("\n");
                    conn.respond(200, &headers, body.as_bytes());
                }
                return;
            }
            _ => {}
        }
    }
    let Some(reply) = answer(&msg) else {
        conn.json(200, &extra, &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": "unknown tool"}}));
        return;
    };
    if st.opts.sse {
        conn.sse_start(&extra);
        let _ = conn.chunk(": comment\n\n");
        let _ = conn.event(Some("1"), &reply);
        conn.sse_end();
    } else {
        conn.json(200, &extra, &reply);
    }
}

/// The answer to request `id` as JSON text lines that, joined with `\n`, are exactly `bytes`
/// long and valid JSON: a first line, then one `{"type":"text",...}` item per line of `line`
/// bytes (the last one padded to fit). Made one line at a time, so a huge answer costs the
/// server no memory.
pub fn big_answer_lines(id: &Value, bytes: usize, line: usize) -> impl Iterator<Item = String> {
    let first = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":["#);
    let item = |text_len: usize, last: bool| {
        let end = if last { "}]}}" } else { "}," };
        format!(r#"{{"type":"text","text":"{}"{end}"#, "x".repeat(text_len))
    };
    let item_overhead = item(0, false).len();
    let last_overhead = item(0, true).len();
    assert!(
        line > item_overhead,
        "lines of {line} bytes cannot hold an item"
    );
    let left = bytes
        .checked_sub(first.len() + 1)
        .expect("too small for an answer");
    // Full items while what is left still holds one and the last item.
    let full = left.saturating_sub(last_overhead) / (line + 1);
    let last_len = left - full * (line + 1);
    let last_text = last_len.checked_sub(last_overhead).expect("too small");
    std::iter::once(first)
        .chain((0..full).map(move |_| item(line - item_overhead, false)))
        .chain(std::iter::once(item(last_text, true)))
}

fn get_stream(st: &Arc<State>, req: &Req, conn: &mut Conn) {
    if req.header("last-event-id").is_some() {
        let pending = st.resume_pending.lock().unwrap().take();
        conn.sse_start(&[]);
        if let Some(id) = pending {
            let reply = result(
                &id,
                json!({"content": [{"type": "text", "text": "resumed"}]}),
            );
            let _ = conn.event(Some("ev-2"), &reply);
        }
        conn.sse_end();
        return;
    }
    if !st.opts.get_stream {
        conn.respond(405, &[], b"");
        return;
    }
    conn.sse_start(&[]);
    while !st.stop.load(Ordering::SeqCst) {
        match st.push_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(msg) => {
                if conn.event(None, &msg).is_err() {
                    break;
                }
            }
            Err(_) => {
                // Probe the connection so a closed client ends this loop.
                if conn.chunk(": ping\n\n").is_err() {
                    break;
                }
            }
        }
    }
    conn.set_keep_alive(false);
}

/// A legacy HTTP+SSE server: GET `/sse` streams, POST `/messages?sid=1` answers on the stream.
/// The `big` tool's answer is one event of many `data:` lines (see [`big_answer_lines`]);
/// `forbidden` is refused with HTTP 403 and a challenge; `die` ends the stream.
pub struct McpSse {
    pub server: HttpServer,
    /// What the stream sends next: a message as an event, a `Value::String` as raw
    /// event-stream text, `None` to end the stream.
    pub stream_tx: Sender<Option<Value>>,
}

impl McpSse {
    /// `endpoint` is what the `endpoint` event says (relative or absolute).
    pub fn start(endpoint: &str) -> McpSse {
        McpSse::start_redirecting(endpoint, Vec::new())
    }

    /// [`McpSse::start`] answering `redirects` first.
    pub fn start_redirecting(endpoint: &str, redirects: Vec<Redirect>) -> McpSse {
        let (tx, rx) = crossbeam_channel::unbounded::<Option<Value>>();
        let endpoint = endpoint.to_owned();
        let tx2 = tx.clone();
        let server =
            HttpServer::start_redirecting(redirects, move |req, conn| match req.method.as_str() {
                "GET" if req.path.starts_with("/sse") => {
                    conn.sse_start(&[]);
                    let _ = conn.chunk(&format!("event: endpoint\ndata: {endpoint}\n\n"));
                    loop {
                        match rx.recv_timeout(Duration::from_millis(50)) {
                            Ok(Some(Value::String(raw))) => {
                                if conn.chunk(&raw).is_err() {
                                    break;
                                }
                            }
                            Ok(Some(msg)) => {
                                if conn.event(None, &msg).is_err() {
                                    break;
                                }
                            }
                            // `None` asks the stream to end, as a dying server would.
                            Ok(None) => {
                                conn.sse_end();
                                break;
                            }
                            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                                if conn.chunk(": ping\n\n").is_err() {
                                    break;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                    conn.set_keep_alive(false);
                }
                "POST" if req.path.starts_with("/messages") => {
                    let msg = req.json();
                    if msg["params"]["name"] == "forbidden" {
                        let challenge = r#"Bearer error="insufficient_scope", scope="admin""#;
                        conn.respond(403, &[("WWW-Authenticate", challenge)], b"forbidden");
                        return;
                    }
                    conn.respond(202, &[], b"Accepted");
                    if msg["params"]["name"] == "die" {
                        let _ = tx2.send(None);
                    } else if msg["params"]["name"] == "big" {
                        let args = &msg["params"]["arguments"];
                        let bytes = args["bytes"].as_u64().unwrap_or(1000) as usize;
                        let line = args["line"].as_u64().unwrap_or(1000) as usize;
                        let mut raw = String::from("event: message\n");
                        for l in big_answer_lines(&msg["id"], bytes, line) {
                            raw.push_str("data: ");
                            raw.push_str(&l);
                            raw.push('\n');
                        }
                        raw.push('\n');
                        let _ = tx2.send(Some(Value::String(raw)));
                    } else if let Some(a) = answer(&msg) {
                        let _ = tx2.send(Some(a));
                    }
                }
                "POST" => conn.respond(405, &[], b"use the SSE endpoint"),
                _ => conn.respond(404, &[], b""),
            });
        McpSse {
            server,
            stream_tx: tx,
        }
    }
}

impl Drop for McpSse {
    fn drop(&mut self) {
        let _ = self.stream_tx.send(None);
    }
}
