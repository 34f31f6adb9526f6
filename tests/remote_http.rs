//! Streamable HTTP through `Client` against loopback servers: JSON and SSE replies, session ids,
//! 404 re-initialization, resumption, the standalone GET stream, auth headers, timeouts on silent
//! and trickling servers, HTML 500s, streams cut mid-way, and threads ending on close.

mod common;
mod support_remote;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::settle::settled;
use mcp_blocking::config::AuthProvider;
use mcp_blocking::error::{ConnectError, ConnectErrorKind, ErrorCode};
use mcp_blocking::handler::Notification;
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Value};
use support_remote::mcp::{McpHttp, Options};
use support_remote::HttpServer;

fn text(r: &mcp_blocking::model::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

fn connect(url: &str, timeout: f64) -> Client {
    Client::connect(ServerConfig::http("loop", url).timeout_secs(timeout)).expect("connect")
}

/// The connect error inside `err`, or a panic naming what came instead.
fn connect_error(err: &Error) -> &ConnectError {
    match err {
        Error::Connect(e) => e,
        other => panic!("expected a connect error, got {other:?}"),
    }
}

/// The first error of type `T` in the `source()` chain of `e`.
fn find_cause<T: std::error::Error + 'static>(e: &dyn std::error::Error) -> Option<&T> {
    let mut next = e.source();
    while let Some(cause) = next {
        if let Some(found) = cause.downcast_ref::<T>() {
            return Some(found);
        }
        next = cause.source();
    }
    None
}

/// A loopback port with nothing listening: bound, then released.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

fn posts(srv: &McpHttp) -> Vec<support_remote::Req> {
    srv.requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

#[test]
fn json_replies_list_and_call_tools() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    let tools = client.list_tools().expect("list");
    assert_eq!(tools.len(), 2);
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .expect("call");
    assert_eq!(text(&r), "5");
    client.close().expect("close");
}

#[test]
fn every_post_has_the_streamable_accept_and_content_type() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    client.list_tools().expect("list");
    client.close().expect("close");
    for r in posts(&srv) {
        assert_eq!(
            r.header("accept"),
            Some("application/json, text/event-stream")
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
    }
}

#[test]
fn sse_replies_are_read_until_the_response() {
    let srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    let r = client
        .call_tool("echo", json!({"text": "over sse"}))
        .expect("call");
    assert_eq!(text(&r), "over sse");
    client.close().expect("close");
}

#[test]
fn progress_on_the_sse_reply_reaches_the_callback() {
    let srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let opts = CallOptions::new().on_progress(move |p| s.lock().unwrap().push(p.progress));
    let r = client
        .call_tool_with("progress", json!({}), &opts)
        .expect("call");
    assert_eq!(text(&r), "done");
    client.close().expect("close");
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0]);
}

