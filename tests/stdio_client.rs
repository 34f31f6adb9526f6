//! The stdio client against the fixture server: handshake, every method, concurrency, timeouts,
//! crashes, floods, noise, large results, stuck servers, process clean-up, server requests.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_blocking::error::{ConnectError, ConnectErrorKind, ErrorCode, ProtocolErrorKind};
use mcp_blocking::handler::{notification_channel, Notification, NOTIFICATION_CHANNEL_CAPACITY};
use mcp_blocking::model::{
    CompletionReference, Content, CreateMessageResult, ElicitResult, LoggingLevel,
    ResourceContents, Root,
};
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Value};

mod common;

fn fixture(name: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path())
        .with_args(args.iter().copied())
        .with_timeout_secs(10.0)
}

fn connect(args: &[&str]) -> Client {
    Client::connect(fixture("fixture", args)).expect("connect to the fixture server")
}

fn text_json(client: &Client, tool: &str, args: Value) -> Value {
    let r = client.call_tool(tool, args).expect("tool call");
    serde_json::from_str(&r.text())
        .unwrap_or_else(|e| panic!("{tool} returned non-JSON {:?}: {e}", r.text()))
}

fn pid_alive(pid: u32) -> bool {
    common::process::running(pid)
}

#[test]
fn handshake_exposes_version_info_capabilities_and_instructions() {
    let c = connect(&[]);
    assert!(c.is_connected());
    assert_eq!(c.protocol_version().as_deref(), Some("2025-11-25"));
    let info = c.server_info().unwrap();
    assert_eq!(info.name, "mcp-fixture-server");
    let caps = c.capabilities().unwrap();
    assert!(caps.has_tools() && caps.has_resources() && caps.has_prompts() && caps.has_logging());
    assert_eq!(
        c.instructions().as_deref(),
        Some("Fixture server for mcp-blocking tests.")
    );
    // What the server received: our version, client info, and no capabilities we cannot honour.
    let sent = text_json(&c, "client_info", json!({}));
    assert_eq!(sent["protocolVersion"], "2025-11-25");
    assert_eq!(sent["clientInfo"]["name"], "mcp-blocking");
    assert_eq!(sent["capabilities"], json!({}));
    assert!(c.is_connected());
    c.close().unwrap();
    assert!(!c.is_connected());
    assert!(matches!(c.ping(), Err(Error::NotConnected { .. })));
}

#[test]
fn every_method_works() {
    let c = connect(&[]);
    c.ping().unwrap();
    let tools = c.list_tools().unwrap();
    assert!(tools.iter().any(|t| t.name == "echo"));
    let echo = c
        .call_tool("echo", json!({"text": "héllo\nworld"}))
        .unwrap();
    assert_eq!(echo.text(), "héllo\nworld");
    assert!(!echo.failed());
    let add = c.call_tool("add", json!({"a": 2, "b": 3})).unwrap();
    assert_eq!(add.structured_content, Some(json!({"sum": 5})));
    assert!(c.call_tool("fail", json!({})).unwrap().failed());

    let resources = c.list_resources().unwrap();
    let uris: Vec<_> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        ["fixture://readme", "fixture://logo", "fixture://config"]
    );
    let templates = c.list_resource_templates().unwrap();
    assert_eq!(templates[0].uri_template, "fixture://items/{id}");
    let readme = c.read_resource("fixture://readme").unwrap();
    assert!(
        matches!(&readme.contents[0], ResourceContents::Text(t) if t.text.starts_with("# Fixture"))
    );
    let logo = c.read_resource("fixture://logo").unwrap();
    assert!(matches!(&logo.contents[0], ResourceContents::Blob(b) if !b.blob.is_empty()));
    let item = c.read_resource("fixture://items/42").unwrap();
    assert!(matches!(&item.contents[0], ResourceContents::Text(t) if t.text == "item 42"));
    match c.read_resource("fixture://nope") {
        Err(Error::Rpc { code, .. }) => assert_eq!(code, ErrorCode::RESOURCE_NOT_FOUND),
        other => panic!("{other:?}"),
    }
    c.subscribe("fixture://readme").unwrap();
    c.unsubscribe("fixture://readme").unwrap();

    let prompts = c.list_prompts().unwrap();
    assert_eq!(
        prompts.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["greeting", "summarize"]
    );
    let g = c.get_prompt("greeting", json!({"name": "Ada"})).unwrap();
    assert!(matches!(&g.messages[0].content, Content::Text(t) if t.text == "Hello, Ada!"));
    assert!(matches!(
        c.get_prompt("greeting", json!({"name": 3})),
        Err(Error::InvalidArgument { .. })
    ));

    let done = c
        .complete(CompletionReference::prompt("greeting"), "name", "al", None)
        .unwrap();
    assert_eq!(done.completion.values, ["alice", "albert"]);
    c.set_logging_level(LoggingLevel::Warning).unwrap();
    assert_eq!(
        c.call_tool("log", json!({"level": "info", "message": "x"}))
            .unwrap()
            .text(),
        "filtered"
    );
    let raw = c.request("ping", None, &CallOptions::new()).unwrap();
    assert_eq!(raw, json!({}));
}

