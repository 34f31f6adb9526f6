//! Tasks in the modern era (2026-07-28): the extension `io.modelcontextprotocol/tasks`.
//!
//! ```text
//!  server/discover offers extensions["io.modelcontextprotocol/tasks"]
//!    └─> every request declares it in _meta clientCapabilities.extensions
//!  tools/call ──resultType "task" (flat Task: taskId, status, ttlMs, pollIntervalMs)──> TaskHandle
//!  wait: tasks/get every pollIntervalMs (bounded by Limits::task_poll_floor/ceiling)
//!        ├─ input_required: inputRequests answered by the handlers ──> tasks/update ──> poll on
//!        ├─ completed: its inline `result` (a tool's isError included)
//!        ├─ failed: its inline JSON-RPC `error`
//!        └─ cancelled: Error::Task (Cancelled)
//!  cancel: tasks/cancel (an empty ack), then tasks/get for the task as it is now
//! ```
//!
//! The server decides which calls become tasks; nothing else differs for the caller from the
//! legacy era ([`tasks`](super::tasks)), except that there is no `tasks/list` (an
//! [`Error::Unsupported`]), no `tasks/result` (the result comes inline with `tasks/get`), no
//! progress during a task, and no status notifications outside a `subscriptions/listen`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::call::Answer;
use super::connection::Connection;
use super::options::CallOptions;
use super::tasks::{TaskCtx, TaskHandle};
use super::Client;
use crate::config::ProtocolEra;
use crate::deadline;
use crate::error::{Error, ErrorCode, ProtocolErrorKind, TaskErrorKind};
use crate::model::{CallToolResult, CreateTaskResult, Task, TaskStatus};
use crate::protocol::task_end::{task_end, task_of, TaskEnd};
use crate::protocol::wire::TASKS_EXTENSION;

/// The modern error for a request that needs a capability the client did not declare.
const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;

/// The longest a request made after a call's time ran out (`tasks/cancel`) may take.
const AFTER_DEADLINE: Duration = Duration::from_secs(1);

/// A `-32021` that asks for the tasks extension, as a typed error naming the tool (only a
/// modern server sends it).
pub(super) fn requires_extension(e: Error, conn: &Connection, name: &str) -> Error {
    match &e {
        Error::Rpc { code, data, .. }
            if code.0 == MISSING_REQUIRED_CLIENT_CAPABILITY
                && data
                    .as_deref()
                    .and_then(|d| d.get("requiredCapabilities"))
                    .and_then(|c| c.get("extensions"))
                    .and_then(|x| x.get(TASKS_EXTENSION))
                    .is_some() =>
        {
            Error::Task {
                server: conn.server.to_string(),
                kind: TaskErrorKind::Unsupported,
                task_id: None,
                detail: format!(
                    "the tool `{}` runs only as a task, and the server did not offer the tasks \
                     extension (`{TASKS_EXTENSION}`) in `server/discover` (error -32021)",
                    conn.sink.ctx.limits.echo(name)
                ),
            }
        }
        _ => e,
    }
}

impl TaskCtx {
    /// `Some(offered)` on a modern connection: whether the server offers the extension.
    pub(super) fn modern_tasks(&self) -> Option<bool> {
        self.conn.wire.tasks_extension()
    }

    /// `Ok` when the server offers the extension; else a typed error.
    pub(super) fn require_extension(&self) -> Result<(), Error> {
        match self.modern_tasks() {
            Some(true) => Ok(()),
            _ => Err(self.unsupported(&format!(
                "the server does not offer the tasks extension (`{TASKS_EXTENSION}`) in \
                 `server/discover`"
            ))),
        }
    }

