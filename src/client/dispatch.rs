//! What a server sends on its own (requests, notifications): bounded queues ("lanes") and a
//! thread for each, so nothing a server sends runs user code on an I/O thread, a slow handler
//! holds up only its own lane, and a server cannot make the client hold more than
//! [`Limits::max_queued_server_messages`] messages per lane.
//!
//! ```text
//!  I/O thread ──deliver──> Session::route ──> response, progress: to the waiting caller
//!                               │
//!        ┌──────────────────────┼────────────────────────────────┐
//!   request for a handler    other request: ping, roots/list,    notification
//!   (sampling, elicitation)  unknown method, or its lane full    │
//!        ▼                      ▼                                ▼
//!   [requests] ─> mcp-requests-NAME ─answer─> [replies] ─> mcp-replies-NAME ─> Transport::send
//!                                                          [notes] ─> mcp-notify-NAME
//!
//!   begin_stop(): handlers see close_signal(); lanes close (what waits is dropped)
//!   finish_stop(deadline): join each thread that ended by then; one still in a handler is
//!                          parked in LINGERING and joined by a later `reap()`
//! ```
//!
//! Threads start on first use: a server that never asks or notifies costs none.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use serde_json::{json, Value};

use super::options::Handlers;
use crate::config::{Limits, Secrets};
use crate::deadline;
use crate::error::Error;
use crate::handler::{
    set_close_signal, set_drop_counter, CloseSignal, HandlerError, Notification, CLOSE_GRACE,
};
use crate::model::{ElicitAction, ElicitParams, LoggingMessage, Root};
use crate::protocol::jsonrpc::{
    ErrorCode, InNotification, InRequest, Inbound, RequestId, RpcError,
};
use crate::protocol::session::{Routed, Session};
use crate::sync::{lock, read_lock};
use crate::throttle::{more, Throttle};
use crate::transport::{Outgoing, Sink, Transport};

const SAMPLING: &str = "sampling/createMessage";
const ELICITATION: &str = "elicitation/create";
/// The code of the "client busy" answer (the JSON-RPC range for implementation errors).
pub(crate) const BUSY: ErrorCode = ErrorCode(-32000);

/// A bounded queue between the thread that reads and one worker thread: at most `max_items`
/// entries and, past the first, at most `max_bytes` bytes of them.
struct Lane<T> {
    state: Mutex<LaneState<T>>,
    /// An entry arrived, or the lane closed (for the worker).
    ready: Condvar,
    /// An entry left, or the lane closed (for a producer waiting for room).
    room: Condvar,
    max_items: usize,
    max_bytes: usize,
}

struct LaneState<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    closed: bool,
    /// Threads waiting on `ready` and on `room`: a condvar is only signalled when somebody
    /// waits on it (a signal costs a system call even with no waiter).
    waiting_ready: usize,
    waiting_room: usize,
}

/// Why an entry was not queued.
enum Refused<T> {
    /// The lane is full: the entry back, and how many wait.
    Full(T, usize),
    Closed,
}

impl<T> Lane<T> {
    fn new(max_items: usize, max_bytes: usize) -> Self {
        Lane {
            state: Mutex::new(LaneState {
                items: VecDeque::new(),
                bytes: 0,
                closed: false,
                waiting_ready: 0,
                waiting_room: 0,
            }),
            ready: Condvar::new(),
            room: Condvar::new(),
            max_items,
            max_bytes,
        }
    }

    fn fits(&self, s: &LaneState<T>, bytes: usize) -> bool {
        s.items.len() < self.max_items
            && (s.items.is_empty() || s.bytes.saturating_add(bytes) <= self.max_bytes)
    }

    /// Queues `item` if it fits, without waiting.
    fn try_push(&self, item: T, bytes: usize) -> Result<(), Refused<T>> {
        let mut s = lock(&self.state);
        if s.closed {
            return Err(Refused::Closed);
        }
        if !self.fits(&s, bytes) {
            let waiting = s.items.len();
            return Err(Refused::Full(item, waiting));
        }
        s.items.push_back((item, bytes));
        s.bytes += bytes;
        let wake = s.waiting_ready > 0;
        drop(s);
        if wake {
            self.ready.notify_one();
        }
        Ok(())
    }

