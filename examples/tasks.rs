//! Long work as tasks (MCP 2025-11-25), against the bundled fixture server started with `--tasks`
//! (this example's own executable, started again with `--serve-fixture`).
//!
//! | step | what it shows |
//! |---|---|
//! | `call_tool("task_steps")` | a tool whose `taskSupport` is `required` runs as a task by itself; progress and status on the way |
//! | `call_tool("task_fail")` | a failed task gives its `isError` result, content kept |
//! | `call_tool("task_ask")` | a task that needs input asks through the elicitation handler |
//! | `call_tool_as_task` + `wait` | a handle on the task: its id, its status, its result |
//! | `cancel` from another thread | a wait on one thread ends when another thread cancels |
//! | `list_tasks` | every task the server keeps |
//!
//! Run with `cargo run --example tasks`.

mod support;

use std::process::ExitCode;
use std::time::Duration;

use mcp_blocking::model::ElicitResult;
use mcp_blocking::{CallOptions, Client, Error};
use serde_json::json;

fn main() -> ExitCode {
    support::main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let client = Client::builder(support::fixture_server("fixture", &["--tasks"])?)
        .elicitation(|server, params| {
            println!("  [elicitation] {server} asks: {}", params.message);
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        })
        .connect()?;

    println!("call_tool(task_steps), a tool that requires a task:");
    let opts = CallOptions::new()
        .on_progress(|p| println!("  progress {} of {:?}", p.progress, p.total))
        .on_task_status(|t| println!("  task {} is {}", t.task_id, t.status));
    let result = client.call_tool_with("task_steps", json!({"steps": 3, "ms": 200}), &opts)?;
    println!("  -> {}", result.text());

    let failed = client.call_tool("task_fail", json!({}))?;
    println!(
        "call_tool(task_fail): isError {}, {:?}",
        failed.failed(),
        failed.text()
    );

    let asked = client.call_tool("task_ask", json!({"message": "who are you?"}))?;
    println!("call_tool(task_ask): {}", asked.text());

    let task = client.call_tool_as_task("task_slow", json!({"ms": 300}), &CallOptions::new())?;
    println!(
        "call_tool_as_task(task_slow): task {} is {}",
        task.id(),
        task.status()?.status
    );
    println!("  wait -> {}", task.wait(Duration::from_secs(10))?.text());

    let long = client.call_tool_as_task("task_slow", json!({"ms": 60000}), &CallOptions::new())?;
    let waited = std::thread::scope(|s| {
        let waiter = s.spawn(|| long.wait(Duration::from_secs(30)));
        let cancelled = long.cancel();
        println!(
            "cancel from the main thread: {:?}",
            cancelled.map(|t| t.status)
        );
        waiter.join().expect("the waiting thread")
    });
    match waited {
        Err(e @ Error::Task { .. }) => println!("  the waiting thread saw: {e}"),
        other => println!("  the waiting thread saw: {other:?}"),
    }

    println!("list_tasks:");
    for t in client.list_tasks()? {
        println!("  {} {}", t.task_id, t.status);
    }
    client.close()?;
    Ok(())
}
