//! The [`Client`] methods for tasks: starting one (`call_tool_as_task`), running a tool that
//! requires one inside `call_tool`, and `tasks/get`, `tasks/result`, `tasks/cancel`,
//! `tasks/list` (see [`tasks`](super::tasks) for the handle and its wait).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::options::CallOptions;
use super::tasks::{TaskCtx, TaskHandle, MAX_QUEUED_TASK_PROGRESS};
use super::Client;
use crate::error::{Error, InvalidArgumentKind, ProtocolErrorKind, TaskErrorKind};
use crate::model::{CallToolResult, CreateTaskResult, ListTasksResult, Task, TasksCapability};
use crate::sync::lock;

impl Client {
    pub(super) fn task_ctx(&self) -> Result<TaskCtx, Error> {
        Ok(TaskCtx {
            conn: self.connection()?,
            secrets: self.config.secret_values(),
        })
    }

    /// Starts a tool call as a task (a task-augmented `tools/call`) and returns at once with a
    /// handle on it; see [`TaskHandle`]. How long the server keeps the task is its own choice,
    /// unless [`CallOptions::task_ttl`] asks for one. Progress, when `opts` asks for it, reaches
    /// the callback during the `tools/call` and then during [`TaskHandle::wait`].
    ///
    /// In the modern era (2026-07-28, the tasks extension) the server decides: a call it
    /// answers at once is [`Error::Task`] of kind [`TaskErrorKind::Invalid`] (its result is
    /// what [`call_tool`](Self::call_tool) returns); `task_ttl` is not sent (the extension has
    /// no such request) and no progress comes during the task.
    ///
    /// # Errors
    /// [`Error::Task`] of kind [`TaskErrorKind::Unsupported`] when the server does not declare
    /// task-augmented `tools/call`, or in the modern era does not offer the tasks extension
    /// (nothing is sent); [`Error::Task`] of kind
    /// [`TaskErrorKind::Invalid`] when the server answers with something else than a task;
    /// as [`call_tool_with`](Self::call_tool_with).
    pub fn call_tool_as_task(
        &self,
        name: &str,
        arguments: Value,
        opts: &CallOptions,
    ) -> Result<TaskHandle, Error> {
        self.check_tool_name(name)?;
        let ctx = self.task_ctx()?;
        if ctx.modern_tasks().is_some() {
            return self.call_tool_as_task_modern(ctx, name, arguments, opts);
        }
        ctx.require("requests.tools.call", TasksCapability::has_tool_calls)?;
        opts.check(self.server_name())?;
        let mut params = self.tool_params(name, arguments)?;
        let task = match opts.task_ttl {
            Some(ttl) => json!({ "ttl": u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX) }),
            None => json!({}),
        };
        params.insert("task".into(), task);
        let (watch_tx, watch_rx) = crossbeam_channel::bounded(MAX_QUEUED_TASK_PROGRESS);
        let (id_tx, id_rx) = crossbeam_channel::bounded(1);
        let create_opts = CallOptions {
            progress_watch: opts.on_progress.is_some().then_some(watch_tx),
            on_begin: Some(id_tx),
            on_task_status: None,
            ..opts.clone()
        };
        let created = ctx.typed::<Value>("tools/call", Some(Value::Object(params)), &create_opts);
        let token = id_rx.try_recv().ok();
        let unwatch = || {
            if let (Some(t), true) = (token, opts.on_progress.is_some()) {
                ctx.conn.session.unwatch_progress(t);
            }
        };
        let created = match created {
            Ok(v) => v,
            Err(e) => {
                unwatch();
                return Err(e);
            }
        };
        let created: CreateTaskResult = match serde_json::from_value(created) {
            Ok(c) => c,
            Err(e) => {
                unwatch();
                return Err(Error::Task {
                    server: ctx.server(),
                    kind: TaskErrorKind::Invalid,
                    task_id: None,
                    detail: format!(
                        "the server did not answer the task-augmented call of `{}` with a task: {e}",
                        ctx.conn.sink.ctx.limits.echo(name)
                    ),
                }
                .redact(&ctx.secrets));
            }
        };
        let progress = match (token, opts.on_progress.is_some()) {
            (Some(t), true) => Some((t, watch_rx)),
            _ => None,
        };
        Ok(TaskHandle {
            ctx,
            created,
            opts: CallOptions {
                progress_watch: None,
                on_begin: None,
                ..opts.clone()
            },
            progress,
        })
    }

    /// Runs `name` as a task to its end, for [`call_tool_with`](Self::call_tool_with), when
    /// the server declares task-augmented calls and the tool requires them; `None` otherwise.
    pub(super) fn call_as_task_if_required(
        &self,
        name: &str,
        arguments: &Value,
        opts: &CallOptions,
    ) -> Option<Result<CallToolResult, Error>> {
        let conn = self.connection().ok()?;
        let caps = conn.init.as_ref()?.capabilities.tasks()?;
        if !caps.has_tool_calls() {
            return None;
        }
        let known = lock(&conn.task_tools).clone();
        let tools = match known {
            Some(t) => t,
            None => match self.list_tools() {
                Ok(_) => lock(&conn.task_tools).clone()?,
                Err(e) => {
                    log::debug!(
                        "server `{}`: cannot list tools to learn their task support: {e}",
                        self.server_name()
                    );
                    return None;
                }
            },
        };
        if !tools.contains(name) {
            return None;
        }
        if let Err(e) = opts.check(self.server_name()) {
            return Some(Err(e));
        }
        let start = Instant::now();
        let timeout = opts.timeout.unwrap_or(conn.default_timeout);
        // The task need not outlive the call.
        let with_ttl = CallOptions {
            task_ttl: opts
                .task_ttl
                .or(Some(opts.max_total_timeout.unwrap_or(timeout).max(timeout))),
            ..opts.clone()
        };
        Some(
            self.call_tool_as_task(name, arguments.clone(), &with_ttl)
                .and_then(|task| task.drive(start, timeout, true)),
        )
    }

    /// Remembers which tools of a whole `tools/list` require task-augmented calls (`required`
    /// names them), for the current connection, when the server offers tasks.
    pub(super) fn remember_task_support<'a>(&self, required: impl Iterator<Item = &'a str>) {
        let Ok(conn) = self.connection() else { return };
        if conn
            .init
            .as_ref()
            .and_then(|i| i.capabilities.tasks())
            .is_none()
        {
            return;
        }
        let names = required.map(str::to_owned).collect();
        *lock(&conn.task_tools) = Some(Arc::new(names));
    }

    /// A task (`tasks/get`).
    ///
    /// # Errors
    /// [`Error::Task`] of kind [`TaskErrorKind::Unsupported`] when the server declares no
    /// `tasks` capability; [`Error::Rpc`] (code -32602) for an unknown task; as
    /// [`ping`](Self::ping).
    pub fn get_task(&self, task_id: &str) -> Result<Task, Error> {
        let ctx = self.task_ctx()?;
        ctx.require("tasks", |_| true)?;
        ctx.get(task_id, None)
    }

    /// A task's result (`tasks/result`): blocks until the task ends, at most the server's
    /// timeout. A `failed` task's result has `isError` set. In the modern era, where
    /// `tasks/result` does not exist, `tasks/get` is polled until the task ends (its input
    /// requests answered by the handlers).
    ///
    /// # Errors
    /// As [`get_task`](Self::get_task); [`Error::Rpc`] when the tool call ended in a JSON-RPC
    /// error or the task was cancelled.
    pub fn task_result(&self, task_id: &str) -> Result<CallToolResult, Error> {
        let ctx = self.task_ctx()?;
        ctx.require("tasks", |_| true)?;
        if ctx.modern_tasks().is_some() {
            let v = ctx.get_modern(task_id, None)?;
            let handle = TaskHandle {
                created: CreateTaskResult::new(ctx.parse_task(&v)?),
                ctx,
                opts: CallOptions::default(),
                progress: None,
            };
            return handle.result();
        }
        ctx.by_id("tasks/result", task_id, None)
    }

    /// Cancels a task (`tasks/cancel`); returns it, now `cancelled`. In the modern era the
    /// cancellation is only acknowledged (it is cooperative): this returns the task as a
    /// `tasks/get` right after finds it, which may still be running or have ended otherwise.
    ///
    /// # Errors
    /// [`Error::Task`] of kind [`TaskErrorKind::Unsupported`] when the server does not declare
    /// `tasks.cancel`; [`Error::Rpc`] (code -32602) for an unknown task or one that already
    /// ended; as [`ping`](Self::ping).
    pub fn cancel_task(&self, task_id: &str) -> Result<Task, Error> {
        self.task_ctx()?.cancel(task_id, None)
    }

    /// One page of `tasks/list`.
    ///
    /// # Errors
    /// [`Error::Task`] of kind [`TaskErrorKind::Unsupported`] when the server does not declare
    /// `tasks.list`; [`Error::Unsupported`] in the modern era (the tasks extension has no
    /// list); as [`list_tools`](Self::list_tools).
    pub fn list_tasks_page(&self, cursor: Option<&str>) -> Result<ListTasksResult, Error> {
        let ctx = self.task_ctx()?;
        if ctx.modern_tasks().is_some() {
            return Err(self.no_task_list());
        }
        ctx.require("list", TasksCapability::has_list)?;
        ctx.typed(
            "tasks/list",
            cursor.map(|c| json!({ "cursor": c })),
            &CallOptions::default(),
        )
    }

    /// Every task, following `nextCursor` to the end, at most
    /// [`Limits::max_listed_tasks`](crate::config::Limits::max_listed_tasks).
    ///
    /// # Errors
    /// As [`list_tasks_page`](Self::list_tasks_page); [`Error::Protocol`] for a cursor loop or
    /// more tasks than the cap.
    pub fn list_tasks(&self) -> Result<Vec<Task>, Error> {
        let cap = self.config.limits().max_listed_tasks;
        let mut count = 0usize;
        self.collect_pages(|c| {
            let page = self.list_tasks_page(c)?;
            count = count.saturating_add(page.tasks.len());
            if count > cap {
                return Err(Error::Protocol {
                    server: self.server_name().to_owned(),
                    kind: ProtocolErrorKind::TooMany,
                    detail: format!(
                        "the server lists more than {cap} tasks (`max_listed_tasks`); read them \
                         page by page with `list_tasks_page`"
                    ),
                });
            }
            Ok((page.tasks, page.next_cursor))
        })
    }
}