#[test]
fn rpc_errors_are_errors_with_code_message_and_data() {
    let c = connect(&[]);
    match c.call_tool("rpc_error", json!({})) {
        Err(Error::Rpc {
            server,
            code,
            message,
            data,
        }) => {
            assert_eq!(server, "fixture");
            assert_eq!(code, ErrorCode(-32000));
            assert_eq!(message, "deliberate error");
            assert_eq!(data.as_deref(), Some(&json!({"hint": "fixture"})));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.call_tool("no_such_tool", json!({})),
        Err(Error::Rpc {
            code: ErrorCode::INVALID_PARAMS,
            ..
        })
    ));
    assert!(matches!(
        c.call_tool("echo", json!([1])),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn pagination_is_followed_to_the_end() {
    let c = connect(&["--page-size", "3", "--extra-tools", "20"]);
    let first = c.list_tools_page(None).unwrap();
    assert_eq!(first.tools.len(), 3);
    assert!(first.next_cursor.is_some());
    let all = c.list_tools().unwrap();
    let names: Vec<_> = all.iter().map(|t| t.name.clone()).collect();
    assert!(names.len() >= 40, "{}", names.len());
    assert_eq!(names.iter().filter(|n| n.starts_with("gen_")).count(), 20);
    let mut dedup = names.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), names.len(), "no tool twice");
    assert_eq!(c.list_resources().unwrap().len(), 3);
    assert_eq!(c.list_prompts().unwrap().len(), 2);
    assert!(matches!(
        c.list_tools_page(Some("not-a-cursor")),
        Err(Error::Rpc {
            code: ErrorCode::INVALID_PARAMS,
            ..
        })
    ));
}

#[test]
fn sixteen_threads_share_one_client() {
    let c = Arc::new(connect(&[]));
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                for i in 0..200 {
                    let text = format!("t{t}-{i}");
                    let r = c.call_tool("echo", json!({ "text": text })).unwrap();
                    assert_eq!(r.text(), text, "every caller gets its own answer");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn timeout_sends_cancellation_that_the_server_sees() {
    let c = connect(&[]);
    let start = Instant::now();
    let err = c
        .call_tool_with(
            "slow",
            json!({"ms": 30_000}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .unwrap_err();
    let waited = start.elapsed();
    match &err {
        Error::Timeout {
            server,
            method,
            after,
        } => {
            assert_eq!(server, "fixture");
            assert_eq!(method, "tools/call");
            assert!(*after >= Duration::from_millis(300));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        waited < Duration::from_secs(5),
        "timed out on time, not at 30 s: {waited:?}"
    );
    let cancelled = text_json(&c, "cancelled_requests", json!({}));
    assert_eq!(cancelled.as_array().map(Vec::len), Some(1), "{cancelled}");
    // The connection is still usable.
    assert_eq!(
        c.call_tool("echo", json!({"text": "after"}))
            .unwrap()
            .text(),
        "after"
    );
}

#[test]
fn a_crash_mid_call_fails_at_once_with_exit_status_and_stderr() {
    let c = Client::connect(fixture("crashy", &[]).with_timeout_secs(60.0)).unwrap();
    let start = Instant::now();
    let err = c.call_tool("crash", json!({"code": 7})).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "not at the 60 s timeout"
    );
    match &err {
        Error::Closed {
            server,
            detail,
            stderr_tail,
        } => {
            assert_eq!(server, "crashy");
            assert!(detail.contains("status 7"), "{detail}");
            assert!(
                stderr_tail.contains("crashing now on purpose"),
                "{stderr_tail}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("crashing now on purpose"));
    assert!(!c.is_connected());
    assert!(matches!(c.ping(), Err(Error::Closed { .. })));
    // The client reconnects on demand.
    c.open().unwrap();
    c.ping().unwrap();
}

/// The connect error inside `err`, or a panic naming what came instead.
fn connect_error(err: &Error) -> &ConnectError {
    match err {
        Error::Connect(e) => e,
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[test]
fn connect_failure_names_server_command_and_stderr() {
    let err = Client::connect(fixture("broken", &["--crash-on-start"])).unwrap_err();
    let msg = err.to_string();
    let e = connect_error(&err);
    assert_eq!(e.kind(), ConnectErrorKind::Closed, "{err:?}");
    assert_eq!(e.server(), "broken");
    assert!(e.target().contains("--crash-on-start"), "{}", e.target());
    assert!(
        e.stderr_tail().contains("failing at start-up on purpose"),
        "{}",
        e.stderr_tail()
    );
    assert!(msg.contains("broken"), "{msg}");
    assert!(msg.contains("--crash-on-start"), "names the command: {msg}");
    assert!(
        msg.contains("failing at start-up on purpose"),
        "quotes stderr: {msg}"
    );
    assert!(msg.contains("status 2"), "{msg}");
}

#[test]
fn a_command_that_cannot_start_is_a_spawn_error_with_the_os_error_as_source() {
    let err = Client::connect(ServerConfig::stdio("ghost", "/nonexistent/mcp-server")).unwrap_err();
    assert!(
        matches!(&err, Error::Spawn { server, .. } if server == "ghost"),
        "{err:?}"
    );
    let io = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the OS error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn handshake_timeout_is_a_timed_out_connect_error() {
    let start = Instant::now();
    let err =
        Client::connect(fixture("mute", &["--never-answer"]).with_timeout_secs(1.0)).unwrap_err();
    assert_eq!(connect_error(&err).kind(), ConnectErrorKind::TimedOut);
    assert!(err.is_timeout());
    assert!(
        err.to_string().contains("did not answer `initialize`"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(8));
}

#[test]
fn wrong_protocol_version_is_refused_naming_both() {
    let err = Client::connect(fixture("old", &["--protocol-version", "1999-01-01"])).unwrap_err();
    assert_eq!(connect_error(&err).kind(), ConnectErrorKind::Protocol);
    assert!(!err.is_timeout());
    let msg = err.to_string();
    assert!(
        msg.contains("1999-01-01") && msg.contains("2025-11-25"),
        "{msg}"
    );
}

#[test]
fn older_supported_versions_are_accepted() {
    let c = connect(&["--protocol-version", "2024-11-05"]);
    assert_eq!(c.protocol_version().as_deref(), Some("2024-11-05"));
}

#[test]
fn stderr_flood_does_not_block_the_server() {
    let c = connect(&[]);
    for _ in 0..3 {
        let r = c
            .call_tool("stderr_flood", json!({"bytes": 5 * 1024 * 1024}))
            .unwrap();
        assert_eq!(r.text(), "flooded");
    }
    let tail = c.stderr_tail();
    assert!(
        !tail.is_empty() && tail.lines().count() <= 20,
        "a bounded tail: {} lines",
        tail.lines().count()
    );
}

#[test]
fn noise_and_blank_lines_on_stdout_are_skipped() {
    let c = connect(&["--noise"]);
    for i in 0..20 {
        assert_eq!(
            c.call_tool("echo", json!({"text": format!("n{i}")}))
                .unwrap()
                .text(),
            format!("n{i}")
        );
    }
    assert!(c.list_tools().unwrap().len() > 5);
}

#[test]
fn a_40_mb_result_arrives_whole() {
    let c = connect(&[]);
    let n = 40 * 1024 * 1024;
    let r = c.call_tool("large", json!({"bytes": n})).unwrap();
    assert_eq!(r.text().len(), n);
}

#[test]
fn message_size_cap_is_enforced() {
    let c = Client::connect(
        fixture("capped", &[])
            .with_max_message_bytes(1024 * 1024)
            .with_timeout_secs(30.0),
    )
    .unwrap();
    let start = Instant::now();
    let err = c
        .call_tool("large", json!({"bytes": 4 * 1024 * 1024}))
        .unwrap_err();
    match &err {
        Error::Protocol {
            server,
            kind,
            detail,
            ..
        } => {
            assert_eq!(server, "capped");
            assert_eq!(*kind, ProtocolErrorKind::TooLarge);
            assert!(detail.contains("1048576 byte limit"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "failed at once, not at the 30 s timeout"
    );
    // Framing recovers after the oversized line.
    assert_eq!(
        c.call_tool("echo", json!({"text": "ok"})).unwrap().text(),
        "ok"
    );
}

#[test]
fn a_server_that_stops_reading_never_blocks_a_caller_past_its_timeout() {
    let c = connect(&[]);
    assert_eq!(
        c.call_tool("stop_reading", json!({})).unwrap().text(),
        "stopping"
    );
    let big = "x".repeat(1024 * 1024);
    let start = Instant::now();
    for _ in 0..3 {
        let err = c
            .call_tool_with(
                "echo",
                json!({"text": big}),
                &CallOptions::new().timeout(Duration::from_millis(300)),
            )
            .unwrap_err();
        assert!(
            matches!(err, Error::Timeout { .. } | Error::Transport { .. }),
            "{err:?}"
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_server_that_ignores_sigterm_is_killed() {
    let c = connect(&["--ignore-sigterm", "--spawn-grandchild"]);
    let grandchild: u32 = c
        .call_tool("grandchild_pid", json!({}))
        .unwrap()
        .text()
        .parse()
        .unwrap();
    assert!(pid_alive(grandchild));
    c.close().unwrap();
    assert!(!pid_alive(grandchild), "grandchild {grandchild} survived");
}

#[test]
fn no_grandchild_survives_close() {
    let c = connect(&["--spawn-grandchild"]);
    let grandchild: u32 = c
        .call_tool("grandchild_pid", json!({}))
        .unwrap()
        .text()
        .parse()
        .unwrap();
    assert!(pid_alive(grandchild));
    drop(c);
    assert!(
        !pid_alive(grandchild),
        "grandchild {grandchild} survived drop"
    );
}

#[test]
fn server_requests_before_the_answer_are_served() {
    let c = Client::builder(fixture("asker", &[]))
        .roots(vec![Root::new("file:///tmp").with_name("tmp")])
        .connect()
        .unwrap();
    assert_eq!(c.call_tool("ask_first", json!({})).unwrap().text(), "asked");
    let roots = text_json(&c, "roots", json!({}));
    assert_eq!(
        roots,
        json!({"roots": [{"uri": "file:///tmp", "name": "tmp"}]})
    );
    let pong = c.call_tool("ping_client", json!({})).unwrap();
    assert_eq!(pong.text(), "client answered ping: {}");
    let sent = text_json(&c, "client_info", json!({}));
    assert_eq!(sent["capabilities"]["roots"], json!({"listChanged": true}));
}

#[test]
fn without_handlers_server_requests_get_method_not_found() {
    let c = connect(&[]);
    for tool in ["roots", "sample", "elicit"] {
        let r = c
            .call_tool(tool, json!({"prompt": "p", "message": "m"}))
            .unwrap();
        assert!(r.failed(), "{tool}");
        assert!(r.text().contains("-32601"), "{tool}: {}", r.text());
    }
}

#[test]
fn sampling_and_elicitation_handlers_answer_and_declare_capabilities() {
    let c = Client::builder(fixture("llm", &[]))
        .sampling(
            |server: &str, p: mcp_blocking::model::CreateMessageParams| {
                assert_eq!(server, "llm");
                Ok(CreateMessageResult::text(
                    "test-model",
                    format!("{} messages", p.messages.len()),
                ))
            },
        )
        .elicitation(|_: &str, _p: mcp_blocking::model::ElicitParams| {
            let mut content = serde_json::Map::new();
            content.insert("age".into(), json!(42));
            Ok(ElicitResult::accept(content))
        })
        .connect()
        .unwrap();
    let caps = text_json(&c, "client_info", json!({}))["capabilities"].clone();
    assert!(
        caps.get("sampling").is_some() && caps.get("elicitation").is_some(),
        "{caps}"
    );
    let sampled = text_json(&c, "sample", json!({"prompt": "hi"}));
    assert_eq!(sampled["model"], "test-model");
    assert_eq!(sampled["content"]["text"], "1 messages");
    let elicited = text_json(&c, "elicit", json!({"message": "who?"}));
    assert_eq!(elicited["action"], "accept");
    assert_eq!(
        elicited["content"],
        json!({"name": "anon", "age": 42}),
        "schema defaults filled in"
    );
}

#[test]
fn notifications_reach_the_channel_and_progress_the_callback() {
    let (notify, rx) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    let builder = Client::builder(fixture("noisy", &[])).on_notification(notify);
    let c = builder.connect().unwrap();
    c.call_tool("log", json!({"level": "warning", "message": "disk low"}))
        .unwrap();
    c.call_tool("notify_list_changed", json!({})).unwrap();
    c.subscribe("fixture://readme").unwrap();
    assert_eq!(
        c.call_tool("touch", json!({"uri": "fixture://readme"}))
            .unwrap()
            .text(),
        "touched"
    );
    let mut got = Vec::new();
    while got.len() < 5 {
        let (server, n) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("notification");
        assert_eq!(server, "noisy");
        got.push(n);
    }
    assert!(
        matches!(&got[0], Notification::Log(m) if m.level == LoggingLevel::Warning && m.data == json!("disk low"))
    );
    assert_eq!(got[1], Notification::ToolsListChanged);
    assert_eq!(got[2], Notification::PromptsListChanged);
    assert_eq!(got[3], Notification::ResourcesListChanged);
    assert!(matches!(&got[4], Notification::ResourceUpdated(u) if u.uri == "fixture://readme"));

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen2 = Arc::clone(&seen);
    let r = c
        .call_tool_with(
            "progress",
            json!({"steps": 4}),
            &CallOptions::new()
                .on_progress(move |p| seen2.lock().unwrap().push((p.progress, p.total))),
        )
        .unwrap();
    assert_eq!(r.text(), "progressed 4");
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
}

#[test]
fn progress_resets_the_timeout_up_to_a_maximum() {
    let c = connect(&[]);
    // 10 steps 150 ms apart = 1.5 s in all, against a 600 ms timeout that progress keeps
    // restarting (each gap is a quarter of the timeout, so a loaded machine still passes).
    let call =
        |opts: &CallOptions| c.call_tool_with("progress", json!({"steps": 10, "ms": 150}), opts);
    let resetting = CallOptions::new()
        .timeout(Duration::from_millis(600))
        .on_progress(|_| {})
        .reset_timeout_on_progress(true)
        .max_total_timeout(Duration::from_secs(30));
    assert_eq!(call(&resetting).unwrap().text(), "progressed 10");
    // Without the reset, the same call times out.
    let plain = CallOptions::new()
        .timeout(Duration::from_millis(600))
        .on_progress(|_| {});
    assert!(matches!(call(&plain), Err(Error::Timeout { .. })));
    // And the maximum total bounds the resets.
    let capped = resetting
        .clone()
        .max_total_timeout(Duration::from_millis(900));
    let start = Instant::now();
    assert!(matches!(call(&capped), Err(Error::Timeout { .. })));
    assert!(
        start.elapsed() < Duration::from_millis(1400),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn environment_is_an_allow_list_plus_configured_env() {
    std::env::set_var("MCP_BLOCKING_TEST_SECRET", "hunter2");
    let c = Client::connect(fixture("env", &[]).with_env("CONFIGURED", "yes")).unwrap();
    assert_eq!(
        c.call_tool("env", json!({"name": "CONFIGURED"}))
            .unwrap()
            .text(),
        "yes"
    );
    assert!(c
        .call_tool("env", json!({"name": "MCP_BLOCKING_TEST_SECRET"}))
        .unwrap()
        .failed());
    if std::env::var_os("PATH").is_some() {
        assert!(!c
            .call_tool("env", json!({"name": "PATH"}))
            .unwrap()
            .failed());
    }
    let c = Client::connect(fixture("env-all", &[]).with_inherit_env(true)).unwrap();
    assert_eq!(
        c.call_tool("env", json!({"name": "MCP_BLOCKING_TEST_SECRET"}))
            .unwrap()
            .text(),
        "hunter2"
    );
    let dir = std::env::temp_dir();
    let c = Client::connect(fixture("cwd", &[]).with_cwd(&dir)).unwrap();
    let cwd = c.call_tool("cwd", json!({})).unwrap().text();
    assert_eq!(
        std::fs::canonicalize(cwd).unwrap(),
        std::fs::canonicalize(dir).unwrap()
    );
}

#[test]
fn a_server_that_exits_after_the_handshake_fails_calls_at_once() {
    let c = Client::connect(fixture("brief", &["--exit-on-initialized"]).with_timeout_secs(60.0))
        .unwrap();
    let start = Instant::now();
    // The exit may race the first call; either way no call waits for the 60 s timeout.
    let err = c.call_tool("slow", json!({"ms": 100})).unwrap_err();
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn shared_poller_serves_many_clients_with_one_thread() {
    let poller = mcp_blocking::ConnectionPoller::new();
    let clients: Vec<Client> = (0..8)
        .map(|i| {
            Client::builder(fixture(&format!("s{i}"), &[]))
                .poller(&poller)
                .connect()
                .unwrap()
        })
        .collect();
    assert_eq!(poller.connection_count(), 8);
    for (i, c) in clients.iter().enumerate() {
        assert_eq!(
            c.call_tool("echo", json!({"text": format!("{i}")}))
                .unwrap()
                .text(),
            format!("{i}")
        );
    }
    // Stopping the poller fails everything pending and later with a clear error.
    poller.stop(Duration::from_secs(5)).unwrap();
    let err = clients[0].ping().unwrap_err();
    assert!(err.to_string().contains("poller was stopped"), "{err}");
    drop(clients);
    assert_eq!(poller.connection_count(), 0);
}

#[test]
fn concurrent_callers_with_timeouts_never_stall_each_other() {
    // Callers that give up (and so may leave while asked to take over reading) mixed with callers
    // that succeed: every successful call must still be answered promptly.
    let c = Arc::new(connect(&[]));
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let c = Arc::clone(&c);
            std::thread::spawn(move || {
                let quick = CallOptions::new().timeout(Duration::from_millis(20));
                let mut slowest = Duration::ZERO;
                for i in 0..60 {
                    if (t + i) % 3 == 0 {
                        let r = c.call_tool_with("slow", json!({"ms": 200}), &quick);
                        assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
                    } else {
                        let start = Instant::now();
                        let text = format!("{t}-{i}");
                        let r = c.call_tool("echo", json!({ "text": text })).unwrap();
                        assert_eq!(r.text(), text);
                        slowest = slowest.max(start.elapsed());
                    }
                }
                slowest
            })
        })
        .collect();
    for t in threads {
        let slowest = t.join().unwrap();
        // The configured timeout is 10 s; a stalled reader would show up as seconds.
        assert!(
            slowest < Duration::from_secs(3),
            "an echo waited {slowest:?}"
        );
    }
}
