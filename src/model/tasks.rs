//! Tasks (revision 2025-11-25, experimental): long work a server runs on its own after
//! accepting a task-augmented request, polled with `tasks/get` and collected with
//! `tasks/result`.
//!
//! ```text
//!   working ──> input_required ──> working ...
//!      │              │
//!      └──────────────┴──> completed | failed | cancelled   (terminal: never change again)
//! ```
//!
//! The `tasks` server capability is kept in [`ServerCapabilities::extra`]; read it with
//! [`ServerCapabilities::tasks`]. A tool's `execution.taskSupport` is read with
//! [`Tool::task_support`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::{Map, ServerCapabilities, Tool};

/// The `_meta` key that ties a message to a task: `{"taskId": "..."}`.
pub const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` key of the optional text a server offers for a model while the task runs.
pub const MODEL_IMMEDIATE_RESPONSE_META: &str = "io.modelcontextprotocol/model-immediate-response";

/// Where a task stands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskStatus {
    /// The request is being processed.
    Working,
    /// The server needs input: it sends its requests (elicitation, sampling) while a
    /// `tasks/result` is open.
    InputRequired,
    /// Done; the result is available from `tasks/result`.
    Completed,
    /// Done and failed; for a tool call, `tasks/result` holds the `isError` result.
    Failed,
    /// Cancelled; there is no result.
    Cancelled,
    /// A status this client does not know, as sent.
    Unknown(String),
}

impl TaskStatus {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Unknown(s) => s,
        }
    }

    /// `completed`, `failed` or `cancelled`: the status will not change again.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for TaskStatus {
    fn from(s: &str) -> Self {
        match s {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            other => TaskStatus::Unknown(other.to_owned()),
        }
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(TaskStatus::from(s.as_str()))
    }
}

/// A JSON number of milliseconds (any non-negative number, rounded) or `null`, read as an
/// `Option<f64>`.
fn millis(v: Option<f64>) -> Result<Option<u64>, String> {
    match v {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n.round().min(u64::MAX as f64) as u64)),
        Some(n) => Err(format!(
            "expected a non-negative number of milliseconds, got {n}"
        )),
    }
}

/// A task, as `tasks/get`, `tasks/list` and `tasks/cancel` describe it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The id the server chose.
    pub task_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A human-readable note on the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601), as sent.
    #[serde(default)]
    pub created_at: String,
    /// When it last changed (ISO 8601), as sent.
    #[serde(default)]
    pub last_updated_at: String,
    /// How long the server keeps it, in milliseconds; `None` is unlimited (JSON `null`).
    #[serde(default)]
    pub ttl: Option<u64>,
    /// How often the server suggests polling, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(Task {
    task_id: "taskId" required,
    status: "status" required,
    status_message: "statusMessage" optional,
    created_at: "createdAt" default,
    last_updated_at: "lastUpdatedAt" default,
    ttl: "ttl" default via millis,
    poll_interval: "pollInterval" default via millis,
    meta: "_meta" optional,
});

impl Task {
    /// A task `task_id` in `status`, with no other detail.
    pub fn new(task_id: impl Into<String>, status: TaskStatus) -> Self {
        Task {
            task_id: task_id.into(),
            status,
            status_message: None,
            created_at: String::new(),
            last_updated_at: String::new(),
            ttl: None,
            poll_interval: None,
            meta: None,
            extra: Map::new(),
        }
    }
}

setters!(Task {
    with_status_message => status_message: String,
    with_ttl => ttl: u64,
    with_poll_interval => poll_interval: u64,
    with_meta => meta: Map,
});

/// The answer to a task-augmented request: the task that was created.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CreateTaskResult {
    /// The new task.
    pub task: Task,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(CreateTaskResult {
    task: "task" required,
    meta: "_meta" optional,
});

impl CreateTaskResult {
    /// A result announcing `task`.
    pub fn new(task: Task) -> Self {
        CreateTaskResult {
            task,
            meta: None,
            extra: Map::new(),
        }
    }

    /// The provisional text the server offers for a model while the task runs
    /// (`_meta["io.modelcontextprotocol/model-immediate-response"]`), when there is one.
    pub fn model_immediate_response(&self) -> Option<&str> {
        self.meta
            .as_ref()?
            .get(MODEL_IMMEDIATE_RESPONSE_META)?
            .as_str()
    }
}

/// The `task` member of a task-augmented request: what the client asks of the task.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskMetadata {
    /// How long the server should keep the task and its result, in milliseconds (the server may
    /// choose another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(TaskMetadata {
    ttl: "ttl" optional,
});

setters!(TaskMetadata { with_ttl => ttl: u64 });

/// Params of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
}

impl TaskIdParams {
    /// Params naming `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        TaskIdParams {
            task_id: task_id.into(),
        }
    }
}

