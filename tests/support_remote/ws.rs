//! A loopback WebSocket MCP server (tungstenite's server handshake on a `TcpListener`).
//!
//! Tool `ping-me` makes the server send a WebSocket ping before answering (the answer says
//! whether the pong came back); tool `close-me` makes the server close the connection without
//! answering. The handshake request's headers are recorded.

use std::net::TcpStream;
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
                if let Some(a) = answer(&v) {
                    let _ = ws.send(Message::text(a.to_string()));
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
