//! Deadlines that hold on every path: with progress and reset-on-progress asked for (what
//! `mcpb` always asks), a server that stalls ends the call at its request timeout on Streamable
//! HTTP and legacy SSE, each progress for the call moves the deadline on by the request
//! timeout, the maximum total caps those moves, and the progress callback sees each update as
//! it comes; `mcpb call` ends at its `--timeout`; a task whose `tasks/result` never comes ends
//! at the call's timeout (HTTP and stdio); the input rounds of a 2026-07-28 call share one
//! deadline; a `TestServer` handler that blocks times out its call, and only that call.

mod common;
mod support_remote;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::mcpb::{command, output_within};
use crossbeam_channel::{Receiver, Sender};
use mcp_blocking::config::ProtocolMode;
use mcp_blocking::error::TaskErrorKind;
use mcp_blocking::model::{CallToolResult, Content, Tool};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Value};
use support_remote::mcp::{answer, McpSse};
use support_remote::{Conn, HttpServer};

/// The request timeout of these calls.
const TIMEOUT: Duration = Duration::from_secs(1);
/// Their maximum total, far beyond what any of them may take.
const TOTAL: Duration = Duration::from_secs(10);
/// How much later than its deadline a call may return.
const SLACK: Duration = Duration::from_millis(1500);

/// How a loopback Streamable HTTP server answers `tools/call` (everything else is answered
/// normally, as JSON).
type CallHandler = dyn Fn(&Value, &mut Conn) + Send + Sync;

/// A Streamable HTTP server at `/mcp` whose `tools/call` is answered by `call`.
fn http_server(call: impl Fn(&Value, &mut Conn) + Send + Sync + 'static) -> HttpServer {
    let call: Arc<CallHandler> = Arc::new(call);
    HttpServer::start(move |req, conn| {
        if req.method != "POST" {
            conn.respond(405, &[], b"");
            return;
        }
        let msg = req.json();
        if msg["method"] == "tools/call" {
            call(&msg, conn);
        } else if let Some(a) = answer(&msg) {
            conn.json(200, &[], &a);
        } else {
            conn.accepted();
        }
    })
}

fn connect(url: &str) -> Client {
    let cfg = ServerConfig::http("stall", url).with_timeout_secs(TIMEOUT.as_secs_f64());
    Client::connect(cfg).expect("connect")
}

/// Progress asked for, the timeout reset on it, and a maximum total: `mcpb`'s options.
fn resetting(seen: Option<Sender<f64>>) -> CallOptions {
    CallOptions::new()
        .on_progress(move |p| {
            if let Some(tx) = &seen {
                let _ = tx.send(p.progress);
            }
        })
        .reset_timeout_on_progress(true)
        .max_total_timeout(TOTAL)
}

/// A progress notification for the call `msg`.
fn progress(msg: &Value, n: u32) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": msg["params"]["_meta"]["progressToken"], "progress": n}})
}

/// Calls `echo` with reset-on-progress and checks it times out at the request timeout.
fn assert_times_out_at_the_request_timeout(client: &Client) {
    let start = Instant::now();
    let r = client.call_tool_with("echo", json!({"text": "x"}), &resetting(None));
    let took = start.elapsed();
    assert!(
        matches!(&r, Err(Error::Timeout { server, .. }) if server == "stall"),
        "{r:?}"
    );
    assert!(took < TIMEOUT + SLACK, "returned after {took:?}");
}

#[test]
fn http_event_stream_headers_then_nothing_end_at_the_request_timeout() {
    let srv = http_server(|_msg, conn| {
        conn.sse_start(&[]);
        conn.wait_for_peer_close();
    });
    let client = connect(&srv.url("/mcp"));
    assert_times_out_at_the_request_timeout(&client);
    // The connection is usable afterwards.
    client.list_tools().expect("list after the timeout");
    client.close().expect("close");
}

#[test]
fn http_no_answer_at_all_ends_at_the_request_timeout() {
    let srv = http_server(|_msg, conn| conn.wait_for_peer_close());
    let client = connect(&srv.url("/mcp"));
    assert_times_out_at_the_request_timeout(&client);
    client.close().expect("close");
}

