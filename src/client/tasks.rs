//! Tasks (revision 2025-11-25): a tool call the server runs on its own, polled and collected.
//!
//! ```text
//!  call_tool_as_task ── tools/call {task} ──> CreateTaskResult ──> TaskHandle
//!                                                                     │ wait(timeout)
//!   ┌─ thread mcp-task-NAME: tasks/result (open at once: an input_required task sends its
//!   │  elicitation or sampling request only while one is open; answered by the handlers)
//!   └─ calling thread: progress to the callback; tasks/get every pollInterval (bounded by
//!      Limits::task_poll_floor/ceiling) to the status callback, until the result, a
//!      `cancelled` status or the deadline (then tasks/result is abandoned, and for
//!      call_tool, tasks/cancel is sent); the thread is joined before returning
//! ```
//!
//! [`Client::call_tool`](super::Client::call_tool) runs a tool whose `execution.taskSupport` is `required` this way by
//! itself, when the server declares task-augmented `tools/call`.
//!
//! In the modern era (2026-07-28) the same handle drives a task of the extension
//! `io.modelcontextprotocol/tasks` (see `tasks_modern.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::connection::Connection;
use super::options::CallOptions;
use crate::config::{Secrets, MAX_TIMEOUT};
use crate::deadline;
use crate::error::{Error, ProtocolErrorKind, TaskErrorKind};
use crate::model::{CallToolResult, CreateTaskResult, Progress, Task, TaskStatus, TasksCapability};

/// The progress updates of a task that may wait for its caller to read them.
pub(super) const MAX_QUEUED_TASK_PROGRESS: usize = 64;

/// The longest a request made after a call's time ran out (`tasks/cancel`, or the `tasks/get`
/// that tells a cancelled task from a failed call) may take: a call returns at most this much
/// after its timeout.
const AFTER_DEADLINE: Duration = Duration::from_secs(1);

/// A running task: its id, its status, its result, its cancellation. `Send + Sync`: wait for it
/// on one thread and cancel it from another.
///
/// It keeps the connection it was made on; once the client disconnects, its calls fail with
/// [`Error::Closed`]. Progress for the task (when the call asked for it with
/// [`CallOptions::on_progress`]) reaches the callback while [`wait`](Self::wait) runs.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_blocking::{CallOptions, Client, ServerConfig};
/// let client = Client::connect(ServerConfig::stdio("research", "research-server"))?;
/// let task = client.call_tool_as_task(
///     "deep_research",
///     serde_json::json!({"topic": "tides"}),
///     &CallOptions::new().on_progress(|p| eprintln!("{:?}", p.message)),
/// )?;
/// println!("task {} is {}", task.id(), task.status()?.status);
/// let result = task.wait(Duration::from_secs(600))?;
/// println!("{}", result.text());
/// # Ok::<(), mcp_blocking::Error>(())
/// ```
pub struct TaskHandle {
    pub(super) ctx: TaskCtx,
    pub(super) created: CreateTaskResult,
    pub(super) opts: CallOptions,
    /// The progress token (the creating request's id) and where its updates arrive.
    pub(super) progress: Option<(i64, Receiver<Progress>)>,
}

impl std::fmt::Debug for TaskHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskHandle")
            .field("server", &self.ctx.conn.server)
            .field("task_id", &self.created.task.task_id)
            .finish()
    }
}

impl Drop for TaskHandle {
    fn drop(&mut self) {
        if let Some((token, _)) = &self.progress {
            self.ctx.conn.session.unwatch_progress(*token);
        }
    }
}

/// A connection and what an error from it must hide.
#[derive(Clone)]
pub(super) struct TaskCtx {
    pub(super) conn: Arc<Connection>,
    pub(super) secrets: Secrets,
}

impl TaskCtx {
    pub(super) fn server(&self) -> String {
        self.conn.server.to_string()
    }