    /// `tasks/get` under the extension: the whole answer (with `resultType` removed).
    pub(super) fn get_modern(
        &self,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<Value, Error> {
        self.require_extension()?;
        self.by_id("tasks/get", task_id, timeout)
    }

    /// The task of a `tasks/get` answer.
    pub(super) fn parse_task(&self, v: &Value) -> Result<Task, Error> {
        task_of(v).map_err(|e| {
            Error::Protocol {
                server: self.server(),
                kind: ProtocolErrorKind::Malformed,
                detail: format!("malformed `tasks/get` result: {e}"),
            }
            .redact(&self.secrets)
        })
    }

    /// `tasks/cancel` under the extension (an acknowledgement), then the task as it is now.
    pub(super) fn cancel_modern(
        &self,
        task_id: &str,
        timeout: Option<Duration>,
    ) -> Result<Task, Error> {
        self.require_extension()?;
        self.by_id::<Value>("tasks/cancel", task_id, timeout)?;
        let v = self.get_modern(task_id, timeout)?;
        self.parse_task(&v)
    }

    /// A task's inline outcome (`completed` or `failed`), or `None` while it runs.
    fn outcome(&self, task: &Task, v: &Value) -> Option<Result<CallToolResult, Error>> {
        let parse = |r: &Value| {
            serde_json::from_value::<CallToolResult>(r.clone()).map_err(|e| {
                Error::Protocol {
                    server: self.server(),
                    kind: ProtocolErrorKind::Malformed,
                    detail: format!("malformed result of task `{}`: {e}", task.task_id),
                }
                .redact(&self.secrets)
            })
        };
        Some(match task_end(&task.status, v)? {
            TaskEnd::Result(r) => parse(r),
            TaskEnd::NoResult => Err(Error::Protocol {
                server: self.server(),
                kind: ProtocolErrorKind::Unexpected,
                detail: format!("the completed task `{}` has no result", task.task_id),
            }),
            TaskEnd::Failed {
                code,
                message,
                data,
            } => Err(Error::Rpc {
                server: self.server(),
                code: ErrorCode(code),
                message: self.conn.sink.ctx.limits.echo(message).into_owned(),
                data: data.cloned().map(Box::new),
            }
            .redact(&self.secrets)),
            TaskEnd::FailedSilently => Err(Error::Rpc {
                server: self.server(),
                code: ErrorCode(-32603),
                message: format!("task `{}` failed without an error", task.task_id),
                data: None,
            }),
            TaskEnd::Cancelled => Err(self.cancelled(task)),
        })
    }
}

impl TaskHandle {
    /// Runs a task of the extension to its end or to `start + timeout`; with
    /// `cancel_on_timeout`, sends `tasks/cancel` when the time runs out.
    pub(super) fn drive_modern(
        &self,
        start: Instant,
        timeout: Duration,
        cancel_on_timeout: bool,
    ) -> Result<CallToolResult, Error> {
        let ctx = &self.ctx;
        let limits = ctx.conn.sink.ctx.limits;
        let task_id = self.id();
        let deadline = deadline::add(start, timeout);
        let mut poll = limits.task_poll_interval(self.created.task.poll_interval);
        let mut answered: HashSet<String> = HashSet::new();
        let mut first = true;
        loop {
            let now = Instant::now();
            if !first {
                let wake = deadline::add(now, poll).min(deadline);
                let nap = wake.saturating_duration_since(now);
                // The caller's cancellation ends the wait between polls at once.
                if crate::agent::CancelHandle::pause(self.opts.cancel.as_ref(), nap) {
                    return Err(self.cancel_for_caller());
                }
            }
            first = false;
            if self.opts.cancel.as_ref().is_some_and(|c| c.is_cancelled()) {
                return Err(self.cancel_for_caller());
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let left = deadline.saturating_duration_since(now);
            let v = match ctx.get_modern(task_id, Some(left.min(ctx.conn.default_timeout))) {
                Ok(v) => v,
                Err(Error::Timeout { .. }) => continue,
                Err(e) => return Err(e),
            };
            let task = ctx.parse_task(&v)?;
            if let Some(cb) = &self.opts.on_task_status {
                cb(&task);
            }
            poll = limits.task_poll_interval(task.poll_interval);
            if let Some(done) = ctx.outcome(&task, &v) {
                return done;
            }
            if task.status == TaskStatus::InputRequired {
                self.answer_inputs(&v, &mut answered, deadline)?;
            }
        }
        if cancel_on_timeout {
            if let Err(e) = ctx.cancel_modern(task_id, Some(AFTER_DEADLINE)) {
                log::debug!(
                    "server `{}`: tasks/cancel for `{task_id}` after the timeout: {e}",
                    ctx.conn.server
                );
            }
        }
        Err(Error::Timeout {
            server: ctx.server(),
            method: if cancel_on_timeout {
                "tools/call"
            } else {
                "tasks/get"
            }
            .to_owned(),
            after: start.elapsed(),
        })
    }

    /// Answers the `inputRequests` of a `tasks/get` not answered yet (by key) with the
    /// handlers, and sends the answers with `tasks/update`.
    fn answer_inputs(
        &self,
        v: &Value,
        answered: &mut HashSet<String>,
        deadline: Instant,
    ) -> Result<(), Error> {
        let ctx = &self.ctx;
        let Some(Value::Object(requests)) = v.get("inputRequests") else {
            return Ok(());
        };
        let mut responses = Map::new();
        for (key, request) in requests {
            if answered.contains(key) {
                continue;
            }
            let answer = ctx
                .conn
                .sink
                .ctx
                .answer_input(request)
                .map_err(|e| e.redact(&ctx.secrets))?;
            responses.insert(key.clone(), answer);
        }
        if responses.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = responses.keys().cloned().collect();
        let left = deadline.saturating_duration_since(Instant::now());
        let opts = CallOptions {
            timeout: Some(left.clamp(Duration::from_millis(1), ctx.conn.default_timeout)),
            ..CallOptions::default()
        };
        ctx.typed::<Value>(
            "tasks/update",
            Some(json!({ "taskId": self.id(), "inputResponses": responses })),
            &opts,
        )?;
        answered.extend(keys);
        Ok(())
    }
}

impl Client {
    /// `call_tool_as_task` on a modern connection: a `tools/call` declaring the extension,
    /// which the server answers with a task (or not: it decides).
    pub(super) fn call_tool_as_task_modern(
        &self,
        ctx: TaskCtx,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<TaskHandle, Error> {
        ctx.require_extension()?;
        opts.check(self.server_name())?;
        let params = self.tool_params(name, arguments)?;
        let v = self
            .call(&ctx.conn, "tools/call", Some(Value::Object(params)), opts)
            .map_err(|e| requires_extension(e, &ctx.conn, name).redact(&ctx.secrets))?;
        let Answer::Task(v) = v else {
            return Err(Error::Task {
                server: ctx.server(),
                kind: TaskErrorKind::Invalid,
                task_id: None,
                detail: format!(
                    "the server ran `{}` at once instead of as a task (under the 2026-07-28 \
                     tasks extension the server decides; use `call_tool` to get its result)",
                    ctx.conn.sink.ctx.limits.echo(name)
                ),
            });
        };
        let task = task_of(&v).map_err(|e| Error::Task {
            server: ctx.server(),
            kind: TaskErrorKind::Invalid,
            task_id: None,
            detail: format!(
                "malformed task for `{}`: {e}",
                ctx.conn.sink.ctx.limits.echo(name)
            ),
        })?;
        Ok(TaskHandle {
            ctx,
            created: CreateTaskResult::new(task),
            opts: CallOptions {
                progress_watch: None,
                on_begin: None,
                ..opts.clone()
            },
            progress: None,
        })
    }

    /// The end of a `tools/call` the server made a task (`task`, as it came): the task's
    /// result within the call's timeout counted from `start` (then `tasks/cancel` is sent).
    pub(super) fn finish_task(
        &self,
        conn: Arc<Connection>,
        task: Value,
        opts: &CallOptions,
        start: Instant,
    ) -> Result<CallToolResult, Error> {
        let ctx = TaskCtx {
            conn,
            secrets: self.config.secret_values(),
        };
        let task = ctx.parse_task(&task)?;
        let timeout = opts.timeout.unwrap_or(ctx.conn.default_timeout);
        let handle = TaskHandle {
            ctx,
            created: CreateTaskResult::new(task),
            opts: CallOptions {
                progress_watch: None,
                on_begin: None,
                ..opts.clone()
            },
            progress: None,
        };
        handle.drive_modern(start, timeout, true)
    }

    /// The error of `tasks/list` on a modern connection: the extension has none.
    pub(super) fn no_task_list(&self) -> Error {
        self.unsupported("tasks/list", ProtocolEra::Modern)
    }
}

#[cfg(test)]
mod tests {
    //! The extension against scripted in-process servers.

