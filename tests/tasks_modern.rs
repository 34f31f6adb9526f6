//! Tasks in the modern era (2026-07-28): the extension `io.modelcontextprotocol/tasks`, against
//! the fixture server started with `--modern --tasks` (which offers it in `server/discover`).
//! The scenarios of `tests/tasks.rs` that exist in this era, through the same public API: a
//! tool the server runs as a task goes through `call_tool` (status polled, a tool's own error
//! kept, an `input_required` task answered by the elicitation handler and `tasks/update`); the
//! explicit `TaskHandle` (status, wait, result, cancel from another thread); the call's timeout
//! sends `tasks/cancel`; `list_tasks` is `Error::Unsupported` (the extension has no list); a
//! modern server without the extension gets typed errors; the Hub goes through the same path.
//! Over Streamable HTTP (a scripted server): every request declares the extension, the
//! `tasks/*` requests carry `Mcp-Name: <taskId>`, and a task's `inputRequests` are answered by
//! the handlers with `tasks/update`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_blocking::config::{ProtocolEra, ProtocolMode};
use mcp_blocking::error::TaskErrorKind;
use mcp_blocking::model::{ElicitParams, ElicitResult, TaskStatus};
use mcp_blocking::{CallOptions, Client, Error, Hub, ServerConfig};
use serde_json::{json, Value};

mod common;
mod support_remote;

fn fixture(name: &str, args: &[&str], mode: ProtocolMode) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path())
        .with_args(["--modern"].iter().chain(args).copied())
        .with_timeout_secs(10.0)
        .with_protocol(mode)
}

fn connect(args: &[&str]) -> Client {
    let c = Client::connect(fixture("tasks", args, ProtocolMode::Modern))
        .expect("connect to the fixture server");
    assert_eq!(c.protocol_era(), Some(ProtocolEra::Modern));
    c
}

#[test]
fn a_tool_the_server_runs_as_a_task_returns_its_result_through_call_tool() {
    for mode in [ProtocolMode::Modern, ProtocolMode::Auto] {
        let c = Client::connect(fixture("tasks", &["--tasks"], mode)).expect("connect");
        assert_eq!(c.protocol_era(), Some(ProtocolEra::Modern));
        let statuses = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&statuses);
        let opts = CallOptions::new().on_task_status(move |t| s.lock().unwrap().push(t.clone()));
        let r = c
            .call_tool_with("task_steps", json!({"steps": 4, "ms": 100}), &opts)
            .expect("the task's result");
        assert_eq!(r.text(), "finished 4 steps");
        assert!(!r.failed());
        let statuses = statuses.lock().unwrap();
        assert!(statuses.len() >= 2, "polled at 100 ms for 400 ms");
        assert!(statuses
            .iter()
            .all(|t| t.status == TaskStatus::Working || t.status == TaskStatus::Completed));
        assert_eq!(statuses.last().unwrap().status, TaskStatus::Completed);
        // `pollIntervalMs` is read as the poll interval, `ttlMs` as the ttl.
        assert_eq!(statuses[0].poll_interval, Some(100));
        assert_eq!(statuses[0].ttl, None);
        // Ordinary tools are still answered at once.
        assert_eq!(
            c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
            "x"
        );
    }
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
    assert_eq!(task.status().expect("status").status, TaskStatus::Working);
    let r = task.wait(Duration::from_secs(10)).expect("result");
    assert_eq!(r.text(), "done after 300 ms");
    assert_eq!(task.status().expect("status").status, TaskStatus::Completed);
    assert_eq!(task.result().expect("again").text(), "done after 300 ms");
    assert_eq!(
        c.get_task(task.id()).expect("get").status,
        TaskStatus::Completed
    );
    assert_eq!(
        c.task_result(task.id()).expect("by id").text(),
        "done after 300 ms"
    );
    // The extension's result has no related-task `_meta`.
    assert!(r.meta.is_none(), "{:?}", r.meta);
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
        matches!(&e, Error::Timeout { method, .. } if method == "tasks/get"),
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
    // Cancelling again is only acknowledged (cooperative): the task stays cancelled.
    assert_eq!(
        task.cancel().expect("acknowledged").status,
        TaskStatus::Cancelled
    );
    assert_eq!(
        c.cancel_task(task.id()).expect("by id").status,
        TaskStatus::Cancelled
    );
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
    // The fixture numbers its tasks: the one the call made was cancelled.
    let task = c.get_task("task-1").expect("the task");
    assert_eq!(task.status, TaskStatus::Cancelled);
    assert_eq!(
        task.status_message.as_deref(),
        Some("cancelled by the client")
    );
    assert_eq!(
        c.call_tool("echo", json!({"text": "ok"})).unwrap().text(),
        "ok"
    );
}