    pub(super) fn typed<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Option<Value>,
        opts: &CallOptions,
    ) -> Result<T, Error> {
        let payload = self
            .conn
            .request(method, params, opts)
            .map_err(|e| e.redact(&self.secrets))?;
        payload.parse().map_err(|e| {
            Error::Protocol {
                server: self.server(),
                kind: ProtocolErrorKind::Malformed,
                detail: format!("malformed `{method}` result: {e}"),
            }
            .redact(&self.secrets)
        })
    }

    /// `method` for one task (`{"taskId": task_id}`), within `timeout` (the connection's
    /// default when `None`).
    pub(super) fn by_id<T: DeserializeOwned>(
        &self,
        method: &str,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<T, Error> {
        let opts = CallOptions {
            timeout,
            ..CallOptions::default()
        };
        self.typed(method, Some(json!({ "taskId": task_id })), &opts)
    }

    pub(super) fn capability(&self) -> Option<TasksCapability> {
        self.conn.init.as_ref()?.capabilities.tasks()
    }

    /// `Ok` when the server declares what `has` checks; else a typed error naming `what`.
    pub(super) fn require(
        &self,
        what: &str,
        has: impl Fn(&TasksCapability) -> bool,
    ) -> Result<(), Error> {
        if self.modern_tasks().is_some() {
            return self.require_extension();
        }
        match self.capability() {
            Some(t) if has(&t) => Ok(()),
            Some(_) => Err(self.unsupported(&format!(
                "the server's `tasks` capability does not include `{what}`"
            ))),
            None => {
                Err(self.unsupported("the server does not support tasks (no `tasks` capability)"))
            }
        }
    }

    pub(super) fn unsupported(&self, detail: &str) -> Error {
        Error::Task {
            server: self.server(),
            kind: TaskErrorKind::Unsupported,
            task_id: None,
            detail: detail.to_owned(),
        }
    }

    pub(super) fn get(&self, task_id: &str, timeout: Option<Duration>) -> Result<Task, Error> {
        if self.modern_tasks().is_some() {
            let v = self.get_modern(task_id, timeout)?;
            return self.parse_task(&v);
        }
        self.by_id("tasks/get", task_id, timeout)
    }

    pub(super) fn cancel(&self, task_id: &str, timeout: Option<Duration>) -> Result<Task, Error> {
        if self.modern_tasks().is_some() {
            return self.cancel_modern(task_id, timeout);
        }
        self.require("cancel", TasksCapability::has_cancel)?;
        self.by_id("tasks/cancel", task_id, timeout)
    }

    pub(super) fn cancelled(&self, task: &Task) -> Error {
        let note = task
            .status_message
            .as_deref()
            .map(|m| format!(": {}", self.conn.sink.ctx.limits.echo(m)))
            .unwrap_or_default();
        Error::Task {
            server: self.server(),
            kind: TaskErrorKind::Cancelled,
            task_id: Some(task.task_id.clone()),
            detail: format!("task `{}` was cancelled{note}", task.task_id),
        }
        .redact(&self.secrets)
    }
}

