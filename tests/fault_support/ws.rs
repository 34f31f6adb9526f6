//! The WebSocket peer: the upgrade and the frames by hand (only the accept key from
//! tungstenite), so that it can stop anywhere: in the upgrade's headers, inside a frame, or
//! before answering the client's close frame.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::Value;

use super::brain::{decide, Decision};
use super::wire::{client_gone, stalled, Bytes, Out, Writer};
use crate::support_remote::ws::{frame, read_client_frame};

use super::{Acceptor, Plan, Shared};

pub struct WsPeer {
    pub shared: Arc<Shared>,
    acceptor: Acceptor,
}

impl WsPeer {
    pub fn start(plan: Plan) -> WsPeer {
        let shared = Shared::new(plan);
        let sh = shared.clone();
        let acceptor = Acceptor::start("ws", &shared, move |n, stream| serve(&sh, n, stream));
        WsPeer { shared, acceptor }
    }

    pub fn url(&self) -> String {
        format!("ws://{}/", self.acceptor.addr)
    }
}

/// Reads the upgrade request: its key, and whether it offered the `mcp` subprotocol.
fn read_upgrade(r: &mut impl BufRead) -> Option<(String, bool)> {
    let mut key = None;
    let mut mcp = false;
    let mut first = true;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() && !first {
            break;
        }
        first = false;
        if let Some((k, v)) = line.split_once(':') {
            let k = k.trim().to_ascii_lowercase();
            if k == "sec-websocket-key" {
                key = Some(v.trim().to_owned());
            } else if k == "sec-websocket-protocol" {
                mcp = v.split(',').any(|p| p.trim() == "mcp");
            }
        }
    }
    Some((key?, mcp))
}

fn serve(shared: &Arc<Shared>, n: usize, stream: TcpStream) {
    let (Ok(read), Ok(mut probe)) = (stream.try_clone(), stream.try_clone()) else {
        return;
    };
    let mut reader = BufReader::new(read);
    let mut w = stream;
    let Some((key, mcp)) = read_upgrade(&mut reader) else {
        return;
    };
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let mut head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {accept}\r\n"
    );
    if mcp {
        head.push_str("Sec-WebSocket-Protocol: mcp\r\n");
    }
    if shared.pseudo("upgrade") {
        // The status line and headers, without the empty line that ends them.
        let b = Bytes {
            head: head.into_bytes(),
            body: b"\r\n".to_vec(),
            chunked: false,
        };
        stalled(
            &mut w,
            &b,
            shared.plan.stall,
            &mut || client_gone(&mut probe, shared),
            &|| false,
        );
        return;
    }
    head.push_str("\r\n");
    if w.write_all(head.as_bytes()).is_err() {
        return;
    }
    let writer = Writer::start(shared, format!("fault-ws-{n}-w"), w);
    read_loop(shared, &mut reader, &writer.tx);
    writer.gone.store(true, Ordering::SeqCst);
    writer.finish();
}

fn read_loop(shared: &Shared, reader: &mut impl Read, tx: &Sender<Out>) {
    while let Some((opcode, payload)) = read_client_frame(reader) {
        let out = match opcode {
            0x1 => {
                let msg: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                match decide(shared, &msg) {
                    Decision::Ignore | Decision::Expire => continue,
                    Decision::Answer(v) => {
                        Out::Now(Duration::ZERO, frame(0x1, v.to_string().as_bytes()))
                    }
                    Decision::Later(d, v) => Out::Now(d, frame(0x1, v.to_string().as_bytes())),
                    Decision::Stall(v) => Out::Stall(frame(0x1, v.to_string().as_bytes())),
                }
            }
            0x8 => {
                if shared.pseudo("close") {
                    // A close frame with a long reason, so a trickle outlasts the grace.
                    let mut p = 1000u16.to_be_bytes().to_vec();
                    p.extend_from_slice(&[b'z'; 100]);
                    Out::Stall(frame(0x8, &p))
                } else {
                    Out::Now(Duration::ZERO, frame(0x8, &payload))
                }
            }
            0x9 => Out::Now(Duration::ZERO, frame(0xA, &payload)),
            _ => continue,
        };
        if tx.send(out).is_err() {
            return;
        }
    }
}