    use serde_json::{json, Value};

    use crate::config::{ProtocolMode, ServerConfig};
    use crate::error::TaskErrorKind;
    use crate::testing::TestServer;
    use crate::Error;

    fn reply(msg: &Value, result: Value) -> Vec<Value> {
        vec![json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})]
    }

    /// A modern server that does not offer the extension, whose `slow` tool needs it
    /// (-32021), and whose `prompts/get` answers with a task.
    fn needs_tasks() -> TestServer {
        TestServer::from_fn("needy", |msg: &Value| match msg["method"].as_str() {
            Some("server/discover") => reply(
                msg,
                json!({"supportedVersions": ["2026-07-28"],
                       "capabilities": {"tools": {}, "prompts": {}}}),
            ),
            Some("tools/call") => vec![json!({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32021, "message": "Missing required client capability",
                "data": {"requiredCapabilities":
                    {"extensions": {"io.modelcontextprotocol/tasks": {}}}}}})],
            Some("prompts/get") => reply(
                msg,
                json!({"resultType": "task", "taskId": "t", "status": "working",
                       "ttlMs": null}),
            ),
            Some(_) if msg.get("id").is_some() => reply(msg, json!({})),
            _ => vec![],
        })
    }

    #[test]
    fn missing_extension_is_typed_and_a_task_where_none_may_be_is_refused() {
        let server = needs_tasks();
        let config = ServerConfig::stdio("needy", "unused").with_protocol(ProtocolMode::Modern);
        let client = server
            .client_builder_for(config)
            .connect()
            .expect("connect");
        let e = client.call_tool("slow", json!({})).unwrap_err();
        assert!(
            matches!(&e, Error::Task { kind: TaskErrorKind::Unsupported, detail, .. }
                if detail.contains("-32021") && detail.contains("`slow`")),
            "{e}"
        );
        let e = client.get_prompt("p", Value::Null).unwrap_err();
        assert!(
            matches!(&e, Error::Protocol { detail, .. } if detail.contains("task")),
            "{e}"
        );
        // Nothing declares the extension: the server did not offer it.
        let calls = server.received();
        let call = calls
            .iter()
            .find(|m| m["method"] == "tools/call")
            .expect("sent");
        let caps = &call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"];
        assert!(caps.is_object(), "{call}");
        assert!(caps.get("extensions").is_none(), "{caps}");
    }
}