impl TaskHandle {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.created.task.task_id
    }

    /// The task as the server described it when it created it.
    pub fn task(&self) -> &Task {
        &self.created.task
    }

    /// The server's whole answer to the creating `tools/call`.
    pub fn created(&self) -> &CreateTaskResult {
        &self.created
    }

    /// The task now (`tasks/get`).
    ///
    /// # Errors
    /// As [`Client::get_task`](super::Client::get_task).
    pub fn status(&self) -> Result<Task, Error> {
        self.ctx.get(self.id(), self.opts.timeout)
    }

    /// Waits for the task's result, at most `timeout`: opens `tasks/result` at once (so an
    /// `input_required` task's elicitation or sampling request reaches the client's handlers),
    /// passes progress to the call's progress callback and each polled status to its
    /// [`on_task_status`](CallOptions::on_task_status) callback. A `failed` task gives its
    /// result, which has `isError` set: its content is kept.
    ///
    /// The task is not cancelled when `timeout` passes: wait again, or [`cancel`](Self::cancel).
    ///
    /// In the modern era the wait polls `tasks/get`, whose answer carries the result, and
    /// answers an `input_required` task's input requests with the handlers (`tasks/update`);
    /// a failed task is its JSON-RPC error ([`Error::Rpc`]), its time running out
    /// [`Error::Timeout`] with method `tasks/get`.
    ///
    /// # Errors
    /// [`Error::Timeout`] (method `tasks/result`) when `timeout` passes; [`Error::Task`] of kind
    /// [`TaskErrorKind::Cancelled`] for a cancelled task; [`Error::Rpc`] when the tool call
    /// ended in a JSON-RPC error; [`Error::InvalidArgument`] for a `timeout` out of range;
    /// [`Error::Closed`] and the other errors of a request.
    pub fn wait(&self, timeout: Duration) -> Result<CallToolResult, Error> {
        check_timeout(&self.ctx, timeout)?;
        let start = Instant::now();
        if self.ctx.modern_tasks().is_some() {
            return self.drive_modern(start, timeout, false);
        }
        self.drive(start, timeout, false)
    }

    /// The task's result (`tasks/result`): blocks until the task ends, at most the call's
    /// timeout (its [`CallOptions`], else the server's). Progress and status callbacks are not
    /// called: see [`wait`](Self::wait).
    ///
    /// # Errors
    /// As [`Client::task_result`](super::Client::task_result).
    pub fn result(&self) -> Result<CallToolResult, Error> {
        if self.ctx.modern_tasks().is_some() {
            let timeout = self.opts.timeout.unwrap_or(self.ctx.conn.default_timeout);
            return self.drive_modern(Instant::now(), timeout, false);
        }
        let opts = CallOptions {
            timeout: self.opts.timeout,
            ..CallOptions::default()
        };
        self.ctx
            .typed("tasks/result", Some(json!({ "taskId": self.id() })), &opts)
    }

    /// Cancels the task (`tasks/cancel`) and returns it, now `cancelled`. A
    /// [`wait`](Self::wait) running on another thread then returns an [`Error::Task`] of kind
    /// [`TaskErrorKind::Cancelled`].
    ///
    /// # Errors
    /// As [`Client::cancel_task`](super::Client::cancel_task).
    pub fn cancel(&self) -> Result<Task, Error> {
        self.ctx.cancel(self.id(), self.opts.timeout)
    }

    /// Runs the task to its end or to `start + timeout` (moved on by progress when the options
    /// say so); with `cancel_on_timeout`, sends `tasks/cancel` when the time runs out.
    ///
    /// A reader thread keeps one `tasks/result` open, bounded by the wait's deadline as it is
    /// when the reader starts; when it times out while the wait goes on (progress moved the
    /// deadline on), another takes over. On leaving, each reader's request is abandoned and
    /// the reader joined (on Streamable HTTP, an exchange ends when the server answers or at its
    /// deadline; a task that was cancelled is answered at once).
    pub(super) fn drive(
        &self,
        start: Instant,
        timeout: Duration,
        cancel_on_timeout: bool,
    ) -> Result<CallToolResult, Error> {
        let opts = &self.opts;
        let reset = opts.reset_timeout_on_progress && opts.on_progress.is_some();
        let hard_limit = opts
            .max_total_timeout
            .map(|m| deadline::add(start, m.max(timeout)));
        let mut deadline = deadline::add(start, timeout);
        let ctx = &self.ctx;
        let limits = ctx.conn.sink.ctx.limits;
        let task_id = self.id();
        let never = crossbeam_channel::never();
        let mut progress_rx = self.progress.as_ref().map_or(&never, |(_, rx)| rx);
        let (result_tx, result_rx) = crossbeam_channel::unbounded();
        // The caller's cancellation (CallOptions.cancel): the wait ends at once and the task
        // is cancelled.
        let (cancel_tx, cancelled) = crossbeam_channel::bounded::<()>(1);
        let _armed = opts.cancel.as_ref().map(|c| {
            c.on_cancel(move || {
                let _ = cancel_tx.try_send(());
            })
        });
        // Without a cancel handle the sender is gone already: nothing can come.
        let never_cancelled = crossbeam_channel::never();
        let mut cancel_rx = if opts.cancel.is_some() {
            &cancelled
        } else {
            &never_cancelled
        };
        // Each reader's request id, to abandon it on leaving.
        let mut begun: Vec<Receiver<i64>> = Vec::new();
        std::thread::scope(|s| {
            // A reader waits no longer than the wait's deadline as it is when the reader starts
            // (never the maximum total), so no reader outlasts the wait.
            let spawn_reader = |until: Instant, begun: &mut Vec<Receiver<i64>>| {
                let (id_tx, id_rx) = crossbeam_channel::bounded(1);
                begun.push(id_rx);
                let left = until.saturating_duration_since(Instant::now());
                let reader_opts = CallOptions {
                    timeout: Some(left.clamp(Duration::from_millis(1), MAX_TIMEOUT)),
                    on_begin: Some(id_tx),
                    ..CallOptions::default()
                };
                let tx = result_tx.clone();
                let params = json!({ "taskId": task_id });
                std::thread::Builder::new()
                    .name(format!("mcp-task-{}", ctx.conn.server))
                    .spawn_scoped(s, move || {
                        let r =
                            ctx.typed::<CallToolResult>("tasks/result", Some(params), &reader_opts);
                        let _ = tx.send(r);
                    })
                    .map(|_| ())
                    .map_err(|e| Error::Transport {
                        server: ctx.server(),
                        status: None,
                        detail: format!("cannot start a thread to wait for task `{task_id}`: {e}"),
                        source: Some(Box::new(e)),
                    })
            };
            let mut poll = limits.task_poll_interval(self.created.task.poll_interval);
            let mut next_poll = deadline::add(Instant::now(), poll);
            // No `tasks/result` is open (the last one was answered early).
            let mut reader_idle = false;
            let outcome = match spawn_reader(deadline, &mut begun) {
                Err(e) => Some(Err(e)),
                Ok(()) => loop {
                    let wake = next_poll.min(deadline);
                    crossbeam_channel::select! {
                        recv(result_rx) -> r => match r {
                            // The reader's own deadline: the wait's may have moved on.
                            Ok(Err(Error::Timeout { .. })) if Instant::now() < deadline => {
                                if let Err(e) = spawn_reader(deadline, &mut begun) {
                                    break Some(Err(e));
                                }
                                continue;
                            }
                            Ok(Err(Error::Timeout { .. })) => break None,
                            Ok(r) => match self.settle(r, deadline) {
                                // Answered before its time (a server that does not hold
                                // `tasks/result` open): polls go on, and a new one is opened
                                // once the task needs input or has ended.
                                Settled::Early(e) => {
                                    log::debug!(
                                        "server `{}`: tasks/result for the running task \
                                         `{task_id}` answered early ({e}); polling on",
                                        ctx.conn.server
                                    );
                                    reader_idle = true;
                                    continue;
                                }
                                Settled::Done(r) => break Some(r),
                            },
                            Err(_) => break Some(Err(Error::Protocol { server: ctx.server(),
                                kind: ProtocolErrorKind::Ended,
                                detail: format!("the wait for task `{task_id}` ended without an answer"),
                            })),
                        },
                        recv(cancel_rx) -> fired => {
                            if fired.is_ok() {
                                break Some(Err(self.cancel_for_caller()));
                            }
                            // The hook is gone without firing: nothing more can come.
                            cancel_rx = &never_cancelled;
                            continue;
                        }
                        recv(progress_rx) -> p => {
                            match (p, &opts.on_progress) {
                                (Ok(p), Some(cb)) => {
                                    cb(&p);
                                    if reset {
                                        let next = deadline::after(timeout);
                                        deadline = hard_limit.map_or(next, |h| next.min(h));
                                    }
                                }
                                (Ok(_), None) => {}
                                // No more progress can come.
                                (Err(_), _) => progress_rx = &never,
                            }
                            continue;
                        }
                        default(wake.saturating_duration_since(Instant::now())) => {}
                    }
                    let now = Instant::now();
                    if now >= deadline {
                        break None;
                    }
                    if now < next_poll {
                        continue;
                    }
                    let left = deadline.saturating_duration_since(now);
                    match ctx.get(task_id, Some(left.min(ctx.conn.default_timeout))) {
                        Ok(task) => {
                            if let Some(cb) = &opts.on_task_status {
                                cb(&task);
                            }
                            poll = limits.task_poll_interval(task.poll_interval);
                            if task.status == TaskStatus::Cancelled {
                                break Some(Err(ctx.cancelled(&task)));
                            }
                            let ready = task.status.is_terminal()
                                || task.status == TaskStatus::InputRequired;
                            if reader_idle && ready {
                                reader_idle = false;
                                if let Err(e) = spawn_reader(deadline, &mut begun) {
                                    break Some(Err(e));
                                }
                            }
                        }
                        // The deadline is checked above; the result may still come.
                        Err(Error::Timeout { .. }) => {}
                        Err(e) => break Some(Err(e)),
                    }
                    next_poll = deadline::add(Instant::now(), poll);
                },
            };
            // Progress the server sent before its answer was routed before that answer, but the
            // select above may have taken the answer first: deliver it before returning.
            if let Some(cb) = &opts.on_progress {
                while let Ok(p) = progress_rx.try_recv() {
                    cb(&p);
                }
            }
            // The time ran out: the answer may have come with it.
            let outcome = outcome.or_else(|| match result_rx.try_recv() {
                Ok(r) if !matches!(r, Err(Error::Timeout { .. })) => match self.settle(r, deadline)
                {
                    Settled::Done(r) => Some(r),
                    Settled::Early(_) => None,
                },
                _ => None,
            });
            let outcome = outcome.unwrap_or_else(|| {
                if cancel_on_timeout && ctx.capability().is_some_and(|t| t.has_cancel()) {
                    if let Err(e) = ctx.cancel(task_id, Some(AFTER_DEADLINE)) {
                        log::debug!(
                            "server `{}`: tasks/cancel for `{task_id}` after the timeout: {e}",
                            ctx.conn.server
                        );
                    }
                }
                let method = if cancel_on_timeout {
                    "tools/call"
                } else {
                    "tasks/result"
                };
                Err(Error::Timeout {
                    server: ctx.server(),
                    method: method.to_owned(),
                    after: start.elapsed(),
                })
            });
            // The readers must end before the scope does: abandon what they still wait for.
            for id in begun.iter().filter_map(|rx| rx.recv().ok()) {
                ctx.conn.abandon(id, "the wait for the task ended");
            }
            outcome
        })
    }

    /// The caller gave the call up (`CallOptions.cancel`): the task is cancelled (`tasks/cancel`,
    /// when the server offers it; within a second) and the call ends with the error a cancelled
    /// request ends with.
    pub(super) fn cancel_for_caller(&self) -> Error {
        let ctx = &self.ctx;
        let task_id = self.id();
        // A server without `tasks/cancel` refuses it here, before anything is sent.
        match ctx.cancel(task_id, Some(AFTER_DEADLINE)) {
            Ok(_) => log::info!(
                "server `{}`: the call was cancelled: task `{task_id}` cancelled",
                ctx.conn.server
            ),
            Err(e) => log::debug!(
                "server `{}`: tasks/cancel for `{task_id}` after the call was cancelled: {e}",
                ctx.conn.server
            ),
        }
        Error::Protocol {
            server: ctx.server(),
            kind: ProtocolErrorKind::Ended,
            detail: "`tools/call`: cancelled by the client".to_owned(),
        }
    }

    /// The outcome of `tasks/result`: a JSON-RPC error for a task that turns out cancelled is
    /// reported as a cancellation, and one for a task still running was given too early.
    fn settle(&self, r: Result<CallToolResult, Error>, deadline: Instant) -> Settled {
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(AFTER_DEADLINE);
        match r {
            Err(e @ Error::Rpc { .. }) => match self.ctx.get(self.id(), Some(wait)) {
                Ok(task) if task.status == TaskStatus::Cancelled => {
                    Settled::Done(Err(self.ctx.cancelled(&task)))
                }
                Ok(task) if !task.status.is_terminal() => Settled::Early(e),
                _ => Settled::Done(Err(e)),
            },
            other => Settled::Done(other),
        }
    }
}

/// What an answer to `tasks/result` means.
enum Settled {
    /// The call's outcome.
    Done(Result<CallToolResult, Error>),
    /// An error while the task still runs: not its outcome.
    Early(Error),
}

fn check_timeout(ctx: &TaskCtx, timeout: Duration) -> Result<(), Error> {
    CallOptions::new().timeout(timeout).check(&ctx.conn.server)
}