#[test]
fn the_session_id_is_echoed_on_every_later_request_and_deleted_on_close() {
    let srv = McpHttp::start(Options {
        sessions: true,
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    client.list_tools().expect("list");
    client.close().expect("close");
    let reqs = srv.requests();
    assert!(
        reqs[0].header("mcp-session-id").is_none(),
        "initialize has none"
    );
    for r in &reqs[1..] {
        assert_eq!(
            r.header("mcp-session-id"),
            Some("s-1"),
            "{} {}",
            r.method,
            r.rpc_method()
        );
    }
    let delete = reqs
        .iter()
        .find(|r| r.method == "DELETE")
        .expect("a DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("s-1"));
}

#[test]
fn the_protocol_version_header_follows_initialize() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    client.list_tools().expect("list");
    let version = client.protocol_version().expect("negotiated");
    client.close().expect("close");
    let p = posts(&srv);
    assert_eq!(p[0].rpc_method(), "initialize");
    assert!(p[0].header("mcp-protocol-version").is_none());
    for r in &p[1..] {
        assert_eq!(r.header("mcp-protocol-version"), Some(version.as_str()));
    }
}

#[test]
fn an_expired_session_is_reinitialized_once_and_the_call_repeated() {
    let srv = McpHttp::start(Options {
        sessions: true,
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    srv.state.expire_session();
    let r = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .expect("call");
    assert_eq!(text(&r), "2");
    assert_eq!(srv.state.sessions_issued(), 2);
    let later = client
        .call_tool("add", json!({"a": 2, "b": 2}))
        .expect("call");
    assert_eq!(text(&later), "4");
    client.close().expect("close");
    let p = posts(&srv);
    let methods: Vec<String> = p.iter().map(|r| r.rpc_method()).collect();
    let inits = methods.iter().filter(|m| *m == "initialize").count();
    assert_eq!(inits, 2, "{methods:?}");
    let last = p.last().expect("posts");
    assert_eq!(last.header("mcp-session-id"), Some("s-2"));
}

#[test]
fn a_configured_session_the_server_forgot_is_replaced() {
    let srv = McpHttp::start(Options {
        sessions: true,
        ..Options::default()
    });
    let cfg = ServerConfig::http("resume", srv.url())
        .session_id("s-old")
        .timeout_secs(5.0);
    let client = Client::connect(cfg).expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    let p = posts(&srv);
    assert_eq!(p[0].header("mcp-session-id"), Some("s-old"));
    assert!(
        p[1].header("mcp-session-id").is_none(),
        "the retry has none"
    );
    assert_eq!(
        p.last().expect("posts").header("mcp-session-id"),
        Some("s-1")
    );
}

#[test]
fn a_session_that_keeps_expiring_is_reinitialized_only_once() {
    let srv = HttpServer::start(|req, conn| {
        let msg = req.json();
        if msg["method"] == "initialize" {
            let reply = support_remote::mcp::answer(&msg).expect("initialize answer");
            conn.json(200, &[("Mcp-Session-Id", "doomed")], &reply);
        } else {
            conn.respond(404, &[], b"session not found");
        }
    });
    let started = Instant::now();
    let err = Client::connect(ServerConfig::http("expiring", srv.server_url()).timeout_secs(5.0))
        .expect_err("404 forever");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(err.to_string().contains("404"), "{err}");
    let inits = srv
        .requests()
        .iter()
        .filter(|r| r.rpc_method() == "initialize")
        .count();
    assert_eq!(inits, 2, "one original initialize and one replay");
}

#[test]
fn a_stream_that_ends_after_an_event_id_is_resumed_with_last_event_id() {
    let srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    let started = Instant::now();
    let r = client.call_tool("resume", json!({})).expect("call");
    assert_eq!(text(&r), "resumed");
    assert!(
        started.elapsed() >= Duration::from_millis(100),
        "retry respected"
    );
    client.close().expect("close");
    let get = srv
        .requests()
        .into_iter()
        .find(|r| r.method == "GET" && r.header("last-event-id").is_some())
        .expect("a resumption GET");
    assert_eq!(get.header("last-event-id"), Some("ev-1"));
    assert_eq!(get.header("accept"), Some("text/event-stream"));
}

#[test]
fn a_server_that_never_answers_times_out_on_time() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    let started = Instant::now();
    let err = client
        .call_tool_with(
            "hang",
            json!({}),
            &CallOptions::new().timeout(Duration::from_millis(400)),
        )
        .expect_err("must time out");
    let took = started.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(took >= Duration::from_millis(390), "{took:?}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    // The connection is still usable afterwards.
    assert_eq!(
        text(
            &client
                .call_tool("add", json!({"a": 1, "b": 2}))
                .expect("call")
        ),
        "3"
    );
    client.close().expect("close");
    let cancelled = posts(&srv)
        .into_iter()
        .any(|r| r.rpc_method() == "notifications/cancelled");
    assert!(cancelled, "notifications/cancelled was sent");
}

#[test]
fn a_trickling_server_times_out_on_time() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    let started = Instant::now();
    let err = client
        .call_tool_with(
            "trickle",
            json!({}),
            &CallOptions::new().timeout(Duration::from_millis(400)),
        )
        .expect_err("must time out");
    let took = started.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    client.close().expect("close");
}

#[test]
fn a_handshake_that_never_answers_fails_connect_on_time() {
    let srv = HttpServer::start(|_req, conn| conn.wait_for_peer_close());
    let started = Instant::now();
    let err = Client::connect(ServerConfig::http("silent", srv.server_url()).timeout_secs(0.5))
        .expect_err("no handshake");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2000), "{took:?}");
    assert!(err.to_string().contains("silent"), "{err}");
    assert_eq!(connect_error(&err).kind(), ConnectErrorKind::TimedOut);
    assert!(err.is_timeout());
}

trait ServerUrl {
    fn server_url(&self) -> String;
}

impl ServerUrl for HttpServer {
    fn server_url(&self) -> String {
        self.url("/mcp")
    }
}

#[test]
fn a_500_with_html_is_a_typed_error_with_a_bounded_snippet() {
    let page = format!(
        "<html><body><h1>Internal error</h1>{}</body></html>",
        "x".repeat(5000)
    );
    let srv = HttpServer::start(move |_req, conn| {
        conn.respond(500, &[("Content-Type", "text/html")], page.as_bytes())
    });
    let started = Instant::now();
    let err = Client::connect(ServerConfig::http("html", srv.server_url()).timeout_secs(5.0))
        .expect_err("500");
    assert!(started.elapsed() < Duration::from_secs(2));
    let msg = err.to_string();
    assert!(msg.contains("500"), "{msg}");
    assert!(msg.contains("Internal error"), "{msg}");
    assert!(msg.len() < 1000, "snippet is bounded: {} bytes", msg.len());
    let e = connect_error(&err);
    assert_eq!(e.kind(), ConnectErrorKind::Unreachable);
    assert_eq!(e.http_status(), Some(500));
}

#[test]
fn a_json_rpc_error_to_initialize_is_a_rejection_with_its_code() {
    let srv = HttpServer::start(|req, conn| {
        let msg = req.json();
        conn.json(
            200,
            &[],
            &json!({"jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": -32600, "message": "clients from the future only"}}),
        );
    });
    let err = Client::connect(ServerConfig::http("picky", srv.server_url()).timeout_secs(5.0))
        .expect_err("refused");
    let e = connect_error(&err);
    assert_eq!(e.kind(), ConnectErrorKind::Rejected);
    assert_eq!(
        e.rpc(),
        Some((ErrorCode::INVALID_REQUEST, "clients from the future only"))
    );
    assert!(!err.is_timeout());
    assert!(
        err.to_string()
            .contains("refused `initialize`: error -32600: clients from the future only"),
        "{err}"
    );
}

