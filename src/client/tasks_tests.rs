//! Tasks against the in-process `TestServer`: the transparent path of `call_tool`, failures,
//! a task's question to a handler, the low-level calls, a stale tool list, an early
//! `tasks/result`, and a server without tasks.

use std::sync::Arc;

use serde_json::json;

use super::task_calls::says_task_required;
use super::{CallOptions, TaskHandle};
use crate::error::Error;
use crate::error::TaskErrorKind;
use crate::model::{CallToolResult, TaskStatus, TaskSupport, Tool};

#[test]
fn task_required_answers_are_recognised() {
    let ts = CallToolResult::error(vec![crate::model::Content::text(
        "MCP error -32601: Tool x requires task augmentation (taskSupport: 'required')",
    )]);
    assert!(says_task_required(&Ok(ts)));
    let rpc = Err(Error::Rpc {
        server: "s".into(),
        code: crate::error::ErrorCode(-32600),
        message: "Task augmentation required for tools/call requests".into(),
        data: None,
    });
    assert!(says_task_required(&rpc));
    let other = Err(Error::Rpc {
        server: "s".into(),
        code: crate::error::ErrorCode(-32601),
        message: "Method not found".into(),
        data: None,
    });
    assert!(!says_task_required(&other));
    assert!(!says_task_required(&Ok(CallToolResult::default())));
}

#[test]
fn a_handle_is_send_and_sync() {
    fn is<T: Send + Sync>() {}
    is::<TaskHandle>();
}

use crate::handler::HandlerError;
use crate::model::{Content, ElicitResult};
use crate::testing::TestServer;

fn server() -> TestServer {
    let required = |name: &str| {
        Tool::new(name, json!({"type": "object"})).with_task_support(TaskSupport::Required)
    };
    TestServer::new("unit")
        .tool(required("report"), |call| {
            let topic = call.arguments()["topic"].as_str().unwrap_or("?").to_owned();
            Ok(CallToolResult::success(vec![Content::text(format!(
                "report on {topic}"
            ))]))
        })
        .tool(required("broken"), |_| {
            Ok(CallToolResult::error(vec![Content::text("it broke")]))
        })
        .tool(required("refused"), |_| {
            Err(HandlerError::new(crate::error::ErrorCode(-32001), "no way"))
        })
        .tool(required("asks"), |call| {
            let answer = call.ask(
                "elicitation/create",
                json!({"mode": "form", "message": "name?", "requestedSchema": {"type": "object"}}),
            )?;
            Ok(CallToolResult::success(vec![Content::text(
                answer.to_string(),
            )]))
        })
        .tool(Tool::new("plain", json!({"type": "object"})), |_| {
            Ok(CallToolResult::success(vec![Content::text("plain")]))
        })
}

#[test]
fn call_tool_runs_a_required_tool_as_a_task_against_the_test_server() {
    let s = server();
    let c = s.connect().expect("connect");
    assert_eq!(
        c.call_tool("report", json!({"topic": "tides"}))
            .unwrap()
            .text(),
        "report on tides"
    );
    let methods = s.received_methods();
    assert!(methods.contains(&"tools/list".to_owned()), "{methods:?}");
    assert!(methods.contains(&"tasks/result".to_owned()), "{methods:?}");
    let call = s
        .received()
        .into_iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the call");
    assert!(call["params"]["task"]["ttl"].is_u64(), "{call}");
    // A plain tool stays a plain call.
    assert_eq!(c.call_tool("plain", json!({})).unwrap().text(), "plain");
    let plain = s
        .received()
        .into_iter()
        .rev()
        .find(|m| m["method"] == "tools/call");
    assert!(plain.expect("the plain call")["params"]
        .get("task")
        .is_none());
}

#[test]
fn failures_keep_their_content_or_their_code() {
    let c = server().connect().expect("connect");
    let r = c.call_tool("broken", json!({})).expect("a result");
    assert!(r.failed());
    assert_eq!(r.text(), "it broke");
    match c.call_tool("refused", json!({})) {
        Err(Error::Rpc { code, message, .. }) => {
            assert_eq!(code.0, -32001);
            assert_eq!(message, "no way");
        }
        other => panic!("expected the handler's error, got {other:?}"),
    }
}

#[test]
fn a_task_s_question_reaches_the_elicitation_handler() {
    let c = server()
        .client_builder()
        .elicitation(|_: &str, _| {
            let mut m = serde_json::Map::new();
            m.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(m))
        })
        .connect()
        .expect("connect");
    let r = c.call_tool("asks", json!({})).expect("result");
    assert!(r.text().contains("Ada"), "{}", r.text());
}

