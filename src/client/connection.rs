//! One live connection: the protocol session, its transport, and the dispatcher thread that
//! answers server requests and hands notifications to the user.

use crate::sync::{lock, read_lock};
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender};
use serde_json::{json, Value};

use super::options::{CallOptions, Handlers};
use crate::deadline;
use crate::error::Error;
use crate::handler::Notification;
use crate::model::{ElicitAction, ElicitParams, InitializeResult, LoggingMessage, Root};
use crate::protocol::jsonrpc::{
    encode_notification, encode_response, ErrorCode, InNotification, InRequest, Inbound, Payload,
    RequestId, RpcError,
};
use crate::protocol::session::{cancelled_frame, sampled, Event, Failure, Routed, Session};
use crate::transport::poller::ConnectionPoller;
use crate::transport::{Sink, Transport};

/// What a live connection holds.
pub(crate) struct Connection {
    pub(crate) server: Arc<str>,
    pub(crate) session: Arc<Session>,
    pub(crate) sink: Arc<ClientSink>,
    pub(crate) transport: Arc<dyn Transport>,
    pub(crate) init: Option<InitializeResult>,
    pub(crate) default_timeout: Duration,
    /// A poller this connection made for itself (no shared one was given); stopped on close.
    pub(crate) private_poller: Option<ConnectionPoller>,
}

/// Shared with the dispatcher thread.
pub(crate) struct DispatchCtx {
    pub(crate) server: Arc<str>,
    pub(crate) handlers: Arc<Handlers>,
    pub(crate) roots: Arc<RwLock<Option<Vec<Root>>>>,
    pub(crate) transport: OnceLock<Weak<dyn Transport>>,
    pub(crate) reply_timeout: Duration,
}

/// Receives what the transport reads: responses go to their callers through the session,
/// everything else to the dispatcher thread (started on first use).
pub(crate) struct ClientSink {
    pub(crate) session: Arc<Session>,
    pub(crate) ctx: Arc<DispatchCtx>,
    dispatcher: Mutex<Option<Dispatcher>>,
}

struct Dispatcher {
    tx: Sender<Routed>,
    handle: JoinHandle<()>,
}

impl ClientSink {
    pub(crate) fn new(session: Arc<Session>, ctx: Arc<DispatchCtx>) -> Self {
        ClientSink {
            session,
            ctx,
            dispatcher: Mutex::new(None),
        }
    }

    fn dispatch(&self, item: Routed) {
        let mut d = lock(&self.dispatcher);
        if d.is_none() {
            let (tx, rx) = crossbeam_channel::unbounded::<Routed>();
            let ctx = Arc::clone(&self.ctx);
            let name = format!("mcp-dispatch-{}", self.ctx.server);
            match std::thread::Builder::new().name(name).spawn(move || {
                for item in rx {
                    ctx.handle(item);
                }
            }) {
                Ok(handle) => *d = Some(Dispatcher { tx, handle }),
                Err(e) => {
                    log::error!(
                        "server `{}`: could not start the dispatcher thread: {e}",
                        self.ctx.server
                    );
                    return;
                }
            }
        }
        if let Some(d) = d.as_ref() {
            let _ = d.tx.send(item);
        }
    }

    /// Ends the dispatcher thread after it has handled what is queued, and joins it.
    pub(crate) fn stop_dispatcher(&self) {
        let d = lock(&self.dispatcher).take();
        if let Some(Dispatcher { tx, handle }) = d {
            drop(tx);
            if handle.thread().id() == std::thread::current().id() {
                // Closing from inside a handler: the thread ends by itself once this returns.
                return;
            }
            let _ = handle.join();
        }
    }
}

impl Sink for ClientSink {
    fn deliver(&self, msg: Inbound) {
        match self.session.route(msg) {
            Routed::Delivered => {}
            Routed::Orphan(id) => {
                let n = self.session.orphans();
                if sampled(n) {
                    log::debug!(
                        "server `{}`: dropping a response nobody waits for (id {id:?}; {n} so far)",
                        self.ctx.server
                    );
                }
            }
            Routed::Unattributed(u) => {
                if sampled(u.count) {
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
                log::warn!(
                    "server `{}`: skipping a batch element that is {e}",
                    self.ctx.server
                );
            }
            other => self.dispatch(other),
        }
    }

    fn reject(&self, id: RequestId, detail: String) {
        if !self.session.reject(&id, detail) {
            log::debug!(
                "server `{}`: an unusable answer for id {id} nobody waits for",
                self.ctx.server
            );
        }
    }

    fn closed(&self, detail: String, stderr_tail: String) {
        log::debug!("server `{}`: connection ended: {detail}", self.ctx.server);
        self.session.fail_all(&detail, &stderr_tail);
    }
}

impl DispatchCtx {
    fn handle(&self, item: Routed) {
        match item {
            Routed::Request(req) => self.answer(req),
            Routed::Notification(n) => self.notify(n),
            Routed::Delivered
            | Routed::Orphan(_)
            | Routed::Unattributed(_)
            | Routed::Invalid(_) => {}
        }
    }