/// Whether a plain call's answer says the tool must run as a task (the spec's -32601 or
/// -32600, or a TypeScript server's `isError` text).
pub(super) fn says_task_required(r: &Result<CallToolResult, Error>) -> bool {
    const TEXT: &str = "requires task augmentation";
    match r {
        Ok(res) => res.failed() && res.text().contains(TEXT),
        Err(Error::Rpc { code, message, .. }) => {
            (code.0 == -32601 || code.0 == -32600)
                && (message.contains(TEXT) || message.to_ascii_lowercase().contains("task"))
        }
        Err(_) => false,
    }
}

/// The `arguments` member a tool call may carry, or why not.
pub(super) fn tool_arguments(arguments: Value) -> Result<Option<Value>, &'static str> {
    match arguments {
        Value::Null => Ok(None),
        Value::Object(_) => Ok(Some(arguments)),
        other => Err(super::json_kind(&other)),
    }
}

impl Client {
    /// `{name, arguments?}` for `tools/call`.
    pub(super) fn tool_params(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Map<String, Value>, Error> {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.to_owned()));
        match tool_arguments(arguments) {
            Ok(Some(a)) => {
                params.insert("arguments".into(), a);
            }
            Ok(None) => {}
            Err(kind) => {
                return Err(Error::InvalidArgument {
                    server: self.server_name().to_owned(),
                    kind: InvalidArgumentKind::WrongType,
                    detail: format!("tool arguments must be a JSON object, got {kind}"),
                })
            }
        }
        Ok(params)
    }
}