#[test]
fn the_low_level_calls_reach_the_task() {
    let c = server().connect().expect("connect");
    let task = c
        .call_tool_as_task("report", json!({"topic": "x"}), &CallOptions::new())
        .expect("created");
    assert_eq!(task.task().status, TaskStatus::Working);
    assert_eq!(c.get_task(task.id()).unwrap().status, TaskStatus::Completed);
    assert_eq!(c.task_result(task.id()).unwrap().text(), "report on x");
    assert_eq!(c.list_tasks().unwrap().len(), 1);
    assert!(matches!(c.cancel_task(task.id()), Err(Error::Rpc { code, .. }) if code.0 == -32602));
    assert!(matches!(c.get_task("nope"), Err(Error::Rpc { code, .. }) if code.0 == -32602));
}

#[test]
fn a_stale_tool_list_is_learnt_again_when_the_server_asks_for_a_task() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let lists = Arc::new(AtomicUsize::new(0));
    let l = Arc::clone(&lists);
    let s = server().on_request("tools/list", move |_| {
        let tool = Tool::new("report", json!({"type": "object"}));
        // The first list predates the tool's need for a task.
        let tool = if l.fetch_add(1, Ordering::Relaxed) == 0 {
            tool
        } else {
            tool.with_task_support(TaskSupport::Required)
        };
        Ok(json!({ "tools": [tool] }))
    });
    let c = s.connect().expect("connect");
    assert_eq!(
        c.list_tools().unwrap()[0].task_support(),
        TaskSupport::Forbidden
    );
    let r = c
        .call_tool("report", json!({"topic": "y"}))
        .expect("retried as a task");
    assert_eq!(r.text(), "report on y");
    assert_eq!(lists.load(Ordering::Relaxed), 2);
}

#[test]
fn a_result_refused_while_the_task_runs_is_asked_again_once_it_ends() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let polls = Arc::new(AtomicUsize::new(0));
    let (p1, p2) = (Arc::clone(&polls), Arc::clone(&polls));
    let task = |status: &str| {
        json!({"taskId": "t1", "status": status, "createdAt": "", "lastUpdatedAt": "",
               "ttl": null, "pollInterval": 0})
    };
    let s = TestServer::new("early")
        .capabilities(json!({"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}))
        .tool(
            Tool::new("late", json!({"type": "object"})).with_task_support(TaskSupport::Required),
            |_| Ok(CallToolResult::default()),
        )
        .on_request("tools/call", move |_| {
            Ok(json!({ "task": task("working") }))
        })
        .on_request("tasks/get", move |_| {
            let n = p1.fetch_add(1, Ordering::Relaxed);
            Ok(task(if n < 2 { "working" } else { "completed" }))
        })
        .on_request("tasks/result", move |_| {
            if p2.load(Ordering::Relaxed) < 3 {
                Err(HandlerError::new(
                    crate::error::ErrorCode(-32602),
                    "not ready",
                ))
            } else {
                Ok(json!({"content": [{"type": "text", "text": "late"}]}))
            }
        });
    let c = s.connect().expect("connect");
    let r = c
        .call_tool("late", json!({}))
        .expect("the result, once ready");
    assert_eq!(r.text(), "late");
    let asked = s
        .received_methods()
        .iter()
        .filter(|m| *m == "tasks/result")
        .count();
    assert_eq!(asked, 2, "{:?}", s.received_methods());
}

#[test]
fn without_the_capability_nothing_is_sent_as_a_task() {
    let s = server().capabilities(json!({"tools": {}}));
    let c = s.connect().expect("connect");
    let e = c
        .call_tool_as_task("report", json!({}), &CallOptions::new())
        .expect_err("no tasks");
    assert!(
        matches!(
            &e,
            Error::Task {
                kind: TaskErrorKind::Unsupported,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("does not support tasks"), "{e}");
    assert!(!s.received_methods().contains(&"tools/call".to_owned()));
    // call_tool sends a plain call (the spec forbids a task here) and returns the answer.
    let plain = c.call_tool("report", json!({}));
    assert!(matches!(plain, Err(Error::Rpc { code, .. }) if code.0 == -32601));
    let call = s
        .received()
        .into_iter()
        .find(|m| m["method"] == "tools/call");
    assert!(call.expect("sent")["params"].get("task").is_none());
}