#[test]
fn a_tool_error_in_a_task_is_a_completed_task_with_its_is_error_content() {
    let c = connect(&["--tasks"]);
    let r = c
        .call_tool("task_fail", json!({}))
        .expect("a result, not an error");
    assert!(r.failed());
    assert_eq!(r.text(), "the task failed on purpose");
}

#[test]
fn an_input_required_task_asks_through_the_elicitation_handler() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let builder = |decline: bool| {
        let s = Arc::clone(&s);
        Client::builder(fixture("asker", &["--tasks"], ProtocolMode::Modern)).elicitation(
            move |_: &str, p: ElicitParams| {
                s.lock().unwrap().push(p.message.clone());
                if decline {
                    return Ok(ElicitResult::decline());
                }
                let mut content = serde_json::Map::new();
                content.insert("name".into(), json!("Ada"));
                Ok(ElicitResult::accept(content))
            },
        )
    };
    let c = builder(false).connect().expect("connect");
    let r = c
        .call_tool("task_ask", json!({"message": "who?"}))
        .expect("result");
    assert!(!r.failed(), "{}", r.text());
    assert!(r.text().starts_with("answer: "), "{}", r.text());
    assert!(r.text().contains("\"Ada\""), "{}", r.text());
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["who?".to_owned()],
        "asked once: the same input request key is not answered twice"
    );
    // A task that fails (here: the fixture fails it when the user declines) gives its
    // JSON-RPC error.
    let c = builder(true).connect().expect("connect");
    let e = c
        .call_tool("task_ask", json!({"message": "who?"}))
        .expect_err("declined");
    assert!(
        matches!(&e, Error::Rpc { code, message, .. }
            if code.0 == -32603 && message.contains("declined")),
        "{e}"
    );
}

#[test]
fn list_tasks_does_not_exist_in_the_modern_era() {
    let c = connect(&["--tasks"]);
    for r in [
        c.list_tasks().map(|_| ()),
        c.list_tasks_page(None).map(|_| ()),
    ] {
        match r {
            Err(Error::Unsupported { era, feature, .. }) => {
                assert_eq!(era, ProtocolEra::Modern);
                assert_eq!(feature, "tasks/list");
            }
            other => panic!("expected Error::Unsupported, got {other:?}"),
        }
    }
}

#[test]
fn a_modern_server_without_the_extension_gets_typed_errors_and_plain_calls() {
    let c = connect(&[]);
    let unsupported = |r: Result<(), Error>| match r {
        Err(Error::Task {
            kind: TaskErrorKind::Unsupported,
            server,
            detail,
            ..
        }) => {
            assert_eq!(server, "tasks");
            assert!(detail.contains("io.modelcontextprotocol/tasks"), "{detail}");
        }
        other => panic!("expected an unsupported-task error, got {other:?}"),
    };
    unsupported(
        c.call_tool_as_task("echo", json!({"text": "x"}), &CallOptions::new())
            .map(|_| ()),
    );
    unsupported(c.cancel_task("task-1").map(|_| ()));
    unsupported(c.get_task("task-1").map(|_| ()));
    unsupported(c.task_result("task-1").map(|_| ()));
    assert!(matches!(
        c.list_tasks(),
        Err(Error::Unsupported {
            era: ProtocolEra::Modern,
            ..
        })
    ));
    assert_eq!(
        c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
        "x"
    );
}

#[test]
fn a_raw_call_gets_the_flat_task_and_tasks_result_is_gone() {
    // A raw request declares the extension too (the server offers it): its answer is the
    // task itself, `resultType` and all.
    let c = connect(&["--tasks"]);
    let raw = c
        .request(
            "tools/call",
            Some(json!({"name": "task_slow", "arguments": {"ms": 10}})),
            &CallOptions::new(),
        )
        .expect("raw");
    assert_eq!(raw["resultType"], "task");
    assert!(raw["ttlMs"].is_null(), "{raw}");
    assert_eq!(raw["pollIntervalMs"], 100);
    assert!(raw.get("task").is_none(), "flat, not nested: {raw}");
    // The legacy `tasks/result` does not exist under the extension.
    let e = c
        .request(
            "tasks/result",
            Some(json!({"taskId": raw["taskId"]})),
            &CallOptions::new(),
        )
        .expect_err("removed");
    assert!(
        matches!(e, Error::Rpc { code, .. } if code.0 == -32601),
        "{e}"
    );
}

