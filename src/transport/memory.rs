//! The in-process transport: a server object in the same process plays the peer.
//!
//! ```text
//!  Client ──send(frame)──> MemoryTransport ──a response?──> the server request waiting for it
//!                                │
//!                                ├──a request──> thread mcp-test:NAME: InProcessServer::handle
//!                                │                 └── Peer::send ──> Sink (as if read off a wire)
//!                                └──a notification──> InProcessServer::handle, inline
//! ```
//!
//! Every message is first shown to the server in the order it was sent
//! ([`InProcessServer::received`]). A request is then handled on a thread of its own, which
//! `send` waits for until the request's deadline: a handler that returns by then has answered
//! when `send` returns, as before; one that blocks holds only that call, which times out on
//! time while the handler goes on. A server that asks the client
//! something while handling a message (sampling, elicitation) waits, up to the sender's
//! deadline, for the answer that the client's dispatcher sends back.
//!
//! A request given up by another thread (the caller's cancellation) stops that wait at once
//! ([`Transport::interrupt`]): the handler goes on, as after a timeout.
//!
//! Handler threads are joined: finished ones whenever a message is sent, the rest on close,
//! which waits at most [`CLOSE_GRACE`] for them (a connect that failed does not wait: see
//! [`Closing::Abort`]); one still running then is joined once it ends, by a later send or
//! close of any in-process connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};
use serde_json::{json, Value};

use super::{Closing, Outgoing, Sink, Transport};
use crate::error::{Error, ProtocolErrorKind};
use crate::handler::CLOSE_GRACE;
use crate::protocol::jsonrpc::Inbound;
use crate::sync::lock;

/// A server that lives in the client's process.
pub(crate) trait InProcessServer: Send + Sync {
    /// Sees each message the client sent, in the order sent, before it is handled.
    fn received(&self, _msg: &Value) {}
    /// Handles one message the client sent (a request on a thread of its own); answers go out
    /// through `peer`.
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
    /// The threads handling requests, each with a channel that disconnects when it ends.
    handlers: Mutex<Vec<Handler>>,
    /// The requests `send` is waiting for, by id, each with the way to stop that wait.
    interrupts: Mutex<HashMap<i64, Interrupt>>,
}

/// How a wait in `send` for request `id` learns that its caller gave the request up.
enum Interrupt {
    /// `send` waits: a message here ends the wait.
    Waiting(Sender<()>),
    /// The request was given up before `send` began to wait: it does not wait. (One given up
    /// just after its wait ended stays marked until the connection closes: at most one small
    /// entry per cancelled call, cleared by `end`.)
    Early,
}

/// A thread handling one request.
struct Handler {
    thread: JoinHandle<()>,
    /// Disconnected when the thread ends.
    ended: Receiver<()>,
}

/// Handler threads still running after their connection closed, joined once they end.
static LINGERING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Takes the threads of `threads` that have ended out of it.
fn take_ended<T>(threads: &mut Vec<T>, thread: impl Fn(&T) -> &JoinHandle<()>) -> Vec<T> {
    let (ended, running) = std::mem::take(threads)
        .into_iter()
        .partition(|t| thread(t).is_finished());
    *threads = running;
    ended
}

