//! One live connection: the protocol session, its transport, and the dispatcher (see
//! [`dispatch`](super::dispatch)) that answers server requests and hands notifications to the
//! user.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;
use serde_json::Value;

use super::dispatch::ClientSink;
use super::options::CallOptions;
use super::subscriptions::Listens;
use crate::deadline;
use crate::error::{Error, ProtocolErrorKind};
use crate::handler::CLOSE_GRACE;
use crate::model::InitializeResult;
use crate::protocol::jsonrpc::{Payload, RequestId};
use crate::protocol::session::{Event, Failure, Session};
use crate::protocol::wire::Wire;
use crate::transport::{Caller, Closing, Outgoing, StderrTail, Transport};

/// The tools whose task support is `required`, from the last `tools/list` of a connection.
pub(crate) type TaskTools = std::sync::Mutex<Option<Arc<std::collections::HashSet<String>>>>;

/// The reason sent with `notifications/cancelled` for a call given up by its caller.
const CANCELLED: &str = "cancelled by the client";

/// What a live connection holds.
pub(crate) struct Connection {
    pub(crate) server: Arc<str>,
    pub(crate) session: Arc<Session>,
    pub(crate) sink: Arc<ClientSink>,
    pub(crate) transport: Arc<dyn Transport>,
    /// The server's last stderr lines (stdio; empty for the others).
    pub(crate) stderr_tail: StderrTail,
    /// What a sandboxed stdio server's sandbox applied.
    pub(crate) sandbox: Option<crate::config::SandboxReport>,
    pub(crate) init: Option<InitializeResult>,
    pub(crate) default_timeout: Duration,
    /// OAuth and the server URL: a 401 or 403 `insufficient_scope` authorizes and retries.
    pub(crate) oauth: Option<(crate::auth::OAuth, String)>,
    /// Each tool's `execution.taskSupport`, from the last `tools/list` (servers with tasks only).
    pub(crate) task_tools: TaskTools,
    /// The era the connection speaks: what its messages carry, what its answers mean.
    pub(crate) wire: Wire,
    /// The `subscriptions/listen` requests kept open (modern era).
    pub(crate) listens: Listens,
    /// The transport sends HTTP headers (Streamable HTTP, legacy HTTP+SSE): only then are a
    /// request's built.
    pub(crate) sends_headers: bool,
}

impl Connection {
    /// Sends a request and waits for its answer (see [`request_once`](Self::request_once));
    /// with OAuth, a 401 or 403 `insufficient_scope` authorizes and sends it again.
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Payload, Error> {
        if self.oauth.is_none() {
            // Sent once: the params need no copy for a retry.
            return self.request_once(method, params, opts);
        }
        crate::auth::with_authorization(self.oauth.as_ref(), &self.server, || {
            self.request_once(method, params.clone(), opts)
        })
    }