#[test]
fn the_hub_runs_a_task_tool_through_its_client() {
    let hub = Hub::new([
        fixture("hubbed", &["--tasks"], ProtocolMode::Modern),
        fixture("plain", &[], ProtocolMode::Modern),
    ]);
    assert!(hub.connect_all().is_empty());
    let r = hub
        .call_tool("task_steps", json!({"steps": 2, "ms": 10}))
        .expect("through the hub");
    assert_eq!(r.text(), "finished 2 steps");
    assert!(
        hub.list_tasks().expect("no server lists tasks").is_empty(),
        "no modern server has a task list"
    );
}

/// A modern Streamable HTTP server offering the extension: `tools/call` makes task `t-9`, whose
/// first `tasks/get` asks for roots (`inputRequests`), and the next ones say it completed.
fn tasks_http() -> support_remote::HttpServer {
    let gets = Arc::new(AtomicUsize::new(0));
    support_remote::HttpServer::start(move |req, conn| {
        if req.method != "POST" {
            conn.respond(405, &[], b"");
            return;
        }
        let msg = req.json();
        let id = msg["id"].clone();
        if msg.get("id").is_none() {
            conn.accepted();
            return;
        }
        let task = |status: &str| {
            json!({"taskId": "t-9", "status": status, "createdAt": "2026-01-01T00:00:00Z",
                   "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 10})
        };
        let result: Value = match msg["method"].as_str().unwrap_or("") {
            "server/discover" => json!({"supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "resultType": "complete"}),
            "tools/call" => {
                let mut t = task("working");
                t["resultType"] = json!("task");
                t
            }
            "tasks/get" if gets.fetch_add(1, Ordering::SeqCst) == 0 => {
                let mut t = task("input_required");
                t["resultType"] = json!("complete");
                t["inputRequests"] = json!({"where": {"method": "roots/list", "params": {}}});
                t
            }
            "tasks/get" => {
                let mut t = task("completed");
                // The SEP's examples put "task" here; the text says "complete": both are read.
                t["resultType"] = json!("task");
                t["result"] = json!({"content": [{"type": "text", "text": "rooted"}]});
                t
            }
            "tasks/update" => json!({"resultType": "complete"}),
            other => {
                let body = json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": format!("no {other}")}});
                conn.json(404, &[], &body);
                return;
            }
        };
        conn.json(
            200,
            &[],
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    })
}

#[test]
fn over_streamable_http_task_requests_are_routed_by_task_id_and_declare_the_extension() {
    let srv = tasks_http();
    let cfg = ServerConfig::http("web", srv.url("/mcp"))
        .with_timeout_secs(5.0)
        .with_protocol(ProtocolMode::Modern);
    let c = Client::builder(cfg)
        .roots(vec![mcp_blocking::model::Root::new("file:///here")])
        .connect()
        .expect("connect");
    let r = c
        .call_tool("anything", json!({}))
        .expect("the task's result");
    assert_eq!(r.text(), "rooted");
    c.close().unwrap();
    let reqs = srv.requests();
    let methods: Vec<String> = reqs
        .iter()
        .filter(|r| r.json().get("id").is_some())
        .map(|r| r.rpc_method())
        .collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "tools/call",
            "tasks/get",
            "tasks/update",
            "tasks/get"
        ]
    );
    for r in &reqs {
        let m = r.json();
        if m.get("id").is_none() || m["method"] == "server/discover" {
            continue;
        }
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
                ["io.modelcontextprotocol/tasks"],
            json!({}),
            "{m}"
        );
        assert!(
            m["params"].get("task").is_none(),
            "no legacy task parameter"
        );
        assert_eq!(r.header("mcp-method"), m["method"].as_str());
        if m["method"]
            .as_str()
            .is_some_and(|x| x.starts_with("tasks/"))
        {
            assert_eq!(r.header("mcp-name"), Some("t-9"), "{m}");
        }
        if m["method"] == "tasks/update" {
            assert_eq!(
                m["params"]["inputResponses"]["where"]["roots"][0]["uri"],
                json!("file:///here")
            );
        }
    }
}
