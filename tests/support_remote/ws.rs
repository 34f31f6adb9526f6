//! A loopback WebSocket MCP server (tungstenite's server handshake on a `TcpListener`).
//!
//! Tool `ping-me` makes the server send a WebSocket ping before answering (the answer says
//! whether the pong came back); tool `close-me` makes the server close the connection without
//! answering. Tool `big` {bytes} answers with a text of that many bytes; `big-id-last` does too,
//! with the `id` after the `result`; `big-notify` {bytes} sends a notification that large first,
//! then answers. The handshake request's headers are recorded.
//!
//! [`WsServer::flood`] makes a hostile server: after the handshake it floods the connection
//! ([`Flood`]) from a thread of its own while (unless deaf) still reading and answering.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tungstenite::handshake::server::{Request, Response};
use tungstenite::Message;

use super::mcp::answer;
use super::{result, Acceptor};

/// What the server saw, for assertions.
#[derive(Default, Debug, Clone)]
pub struct Seen {
    pub subprotocol: Option<String>,
    /// Frames the flood thread sent.
    pub flooded: usize,
    /// The headers of the last handshake request, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub texts: Vec<String>,
    pub pongs: usize,
    pub close_frames: usize,
}

pub struct WsServer {
    acceptor: Acceptor,
    pub seen: Arc<Mutex<Seen>>,
}

/// What a flooding server sends, as fast as the connection takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flood {
    /// Ping frames; requests are still read and answered.
    Pings,
    /// `notifications/message` text frames; requests are still read and answered.
    Notifications,
    /// Ping frames, and nothing is ever read: our pongs and requests pile up.
    DeafPings,
}

impl WsServer {
    /// `answer_requests`: false makes a server that accepts the upgrade and never answers.
    pub fn start(answer_requests: bool) -> WsServer {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let seen2 = seen.clone();
        let acceptor = Acceptor::start("ws", move |_, stream| {
            serve(stream, seen2.clone(), answer_requests)
        });
        WsServer { acceptor, seen }
    }

    /// A server that floods every connection with `flood` once `initialize` has been answered
    /// (a deaf server floods right after the handshake and never answers).
    pub fn flood(flood: Flood) -> WsServer {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let seen2 = seen.clone();
        let acceptor = Acceptor::start("wsflood", move |n, stream| {
            serve_flood(n, stream, seen2.clone(), flood)
        });
        WsServer { acceptor, seen }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/", self.acceptor.addr())
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }

    /// Every value of handshake header `name` (any case), in order.
    pub fn handshake_header(&self, name: &str) -> Vec<String> {
        self.seen()
            .headers
            .into_iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .collect()
    }
}

fn serve(stream: TcpStream, seen: Arc<Mutex<Seen>>, answer_requests: bool) {
    let seen2 = seen.clone();
    // The error type is tungstenite's, fixed by its callback signature.
    #[allow(clippy::result_large_err)]
    let callback = move |req: &Request, mut resp: Response| {
        let proto = req
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(p) = &proto {
            if p.split(',').any(|s| s.trim() == "mcp") {
                resp.headers_mut()
                    .insert("sec-websocket-protocol", "mcp".parse().unwrap());
            }
        }
        let headers = req
            .headers()
            .iter()
            .map(|(k, v)| {
                let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (k.as_str().to_owned(), v)
            })
            .collect();
        let mut seen = seen2.lock().unwrap();
        seen.subprotocol = proto;
        seen.headers = headers;
        Ok(resp)
    };
    let Ok(mut ws) = tungstenite::accept_hdr(stream, callback) else {
        return;
    };
    let mut waiting_pong: Option<Value> = None;
    loop {
        let msg = match ws.read() {
            Ok(m) => m,
            Err(_) => return,
        };
        match msg {
            Message::Text(t) => {
                seen.lock().unwrap().texts.push(t.to_string());
                if !answer_requests {
                    continue;
                }
                let v: Value = serde_json::from_str(&t).unwrap_or(Value::Null);
                match v["params"]["name"].as_str() {
                    Some("ping-me") => {
                        waiting_pong = Some(v["id"].clone());
                        let _ = ws.send(Message::Ping(b"hi".to_vec().into()));
                        continue;
                    }
                    Some("close-me") => {
                        let _ = ws.close(None);
                        continue;
                    }
                    _ => {}
                }
                for text in answers(&v) {
                    let _ = ws.send(Message::text(text));
                }
            }
            Message::Pong(_) => {
                seen.lock().unwrap().pongs += 1;
                if let Some(id) = waiting_pong.take() {
                    let r = result(
                        &id,
                        json!({"content": [{"type": "text", "text": "pong received"}]}),
                    );
                    let _ = ws.send(Message::text(r.to_string()));
                }
            }
            Message::Close(_) => {
                seen.lock().unwrap().close_frames += 1;
            }
            _ => {}
        }
    }
}

/// The frames answering `msg`: the `big` tools' oversized texts, or [`answer`]'s.
fn answers(msg: &Value) -> Vec<String> {
    let id = &msg["id"];
    let bytes = msg["params"]["arguments"]["bytes"].as_u64().unwrap_or(0) as usize;
    let text = |n: usize| json!({"content": [{"type": "text", "text": "x".repeat(n)}]});
    match msg["params"]["name"].as_str() {
        Some("big") => vec![result(id, text(bytes)).to_string()],
        Some("big-id-last") => vec![format!(
            r#"{{"jsonrpc":"2.0","result":{},"id":{id}}}"#,
            text(bytes)
        )],
        Some("big-notify") => vec![
            json!({"jsonrpc": "2.0", "method": "notifications/message",
                   "params": {"level": "info", "data": "y".repeat(bytes)}})
            .to_string(),
            result(id, text(2)).to_string(),
        ],
        _ => answer(msg).map(|a| a.to_string()).into_iter().collect(),
    }
}