/// Params of `tasks/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListTasksParams {
    /// The cursor of the page to read; absent for the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

setters!(ListTasksParams { with_cursor => cursor: String });

/// The result of `tasks/get` and `tasks/cancel`: the task, flat.
pub type GetTaskResult = Task;

/// The result of `tasks/cancel`: the task, now `cancelled`.
pub type CancelTaskResult = Task;

/// The result of `tasks/list`: one page of tasks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// Opaque cursor for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// The `_meta` member.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(ListTasksResult {
    tasks: "tasks" required,
    next_cursor: "nextCursor" optional,
    meta: "_meta" optional,
});

impl ListTasksResult {
    /// A page holding `tasks`.
    pub fn new(tasks: Vec<Task>) -> Self {
        ListTasksResult {
            tasks,
            ..Self::default()
        }
    }
}

setters!(ListTasksResult { with_next_cursor => next_cursor: String });

/// The `tasks` server capability: `{list?, cancel?, requests?: {tools?: {call?}}}`. A member
/// present (any object) turns its feature on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TasksCapability {
    /// `tasks/list` is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<Value>,
    /// `tasks/cancel` is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Value>,
    /// Which requests may be task-augmented (`{"tools": {"call": {}}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Value>,
    /// Members this crate does not model.
    #[serde(flatten)]
    pub extra: Map,
}

deserialize_struct!(TasksCapability {
    list: "list" optional,
    cancel: "cancel" optional,
    requests: "requests" optional,
});

impl TasksCapability {
    /// Everything on: list, cancel and task-augmented `tools/call`.
    pub fn full() -> Self {
        TasksCapability {
            list: Some(Value::Object(Map::new())),
            cancel: Some(Value::Object(Map::new())),
            requests: Some(serde_json::json!({"tools": {"call": {}}})),
            extra: Map::new(),
        }
    }

    /// `tasks/list` is offered.
    pub fn has_list(&self) -> bool {
        self.list.as_ref().is_some_and(|v| !v.is_null())
    }

    /// `tasks/cancel` is offered.
    pub fn has_cancel(&self) -> bool {
        self.cancel.as_ref().is_some_and(|v| !v.is_null())
    }

    /// `tools/call` may be task-augmented.
    pub fn has_tool_calls(&self) -> bool {
        self.requests
            .as_ref()
            .and_then(|r| r.get("tools"))
            .and_then(|t| t.get("call"))
            .is_some_and(|c| !c.is_null())
    }
}

impl ServerCapabilities {
    /// The `tasks` capability, when the server declares one (and it is an object).
    pub fn tasks(&self) -> Option<TasksCapability> {
        let v = self.extra.get("tasks")?;
        TasksCapability::deserialize(v).ok()
    }

    /// Sets the `tasks` capability.
    #[must_use]
    pub fn with_tasks(mut self, tasks: TasksCapability) -> Self {
        if let Ok(v) = serde_json::to_value(tasks) {
            self.extra.insert("tasks".into(), v);
        }
        self
    }

    /// The server accepts task-augmented `tools/call`.
    pub fn has_task_tool_calls(&self) -> bool {
        // `self.tasks().is_some_and(|t| t.has_tool_calls())`, read in place: it is asked on
        // every `tools/call`.
        self.extra.get("tasks").is_some_and(|tasks| {
            tasks.is_object()
                && tasks
                    .get("requests")
                    .and_then(|r| r.get("tools"))
                    .and_then(|t| t.get("call"))
                    .is_some_and(|c| !c.is_null())
        })
    }
}

/// Whether a tool may, must or must not run as a task (`execution.taskSupport`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// Never as a task (also when absent).
    Forbidden,
    /// Either way.
    Optional,
    /// Only as a task.
    Required,
    /// A value this client does not know, as sent (treated as forbidden).
    Unknown(String),
}

impl TaskSupport {
    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
            TaskSupport::Unknown(s) => s,
        }
    }
}

