//! Tasks against a real server: `server-everything`'s `simulate-research-query`, whose
//! `execution.taskSupport` is `required` (installed under `target/peers/` on first use, see
//! `common/peers.rs`): a plain `call_tool` runs it as a task; an ambiguous topic asks through
//! the elicitation handler while the task is `input_required`; a handle cancels it; `mcpb call`
//! prints the report (with the `cli` feature).
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_blocking::error::TaskErrorKind;
use mcp_blocking::model::{ElicitParams, ElicitResult, TaskStatus, TaskSupport, RELATED_TASK_META};
use mcp_blocking::{CallOptions, Client, Error};
use serde_json::json;

use common::peers;

const TOOL: &str = "simulate-research-query";

#[test]
fn call_tool_runs_a_required_task_tool_to_its_report() {
    let c = Client::connect(peers::npm().everything()).expect("connect");
    assert!(c.capabilities().expect("caps").has_task_tool_calls());
    let tool = c
        .list_tools()
        .expect("tools")
        .into_iter()
        .find(|t| t.name == TOOL)
        .expect("the tool");
    assert_eq!(tool.task_support(), TaskSupport::Required);
    let statuses = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&statuses);
    let opts = CallOptions::new()
        .timeout(Duration::from_secs(60))
        .on_task_status(move |t| s.lock().unwrap().push(t.status.clone()));
    let r = c
        .call_tool_with(TOOL, json!({"topic": "x"}), &opts)
        .expect("the report");
    assert!(!r.failed(), "{}", r.text());
    assert!(r.text().contains("Research Report"), "{}", r.text());
    assert!(statuses.lock().unwrap().contains(&TaskStatus::Working));
    let listed = c.list_tasks().expect("tasks/list");
    assert!(listed.iter().any(|t| t.status == TaskStatus::Completed));
}

#[test]
fn an_ambiguous_query_asks_through_the_elicitation_handler() {
    let asked = Arc::new(Mutex::new(None));
    let a = Arc::clone(&asked);
    let c = Client::builder(peers::npm().everything())
        .elicitation(move |_: &str, p: ElicitParams| {
            let related = p
                .meta
                .as_ref()
                .and_then(|m| m.get(RELATED_TASK_META))
                .cloned();
            let choice = p
                .requested_schema
                .as_ref()
                .and_then(|s| s.pointer("/properties/interpretation/oneOf/0/const"))
                .cloned()
                .unwrap_or(json!("the first"));
            *a.lock().unwrap() = Some(related);
            let mut content = serde_json::Map::new();
            content.insert("interpretation".into(), choice);
            Ok(ElicitResult::accept(content))
        })
        .connect()
        .expect("connect");
    let r = c
        .call_tool_with(
            TOOL,
            json!({"topic": "python", "ambiguous": true}),
            &CallOptions::new().timeout(Duration::from_secs(60)),
        )
        .expect("the report");
    assert!(!r.failed(), "{}", r.text());
    assert!(r.text().contains("Research Report"), "{}", r.text());
    let related = asked
        .lock()
        .unwrap()
        .clone()
        .expect("the handler was asked");
    assert!(related.expect("related-task _meta")["taskId"].is_string());
}

#[test]
fn a_handle_cancels_the_task() {
    let c = Client::connect(peers::npm().everything()).expect("connect");
    let task = c
        .call_tool_as_task(TOOL, json!({"topic": "x"}), &CallOptions::new())
        .expect("created");
    assert_eq!(task.status().expect("status").status, TaskStatus::Working);
    assert_eq!(task.cancel().expect("cancel").status, TaskStatus::Cancelled);
    match task.wait(Duration::from_secs(30)) {
        Err(Error::Task {
            kind: TaskErrorKind::Cancelled,
            ..
        }) => {}
        other => panic!("expected a cancelled task, got {other:?}"),
    }
}

#[cfg(feature = "cli")]
#[test]
fn mcpb_call_prints_the_report_and_shows_the_task_with_v() {
    let everything = peers::npm().everything();
    let mcp_blocking::config::TransportConfig::Stdio(stdio) = everything.transport() else {
        panic!("server-everything runs over stdio");
    };
    let line = std::iter::once(&stdio.command)
        .chain(&stdio.args)
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_mcpb"))
        .args([
            "--stdio",
            &line,
            "--timeout",
            "60",
            "-v",
            "call",
            TOOL,
            "topic=x",
        ])
        .env_remove("RUST_LOG")
        .output()
        .expect("run mcpb");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}\n--- stderr ---\n{err}");
    assert!(out.starts_with("# Research Report: x"), "{out}");
    assert!(err.contains(": working ("), "{err}");
}