    /// Queues `item`, waiting for room; `false` when the lane closed first.
    fn push_wait(&self, item: T, bytes: usize) -> bool {
        let mut s = lock(&self.state);
        loop {
            if s.closed {
                return false;
            }
            if self.fits(&s, bytes) {
                s.items.push_back((item, bytes));
                s.bytes += bytes;
                let wake = s.waiting_ready > 0;
                drop(s);
                if wake {
                    self.ready.notify_one();
                }
                return true;
            }
            s.waiting_room += 1;
            s = self.room.wait(s).unwrap_or_else(|p| p.into_inner());
            s.waiting_room -= 1;
        }
    }

    /// The next entry, waiting for one; `None` once the lane is closed.
    fn pop(&self) -> Option<T> {
        let mut s = lock(&self.state);
        loop {
            if s.closed {
                return None;
            }
            if let Some((item, bytes)) = s.items.pop_front() {
                s.bytes -= bytes;
                let wake = s.waiting_room > 0;
                drop(s);
                if wake {
                    self.room.notify_one();
                }
                return Some(item);
            }
            s.waiting_ready += 1;
            s = self.ready.wait(s).unwrap_or_else(|p| p.into_inner());
            s.waiting_ready -= 1;
        }
    }

    /// Closes the lane and returns what was still waiting; every waiter wakes.
    fn close(&self) -> Vec<T> {
        let (dropped, ready, room) = {
            let mut s = lock(&self.state);
            s.closed = true;
            s.bytes = 0;
            (
                std::mem::take(&mut s.items),
                s.waiting_ready > 0,
                s.waiting_room > 0,
            )
        };
        if ready {
            self.ready.notify_all();
        }
        if room {
            self.room.notify_all();
        }
        dropped.into_iter().map(|(item, _)| item).collect()
    }
}

/// An answer to a server request, waiting to be sent.
enum Reply {
    /// Encoded already; `method` (cut for echoing) is for log lines.
    Frame { method: String, out: Outgoing },
    /// `roots/list`, answered from the roots current when it is sent.
    Roots { id: RequestId },
}

impl Reply {
    fn size(&self) -> usize {
        match self {
            Reply::Frame { method, out } => method.len() + out.frame.len(),
            Reply::Roots { id } => id_size(id),
        }
    }
}

fn id_size(id: &RequestId) -> usize {
    match id {
        RequestId::Number(_) => 8,
        RequestId::String(s) => s.len(),
    }
}

fn raw_size(raw: Option<&serde_json::value::RawValue>) -> usize {
    raw.map_or(0, |r| r.get().len())
}

/// Log lines a server can cause at will, each at most once a second.
#[derive(Default)]
struct Warnings {
    busy: Throttle,
    dropped: Throttle,
    unanswered: Throttle,
    not_found: Throttle,
    send_failed: Throttle,
    panicked: Throttle,
    orphans: Throttle,
    invalid: Throttle,
    unattributed: Throttle,
}

/// What the dispatcher threads share.
pub(crate) struct DispatchCtx {
    pub(crate) server: Arc<str>,
    handlers: Arc<Handlers>,
    roots: Arc<RwLock<Option<Vec<Root>>>>,
    pub(crate) transport: OnceLock<Weak<dyn Transport>>,
    reply_timeout: Duration,
    pub(crate) limits: Limits,
    /// The server's secrets, hidden from log lines that quote what it wrote.
    secrets: Secrets,
    closing: CloseSignal,
    requests: Lane<InRequest>,
    notes: Lane<InNotification>,
    replies: Lane<Reply>,
    warn: Warnings,
    /// Modern-era subscriptions: acknowledgements and the messages of ended ones.
    pub(crate) subscriptions: super::subscriptions::Subscriptions,
}

