//! Tasks in a [`TestServer`](super::TestServer): a tool whose `execution.taskSupport` is
//! `optional` or `required` runs as a task when the call asks for one. The handler runs inside
//! the creating `tools/call` (it may still ask the client something), and the task is created
//! `working`, then reads as `completed` (or `failed`, for an `isError` result or a JSON-RPC
//! error) from the next `tasks/get` on; `tasks/result` gives its outcome.

use serde_json::{json, Value};

use crate::error::ErrorCode;
use crate::handler::HandlerError;
use crate::model::{TaskSupport, Tool, RELATED_TASK_META};

/// One task: its id and the outcome of its handler.
pub(super) struct StoredTask {
    id: String,
    outcome: Result<Value, HandlerError>,
}

impl StoredTask {
    fn json(&self, status: &str) -> Value {
        json!({
            "taskId": self.id, "status": status,
            "createdAt": "2025-11-25T00:00:00Z", "lastUpdatedAt": "2025-11-25T00:00:00Z",
            "ttl": null, "pollInterval": 0,
        })
    }

    fn status(&self) -> &'static str {
        match &self.outcome {
            Ok(v) if v["isError"] == json!(true) => "failed",
            Ok(_) => "completed",
            Err(_) => "failed",
        }
    }
}

/// Whether any tool may run as a task (then the `tasks` capability is declared).
pub(super) fn any_task_tool<'a>(mut tools: impl Iterator<Item = &'a Tool>) -> bool {
    tools.any(|t| {
        matches!(
            t.task_support(),
            TaskSupport::Optional | TaskSupport::Required
        )
    })
}

/// The `tasks` capability a server with task tools declares.
pub(super) fn capability() -> Value {
    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
}

/// Refuses a call whose `task` member does not fit the tool's task support; `Ok(true)` when it
/// runs as a task.
pub(super) fn check_call(tool: &Tool, params: Option<&Value>) -> Result<bool, HandlerError> {
    let wants = params.and_then(|p| p.get("task")).is_some();
    match (tool.task_support(), wants) {
        (TaskSupport::Required, false) => Err(HandlerError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "Tool {} requires task augmentation (taskSupport: 'required')",
                tool.name
            ),
        )),
        (TaskSupport::Optional | TaskSupport::Required, true) => Ok(true),
        (_, true) => Err(HandlerError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Tool {} does not support task augmentation", tool.name),
        )),
        (_, false) => Ok(false),
    }
}

/// Stores a finished handler's outcome as a new task; returns the `CreateTaskResult`.
pub(super) fn create(tasks: &mut Vec<StoredTask>, outcome: Result<Value, HandlerError>) -> Value {
    let task = StoredTask {
        id: format!("task-{}", tasks.len() + 1),
        outcome,
    };
    let created = json!({ "task": task.json("working") });
    tasks.push(task);
    created
}

/// `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel`; `None` for other methods.
pub(super) fn answer(
    tasks: &[StoredTask],
    method: &str,
    params: Option<&Value>,
) -> Option<Result<Value, HandlerError>> {
    if method == "tasks/list" {
        let all: Vec<Value> = tasks.iter().map(|t| t.json(t.status())).collect();
        return Some(Ok(json!({ "tasks": all })));
    }
    if !matches!(method, "tasks/get" | "tasks/result" | "tasks/cancel") {
        return None;
    }
    let id = params
        .and_then(|p| p["taskId"].as_str())
        .unwrap_or_default();
    let Some(task) = tasks.iter().find(|t| t.id == id) else {
        return Some(Err(HandlerError::new(
            ErrorCode::INVALID_PARAMS,
            format!("Task not found: {id}"),
        )));
    };
    Some(match method {
        "tasks/get" => Ok(task.json(task.status())),
        "tasks/cancel" => Err(HandlerError::new(
            ErrorCode::INVALID_PARAMS,
            format!("Cannot cancel task in terminal status: {}", task.status()),
        )),
        _ => task.outcome.clone().map(|mut v| {
            v["_meta"] = json!({ RELATED_TASK_META: {"taskId": task.id} });
            v
        }),
    })
}