#[test]
fn http_half_an_event_then_nothing_ends_at_the_request_timeout() {
    let srv = http_server(|msg, conn| {
        conn.sse_start(&[]);
        let _ = conn.event(None, &progress(msg, 1));
        let _ = conn.chunk("event: message\ndata: {\"jsonrpc\":");
        conn.wait_for_peer_close();
    });
    let client = connect(&srv.url("/mcp"));
    assert_times_out_at_the_request_timeout(&client);
    client.close().expect("close");
}

/// Waits up to `within` for the callback to have seen progress `n`.
fn seen(rx: &Receiver<f64>, n: f64, within: Duration) -> bool {
    let until = Instant::now() + within;
    while let Ok(p) = rx.recv_deadline(until) {
        if p >= n {
            return true;
        }
    }
    false
}

#[test]
fn http_progress_reaches_the_callback_as_it_comes_and_moves_the_deadline_on() {
    // Each update is sent only once the callback has seen the one before (or after 5 s): an
    // answer read whole before the callbacks run would take 5 s a step and miss each.
    let (seen_tx, seen_rx) = crossbeam_channel::unbounded::<f64>();
    let in_time = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&in_time);
    let srv = http_server(move |msg, conn| {
        conn.sse_start(&[]);
        for n in 1..=4 {
            let _ = conn.event(None, &progress(msg, n));
            record
                .lock()
                .unwrap()
                .push(seen(&seen_rx, f64::from(n), Duration::from_secs(5)));
            // Updates 0.6 s apart: together longer than the request timeout.
            std::thread::sleep(Duration::from_millis(600));
        }
        let id = &msg["id"];
        let done = json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": "done"}]}});
        let _ = conn.event(None, &done);
        conn.sse_end();
    });
    let client = connect(&srv.url("/mcp"));
    let r = client.call_tool_with("echo", json!({"text": "x"}), &resetting(Some(seen_tx)));
    assert_eq!(r.expect("answered after 2.4 s of progress").text(), "done");
    assert_eq!(*in_time.lock().unwrap(), [true; 4]);
    client.close().expect("close");
}