#[test]
fn a_500_status_is_kept_in_the_transport_error_of_a_call() {
    let srv = HttpServer::start(|req, conn| {
        let msg = req.json();
        if msg["method"] == "tools/call" {
            conn.respond(500, &[("Content-Type", "text/html")], b"<h1>boom</h1>");
        } else if let Some(a) = support_remote::mcp::answer(&msg) {
            conn.json(200, &[], &a);
        } else {
            conn.accepted();
        }
    });
    let client = connect(&srv.server_url(), 5.0);
    let err = client.call_tool("add", json!({})).expect_err("500");
    match err {
        Error::Transport { status, detail, .. } => {
            assert_eq!(status, Some(500));
            assert!(detail.contains("boom"), "{detail}");
        }
        other => panic!("expected a transport error, got {other:?}"),
    }
    client.close().expect("close");
}

#[test]
fn a_stream_cut_mid_way_fails_the_call_at_once() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 10.0);
    let started = Instant::now();
    let err = client.call_tool("drop", json!({})).expect_err("cut");
    assert!(started.elapsed() < Duration::from_secs(2), "no hang");
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    client.close().expect("close");
}

#[test]
fn a_refused_connection_fails_connect_with_a_typed_error() {
    let url = format!("http://127.0.0.1:{}/mcp", closed_port());
    let err =
        Client::connect(ServerConfig::http("gone", &url).timeout_secs(2.0)).expect_err("refused");
    assert!(err.to_string().contains("refused"), "{err}");
    assert!(err.to_string().contains("gone"), "{err}");
    let e = connect_error(&err);
    assert_eq!(e.kind(), ConnectErrorKind::Unreachable);
    assert_eq!(e.target(), url);
    assert_eq!(e.http_status(), None);
    let io = find_cause::<std::io::Error>(&err).expect("the OS error in the source chain");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn a_failed_connect_shows_no_url_password_or_query() {
    let port = closed_port();
    let url = format!("http://ada:pw-SECRET@127.0.0.1:{port}/mcp?key=q-SECRET");
    let err = Client::connect(
        ServerConfig::http("hidden", url)
            .header("X-Api-Key", "h-SECRET")
            .timeout_secs(2.0),
    )
    .expect_err("refused");
    let mut shown = vec![err.to_string(), format!("{err:?}")];
    let mut next = std::error::Error::source(&err);
    while let Some(cause) = next {
        shown.push(cause.to_string());
        shown.push(format!("{cause:?}"));
        next = cause.source();
    }
    for text in &shown {
        assert!(!text.contains("SECRET"), "{text}");
    }
    let target = connect_error(&err).target();
    assert_eq!(
        target,
        format!("http://ada:<redacted>@127.0.0.1:{port}/mcp?<redacted>")
    );
    assert!(err.to_string().contains(target), "{err}");
}

#[test]
fn the_standalone_get_stream_carries_server_notifications() {
    let srv = McpHttp::start(Options {
        get_stream: true,
        sessions: true,
        ..Options::default()
    });
    let (builder, rx) = Client::builder(ServerConfig::http("loop", srv.url()).timeout_secs(5.0))
        .notification_channel();
    let client = builder.connect().expect("connect");
    client.call_tool("notify", json!({})).expect("call");
    let (server, n) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a notification");
    assert_eq!(server, "loop");
    match n {
        Notification::Log(m) => assert_eq!(m.data, json!("from the GET stream")),
        other => panic!("unexpected {other:?}"),
    }
    let started = Instant::now();
    client.close().expect("close");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "close is prompt"
    );
    let get = srv
        .requests()
        .into_iter()
        .find(|r| r.method == "GET")
        .expect("GET");
    assert_eq!(get.header("accept"), Some("text/event-stream"));
    assert_eq!(get.header("mcp-session-id"), Some("s-1"));
}