impl DispatchCtx {
    /// Whether notification handlers are installed.
    pub(crate) fn has_notification_handlers(&self) -> bool {
        !self.handlers.notifications.is_empty()
    }

    /// Answers one of the server's input requests (a modern input round, or a task's
    /// `inputRequests`) with the installed handlers, `roots/list` with the client's roots.
    ///
    /// # Errors
    /// [`Error::Rpc`] with the handler's refusal, or -32601 for `roots/list` without roots.
    pub(crate) fn answer_input(&self, request: &Value) -> Result<Value, Error> {
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        if method == "roots/list" {
            return match read_lock(&self.roots).as_ref() {
                Some(roots) => Ok(json!({ "roots": roots })),
                // Answered as the legacy era's dispatcher answers it: no such method here.
                None => Err(Error::Rpc {
                    server: self.server.to_string(),
                    code: ErrorCode::METHOD_NOT_FOUND,
                    message: "the server asked for `roots/list` and the client has no roots \
                              (see `ClientBuilder::roots`)"
                        .into(),
                    data: None,
                }),
            };
        }
        self.serve(method, params).map_err(|e| Error::Rpc {
            server: self.server.to_string(),
            code: e.code,
            message: format!(
                "the client's `{}` handler refused the server's input request: {}",
                self.limits.echo(method),
                e.message
            ),
            data: e.data.map(Box::new),
        })
    }

    /// Server text as a log line quotes it: the server's secrets hidden first, then cut to
    /// [`max_echo_bytes`](Limits::max_echo_bytes), so a cut never leaves part of a secret.
    fn shown(&self, text: &str) -> String {
        crate::config::echo(&self.secrets.redact(text), self.limits.max_echo_bytes).into_owned()
    }

    pub(crate) fn new(
        server: Arc<str>,
        handlers: Arc<Handlers>,
        roots: Arc<RwLock<Option<Vec<Root>>>>,
        reply_timeout: Duration,
        limits: Limits,
        secrets: Secrets,
    ) -> Self {
        let lane = || (limits.max_queued_server_messages, limits.max_message_bytes);
        DispatchCtx {
            server,
            handlers,
            roots,
            transport: OnceLock::new(),
            reply_timeout,
            limits,
            secrets,
            closing: CloseSignal::new(),
            requests: Lane::new(lane().0, lane().1),
            notes: Lane::new(lane().0, lane().1),
            replies: Lane::new(lane().0, lane().1),
            warn: Warnings::default(),
            subscriptions: super::subscriptions::Subscriptions::default(),
        }
    }
}

/// One dispatcher thread, and a channel that disconnects when it ends.
struct Worker {
    handle: JoinHandle<()>,
    ended: Receiver<()>,
}

#[derive(Clone, Copy)]
enum Which {
    Requests,
    Notes,
    Replies,
}

#[derive(Default)]
struct Workers {
    requests: Option<Worker>,
    notes: Option<Worker>,
    replies: Option<Worker>,
    /// Set by `begin_stop`: no thread starts after it.
    stopped: bool,
}

/// Dispatcher threads that were still in a handler when their connection was closed. Each ends
/// when its handler returns; `reap` joins those that have.
static LINGERING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());

/// Joins the lingering dispatcher threads that have ended (without waiting for the others).
/// Called whenever a client connects or closes.
pub(crate) fn reap() {
    let ended: Vec<JoinHandle<()>> = {
        let mut all = lock(&LINGERING);
        let (ended, running) = all.drain(..).partition(JoinHandle::is_finished);
        *all = running;
        ended
    };
    for handle in ended {
        let _ = handle.join();
    }
}

/// Receives what the transport reads: responses go to their callers through the session,
/// everything else to the dispatcher lanes.
pub(crate) struct ClientSink {
    pub(crate) session: Arc<Session>,
    pub(crate) ctx: Arc<DispatchCtx>,
    workers: Mutex<Workers>,
}