    fn answer(&self, req: InRequest) {
        let params: Value = match req.params.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let outcome = self.serve(&req.method, params);
        if let Err(e) = &outcome {
            log::debug!(
                "server `{}`: answering `{}` with error {}: {}",
                self.server,
                req.method,
                e.code,
                e.message
            );
        }
        let frame = encode_response(&req.id, &outcome);
        let Some(transport) = self.transport.get().and_then(Weak::upgrade) else {
            return;
        };
        if let Err(e) = transport.send(frame, Some(deadline::after(self.reply_timeout))) {
            log::warn!(
                "server `{}`: could not answer `{}`: {e}",
                self.server,
                req.method
            );
        }
    }

    fn serve(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let not_found = || RpcError {
            code: ErrorCode::METHOD_NOT_FOUND,
            message: format!("Method not found: {method}"),
            data: None,
        };
        let invalid = |e: serde_json::Error| RpcError {
            code: ErrorCode::INVALID_PARAMS,
            message: format!("Invalid params: {e}"),
            data: None,
        };
        let from_handler = |e: crate::handler::HandlerError| RpcError {
            code: e.code,
            message: e.message,
            data: e.data,
        };
        let to_value = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| RpcError {
                code: ErrorCode::INTERNAL_ERROR,
                message: format!("could not encode the result: {e}"),
                data: None,
            })
        };
        match method {
            "ping" => Ok(json!({})),
            "roots/list" => {
                let roots = read_lock(&self.roots);
                match roots.as_ref() {
                    Some(roots) => Ok(json!({ "roots": roots })),
                    None => Err(not_found()),
                }
            }
            "sampling/createMessage" => {
                let Some(h) = &self.handlers.sampling else {
                    return Err(not_found());
                };
                let params = serde_json::from_value(params).map_err(invalid)?;
                let result = h
                    .create_message(&self.server, params)
                    .map_err(from_handler)?;
                to_value(serde_json::to_value(result))
            }
            "elicitation/create" => {
                let Some(h) = &self.handlers.elicitation else {
                    return Err(not_found());
                };
                let params: ElicitParams = serde_json::from_value(params).map_err(invalid)?;
                if let Some(mode) = params.mode.as_deref() {
                    if mode != "form" {
                        return Err(RpcError {
                            code: ErrorCode::INVALID_PARAMS,
                            message: format!(
                                "elicitation mode `{mode}` is not supported by this client"
                            ),
                            data: None,
                        });
                    }
                }
                let schema = params.requested_schema.clone();
                let mut result = h.elicit(&self.server, params).map_err(from_handler)?;
                if result.action == ElicitAction::Accept {
                    if let Some(schema) = &schema {
                        result = result.with_defaults_from(schema);
                    }
                }
                to_value(serde_json::to_value(result))
            }
            _ => Err(not_found()),
        }
    }

    fn notify(&self, n: InNotification) {
        let params: Value = match n.params.as_deref() {
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let note = Notification::from_parts(&n.method, params);
        if let Notification::Log(msg) = &note {
            forward_log(&self.server, msg);
        }
        for h in &self.handlers.notifications {
            h.notify(&self.server, note.clone());
        }
    }
}

fn forward_log(server: &str, msg: &LoggingMessage) {
    let data = match &msg.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let logger = msg
        .logger
        .as_deref()
        .map(|l| format!(" {l}:"))
        .unwrap_or_default();
    log::log!(target: "mcp_blocking::server_log", msg.level.to_log_level(), "[{server}]{logger} {data}");
}