/// An unmasked (server) frame.
pub fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x80 | opcode];
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

/// Reads one client frame (masked): its opcode and unmasked payload; `None` at the end.
pub fn read_client_frame(r: &mut impl Read) -> Option<(u8, Vec<u8>)> {
    let mut h = [0u8; 2];
    r.read_exact(&mut h).ok()?;
    let len = match h[1] & 0x7f {
        126 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).ok()?;
            u64::from(u16::from_be_bytes(b))
        }
        127 => {
            let mut b = [0u8; 8];
            r.read_exact(&mut b).ok()?;
            u64::from_be_bytes(b)
        }
        n => u64::from(n),
    };
    let mut mask = [0u8; 4];
    if h[1] & 0x80 != 0 {
        r.read_exact(&mut mask).ok()?;
    }
    let mut payload = vec![0u8; usize::try_from(len).ok()?];
    r.read_exact(&mut payload).ok()?;
    for (i, b) in payload.iter_mut().enumerate() {
        *b ^= mask[i % 4];
    }
    Some((h[0] & 0x0f, payload))
}

/// Frames sent before a flooding server reads past `initialize`.
const FLOOD_UNDER_WAY: usize = 2048;
/// How long a flooding server waits for its flood to get under way.
const FLOOD_START_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);

/// The flooding server of one connection: tungstenite for the handshake, raw frames after it
/// (one writer lock shared by the flood thread and the answers).
fn serve_flood(n: usize, stream: TcpStream, seen: Arc<Mutex<Seen>>, flood: Flood) {
    // The error type is tungstenite's, fixed by its callback signature.
    #[allow(clippy::result_large_err)]
    let callback = |req: &Request, mut resp: Response| {
        if req.headers().contains_key("sec-websocket-protocol") {
            resp.headers_mut()
                .insert("sec-websocket-protocol", "mcp".parse().unwrap());
        }
        Ok(resp)
    };
    let Ok(ws) = tungstenite::accept_hdr(stream, callback) else {
        return;
    };
    let Ok(mut reader) = ws.get_ref().try_clone() else {
        return;
    };
    let Ok(writer) = ws.get_ref().try_clone() else {
        return;
    };
    drop(ws);
    let writer = Arc::new(Mutex::new(writer));
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    // Signalled once the flood is well under way, so the calls that follow meet it however the
    // threads are scheduled.
    let (under_way, flood_started) = std::sync::mpsc::sync_channel::<()>(1);
    let start_flood = || {
        let (writer, stop, sent) = (writer.clone(), stop.clone(), sent.clone());
        let under_way = under_way.clone();
        std::thread::Builder::new()
            .name(format!("test-wsflood-{n}"))
            .spawn(move || {
                let one = match flood {
                    Flood::Pings | Flood::DeafPings => frame(0x9, b"hi"),
                    Flood::Notifications => frame(
                        0x1,
                        json!({"jsonrpc": "2.0", "method": "notifications/message",
                               "params": {"level": "debug", "data": "flood ".repeat(20)}})
                        .to_string()
                        .as_bytes(),
                    ),
                };
                let batch = one.repeat(16);
                while !stop.load(Ordering::SeqCst) {
                    if writer.lock().unwrap().write_all(&batch).is_err() {
                        break;
                    }
                    if sent.fetch_add(16, Ordering::SeqCst) + 16 == FLOOD_UNDER_WAY {
                        let _ = under_way.try_send(());
                    }
                }
            })
            .expect("spawn")
    };
    let mut flooder = None;
    if flood == Flood::DeafPings {
        // Floods until the client goes away (or the server is dropped).
        let _ = start_flood().join();
    } else {
        while let Some((opcode, payload)) = read_client_frame(&mut reader) {
            match opcode {
                0x1 => {
                    let v: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                    seen.lock()
                        .unwrap()
                        .texts
                        .push(String::from_utf8_lossy(&payload).into_owned());
                    let mut w = writer.lock().unwrap();
                    for text in answers(&v) {
                        let _ = w.write_all(&frame(0x1, text.as_bytes()));
                    }
                    drop(w);
                    if v["method"] == "initialize" && flooder.is_none() {
                        flooder = Some(start_flood());
                        // The client reads (and answers pings) meanwhile; a flood that cannot
                        // get going within the limit shows as a small `flooded` count.
                        let _ = flood_started.recv_timeout(FLOOD_START_LIMIT);
                    }
                }
                0x8 => {
                    seen.lock().unwrap().close_frames += 1;
                    stop.store(true, Ordering::SeqCst);
                    let _ = writer.lock().unwrap().write_all(&frame(0x8, &payload));
                    break;
                }
                0xA => seen.lock().unwrap().pongs += 1,
                _ => {}
            }
        }
    }
    stop.store(true, Ordering::SeqCst);
    if flood != Flood::DeafPings {
        let _ = reader.shutdown(Shutdown::Both);
    }
    if let Some(f) = flooder {
        let _ = f.join();
    }
    seen.lock().unwrap().flooded += sent.load(Ordering::SeqCst);
}