impl ClientSink {
    pub(crate) fn new(session: Arc<Session>, ctx: Arc<DispatchCtx>) -> Self {
        reap();
        ClientSink {
            session,
            ctx,
            workers: Mutex::new(Workers::default()),
        }
    }

    /// Starts the thread of a lane unless it runs; `false` when stopping or it cannot start.
    fn start(&self, which: Which) -> bool {
        let mut w = lock(&self.workers);
        if w.stopped {
            return false;
        }
        let slot = match which {
            Which::Requests => &mut w.requests,
            Which::Notes => &mut w.notes,
            Which::Replies => &mut w.replies,
        };
        if slot.is_some() {
            return true;
        }
        let ctx = Arc::clone(&self.ctx);
        let (kind, body): (&str, Box<dyn FnOnce() + Send>) = match which {
            Which::Requests => ("requests", Box::new(move || ctx.run_requests())),
            Which::Notes => ("notify", Box::new(move || ctx.run_notes())),
            Which::Replies => ("replies", Box::new(move || ctx.run_replies())),
        };
        let (alive, ended) = crossbeam_channel::bounded::<()>(0);
        let signal = self.ctx.closing.clone();
        let dropped = Arc::clone(&self.ctx.handlers.channel_dropped);
        let spawned = std::thread::Builder::new()
            .name(format!("mcp-{kind}-{}", self.ctx.server))
            .spawn(move || {
                // Dropped last, as the thread ends: `finish_stop` waits on it.
                let _alive = alive;
                set_close_signal(signal);
                set_drop_counter(dropped);
                body();
            });
        match spawned {
            Ok(handle) => {
                *slot = Some(Worker { handle, ended });
                true
            }
            Err(e) => {
                log::error!(
                    "server `{}`: could not start the {kind} thread: {e}",
                    self.ctx.server
                );
                false
            }
        }
    }

    /// A request from the server: to the handlers' lane, or answered without user code.
    fn take_request(&self, req: InRequest) {
        let ctx = &self.ctx;
        let handled = match req.method.as_str() {
            SAMPLING => ctx.handlers.sampling.is_some(),
            ELICITATION => ctx.handlers.elicitation.is_some(),
            _ => false,
        };
        if handled {
            // The handler's answer goes out through the replies lane.
            if !self.start(Which::Replies) || !self.start(Which::Requests) {
                return;
            }
            let bytes = req.method.len() + id_size(&req.id) + raw_size(req.params.as_deref());
            let (req, waiting) = match ctx.requests.try_push(req, bytes) {
                Ok(()) | Err(Refused::Closed) => return,
                Err(Refused::Full(req, waiting)) => (req, waiting),
            };
            if let Some(unlogged) = ctx.warn.busy.hit() {
                log::warn!(
                    "server `{}`: answering `{}` with \"client busy\": {waiting} server requests \
                     already wait for the handlers (`max_queued_server_messages`){}",
                    ctx.server,
                    req.method,
                    more(unlogged)
                );
            }
            let error = RpcError {
                code: BUSY,
                message: format!("client busy: {waiting} server messages already waiting"),
                data: None,
            };
            self.queue_reply(Reply::Frame {
                out: Outgoing::response(&req.id, &req.method, &Err(error)),
                method: req.method,
            });
            return;
        }
        let reply = match req.method.as_str() {
            "ping" => Reply::Frame {
                out: Outgoing::response(&req.id, "ping", &Ok(json!({}))),
                method: req.method,
            },
            "roots/list" => Reply::Roots { id: req.id },
            _ => {
                let method = ctx.limits.echo(&req.method).into_owned();
                if let Some(unlogged) = ctx.warn.not_found.hit() {
                    log::debug!(
                        "server `{}`: answering `{}` with -32601: not a method this client \
                         serves{}",
                        ctx.server,
                        ctx.shown(&req.method),
                        more(unlogged)
                    );
                }
                let out = Outgoing::response(&req.id, &req.method, &Err(not_found(&method)));
                Reply::Frame { method, out }
            }
        };
        self.queue_reply(reply);
    }

