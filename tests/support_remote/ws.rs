//! A loopback WebSocket MCP server (tungstenite's server handshake on a `TcpListener`).
//!
//! Tool `ping-me` makes the server send a WebSocket ping before answering (the answer says
//! whether the pong came back); tool `close-me` makes the server close the connection without
//! answering.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{json, Value};
use tungstenite::handshake::server::{Request, Response};
use tungstenite::Message;

use super::mcp::answer;
use super::result;

/// What the server saw, for assertions.
#[derive(Default, Debug, Clone)]
pub struct Seen {
    pub subprotocol: Option<String>,
    pub texts: Vec<String>,
    pub pongs: usize,
    pub close_frames: usize,
}

pub struct WsServer {
    addr: std::net::SocketAddr,
    pub seen: Arc<Mutex<Seen>>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    threads: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: Option<JoinHandle<()>>,
    stopping: Arc<std::sync::atomic::AtomicBool>,
}

impl WsServer {
    /// `answer_requests`: false makes a server that accepts the upgrade and never answers.
    pub fn start(answer_requests: bool) -> WsServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let stopping = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let accept = {
            let (seen, conns, threads, stopping) = (
                seen.clone(),
                conns.clone(),
                threads.clone(),
                stopping.clone(),
            );
            std::thread::Builder::new()
                .name("test-ws-accept".into())
                .spawn(move || {
                    for stream in listener.incoming() {
                        if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                            break;
                        }
                        let Ok(stream) = stream else { continue };
                        if let Ok(c) = stream.try_clone() {
                            conns.lock().unwrap().push(c);
                        }
                        let seen = seen.clone();
                        let h = std::thread::Builder::new()
                            .name("test-ws-conn".into())
                            .spawn(move || serve(stream, seen, answer_requests))
                            .expect("spawn");
                        threads.lock().unwrap().push(h);
                    }
                })
                .expect("spawn")
        };
        WsServer {
            addr,
            seen,
            conns,
            threads,
            accept: Some(accept),
            stopping,
        }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for WsServer {
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
        seen2.lock().unwrap().subprotocol = proto;
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