#[test]
fn http_the_maximum_total_caps_what_progress_extends() {
    let srv = http_server(|msg, conn| {
        conn.sse_start(&[]);
        for n in 1.. {
            if conn.event(None, &progress(msg, n)).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let client = connect(&srv.url("/mcp"));
    let total = Duration::from_secs(2);
    let start = Instant::now();
    let r = client.call_tool_with(
        "echo",
        json!({"text": "x"}),
        &resetting(None).max_total_timeout(total),
    );
    let took = start.elapsed();
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(
        took >= total && took < total + SLACK,
        "returned after {took:?}"
    );
    client.close().expect("close");
}

#[test]
fn legacy_sse_a_call_never_answered_ends_at_the_request_timeout() {
    let srv = McpSse::start("/messages");
    let cfg = ServerConfig::sse("stall", srv.server.url("/sse")).with_timeout_secs(1.0);
    let client = Client::connect(cfg).expect("connect");
    let start = Instant::now();
    let r = client.call_tool_with("hang", json!({}), &resetting(None));
    let took = start.elapsed();
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(took < TIMEOUT + SLACK, "returned after {took:?}");
    client.close().expect("close");
}

/// `mcpb --url U --timeout 2 call echo text=x` against a server that stalls on `tools/call`.
fn mcpb_call_returns_by_its_timeout(srv: &HttpServer) {
    let url = srv.url("/mcp");
    let args = ["--url", &url, "--timeout", "2", "call", "echo", "text=x"];
    // Bounded by far more than the timeout: a call the stall holds fails, not hangs, the test.
    let (out, took) = output_within(command(&args), "mcpb call", Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("timed out"), "{stderr}");
    assert!(took < Duration::from_secs(2) + SLACK, "mcpb took {took:?}");
}

#[test]
fn mcpb_call_ends_at_its_timeout_on_a_stalled_event_stream() {
    let srv = http_server(|_msg, conn| {
        conn.sse_start(&[]);
        conn.wait_for_peer_close();
    });
    mcpb_call_returns_by_its_timeout(&srv);
}

#[test]
fn mcpb_call_ends_at_its_timeout_when_nothing_answers() {
    let srv = http_server(|_msg, conn| conn.wait_for_peer_close());
    mcpb_call_returns_by_its_timeout(&srv);
}

#[test]
fn modern_input_rounds_share_one_deadline() {
    // Every `tools/call` asks for input again after 1.5 s: under a 2 s timeout the call ends at
    // 2 s, in its second round, not after a fresh timeout for each round.
    let srv = HttpServer::start(|req, conn| {
        if req.method != "POST" {
            conn.respond(405, &[], b"");
            return;
        }
        let msg = req.json();
        let result = match msg["method"].as_str().unwrap_or("") {
            "server/discover" => json!({"supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "resultType": "complete"}),
            "tools/call" => {
                std::thread::sleep(Duration::from_millis(1500));
                json!({"resultType": "input_required", "inputRequests": {},
                    "requestState": "again"})
            }
            _ if msg.get("id").is_none() => {
                conn.accepted();
                return;
            }
            _ => json!({"tools": [], "resultType": "complete"}),
        };
        conn.json(
            200,
            &[],
            &json!({"jsonrpc": "2.0", "id": msg["id"], "result": result}),
        );
    });
    let cfg = ServerConfig::http("stall", srv.url("/mcp"))
        .with_timeout_secs(2.0)
        .with_protocol(ProtocolMode::Modern);
    let client = Client::connect(cfg).expect("connect");
    for opts in [CallOptions::new(), resetting(None)] {
        let start = Instant::now();
        let r = client.call_tool_with("echo", json!({}), &opts);
        let took = start.elapsed();
        assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
        assert!(
            took < Duration::from_secs(2) + SLACK,
            "returned after {took:?}"
        );
    }
    client.close().expect("close");
}

/// A task the server keeps `working`.
const WORKING_TASK: &str = r#"{"taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttl":null,"pollInterval":100}"#;

/// The result of each method of a server with one task-required tool, `slow`, whose task never
/// ends and whose `tasks/result` is never answered (`None`).
fn deaf_task_server_result(method: &str) -> Option<String> {
    let r = match method {
        "initialize" => r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"requests":{"tools":{"call":{}}},"cancel":{}}},"serverInfo":{"name":"deaf","version":"1"}}"#.to_owned(),
        "tools/list" => r#"{"tools":[{"name":"slow","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}"#.to_owned(),
        "tools/call" => format!(r#"{{"task":{WORKING_TASK}}}"#),
        "tasks/get" => WORKING_TASK.to_owned(),
        "tasks/cancel" => WORKING_TASK.replace("working", "cancelled"),
        _ => return None,
    };
    Some(r)
}

/// A Streamable HTTP server answering each method with `result`, except `tasks/result`: it is
/// never answered (after the event stream's headers when `stall_with_headers`) until the client
/// hangs up. Notifications get 202, a GET 405.
fn deaf_task_http_server(
    stall_with_headers: bool,
    result: fn(&str) -> Option<String>,
) -> HttpServer {
    HttpServer::start(move |req, conn| {
        if req.method != "POST" {
            conn.respond(405, &[], b"");
            return;
        }
        let msg = req.json();
        let method = msg["method"].as_str().unwrap_or("");
        match result(method) {
            Some(r) => {
                let r: Value = serde_json::from_str(&r).expect("JSON");
                conn.json(
                    200,
                    &[],
                    &json!({"jsonrpc": "2.0", "id": msg["id"], "result": r}),
                );
            }
            None if method == "tasks/result" => {
                if stall_with_headers {
                    conn.sse_start(&[]);
                }
                conn.wait_for_peer_close();
            }
            None => conn.accepted(),
        }
    })
}

/// Calls the task-required tool `slow` under a 2 s timeout with `mcpb`'s options: the call
/// ends at its timeout although `tasks/result` is never answered.
fn assert_task_call_ends_at_its_timeout(client: &Client) {
    let timeout = Duration::from_secs(2);
    let start = Instant::now();
    let r = client.call_tool_with("slow", json!({}), &resetting(None).timeout(timeout));
    let took = start.elapsed();
    assert!(
        matches!(&r, Err(Error::Timeout { method, .. }) if method == "tools/call"),
        "{r:?}"
    );
    assert!(took < timeout + SLACK, "returned after {took:?}");
}

#[test]
fn http_a_task_whose_result_never_comes_ends_at_the_call_timeout() {
    for stall_with_headers in [false, true] {
        let srv = deaf_task_http_server(stall_with_headers, deaf_task_server_result);
        let client = connect(&srv.url("/mcp"));
        assert_task_call_ends_at_its_timeout(&client);
        let methods: Vec<String> = srv.requests().iter().map(|r| r.rpc_method()).collect();
        assert!(methods.iter().any(|m| m == "tasks/cancel"), "{methods:?}");
        client.close().expect("close");
    }
}

#[test]
#[cfg(unix)] // The deaf task server is an `sh` script.
fn stdio_a_task_whose_result_never_comes_ends_at_the_call_timeout() {
    // The server: one line in, one line out (none for `tasks/result` and notifications).
    let mut script = String::from(
        "while IFS= read -r line; do\n  id=$(printf '%s' \"$line\" | sed -n 's/.*\"id\":\\([0-9]*\\).*/\\1/p')\n  case \"$line\" in\n",
    );
    for method in [
        "initialize",
        "tools/list",
        "tools/call",
        "tasks/get",
        "tasks/cancel",
    ] {
        let result = deaf_task_server_result(method).expect("answered");
        script.push_str(&format!(
            "    *'\"method\":\"{method}\"'*) printf '%s\\n' \"{{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":$id,\\\"result\\\":{}}}\" ;;\n",
            result.replace('"', "\\\"")
        ));
    }
    script.push_str("  esac\ndone\n");
    let cfg = ServerConfig::stdio("stall", "sh")
        .with_args(["-c", script.as_str()])
        .with_timeout_secs(2.0);
    let client = Client::connect(cfg).expect("connect");
    // Every run: who reads the pipe when the time runs out differs from run to run.
    for _ in 0..3 {
        assert_task_call_ends_at_its_timeout(&client);
    }
    client.close().expect("close");
}

#[test]
fn a_test_server_handler_that_blocks_holds_only_its_call_until_the_timeout() {
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(1);
    let server = TestServer::new("stall")
        .tool(
            Tool::new("block", json!({"type": "object"})),
            move |_call| {
                // Blocks 800 ms (or until released), far past the 200 ms call timeout.
                let _ = release_rx.recv_timeout(Duration::from_millis(800));
                Ok(CallToolResult::success(vec![Content::text("late")]))
            },
        )
        .tool(Tool::new("quick", json!({"type": "object"})), |_call| {
            Ok(CallToolResult::success(vec![Content::text("quick")]))
        });
    let client = Arc::new(server.connect().expect("connect"));
    let timeout = Duration::from_millis(200);
    let opts = CallOptions::new().timeout(timeout);
    let blocked = {
        let client = Arc::clone(&client);
        let opts = opts.clone();
        std::thread::Builder::new()
            .name("blocked-call".into())
            .spawn(move || {
                let start = Instant::now();
                let r = client.call_tool_with("block", json!({}), &opts);
                (r, start.elapsed())
            })
            .expect("thread")
    };
    // Another call is answered meanwhile: only the blocked call is held.
    let quick = client.call_tool_with("quick", json!({}), &opts);
    assert_eq!(quick.expect("quick").text(), "quick");
    let (r, took) = blocked.join().expect("join");
    assert!(
        matches!(&r, Err(Error::Timeout { server, .. }) if server == "stall"),
        "{r:?}"
    );
    assert!(took < timeout + SLACK, "returned after {took:?}");
    let _ = release_tx.send(());
    client.close().expect("close");
}

#[test]
fn http_closing_wakes_a_call_reading_a_stalled_event_stream() {
    let (started_tx, started_rx) = crossbeam_channel::bounded::<()>(1);
    let srv = http_server(move |_msg, conn| {
        conn.sse_start(&[]);
        let _ = started_tx.try_send(());
        conn.wait_for_peer_close();
    });
    let cfg = ServerConfig::http("stall", srv.url("/mcp")).with_timeout_secs(30.0);
    let client = Arc::new(Client::connect(cfg).expect("connect"));
    let call = {
        let client = Arc::clone(&client);
        std::thread::Builder::new()
            .name("stalled-call".into())
            .spawn(move || client.call_tool_with("echo", json!({}), &resetting(None)))
            .expect("thread")
    };
    started_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the call reached the server");
    let start = Instant::now();
    client.close().expect("close");
    let r = call.join().expect("join");
    let took = start.elapsed();
    assert!(matches!(r, Err(Error::Closed { .. })), "{r:?}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn websocket_a_call_never_answered_ends_at_the_request_timeout() {
    let srv = support_remote::ws::WsServer::start(true);
    let cfg = ServerConfig::websocket("stall", srv.url()).with_timeout_secs(1.0);
    let client = Client::connect(cfg).expect("connect");
    let start = Instant::now();
    let r = client.call_tool_with("hang", json!({}), &resetting(None));
    let took = start.elapsed();
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    assert!(took < TIMEOUT + SLACK, "returned after {took:?}");
    client.close().expect("close");
}

#[test]
fn http_a_task_cancelled_elsewhere_ends_the_call_at_once_though_its_result_stalls() {
    for stall_with_headers in [false, true] {
        let srv = deaf_task_http_server(stall_with_headers, |method| match method {
            // Cancelled by somebody else: `tasks/get` says so, `tasks/result` never does.
            "tasks/get" => Some(WORKING_TASK.replace("working", "cancelled")),
            _ => deaf_task_server_result(method),
        });
        let cfg = ServerConfig::http("stall", srv.url("/mcp")).with_timeout_secs(10.0);
        let client = Client::connect(cfg).expect("connect");
        let start = Instant::now();
        let r = client.call_tool_with("slow", json!({}), &resetting(None));
        let took = start.elapsed();
        assert!(
            matches!(&r, Err(Error::Task { kind, .. }) if *kind == TaskErrorKind::Cancelled),
            "{r:?}"
        );
        // Its `tasks/result` reader was stopped, not waited for until the 10 s timeout.
        assert!(took < Duration::from_secs(3), "returned after {took:?}");
        client.close().expect("close");
    }
}

/// A Streamable HTTP server that leaves unanswered every POST whose method `stalls` accepts
/// (it waits for the client to hang up), and answers the rest normally.
fn stalling_server(stalls: impl Fn(&str) -> bool + Send + Sync + 'static) -> HttpServer {
    HttpServer::start(move |req, conn| {
        if req.method != "POST" {
            conn.respond(405, &[], b"");
            return;
        }
        let msg = req.json();
        if stalls(msg["method"].as_str().unwrap_or("")) {
            conn.wait_for_peer_close();
        } else if let Some(a) = answer(&msg) {
            conn.json(200, &[], &a);
        } else {
            conn.accepted();
        }
    })
}

/// The timeout of the connecting tests: longer than the slack, so that a probe and a
/// handshake that each take a whole timeout overshoot the bound.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[test]
fn connecting_in_auto_mode_to_a_server_that_answers_nothing_ends_at_the_timeout() {
    // The `server/discover` probe and `initialize` share one deadline: the probe left
    // unanswered does not give `initialize` a second whole timeout.
    let srv = stalling_server(|_| true);
    let cfg = ServerConfig::http("silent", srv.url("/mcp"))
        .with_timeout(CONNECT_TIMEOUT)
        .with_protocol(ProtocolMode::Auto);
    let start = Instant::now();
    let Err(err) = Client::connect(cfg) else {
        panic!("connected to a server that answers nothing");
    };
    let took = start.elapsed();
    assert!(
        took < CONNECT_TIMEOUT + Duration::from_secs(1),
        "connecting took {took:?} with a {CONNECT_TIMEOUT:?} timeout: {err}"
    );
    assert!(
        err.to_string().contains("silent"),
        "names the server: {err}"
    );
}

#[test]
fn a_server_that_leaves_the_probe_unanswered_still_connects_within_the_timeout() {
    let srv = stalling_server(|m| m == "server/discover");
    let cfg = ServerConfig::http("quiet-probe", srv.url("/mcp"))
        .with_timeout(CONNECT_TIMEOUT)
        .with_protocol(ProtocolMode::Auto);
    let start = Instant::now();
    let client = Client::connect(cfg).expect("initialize is answered");
    assert!(start.elapsed() < CONNECT_TIMEOUT, "{:?}", start.elapsed());
    assert!(client.list_tools().is_ok());
    client.close().expect("close");
}

/// Auto mode, a connection to a server that leaves `server/discover` unanswered while another
/// connection to it, with a longer timeout, is probing it first: the wait for that first probe's
/// finding ends with this connection's own share of its timeout, so it still connects within
/// its timeout rather than the other's.
#[test]
fn waiting_for_a_stalled_first_probe_ends_within_the_waiting_connections_timeout() {
    let (probed, first_probe) = crossbeam_channel::unbounded::<()>();
    let srv = stalling_server(move |m| {
        let stalls = m == "server/discover";
        if stalls {
            let _ = probed.send(());
        }
        stalls
    });
    let url = srv.url("/mcp");
    // The first probe may take half of this: longer than the waiting connection's timeout.
    let patient = CONNECT_TIMEOUT * 3;
    std::thread::scope(|s| {
        let first = std::thread::Builder::new()
            .name("connect-patient".into())
            .spawn_scoped(s, || {
                let cfg = ServerConfig::http("stalled-probe", url.clone())
                    .with_timeout(patient)
                    .with_protocol(ProtocolMode::Auto);
                Client::connect(cfg).map(|c| c.close())
            })
            .unwrap();
        first_probe
            .recv_timeout(patient)
            .expect("the first connection probes");
        let cfg = ServerConfig::http("stalled-probe", url.clone())
            .with_timeout(CONNECT_TIMEOUT)
            .with_protocol(ProtocolMode::Auto);
        let start = Instant::now();
        let client = Client::connect(cfg).expect("initialize is answered");
        let took = start.elapsed();
        assert!(
            took < CONNECT_TIMEOUT + Duration::from_secs(1),
            "connecting took {took:?} with a {CONNECT_TIMEOUT:?} timeout"
        );
        client.close().expect("close");
        let closed = first.join().unwrap().expect("the first connects too");
        closed.expect("close");
    });
}

/// A stdio server in `sh` that answers `initialize` and every other request at once, and
/// works on `tools/call` for a minute without reading its stdin meanwhile.
#[cfg(unix)]
const BUSY_SERVER: &str = r#"
while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/^.*"id":\([0-9][0-9]*\).*$/\1/p')
  case "$line" in
    *'"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"busy","version":"1"}}}\n' "$id" ;;
    *'"tools/call"'*) sleep 60 ;;
    *) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}\n' "$id" ;;
  esac
done
"#;

#[test]
#[cfg(unix)] // The busy server is an `sh` script.
fn closing_after_a_call_was_given_up_does_not_wait_for_the_busy_server_to_read() {
    // The server cannot see its stdin close while it works on the abandoned call: closing
    // sends SIGTERM after half a second instead of waiting the 2 s grace for it to notice first.
    let cfg = ServerConfig::stdio("busy", "sh")
        .with_args(["-c", BUSY_SERVER])
        .with_timeout(TIMEOUT)
        .with_protocol(ProtocolMode::Legacy);
    let client = Client::connect(cfg).expect("connect");
    let err = client
        .call_tool("work", json!({}))
        .expect_err("never answered");
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    let start = Instant::now();
    client.close().expect("close");
    let took = start.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "closing a server busy with an abandoned call took {took:?}"
    );
}

#[test]
fn a_stdio_server_that_never_answers_fails_connect_at_the_timeout() {
    // The fixture server with `--sleep` speaks no MCP and never reads its stdin: a failed
    // handshake ends it at once rather than waiting a grace period for it to notice its stdin
    // closed.
    let cfg = ServerConfig::stdio("mute", common::fixture::path())
        .with_args(["--sleep", "60"])
        .with_timeout(TIMEOUT)
        .with_protocol(ProtocolMode::Legacy);
    let start = Instant::now();
    let Err(err) = Client::connect(cfg) else {
        panic!("connected to a server that says nothing");
    };
    let took = start.elapsed();
    assert!(err.to_string().contains("mute"), "{err}");
    assert!(
        took < TIMEOUT + Duration::from_secs(1),
        "connecting took {took:?} with a {TIMEOUT:?} timeout: {err}"
    );
}