impl Connection {
    /// Sends a request and waits for its answer, enforcing the timeout and sending
    /// `notifications/cancelled` when it expires (never for `initialize`).
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Payload, Error> {
        opts.check(&self.server)?;
        let timeout = opts.timeout.unwrap_or(self.default_timeout);
        let start = Instant::now();
        let hard_limit = opts
            .max_total_timeout
            .map(|m| deadline::add(start, m.max(timeout)));
        let mut deadline = deadline::add(start, timeout);
        let (id, frame, rx) = self
            .session
            .begin(method, params, opts.on_progress.is_some())
            .map_err(|f| self.failure(method, f))?;
        // Transports that read the answer inside `send` (Streamable HTTP event streams) cannot
        // restart the timer on progress; they get the maximum total instead, when there is one.
        let send_deadline = match (
            opts.reset_timeout_on_progress && opts.on_progress.is_some(),
            hard_limit,
        ) {
            (true, Some(limit)) => limit,
            _ => deadline,
        };
        if let Err(e) = self.transport.send(frame, Some(send_deadline)) {
            self.session.forget(id);
            return Err(match e {
                Error::Transport { status: None, .. } if Instant::now() >= deadline => {
                    self.timeout(method, start)
                }
                e => e,
            });
        }
        let handoff = || self.session.promote(id);
        // Whether another caller asked this one to take over reading and it has not yet.
        let mut owe_lead = false;
        let outcome = loop {
            let next = if rx.is_empty() {
                owe_lead = false;
                if self.transport.lead(deadline, &|| !rx.is_empty(), &handoff) {
                    match rx.try_recv() {
                        Ok(ev) => Ok(ev),
                        Err(_) if Instant::now() < deadline => continue,
                        Err(_) => Err(RecvTimeoutError::Timeout),
                    }
                } else {
                    rx.recv_deadline(deadline)
                }
            } else {
                rx.recv_deadline(deadline)
            };
            match next {
                Ok(Event::Lead) => {
                    self.session.lead_taken(id);
                    owe_lead = true;
                }
                Ok(Event::Done(Ok(raw))) => break Ok(raw),
                Ok(Event::Done(Err(f))) => break Err(self.failure(method, f)),
                Ok(Event::Progress(p)) => {
                    if let Some(cb) = &opts.on_progress {
                        cb(&p);
                    }
                    if opts.reset_timeout_on_progress {
                        let next = deadline::after(timeout);
                        deadline = hard_limit.map_or(next, |h| next.min(h));
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let answered = !self.session.forget(id);
                    // Whatever arrived with the deadline: a request to take over, or the answer
                    // itself when it raced the deadline and won.
                    let mut raced = None;
                    for e in rx.try_iter() {
                        match e {
                            Event::Lead => owe_lead = true,
                            Event::Done(d) => raced = Some(d),
                            Event::Progress(_) => {}
                        }
                    }
                    if let (true, Some(done)) = (answered, raced) {
                        break done.map_err(|f| self.failure(method, f));
                    }
                    if method != "initialize" {
                        let reason =
                            format!("timed out after {:.1} s", start.elapsed().as_secs_f64());
                        let _ = self.transport.send(
                            cancelled_frame(id, &reason),
                            Some(Instant::now() + Duration::from_secs(1)),
                        );
                    }
                    break Err(self.timeout(method, start));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let (detail, stderr_tail) = self
                        .session
                        .closed_reason()
                        .unwrap_or_else(|| ("the connection ended".into(), String::new()));
                    break Err(Error::Closed {
                        server: self.server.to_string(),
                        detail,
                        stderr_tail,
                    });
                }
            }
        };
        if owe_lead {
            self.transport.decline_lead(&handoff);
        }
        outcome
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let frame = encode_notification(method, params.as_ref());
        self.transport
            .send(frame, Some(deadline::after(self.default_timeout)))
    }

    fn timeout(&self, method: &str, start: Instant) -> Error {
        Error::Timeout {
            server: self.server.to_string(),
            method: method.to_owned(),
            after: start.elapsed(),
        }
    }

    fn failure(&self, method: &str, f: Failure) -> Error {
        match f {
            Failure::Rpc(e) => Error::Rpc {
                server: self.server.to_string(),
                code: e.code,
                message: e.message,
                data: e.data.map(Box::new),
            },
            Failure::Unusable(detail) => Error::Protocol {
                server: self.server.to_string(),
                detail,
            },
            // Worded as a result that fails to parse is (see `Client::typed`): a peeked stdio
            // line is checked only there, and both read the same.
            Failure::Malformed(m) => Error::Protocol {
                server: self.server.to_string(),
                detail: format!("malformed `{method}` result: {m}"),
            },
            Failure::Closed {
                detail,
                stderr_tail,
            } => Error::Closed {
                server: self.server.to_string(),
                detail,
                stderr_tail,
            },
        }
    }

    /// Closes the transport, stops the dispatcher and a private poller.
    pub(crate) fn shutdown(&self) -> Result<(), Error> {
        let result = self.transport.close();
        self.session
            .fail_all("the client closed the connection", "");
        self.sink.stop_dispatcher();
        if let Some(p) = &self.private_poller {
            let _ = p.stop(Duration::from_secs(5));
        }
        result
    }
}