    /// Sends a request and waits for its answer, enforcing the timeout and sending
    /// `notifications/cancelled` when it expires (never for `initialize`).
    fn request_once(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<Payload, Error> {
        opts.check(&self.server)?;
        let prepared = self.wire.prepare(method, params, self.sends_headers);
        let timeout = opts.timeout.unwrap_or(self.default_timeout);
        // A later request of one call keeps the call's deadline and its start.
        let (start, mut deadline) = opts.call_deadline.unwrap_or_else(|| {
            let now = Instant::now();
            (now, deadline::add(now, timeout))
        });
        let hard_limit = opts
            .max_total_timeout
            .map(|m| deadline::add(start, m.max(timeout)));
        if Instant::now() >= deadline {
            return Err(self.timeout(method, start));
        }
        let begun = self
            .session
            .begin_request(method, prepared.params, opts.on_progress.is_some())
            .map_err(|f| self.failure(method, f))?;
        let id = begun.id;
        if let Some(w) = &opts.progress_watch {
            self.session.watch_progress(id, w.clone());
        }
        if let Some(tx) = &opts.on_begin {
            let _ = tx.try_send(id);
        }
        if opts.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
            self.session.forget(id);
            return Err(self.cancelled(method));
        }
        // Cancellation from another thread wakes the caller at once; the caller then tells the
        // server itself (below), so the notification has gone out before the call returns, even
        // when the program exits right after (mcpb on Ctrl-C).
        let _armed = opts.cancel.as_ref().map(|c| {
            let (session, transport) = (Arc::clone(&self.session), Arc::clone(&self.transport));
            c.on_cancel(move || {
                if session.abandon(id, CANCELLED) {
                    transport.interrupt(id);
                }
            })
        });
        // The request timeout holds on every transport: a transport that reads the answer
        // inside `send` reads it by `deadline`, or leaves the rest to `wait`, whose deadline
        // moves on with progress. Only the whole exchange is bounded by the latest the answer
        // may come when progress moves the deadline (the maximum total, else `MAX_TIMEOUT`).
        let mut out = Outgoing::encoded_request(id, method, begun.frame)
            .with_headers(prepared.headers)
            .by(deadline)
            .answered_in_wait();
        if opts.reset_timeout_on_progress && opts.on_progress.is_some() {
            out = out.extensible_until(
                hard_limit.unwrap_or_else(|| deadline::add(start, crate::config::MAX_TIMEOUT)),
            );
        }
        if let Err(e) = self.transport.send(out) {
            self.session.forget(id);
            return Err(match e {
                _ if opts.cancel.as_ref().is_some_and(|c| c.is_cancelled()) => {
                    self.cancelled(method)
                }
                Error::Transport { status: None, .. } if Instant::now() >= deadline => {
                    self.timeout(method, start)
                }
                e => e,
            });
        }
        let caller = Caller::new(id, &begun.rx, &begun.tx);
        let outcome = loop {
            match self.transport.wait(&caller, deadline) {
                Ok(Event::Wake) => {}
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
                    // The answer itself may have raced the deadline and won.
                    let raced = begun.rx.try_iter().find_map(|e| match e {
                        Event::Done(d) => Some(d),
                        Event::Progress(_) | Event::Wake => None,
                    });
                    if let (true, Some(done)) = (answered, raced) {
                        break done.map_err(|f| self.failure(method, f));
                    }
                    if method != "initialize" {
                        let reason =
                            format!("timed out after {:.1} s", start.elapsed().as_secs_f64());
                        let _ = self.transport.send(Outgoing::cancellation(
                            &RequestId::Number(id),
                            &reason,
                            Duration::from_secs(1),
                        ));
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
        // It stops waiting: a role its transport gave it passes on (see `Caller`).
        drop(caller);
        match outcome {
            Err(_) if opts.cancel.as_ref().is_some_and(|c| c.is_cancelled()) => {
                // The request went out: the server is told it may stop.
                let told = self.transport.send(Outgoing::cancellation(
                    &RequestId::Number(id),
                    CANCELLED,
                    Duration::from_secs(1),
                ));
                match told {
                    Ok(()) => log::info!(
                        "server `{}`: `{method}` cancelled: sent notifications/cancelled",
                        self.server
                    ),
                    Err(e) => log::debug!(
                        "server `{}`: could not send notifications/cancelled: {e}",
                        self.server
                    ),
                }
                Err(self.cancelled(method))
            }
            outcome => outcome,
        }
    }

    /// Gives up request `id` from another thread than its caller's: it ends with `detail`
    /// (an [`Error::Protocol`]), and a caller reading the connection for it stops at once.
    pub(crate) fn abandon(&self, id: i64, detail: &str) -> bool {
        let abandoned = self.session.abandon(id, detail);
        if abandoned {
            self.transport.interrupt(id);
        }
        abandoned
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        crate::auth::with_authorization(self.oauth.as_ref(), &self.server, || {
            let out = Outgoing::notification(method, params.as_ref())
                .with_headers(self.wire.notification_headers());
            self.transport
                .send(out.by(deadline::after(self.default_timeout)))
        })
    }

    /// What is left of connecting's `deadline` for a `method` of the handshake.
    ///
    /// # Errors
    /// [`Error::Timeout`] (naming the server) when nothing is.
    pub(crate) fn left_of(&self, deadline: Instant, method: &str) -> Result<Duration, Error> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Timeout {
                server: self.server.to_string(),
                method: method.to_owned(),
                after: self.default_timeout,
            });
        }
        Ok(left)
    }

    /// The error of a request given up through [`CallOptions`]' cancellation.
    fn cancelled(&self, method: &str) -> Error {
        Error::Protocol {
            server: self.server.to_string(),
            kind: ProtocolErrorKind::Ended,
            detail: format!("`{method}`: {CANCELLED}"),
        }
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
                message: match self.sink.ctx.limits.echo(&e.message) {
                    std::borrow::Cow::Borrowed(_) => e.message,
                    cut => cut.into_owned(),
                },
                data: e.data.map(Box::new),
            },
            Failure::Unusable(detail) => Error::Protocol {
                server: self.server.to_string(),
                kind: ProtocolErrorKind::Ended,
                detail,
            },
            Failure::TooLarge(detail) => Error::Protocol {
                server: self.server.to_string(),
                kind: ProtocolErrorKind::TooLarge,
                detail,
            },
            // Worded as a result that fails to parse is (see `Client::typed`): a peeked stdio
            // line is checked only there, and both read the same.
            Failure::Malformed(m) => Error::Protocol {
                server: self.server.to_string(),
                kind: ProtocolErrorKind::Malformed,
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
            Failure::Transport(e) => e.into_error(&self.server),
        }
    }

    /// Closes the connection: the handlers learn it (their answers are discarded from now on),
    /// the transport closes (stdio: the process ends), pending calls fail, and the dispatcher
    /// threads are joined, waiting at most [`CLOSE_GRACE`] (counted from the start) for a
    /// handler still running.
    pub(crate) fn shutdown(&self) -> Result<(), Error> {
        let grace = deadline::after(CLOSE_GRACE);
        self.sink.begin_stop();
        let result = self.transport.close(Closing::Graceful);
        self.session
            .fail_all("the client closed the connection", "");
        self.sink.finish_stop(grace);
        self.listens.join();
        result
    }
}