    fn queue_reply(&self, reply: Reply) {
        if !self.start(Which::Replies) {
            return;
        }
        let bytes = reply.size();
        if let Err(Refused::Full(reply, waiting)) = self.ctx.replies.try_push(reply, bytes) {
            if let Some(unlogged) = self.ctx.warn.unanswered.hit() {
                let method = match &reply {
                    Reply::Frame { method, .. } => method.as_str(),
                    Reply::Roots { .. } => "roots/list",
                };
                log::warn!(
                    "server `{}`: leaving `{method}` unanswered: {waiting} answers already wait \
                     to be sent; the server is not reading them (`max_queued_server_messages`){}",
                    self.ctx.server,
                    more(unlogged)
                );
            }
        }
    }

    fn take_notification(&self, n: InNotification) {
        let ctx = &self.ctx;
        if ctx.subscriptions.intercept(&n) {
            return;
        }
        let is_log = n.method == "notifications/message";
        if ctx.handlers.notifications.is_empty() && !is_log {
            // Nobody to tell: no thread, no queue.
            return;
        }
        if !self.start(Which::Notes) {
            return;
        }
        let bytes = n.method.len() + raw_size(n.params.as_deref());
        if let Err(Refused::Full(n, waiting)) = ctx.notes.try_push(n, bytes) {
            if let Some(unlogged) = ctx.warn.dropped.hit() {
                log::warn!(
                    "server `{}`: dropping `{}`: {waiting} notifications already wait for the \
                     handlers (`max_queued_server_messages`){}",
                    ctx.server,
                    ctx.shown(&n.method),
                    more(unlogged)
                );
            }
        }
    }

    /// Tells the handlers the connection is closing ([`close_signal`](crate::handler::close_signal))
    /// and closes the lanes: what waits is dropped, nothing new is taken, no thread starts.
    pub(crate) fn begin_stop(&self) {
        lock(&self.workers).stopped = true;
        self.ctx.closing.close();
        drop(self.ctx.requests.close());
        // Log messages still queued are forwarded (they are bounded by the queue's caps, and a
        // server's last words before a close are often the ones that explain it); the
        // handlers do not see them.
        for n in self.ctx.notes.close() {
            if n.method == "notifications/message" {
                let params = n.params.as_deref().map(|raw| raw.get()).unwrap_or("null");
                if let Ok(msg) = serde_json::from_str::<LoggingMessage>(params) {
                    self.ctx.forward_log(&msg);
                }
            }
        }
        drop(self.ctx.replies.close());
    }

    /// Joins the dispatcher threads, waiting until `deadline` for a handler still running. A
    /// thread that has not ended by then (or the calling thread itself, when a handler closes
    /// its own client) is left to end when its handler returns, and is joined by a later
    /// [`reap`]. Call [`begin_stop`](Self::begin_stop) first.
    pub(crate) fn finish_stop(&self, deadline: Instant) {
        let workers = {
            let mut w = lock(&self.workers);
            [w.requests.take(), w.notes.take(), w.replies.take()]
        };
        for worker in workers.into_iter().flatten() {
            let current = worker.handle.thread().id() == std::thread::current().id();
            if !current && ended_by(&worker.ended, deadline) {
                let _ = worker.handle.join();
                continue;
            }
            if !current {
                log::warn!(
                    "server `{}`: thread `{}` is still busy {CLOSE_GRACE:?} after the connection \
                     was closed (a handler that has not returned, or an answer being sent); it \
                     is joined once it ends",
                    self.ctx.server,
                    worker.handle.thread().name().unwrap_or("?")
                );
            }
            lock(&LINGERING).push(worker.handle);
        }
        self.ctx.report_unlogged();
        reap();
    }
}

impl Drop for ClientSink {
    fn drop(&mut self) {
        // Normally stopped already (`Connection::shutdown`); this only makes sure.
        self.begin_stop();
        self.finish_stop(Instant::now());
    }
}

