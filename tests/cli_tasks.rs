//! `mcpb` and tasks, against the fixture server with `--tasks`: `call` runs a tool that requires
//! a task and shows its progress and status with `-v`; `tasks` lists; `task-cancel` cancels;
//! a server without tasks is a typed failure (exit 5, kind `task`).

use std::process::Output;

use serde_json::Value;

mod common;

use common::mcpb::command;

/// Runs `mcpb --stdio 'FIXTURE FLAGS' ARGS...` (quoted: the path may hold blanks).
fn on_fixture(flags: &str, args: &[&str]) -> Output {
    let line = format!("'{}' {flags}", common::fixture::path());
    command(&["--stdio", &line])
        .args(args)
        .output()
        .expect("run mcpb")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[track_caller]
fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "expected exit {code}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
}

#[test]
fn call_runs_a_task_and_shows_its_progress_and_status_with_v() {
    let o = on_fixture(
        "--tasks",
        &["-v", "call", "task_steps", "steps=3", "ms=150"],
    );
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "finished 3 steps\n");
    let err = text(&o.stderr);
    assert!(err.contains("progress 1/3 step 1"), "{err}");
    assert!(err.contains("task task-1: working"), "{err}");
}

#[test]
fn call_without_v_prints_only_the_result_and_a_failed_task_exits_1() {
    let o = on_fixture("--tasks", &["call", "task_steps", "steps=1", "ms=10"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "finished 1 steps\n");
    assert!(
        !text(&o.stderr).contains("task task-1"),
        "{}",
        text(&o.stderr)
    );
    let o = on_fixture("--tasks", &["call", "task_fail"]);
    assert_exit(&o, 1);
    assert_eq!(text(&o.stdout), "the task failed on purpose\n");
}

#[test]
fn tasks_lists_and_task_cancel_reports_the_server_s_refusal() {
    let o = on_fixture("--tasks", &["--json", "tasks"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc["tasks"], serde_json::json!([]));
    let o = on_fixture("--tasks", &["tasks"]);
    assert_exit(&o, 0);
    assert_eq!(text(&o.stdout), "(no tasks)\n");
    let o = on_fixture("--tasks", &["task-cancel", "task-9"]);
    assert_exit(&o, 5);
    assert!(
        text(&o.stderr).contains("Task not found: task-9"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_server_without_tasks_is_a_task_failure() {
    let o = on_fixture("", &["--json", "tasks"]);
    assert_exit(&o, 5);
    let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc["error"]["kind"], "task");
    assert_eq!(doc["error"]["reason"], "unsupported");
    let o = on_fixture("", &["task-cancel"]);
    assert_exit(&o, 2);
}
