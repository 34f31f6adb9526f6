//! Task results of the tasks extension (2026-07-28, `io.modelcontextprotocol/tasks`) as the
//! wire carries them: a task is flat (`taskId`, `status`, `ttlMs`, `pollIntervalMs`), and a
//! `tasks/get` answer carries the outcome of an ended task inline (`result`, or a JSON-RPC
//! `error`). I/O-free.
//!
//! ```text
//!  completed ──result──> the tool's result     (no result: an error)
//!  failed ──error──> its JSON-RPC error        (no error: its result, else an error)
//!  cancelled ──> cancelled
//!  working, input_required ──> not ended
//! ```

use serde_json::Value;

use crate::model::{Task, TaskStatus};

/// The code of a failed task's error that has none (`InternalError`).
const INTERNAL_ERROR: i32 = -32603;

/// A task as the extension describes it (`CreateTaskResult` or `tasks/get`), as a [`Task`]:
/// `ttl` and `poll_interval` in milliseconds; the inline `result`, `error` and
/// `inputRequests` are left out.
///
/// # Errors
/// The parse error of something that is not a task.
pub(crate) fn task_of(v: &Value) -> Result<Task, serde_json::Error> {
    let mut m = v.as_object().cloned().unwrap_or_default();
    for k in ["resultType", "result", "error", "inputRequests"] {
        m.remove(k);
    }
    if let Some(t) = m.remove("ttlMs") {
        m.insert("ttl".into(), t);
    }
    if let Some(p) = m.remove("pollIntervalMs") {
        m.insert("pollInterval".into(), p);
    }
    serde_json::from_value(Value::Object(m))
}

/// How an ended task ended.
#[derive(Debug, PartialEq)]
pub(crate) enum TaskEnd<'a> {
    /// Its result (a tool's result, `isError` included).
    Result(&'a Value),
    /// `completed` without a result.
    NoResult,
    /// `failed` with its JSON-RPC error: the code (`-32603` when it has none that fits), the
    /// message (empty when it has none) and the data.
    Failed {
        code: i32,
        message: &'a str,
        data: Option<&'a Value>,
    },
    /// `failed` with neither an error nor a result.
    FailedSilently,
    /// `cancelled`.
    Cancelled,
}

/// How the task of a `tasks/get` answer `v`, whose status is `status`, ended; `None` while it
/// runs.
pub(crate) fn task_end<'a>(status: &TaskStatus, v: &'a Value) -> Option<TaskEnd<'a>> {
    Some(match status {
        TaskStatus::Completed => v.get("result").map_or(TaskEnd::NoResult, TaskEnd::Result),
        TaskStatus::Failed => match (v.get("error"), v.get("result")) {
            (Some(e), _) => TaskEnd::Failed {
                code: e
                    .get("code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok())
                    .unwrap_or(INTERNAL_ERROR),
                message: e.get("message").and_then(Value::as_str).unwrap_or(""),
                data: e.get("data"),
            },
            (None, Some(r)) => TaskEnd::Result(r),
            (None, None) => TaskEnd::FailedSilently,
        },
        TaskStatus::Cancelled => TaskEnd::Cancelled,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_flat_task_reads_as_a_task_in_milliseconds() {
        let v = json!({"resultType": "task", "taskId": "t", "status": "working",
            "ttlMs": 60000, "pollIntervalMs": 250, "result": {"content": []}});
        let task = task_of(&v).expect("a task");
        assert_eq!(task.task_id, "t");
        assert_eq!(task.status, TaskStatus::Working);
        assert_eq!(task.ttl, Some(60000));
        assert_eq!(task.poll_interval, Some(250));
        assert!(task_of(&json!({"status": "working"})).is_err(), "no id");
    }

    #[test]
    fn an_ended_task_carries_its_outcome_inline() {
        let result = json!({"content": [], "isError": true});
        let done = json!({"result": result});
        assert_eq!(
            task_end(&TaskStatus::Completed, &done),
            Some(TaskEnd::Result(&result))
        );
        assert_eq!(
            task_end(&TaskStatus::Completed, &json!({})),
            Some(TaskEnd::NoResult)
        );
        let failed =
            json!({"error": {"code": -32000, "message": "boom", "data": 1}, "result": result});
        assert_eq!(
            task_end(&TaskStatus::Failed, &failed),
            Some(TaskEnd::Failed {
                code: -32000,
                message: "boom",
                data: Some(&json!(1))
            })
        );
        let odd = json!({"error": {"code": 1e12}});
        assert_eq!(
            task_end(&TaskStatus::Failed, &odd),
            Some(TaskEnd::Failed {
                code: -32603,
                message: "",
                data: None
            })
        );
        assert_eq!(
            task_end(&TaskStatus::Failed, &done),
            Some(TaskEnd::Result(&result))
        );
        assert_eq!(
            task_end(&TaskStatus::Failed, &json!({})),
            Some(TaskEnd::FailedSilently)
        );
        assert_eq!(
            task_end(&TaskStatus::Cancelled, &json!({})),
            Some(TaskEnd::Cancelled)
        );
        assert_eq!(task_end(&TaskStatus::Working, &done), None);
        assert_eq!(task_end(&TaskStatus::InputRequired, &done), None);
    }
}
