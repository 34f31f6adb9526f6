//! Tasks from the command line: `tasks` (list), `task-cancel ID`, and the options `call` uses
//! so that `-v` shows a task's progress and status as it runs.

use std::fmt::Write;
use std::sync::Mutex;

use mcp_blocking::model::Task;
use mcp_blocking::{Client, Error};
use serde_json::json;

use crate::Output;

/// For a tool that runs as a task, each change of its status, logged at info level (shown
/// with `-v`); the options of `call` take it as their `on_task_status`.
pub(crate) fn status_logger() -> impl Fn(&Task) + Send + Sync + 'static {
    let last: Mutex<Option<(String, Option<String>)>> = Mutex::new(None);
    move |t: &Task| {
        let now = (t.status.to_string(), t.status_message.clone());
        let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
        if last.as_ref() != Some(&now) {
            log::info!("{}", status_line(t));
            *last = Some(now);
        }
    }
}

/// `task ID: STATUS (message)`.
fn status_line(t: &Task) -> String {
    let msg = t
        .status_message
        .as_deref()
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    format!("task {}: {}{msg}", t.task_id, t.status)
}

/// `tasks`: every task of the server, one line each.
pub(crate) fn list(client: &Client) -> Result<Output, Error> {
    let tasks = client.list_tasks()?;
    let mut text = String::new();
    for t in &tasks {
        let _ = writeln!(text, "{}", status_line(t));
    }
    if tasks.is_empty() {
        text.push_str("(no tasks)\n");
    }
    Ok(Output::ok(
        json!({ "server": client.server_name(), "tasks": tasks }),
        text,
    ))
}

/// `task-cancel ID`: cancels one task.
pub(crate) fn cancel(client: &Client, id: &str) -> Result<Output, Error> {
    let task = client.cancel_task(id)?;
    let text = status_line(&task);
    Ok(Output::ok(
        json!({ "server": client.server_name(), "task": task }),
        text,
    ))
}