#[test]
fn a_server_request_on_the_get_stream_is_answered_by_post() {
    let srv = McpHttp::start(Options {
        get_stream: true,
        sessions: true,
        ..Options::default()
    });
    let client = Client::builder(ServerConfig::http("elicit", srv.url()).timeout_secs(5.0))
        .elicitation(|_server: &str, params: mcp_blocking::model::ElicitParams| {
            assert_eq!(params.message, "your name?");
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(mcp_blocking::model::ElicitResult::accept(content))
        })
        .connect()
        .expect("connect");
    srv.state.push(
        json!({"jsonrpc": "2.0", "id": "e-1", "method": "elicitation/create",
        "params": {"message": "your name?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}}}}),
    );
    // The dispatcher POSTs the answer; wait for the server to see it.
    let answer = srv
        .server
        .wait_for(Duration::from_secs(5), |r| r.json()["id"] == "e-1")
        .expect("an answer to the elicitation");
    client.close().expect("close");
    let v = answer.json();
    assert_eq!(v["result"]["action"], "accept");
    assert_eq!(v["result"]["content"]["name"], "Ada");
    assert_eq!(answer.header("mcp-session-id"), Some("s-1"));
}

#[test]
fn a_405_on_get_means_no_stream_not_an_error() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    assert_eq!(
        text(
            &client
                .call_tool("add", json!({"a": 1, "b": 1}))
                .expect("call")
        ),
        "2"
    );
    client.close().expect("close");
    assert!(srv.requests().iter().any(|r| r.method == "GET"));
}

#[test]
fn configured_headers_and_bearer_token_go_on_every_request() {
    let srv = McpHttp::start(Options {
        require_auth: Some("Bearer s3cret".into()),
        ..Options::default()
    });
    let cfg = ServerConfig::http("auth", srv.url())
        .bearer_token("s3cret")
        .header("X-Team", "blue")
        .timeout_secs(5.0);
    assert!(!format!("{cfg:?}").contains("s3cret"));
    let client = Client::connect(cfg).expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    for r in posts(&srv) {
        assert_eq!(r.header("x-team"), Some("blue"));
    }
}

#[test]
fn the_auth_provider_is_called_per_request() {
    let srv = McpHttp::start(Options {
        require_auth: Some("Bearer fresh".into()),
        ..Options::default()
    });
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    let provider = AuthProvider::new(move || {
        *c.lock().unwrap() += 1;
        Ok("Bearer fresh".into())
    });
    let client = Client::connect(
        ServerConfig::http("auth", srv.url())
            .auth_provider(provider)
            .timeout_secs(5.0),
    )
    .expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    let n = *calls.lock().unwrap();
    assert!(n >= posts(&srv).len(), "{n} calls");
}

#[test]
fn a_wrong_token_is_an_auth_failure_with_the_401() {
    let srv = McpHttp::start(Options {
        require_auth: Some("Bearer right".into()),
        ..Options::default()
    });
    let err = Client::connect(
        ServerConfig::http("auth", srv.url())
            .bearer_token("wrong")
            .timeout_secs(5.0),
    )
    .expect_err("401");
    assert!(err.to_string().contains("401"), "{err}");
    assert!(
        !err.to_string().contains("wrong"),
        "the token is not quoted: {err}"
    );
    let e = connect_error(&err);
    assert_eq!(e.kind(), ConnectErrorKind::Auth);
    assert_eq!(e.http_status(), Some(401));
}

#[test]
fn connections_are_reused() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    for i in 0..20 {
        client
            .call_tool("add", json!({"a": i, "b": 1}))
            .expect("call");
    }
    client.close().expect("close");
    let conns: std::collections::BTreeSet<usize> = posts(&srv).iter().map(|r| r.conn).collect();
    assert!(
        conns.len() <= 2,
        "{} connections for {} posts",
        conns.len(),
        posts(&srv).len()
    );
}

#[test]
fn sse_reply_connections_are_reused() {
    let srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    for i in 0..20 {
        client
            .call_tool("add", json!({"a": i, "b": 1}))
            .expect("call");
    }
    client.close().expect("close");
    let conns: std::collections::BTreeSet<usize> = posts(&srv).iter().map(|r| r.conn).collect();
    // An event-stream reply's connection is reused once its stream has been read to the end on
    // the drain thread; on a loaded machine a few calls start before that and open another one.
    // One connection per call (no reuse) would be 22.
    assert!(
        conns.len() <= posts(&srv).len() / 2,
        "{} connections for {} posts",
        conns.len(),
        posts(&srv).len()
    );
}

#[test]
fn concurrent_calls_from_many_threads() {
    let srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let client = Arc::new(connect(&srv.url(), 5.0));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let c = client.clone();
            std::thread::spawn(move || {
                let r = c.call_tool("add", json!({"a": i, "b": 100})).expect("call");
                assert_eq!(text(&r), format!("{}", i + 100));
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    client.close().expect("close");
}

#[test]
fn read_resource_and_get_prompt_over_http() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    let r = client.read_resource("file:///x").expect("read");
    let v: Value = serde_json::to_value(&r).expect("json");
    assert_eq!(v["contents"][0]["text"], "hello");
    let p = client.get_prompt("p", json!({})).expect("prompt");
    assert_eq!(p.messages.len(), 1);
    client.close().expect("close");
}

#[test]
fn no_transport_thread_outlives_close() {
    let srv = McpHttp::start(Options {
        get_stream: true,
        sse: true,
        sessions: true,
        ..Options::default()
    });
    let client =
        Client::connect(ServerConfig::http("thr1", srv.url()).timeout_secs(5.0)).expect("connect");
    client.list_tools().expect("list");
    let name = "mcp-get:thr1";
    // The GET stream thread runs while connected. (A drain thread may run too, but it ends by
    // itself once it has read its reply's rest, so its presence here is a race, not a fact.)
    let running = settled(thread_names, |names| names.iter().any(|n| n == name));
    assert!(
        running.iter().any(|n| n == name),
        "the GET stream thread runs: {running:?}"
    );
    client.close().expect("close");
    let left = settled(thread_names, |names| {
        !names.iter().any(|n| n == name || n == "mcp-drain:thr1")
    });
    assert!(
        !left.iter().any(|n| n == name || n == "mcp-drain:thr1"),
        "{left:?}"
    );
}

/// Names of this process's threads (Linux).
fn thread_names() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
        .map(|s| s.trim().to_owned())
        .collect()
}
