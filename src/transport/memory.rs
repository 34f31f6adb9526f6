//! The in-process transport: a server object in the same process plays the peer.
//!
//! ```text
//!  Client ──send(frame)──> MemoryTransport ──a response?──> the server request waiting for it
//!                                │
//!                                └──otherwise──> InProcessServer::handle(msg, &Peer)
//!                                                  └── Peer::send ──> Sink (as if read off a wire)
//! ```
//!
//! The server runs on the thread that sends, inside `send`, so a test needs no thread of its own.
//! A server that asks the client something while handling a message (sampling, elicitation)
//! waits, up to the sender's deadline, for the answer that the client's dispatcher sends back.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use super::{Outgoing, Sink, Transport};
use crate::error::Error;
use crate::protocol::jsonrpc::Inbound;
use crate::sync::lock;

/// A server that lives in the client's process.
pub(crate) trait InProcessServer: Send + Sync {
    /// Handles one message the client sent; answers go out through `peer`.
    fn handle(&self, msg: &Value, peer: &Peer);
    /// A client connected; `peer` stays valid until it disconnects.
    fn connected(&self, _peer: &Peer) {}
}

/// The server's end of one in-process connection.
#[derive(Clone)]
pub(crate) struct Peer {
    inner: Arc<PeerInner>,
    /// When the message being handled must be answered by (the client's deadline).
    deadline: Option<Instant>,
}

struct PeerInner {
    server: Arc<str>,
    sink: Arc<dyn Sink>,
    closed: AtomicBool,
    next_id: AtomicI64,
    /// Requests the server sent to the client, waiting for their answers.
    waiting: Mutex<HashMap<i64, Sender<Value>>>,
}

/// A [`Peer`] that does not keep its connection alive.
#[derive(Clone)]
pub(crate) struct WeakPeer(Weak<PeerInner>);

impl WeakPeer {
    pub(crate) fn upgrade(&self) -> Option<Peer> {
        self.0.upgrade().map(|inner| Peer {
            inner,
            deadline: None,
        })
    }
}

impl Peer {
    /// Sends `msg` to the client. Returns `false` when the connection is closed.
    pub(crate) fn send(&self, msg: &Value) -> bool {
        if self.inner.closed.load(Ordering::SeqCst) {
            return false;
        }
        let bytes = match serde_json::to_vec(msg) {
            Ok(b) => b,
            Err(e) => {
                log::warn!("in-process server `{}`: {e}", self.inner.server);
                return false;
            }
        };
        match Inbound::parse(&bytes) {
            Ok(msgs) => msgs.into_iter().for_each(|m| self.inner.sink.deliver(m)),
            Err(e) => log::warn!(
                "in-process server `{}` sent an invalid message: {e}",
                self.inner.server
            ),
        }
        true
    }

    /// Sends a request to the client and waits for its answer (the whole response message), up
    /// to the deadline of the message being handled. `None` when the connection closed or the
    /// deadline passed first.
    pub(crate) fn request(&self, method: &str, params: Value) -> Option<Value> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx): (Sender<Value>, Receiver<Value>) = crossbeam_channel::bounded(1);
        lock(&self.inner.waiting).insert(id, tx);
        let sent = self.send(&json!({
            "jsonrpc": "2.0", "id": format!("srv-{id}"), "method": method, "params": params,
        }));
        // The deadline of the message being handled; a message sent without one (the client
        // gives every request one) still gets a bound.
        let deadline = self
            .deadline
            .unwrap_or_else(|| crate::deadline::after(crate::config::DEFAULT_TIMEOUT));
        let answer = if sent {
            rx.recv_deadline(deadline).ok()
        } else {
            None
        };
        lock(&self.inner.waiting).remove(&id);
        answer
    }

    /// A handle that does not keep the connection alive.
    pub(crate) fn downgrade(&self) -> WeakPeer {
        WeakPeer(Arc::downgrade(&self.inner))
    }

    /// Whether the client has closed this connection.
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::SeqCst)
    }
}

pub(crate) struct MemoryTransport {
    peer: Peer,
    server: Arc<dyn InProcessServer>,
}

impl MemoryTransport {
    pub(crate) fn new(
        server_name: &str,
        sink: Arc<dyn Sink>,
        server: Arc<dyn InProcessServer>,
    ) -> Self {
        let peer = Peer {
            inner: Arc::new(PeerInner {
                server: server_name.into(),
                sink,
                closed: AtomicBool::new(false),
                next_id: AtomicI64::new(1),
                waiting: Mutex::new(HashMap::new()),
            }),
            deadline: None,
        };
        server.connected(&peer);
        MemoryTransport { peer, server }
    }

    fn closed_error(&self) -> Error {
        Error::Closed {
            server: self.peer.inner.server.to_string(),
            detail: "the in-process connection is closed".into(),
            stderr_tail: String::new(),
        }
    }
}

/// The id of an answer to one of the server's own requests (`"srv-N"`).
fn server_request_id(msg: &Value) -> Option<i64> {
    if msg.get("method").is_some() {
        return None;
    }
    msg.get("id")?.as_str()?.strip_prefix("srv-")?.parse().ok()
}

impl Transport for MemoryTransport {
    fn send(&self, out: Outgoing) -> Result<(), Error> {
        let deadline = out.deadline;
        if self.peer.is_closed() {
            return Err(self.closed_error());
        }
        // The in-process server reads the message as any server would.
        let msg: Value = serde_json::from_slice(&out.frame).map_err(|e| Error::Protocol {
            server: self.peer.inner.server.to_string(),
            detail: format!("the client sent invalid JSON: {e}"),
        })?;
        if let Some(id) = server_request_id(&msg) {
            if let Some(tx) = lock(&self.peer.inner.waiting).remove(&id) {
                let _ = tx.send(msg);
            }
            return Ok(());
        }
        let peer = Peer {
            inner: Arc::clone(&self.peer.inner),
            deadline,
        };
        self.server.handle(&msg, &peer);
        Ok(())
    }

    fn close(&self) -> Result<(), Error> {
        if !self.peer.inner.closed.swap(true, Ordering::SeqCst) {
            // Wake any server request still waiting for an answer.
            lock(&self.peer.inner.waiting).clear();
            self.peer
                .inner
                .sink
                .closed("closed by the client".into(), String::new());
        }
        Ok(())
    }
}
