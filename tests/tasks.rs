//! Tasks (MCP 2025-11-25) against the fixture server started with `--tasks`: a tool that
//! requires a task runs as one through `call_tool` (progress, status, a failed task's content,
//! an `input_required` task's elicitation); the explicit `TaskHandle` (status, wait, cancel from
//! another thread); the call's timeout sends `tasks/cancel`; `list_tasks` paging and its cap; a
//! server that declares no tasks gets typed errors; the Hub goes through the same path.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_blocking::config::Limits;
use mcp_blocking::error::TaskErrorKind;
use mcp_blocking::handler::{notification_channel, Notification, NOTIFICATION_CHANNEL_CAPACITY};
use mcp_blocking::model::{ElicitParams, ElicitResult, TaskStatus, RELATED_TASK_META};
use mcp_blocking::{CallOptions, Client, Error, Hub, ServerConfig};
use serde_json::json;

mod common;

fn fixture(name: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path())
        .with_args(args.iter().copied())
        .with_timeout_secs(10.0)
}

fn connect(args: &[&str]) -> Client {
    Client::connect(fixture("tasks", args)).expect("connect to the fixture server")
}

#[test]
fn a_tool_that_requires_a_task_runs_as_one_with_progress_and_status() {
    let c = connect(&["--tasks"]);
    let progress = Arc::new(Mutex::new(Vec::new()));
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let (p, s) = (Arc::clone(&progress), Arc::clone(&statuses));
    let opts = CallOptions::new()
        .on_progress(move |u| p.lock().unwrap().push(u.progress))
        .on_task_status(move |t| s.lock().unwrap().push(t.status.clone()));
    let r = c
        .call_tool_with("task_steps", json!({"steps": 4, "ms": 150}), &opts)
        .expect("the task's result");
    assert_eq!(r.text(), "finished 4 steps");
    assert!(!r.failed());
    assert_eq!(*progress.lock().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    let statuses = statuses.lock().unwrap();
    assert!(
        !statuses.is_empty(),
        "at least one poll in 600 ms at 100 ms"
    );
    assert!(statuses
        .iter()
        .all(|s| *s == TaskStatus::Working || *s == TaskStatus::Completed));
    // The task was asked to live as long as the call may wait (the server's 10 s timeout).
    assert_eq!(c.list_tasks().unwrap()[0].ttl, Some(10_000));
    let kept = c
        .call_tool_as_task(
            "task_fail",
            json!({}),
            &CallOptions::new().task_ttl(Duration::from_secs(60)),
        )
        .expect("created");
    assert_eq!(kept.task().ttl, Some(60_000));
}

#[test]
fn progress_keeps_a_task_alive_past_its_timeout_when_asked_to() {
    let c = connect(&["--tasks"]);
    let steps = Arc::new(Mutex::new(0));
    let s = Arc::clone(&steps);
    let opts = CallOptions::new()
        .timeout(Duration::from_millis(400))
        .on_progress(move |_| *s.lock().unwrap() += 1)
        .reset_timeout_on_progress(true);
    let start = Instant::now();
    let r = c
        .call_tool_with("task_steps", json!({"steps": 6, "ms": 150}), &opts)
        .expect("progress every 150 ms keeps a 400 ms timeout from expiring");
    assert_eq!(r.text(), "finished 6 steps");
    assert!(start.elapsed() >= Duration::from_millis(800));
    assert_eq!(*steps.lock().unwrap(), 6);
    // Bounded by the maximum total: the task is cancelled when it passes.
    let capped = opts.max_total_timeout(Duration::from_millis(500));
    let e = c
        .call_tool_with("task_steps", json!({"steps": 20, "ms": 150}), &capped)
        .expect_err("over the maximum total");
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    let tasks = c.list_tasks().expect("list");
    assert_eq!(
        tasks.last().expect("the second task").status,
        TaskStatus::Cancelled
    );
}

#[test]
fn a_handle_reports_status_and_waits_for_the_result() {
    let c = connect(&["--tasks"]);
    let task = c
        .call_tool_as_task("task_slow", json!({"ms": 300}), &CallOptions::new())
        .expect("created");
    assert!(task.id().starts_with("task-"));
    assert_eq!(task.task().status, TaskStatus::Working);
    assert_eq!(task.task().poll_interval, Some(100));
    assert_eq!(
        task.task().ttl,
        None,
        "the server's choice: no ttl asked for"
    );
    assert_eq!(task.status().expect("status").status, TaskStatus::Working);
    let r = task.wait(Duration::from_secs(10)).expect("result");
    assert_eq!(r.text(), "done after 300 ms");
    assert_eq!(task.status().expect("status").status, TaskStatus::Completed);
    assert_eq!(task.result().expect("again").text(), "done after 300 ms");
    assert_eq!(
        c.get_task(task.id()).expect("get").status,
        TaskStatus::Completed
    );
}

#[test]
fn a_short_wait_times_out_without_cancelling_and_a_later_one_succeeds() {
    let c = connect(&["--tasks"]);
    let task = c
        .call_tool_as_task("task_slow", json!({"ms": 800}), &CallOptions::new())
        .expect("created");
    let e = task
        .wait(Duration::from_millis(150))
        .expect_err("too short");
    assert!(
        matches!(&e, Error::Timeout { method, .. } if method == "tasks/result"),
        "{e}"
    );
    assert_eq!(task.status().expect("status").status, TaskStatus::Working);
    assert_eq!(
        task.wait(Duration::from_secs(10)).expect("result").text(),
        "done after 800 ms"
    );
}

#[test]
fn a_task_cancelled_from_another_thread_ends_its_wait() {
    let c = connect(&["--tasks"]);
    let task = c
        .call_tool_as_task("task_slow", json!({"ms": 30000}), &CallOptions::new())
        .expect("created");
    let start = Instant::now();
    let waited = std::thread::scope(|s| {
        let waiter = s.spawn(|| task.wait(Duration::from_secs(20)));
        let cancelled = task.cancel().expect("cancel");
        assert_eq!(cancelled.status, TaskStatus::Cancelled);
        waiter.join().expect("the waiter")
    });
    match waited {
        Err(Error::Task {
            kind: TaskErrorKind::Cancelled,
            task_id: Some(id),
            ..
        }) => assert_eq!(id, task.id()),
        other => panic!("expected a cancelled task, got {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(10));
    // A second cancel is the server's error: the task already ended.
    assert!(matches!(task.cancel(), Err(Error::Rpc { code, .. }) if code.0 == -32602));
}

#[test]
fn the_call_s_timeout_sends_tasks_cancel() {
    let c = connect(&["--tasks"]);
    let start = Instant::now();
    let opts = CallOptions::new().timeout(Duration::from_millis(600));
    let e = c
        .call_tool_with("task_slow", json!({"ms": 30000}), &opts)
        .expect_err("times out");
    assert!(
        matches!(&e, Error::Timeout { method, .. } if method == "tools/call"),
        "{e}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
    let tasks = c.list_tasks().expect("list");
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, TaskStatus::Cancelled);
    assert_eq!(
        tasks[0].status_message.as_deref(),
        Some("cancelled by the client")
    );
    // The connection is still fine.
    assert_eq!(
        c.call_tool("echo", json!({"text": "ok"})).unwrap().text(),
        "ok"
    );
}

#[test]
fn status_notifications_reach_the_notification_handlers_typed() {
    let (notify, notes) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    let builder = Client::builder(fixture("notes", &["--tasks"])).on_notification(notify);
    let c = builder.connect().expect("connect");
    c.call_tool("task_steps", json!({"steps": 1, "ms": 10}))
        .expect("result");
    // Notifications reach the handlers on the dispatcher's thread: wait for them.
    let mut statuses = Vec::new();
    while !statuses.contains(&TaskStatus::Completed) {
        match notes.recv_timeout(Duration::from_secs(5)) {
            Ok((_, Notification::TaskStatus(t))) => statuses.push(t.status),
            Ok(_) => {}
            Err(e) => panic!("no completed status among {statuses:?}: {e}"),
        }
    }
    assert!(statuses.contains(&TaskStatus::Working), "{statuses:?}");
}

#[test]
fn a_failed_task_keeps_its_is_error_content() {
    let c = connect(&["--tasks"]);
    let r = c
        .call_tool("task_fail", json!({}))
        .expect("a result, not an error");
    assert!(r.failed());
    assert_eq!(r.text(), "the task failed on purpose");
    let meta = r.meta.expect("related-task _meta");
    assert!(meta.contains_key(RELATED_TASK_META));
}

#[test]
fn an_input_required_task_asks_through_the_elicitation_handler() {
    let seen = Arc::new(Mutex::new(None));
    let s = Arc::clone(&seen);
    let c = Client::builder(fixture("asker", &["--tasks"]))
        .elicitation(move |_: &str, p: ElicitParams| {
            let task = p
                .meta
                .as_ref()
                .and_then(|m| m.get(RELATED_TASK_META))
                .cloned();
            *s.lock().unwrap() = Some((p.message.clone(), task));
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        })
        .connect()
        .expect("connect");
    let r = c
        .call_tool("task_ask", json!({"message": "who?"}))
        .expect("result");
    assert!(!r.failed(), "{}", r.text());
    assert!(r.text().starts_with("answer: "), "{}", r.text());
    assert!(r.text().contains("\"Ada\""), "{}", r.text());
    let (message, task) = seen.lock().unwrap().clone().expect("the handler ran");
    assert_eq!(message, "who?");
    assert!(task.expect("related task")["taskId"]
        .as_str()
        .unwrap()
        .starts_with("task-"));
}

#[test]
fn list_tasks_follows_pages_up_to_its_cap() {
    let c = connect(&["--tasks", "--page-size", "2"]);
    let mut ids = Vec::new();
    for _ in 0..5 {
        let t = c
            .call_tool_as_task("task_fail", json!({}), &CallOptions::new())
            .expect("created");
        ids.push(t.id().to_owned());
    }
    let first = c.list_tasks_page(None).expect("page");
    assert_eq!(first.tasks.len(), 2);
    assert!(first.next_cursor.is_some());
    let all = c.list_tasks().expect("all");
    let listed: Vec<_> = all.iter().map(|t| t.task_id.clone()).collect();
    assert_eq!(listed, ids);

    let capped = Client::connect(
        fixture("capped", &["--tasks", "--page-size", "2"])
            .with_limits(Limits::default().with_max_listed_tasks(3)),
    )
    .expect("connect");
    for _ in 0..4 {
        capped
            .call_tool_as_task("task_fail", json!({}), &CallOptions::new())
            .expect("created");
    }
    let e = capped.list_tasks().expect_err("over the cap");
    assert!(e.to_string().contains("max_listed_tasks"), "{e}");
    assert_eq!(
        capped.list_tasks_page(None).expect("one page").tasks.len(),
        2
    );
}

#[test]
fn a_server_without_tasks_gets_typed_errors_and_plain_calls() {
    let c = connect(&[]);
    let unsupported = |r: Result<(), Error>| match r {
        Err(Error::Task {
            kind: TaskErrorKind::Unsupported,
            server,
            detail,
            ..
        }) => {
            assert_eq!(server, "tasks");
            assert!(detail.contains("tasks"), "{detail}");
        }
        other => panic!("expected an unsupported-task error, got {other:?}"),
    };
    unsupported(
        c.call_tool_as_task("echo", json!({"text": "x"}), &CallOptions::new())
            .map(|_| ()),
    );
    unsupported(c.list_tasks().map(|_| ()));
    unsupported(c.cancel_task("task-1").map(|_| ()));
    unsupported(c.get_task("task-1").map(|_| ()));
    unsupported(c.task_result("task-1").map(|_| ()));
    // Ordinary tools are called as before.
    assert_eq!(
        c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
        "x"
    );
}

#[test]
fn a_task_on_a_tool_that_does_not_take_one_is_the_server_s_error() {
    let c = connect(&["--tasks"]);
    let e = c
        .call_tool_as_task("echo", json!({"text": "x"}), &CallOptions::new())
        .expect_err("echo is not a task tool");
    assert!(
        matches!(e, Error::Rpc { code, .. } if code.0 == -32601),
        "{e}"
    );
    // And `echo` through call_tool stays a plain call on a server with tasks.
    assert_eq!(
        c.call_tool("echo", json!({"text": "y"})).unwrap().text(),
        "y"
    );
}

#[test]
fn the_hub_runs_a_task_tool_through_its_client() {
    let hub = Hub::new([fixture("hubbed", &["--tasks"]), fixture("plain", &[])]);
    assert!(hub.connect_all().is_empty());
    let r = hub
        .call_tool("task_steps", json!({"steps": 2, "ms": 10}))
        .expect("through the hub");
    assert_eq!(r.text(), "finished 2 steps");
    let tasks = hub.list_tasks().expect("the hub's tasks");
    assert_eq!(tasks.len(), 1, "the plain server lists none");
    assert_eq!(tasks[0].0, "hubbed");
    assert_eq!(tasks[0].1.status, TaskStatus::Completed);
}