/// Joins the lingering handler threads that have ended.
fn reap_lingering() {
    let ended = take_ended(&mut lock(&LINGERING), |t| t);
    for t in ended {
        let _ = t.join();
    }
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
        MemoryTransport {
            peer,
            server,
            handlers: Mutex::new(Vec::new()),
            interrupts: Mutex::new(HashMap::new()),
        }
    }

    /// Handles a request on a thread of its own and waits for it until the request's deadline:
    /// a handler that returns by then is joined at once (its answer is on the caller's slot,
    /// as it was on the wire), one that does not is left running (joined later: see the module
    /// docs) while the caller times out.
    fn spawn_handler(&self, msg: Value, peer: Peer) -> Result<(), Error> {
        let deadline = peer
            .deadline
            .unwrap_or_else(|| crate::deadline::after(crate::config::DEFAULT_TIMEOUT));
        let (ended_tx, ended) = crossbeam_channel::bounded::<()>(0);
        let id = msg.get("id").and_then(Value::as_i64);
        let server = Arc::clone(&self.server);
        let thread = std::thread::Builder::new()
            .name(format!("mcp-test:{}", self.peer.inner.server))
            .spawn(move || {
                let _ended = ended_tx;
                server.handle(&msg, &peer);
            })
            .map_err(|e| Error::Transport {
                server: self.peer.inner.server.to_string(),
                status: None,
                detail: format!("cannot start a thread to handle the request: {e}"),
                source: Some(Box::new(e)),
            })?;
        if self.wait_for_handler(id, &ended, deadline) {
            let _ = thread.join();
            reap_lingering();
            return Ok(());
        }
        let finished = {
            let mut handlers = lock(&self.handlers);
            let done = take_ended(&mut handlers, |h| &h.thread);
            handlers.push(Handler { thread, ended });
            done
        };
        for h in finished {
            let _ = h.thread.join();
        }
        reap_lingering();
        Ok(())
    }

    /// Waits until the handler of request `id` has ended (true), or until `deadline` or the
    /// request's interruption (false).
    fn wait_for_handler(&self, id: Option<i64>, ended: &Receiver<()>, deadline: Instant) -> bool {
        let Some(id) = id else {
            return ended.recv_deadline(deadline)
                == Err(crossbeam_channel::RecvTimeoutError::Disconnected);
        };
        let (tx, interrupted) = crossbeam_channel::bounded::<()>(1);
        {
            let mut interrupts = lock(&self.interrupts);
            if let Some(Interrupt::Early) = interrupts.remove(&id) {
                return false;
            }
            interrupts.insert(id, Interrupt::Waiting(tx));
        }
        let mut sel = crossbeam_channel::Select::new();
        let on_end = sel.recv(ended);
        sel.recv(&interrupted);
        let done = match sel.select_deadline(deadline) {
            // Nothing is ever sent on `ended`: a receive ends only when the handler has.
            Ok(op) if op.index() == on_end => op.recv(ended).is_err(),
            Ok(op) => {
                let _ = op.recv(&interrupted);
                false
            }
            Err(_) => false,
        };
        lock(&self.interrupts).remove(&id);
        done
    }

    /// Closes the connection and joins the handler threads that end within `grace`; the rest
    /// are joined once they end (see the module docs).
    fn end(&self, grace: std::time::Duration) {
        if !self.peer.inner.closed.swap(true, Ordering::SeqCst) {
            // Wake any server request still waiting for an answer.
            lock(&self.peer.inner.waiting).clear();
            self.peer
                .inner
                .sink
                .closed("closed by the client".into(), String::new());
        }
        lock(&self.interrupts).clear();
        let until = crate::deadline::after(grace);
        let handlers = std::mem::take(&mut *lock(&self.handlers));
        for h in handlers {
            let current = h.thread.thread().id() == std::thread::current().id();
            // The channel disconnects when the thread ends; nothing is ever sent on it.
            let ended = !current
                && h.ended.recv_deadline(until)
                    == Err(crossbeam_channel::RecvTimeoutError::Disconnected);
            if ended {
                let _ = h.thread.join();
            } else {
                log::warn!(
                    "in-process server `{}`: a handler is still running {grace:?} after the \
                     connection was closed; its thread is joined once it ends",
                    self.peer.inner.server
                );
                lock(&LINGERING).push(h.thread);
            }
        }
        reap_lingering();
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
            kind: ProtocolErrorKind::Malformed,
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
        self.server.received(&msg);
        if out.is_request() {
            return self.spawn_handler(msg, peer);
        }
        self.server.handle(&msg, &peer);
        Ok(())
    }

    /// Ends the wait of `send` for request `id` (see the module docs); a request not yet waited
    /// for is marked, so that its wait does not begin.
    fn interrupt(&self, id: i64) {
        let mut interrupts = lock(&self.interrupts);
        match interrupts.get(&id) {
            Some(Interrupt::Waiting(tx)) => {
                let _ = tx.try_send(());
            }
            Some(Interrupt::Early) => {}
            None => {
                interrupts.insert(id, Interrupt::Early);
            }
        }
    }

    /// [`Closing::Abort`]: handlers still running are not waited for: they join the lingering
    /// ones at once.
    fn close(&self, how: Closing) -> Result<(), Error> {
        self.end(match how {
            Closing::Graceful => CLOSE_GRACE,
            Closing::Abort => std::time::Duration::ZERO,
        });
        Ok(())
    }
}