/// Whether the thread behind `ended` has ended, waiting until `deadline` (at least checking
/// once, even when it has passed).
fn ended_by(ended: &Receiver<()>, deadline: Instant) -> bool {
    loop {
        if let Err(TryRecvError::Disconnected) = ended.try_recv() {
            return true;
        }
        match ended.recv_deadline(deadline) {
            Err(RecvTimeoutError::Disconnected) => return true,
            Err(RecvTimeoutError::Timeout) => return false,
            // Nothing is ever sent; only the disconnection matters.
            Ok(()) => {}
        }
    }
}

impl Sink for ClientSink {
    fn deliver(&self, msg: Inbound) {
        match self.session.route(msg) {
            Routed::Delivered => {}
            Routed::Orphan(id) => {
                if let Some(unlogged) = self.ctx.warn.orphans.hit() {
                    let id = id.map_or_else(|| "null".into(), |id| id.to_string());
                    log::debug!(
                        "server `{}`: dropping a response nobody waits for (id {}){}",
                        self.ctx.server,
                        self.ctx.shown(&id),
                        more(unlogged)
                    );
                }
            }
            Routed::Unattributed(u) => {
                if self.ctx.warn.unattributed.hit().is_some() {
                    let server = &self.ctx.server;
                    let what = &u.what;
                    let n = u.count;
                    match (u.failed, u.pending) {
                        (Some(id), _) => log::warn!(
                            "server `{server}` sent an error response without an id ({what}); \
                             the only pending request (id {id}) fails with it ({n} so far)"
                        ),
                        (None, 0) => log::warn!(
                            "server `{server}` sent an error response without an id ({what}) \
                             while no request was pending ({n} so far)"
                        ),
                        (None, pending) => log::warn!(
                            "server `{server}` sent an error response without an id ({what}); \
                             it does not say which of the {pending} pending requests it is \
                             about, so they keep waiting ({n} so far)"
                        ),
                    }
                }
            }
            Routed::Invalid(e) => {
                if let Some(unlogged) = self.ctx.warn.invalid.hit() {
                    log::warn!(
                        "server `{}`: skipping a batch element that is {}{}",
                        self.ctx.server,
                        self.ctx.shown(&e.to_string()),
                        more(unlogged)
                    );
                }
            }
            Routed::Request(req) => self.take_request(req),
            Routed::Notification(n) => self.take_notification(n),
        }
    }

    fn reject(&self, id: RequestId, detail: String) {
        if !self.session.reject(&id, detail) {
            log::debug!(
                "server `{}`: an unusable answer for id {} nobody waits for",
                self.ctx.server,
                self.ctx.shown(&id.to_string())
            );
        }
    }

    fn closed(&self, detail: String, stderr_tail: String) {
        log::debug!(
            "server `{}`: connection ended: {}",
            self.ctx.server,
            self.redact(&detail)
        );
        self.session.fail_all(&detail, &stderr_tail);
    }

    fn redact(&self, text: &str) -> String {
        self.ctx.secrets.redact(text).into_owned()
    }
}

fn not_found(method: &str) -> RpcError {
    RpcError {
        code: ErrorCode::METHOD_NOT_FOUND,
        message: format!("Method not found: {method}"),
        data: None,
    }
}

impl DispatchCtx {
    /// The `mcp-requests-NAME` thread: runs the sampling and elicitation handlers.
    fn run_requests(&self) {
        while let Some(req) = self.requests.pop() {
            let params: Value = match req.params.as_deref() {
                Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
                None => Value::Null,
            };
            let outcome = self.serve(&req.method, params);
            if self.closing.is_closed() {
                log::debug!(
                    "server `{}`: the connection was closed while `{}` was handled; its answer \
                     is discarded",
                    self.server,
                    req.method
                );
                break;
            }
            if let Err(e) = &outcome {
                log::debug!(
                    "server `{}`: answering `{}` with error {}: {}",
                    self.server,
                    req.method,
                    e.code,
                    self.shown(&e.message)
                );
            }
            let reply = Reply::Frame {
                out: Outgoing::response(&req.id, &req.method, &outcome),
                method: req.method,
            };
            let bytes = reply.size();
            if !self.replies.push_wait(reply, bytes) {
                break;
            }
        }
    }