impl Tool {
    /// The tool's `execution.taskSupport`: [`TaskSupport::Forbidden`] when absent.
    pub fn task_support(&self) -> TaskSupport {
        match self
            .execution
            .as_ref()
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
        {
            None | Some("forbidden") => TaskSupport::Forbidden,
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            Some(other) => TaskSupport::Unknown(other.to_owned()),
        }
    }

    /// Sets `execution.taskSupport` (other `execution` members are kept).
    #[must_use]
    pub fn with_task_support(mut self, support: TaskSupport) -> Self {
        let mut execution = match self.execution.take() {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        execution.insert("taskSupport".into(), Value::String(support.as_str().into()));
        self.execution = Some(Value::Object(execution));
        self
    }
}

/// The task id in a message's `_meta` (`io.modelcontextprotocol/related-task`), when there is one.
pub fn related_task_id(meta: Option<&Map>) -> Option<&str> {
    meta?.get(RELATED_TASK_META)?.get("taskId")?.as_str()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::round_trip;
    use super::*;

    #[test]
    fn a_task_round_trips_and_reads_its_status() {
        let wire = json!({
            "taskId": "786512e2", "status": "working",
            "statusMessage": "The operation is now in progress.",
            "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
            "ttl": 60000, "pollInterval": 5000, "vendor": 1
        });
        let task: Task = round_trip(&wire);
        assert_eq!(task.status, TaskStatus::Working);
        assert!(!task.status.is_terminal());
        assert_eq!(task.poll_interval, Some(5000));
        assert_eq!(task.extra.get("vendor"), Some(&json!(1)));
    }

    #[test]
    fn ttl_may_be_null_or_fractional_and_status_unknown() {
        let task: Task = serde_json::from_value(json!({
            "taskId": "t", "status": "paused", "createdAt": "", "lastUpdatedAt": "",
            "ttl": null, "pollInterval": 250.4
        }))
        .expect("parse");
        assert_eq!(task.ttl, None);
        assert_eq!(task.poll_interval, Some(250));
        assert_eq!(task.status, TaskStatus::Unknown("paused".into()));
        assert_eq!(
            serde_json::to_value(&task).expect("ser")["ttl"],
            json!(null)
        );
        let bad = serde_json::from_value::<Task>(json!({"taskId": "t", "status": "working",
            "ttl": -1}));
        assert!(bad.is_err());
    }

    #[test]
    fn create_result_nests_the_task_and_offers_the_immediate_response() {
        let wire = json!({
            "task": {"taskId": "a", "status": "working", "createdAt": "x",
                     "lastUpdatedAt": "x", "ttl": 1000},
            "_meta": {MODEL_IMMEDIATE_RESPONSE_META: "working on it"}
        });
        let r: CreateTaskResult = round_trip(&wire);
        assert_eq!(r.task.task_id, "a");
        assert_eq!(r.model_immediate_response(), Some("working on it"));
    }

    #[test]
    fn capabilities_and_tool_support_are_read() {
        let caps: ServerCapabilities = serde_json::from_value(json!({
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        }))
        .expect("parse");
        let t = caps.tasks().expect("tasks");
        assert!(t.has_list() && t.has_cancel() && t.has_tool_calls());
        assert!(caps.has_task_tool_calls());
        let none = ServerCapabilities::default().with_tasks(TasksCapability::default());
        assert!(!none.has_task_tool_calls());
        assert!(ServerCapabilities::default().tasks().is_none());

        let tool = Tool::new("t", json!({"type": "object"}));
        assert_eq!(tool.task_support(), TaskSupport::Forbidden);
        let tool = tool.with_task_support(TaskSupport::Required);
        assert_eq!(tool.task_support(), TaskSupport::Required);
        assert_eq!(tool.execution, Some(json!({"taskSupport": "required"})));
        let odd = Tool::new("t", json!({})).with_execution(json!({"taskSupport": "maybe"}));
        assert_eq!(odd.task_support(), TaskSupport::Unknown("maybe".into()));
    }

    #[test]
    fn list_result_and_related_meta() {
        let page: ListTasksResult = round_trip(&json!({
            "tasks": [{"taskId": "a", "status": "completed", "createdAt": "x",
                       "lastUpdatedAt": "x", "ttl": null}],
            "nextCursor": "c2"
        }));
        assert_eq!(page.tasks[0].status, TaskStatus::Completed);
        let meta: Map =
            serde_json::from_value(json!({RELATED_TASK_META: {"taskId": "a"}})).expect("meta");
        assert_eq!(related_task_id(Some(&meta)), Some("a"));
        assert_eq!(related_task_id(None), None);
    }
}