    /// Runs a user handler, turning a panic into an error for the server.
    fn guarded<T>(
        &self,
        method: &str,
        f: impl FnOnce() -> Result<T, HandlerError>,
    ) -> Result<T, RpcError> {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(RpcError {
                code: e.code,
                message: e.message,
                data: e.data,
            }),
            Err(_) => {
                if let Some(unlogged) = self.warn.panicked.hit() {
                    log::error!(
                        "server `{}`: the `{method}` handler panicked{}",
                        self.server,
                        more(unlogged)
                    );
                }
                Err(RpcError {
                    code: ErrorCode::INTERNAL_ERROR,
                    message: "the client's handler failed".into(),
                    data: None,
                })
            }
        }
    }

    pub(crate) fn serve(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let invalid = |e: serde_json::Error| RpcError {
            code: ErrorCode::INVALID_PARAMS,
            message: format!("Invalid params: {e}"),
            data: None,
        };
        let to_value = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| RpcError {
                code: ErrorCode::INTERNAL_ERROR,
                message: format!("could not encode the result: {e}"),
                data: None,
            })
        };
        match method {
            SAMPLING => {
                let Some(h) = &self.handlers.sampling else {
                    return Err(not_found(method));
                };
                let params = serde_json::from_value(params).map_err(invalid)?;
                let result = self.guarded(method, || h.create_message(&self.server, params))?;
                to_value(serde_json::to_value(result))
            }
            ELICITATION => {
                let Some(h) = &self.handlers.elicitation else {
                    return Err(not_found(method));
                };
                let params: ElicitParams = serde_json::from_value(params).map_err(invalid)?;
                if let Some(mode) = params.mode.as_deref() {
                    let url_taken = mode == "url" && self.handlers.elicitation_url;
                    if mode != "form" && !url_taken {
                        return Err(RpcError {
                            code: ErrorCode::INVALID_PARAMS,
                            message: format!(
                                "elicitation mode `{}` is not supported by this client",
                                self.limits.echo(mode)
                            ),
                            data: None,
                        });
                    }
                }
                let schema = params.requested_schema.clone();
                let mut result = self.guarded(method, || h.elicit(&self.server, params))?;
                if result.action == ElicitAction::Accept {
                    if let Some(schema) = &schema {
                        result = result.with_defaults_from(schema);
                    }
                }
                to_value(serde_json::to_value(result))
            }
            _ => Err(not_found(method)),
        }
    }

    /// The `mcp-notify-NAME` thread: forwards log messages and runs the notification handlers.
    fn run_notes(&self) {
        while let Some(n) = self.notes.pop() {
            let params: Value = match n.params.as_deref() {
                Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
                None => Value::Null,
            };
            let note = Notification::from_parts(&n.method, params);
            if let Notification::Log(msg) = &note {
                self.forward_log(msg);
            }
            for h in &self.handlers.notifications {
                let note = note.clone();
                let run = || {
                    h.notify(&self.server, note);
                    Ok(())
                };
                let _ = self.guarded(&n.method, run);
            }
        }
    }

    fn forward_log(&self, msg: &LoggingMessage) {
        let data = match &msg.data {
            Value::String(s) => self.shown(s),
            other => self.shown(&other.to_string()),
        };
        let logger = msg
            .logger
            .as_deref()
            .map(|l| format!(" {}:", self.shown(l)))
            .unwrap_or_default();
        let line = format!("[{}]{logger} {data}", self.server);
        log::log!(target: "mcp_blocking::server_log", msg.level.to_log_level(), "{line}");
    }

    /// The `mcp-replies-NAME` thread: sends every answer to the server, so that no thread that
    /// runs user code waits for a server that does not read.
    fn run_replies(&self) {
        while let Some(reply) = self.replies.pop() {
            let (method, out) = match reply {
                Reply::Frame { method, out } => (method, out),
                Reply::Roots { id } => {
                    let outcome = match read_lock(&self.roots).as_ref() {
                        Some(roots) => Ok(json!({ "roots": roots })),
                        None => Err(not_found("roots/list")),
                    };
                    let out = Outgoing::response(&id, "roots/list", &outcome);
                    ("roots/list".to_owned(), out)
                }
            };
            let Some(transport) = self.transport.get().and_then(Weak::upgrade) else {
                continue;
            };
            let sent = transport.send(out.by(deadline::after(self.reply_timeout)));
            if let Err(e) = sent {
                if self.closing.is_closed() {
                    break;
                }
                if let Some(unlogged) = self.warn.send_failed.hit() {
                    log::warn!(
                        "server `{}`: could not answer `{method}`: {e}{}",
                        self.server,
                        more(unlogged)
                    );
                }
            }
        }
    }

    /// Logs how many of each throttled warning were never logged (the connection is closing).
    fn report_unlogged(&self) {
        let w = &self.warn;
        for (n, what) in [
            (
                w.busy.unlogged(),
                "server requests answered \"client busy\"",
            ),
            (w.dropped.unlogged(), "notifications dropped"),
            (w.unanswered.unlogged(), "server requests left unanswered"),
            (w.send_failed.unlogged(), "answers that could not be sent"),
            (w.panicked.unlogged(), "handler panics"),
        ] {
            if n > 0 {
                log::warn!(
                    "server `{}`: {n} more {what} than the warnings above say",
                    self.server
                );
            }
        }
        let n = w.not_found.unlogged();
        if n > 0 {
            log::debug!(
                "server `{}`: {n} more requests for methods this client does not serve",
                self.server
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_takes_up_to_its_count_and_bytes_but_always_one() {
        let lane = Lane::new(3, 100);
        assert!(lane.try_push("big", 500).is_ok(), "alone, any size fits");
        assert!(matches!(lane.try_push("x", 1), Err(Refused::Full("x", 1))));
        assert_eq!(lane.pop(), Some("big"));
        for s in ["a", "b", "c"] {
            assert!(lane.try_push(s, 10).is_ok());
        }
        assert!(matches!(lane.try_push("d", 10), Err(Refused::Full("d", 3))));
        lane.close();
        assert!(matches!(lane.try_push("e", 1), Err(Refused::Closed)));
        assert_eq!(lane.pop(), None, "what waited is dropped");
    }

    #[test]
    fn closing_a_lane_wakes_its_worker_and_a_waiting_producer() {
        let full = Arc::new(Lane::new(1, 100));
        assert!(full.try_push(1, 1).is_ok());
        let empty = Arc::new(Lane::<i32>::new(1, 100));
        let producer = {
            let full = Arc::clone(&full);
            std::thread::spawn(move || full.push_wait(2, 1))
        };
        let worker = {
            let empty = Arc::clone(&empty);
            std::thread::spawn(move || empty.pop())
        };
        full.close();
        empty.close();
        assert!(!producer.join().unwrap(), "the producer gave up");
        assert_eq!(worker.join().unwrap(), None);
    }

    #[test]
    fn reap_joins_the_lingering_threads_that_ended_and_keeps_the_others() {
        let (tx, rx) = crossbeam_channel::bounded::<()>(0);
        let handle = std::thread::spawn(move || {
            let _ = rx.recv();
        });
        let id = handle.thread().id();
        lock(&LINGERING).push(handle);
        let lingering = || lock(&LINGERING).iter().any(|h| h.thread().id() == id);
        reap();
        assert!(lingering(), "a thread still running is kept");
        drop(tx);
        // (Another test's client may reap it first.)
        while lock(&LINGERING)
            .iter()
            .find(|h| h.thread().id() == id)
            .is_some_and(|h| !h.is_finished())
        {
            std::thread::yield_now();
        }
        reap();
        assert!(!lingering(), "joined once it ended");
    }
}
