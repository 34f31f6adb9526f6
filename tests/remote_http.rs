//! Streamable HTTP through `Client` against loopback servers: JSON and SSE replies, session ids,
//! 404 re-initialization, resumption, the standalone GET stream, auth headers, timeouts on silent
//! and trickling servers, HTML 500s, streams cut mid-way, threads ending on close, the message
//! size cap, redirects, 401/403 with their challenge, and the GET stream's reconnection backoff.

mod common;
mod support_remote;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::settle::settled;
use common::threads::names as thread_names;
use mcp_blocking::config::{AuthProvider, ProtocolMode};
use mcp_blocking::error::{ConnectError, ConnectErrorKind, ErrorCode, ProtocolErrorKind};
use mcp_blocking::handler::{notification_channel, Notification, NOTIFICATION_CHANNEL_CAPACITY};
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Value};
use support_remote::mcp::{McpHttp, Options};
use support_remote::{peak_rss, reset_peak_rss, HttpServer, Redirect};

fn text(r: &mcp_blocking::model::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

/// A legacy-era client (these tests check the 2025-11-25 session rules; `tests/eras.rs` checks
/// the protocol modes).
fn connect(url: &str, timeout: f64) -> Client {
    let cfg = ServerConfig::http("loop", url)
        .with_timeout_secs(timeout)
        .with_protocol(ProtocolMode::Legacy);
    Client::connect(cfg).expect("connect")
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
        .with_session_id("s-old")
        .with_timeout_secs(5.0)
        .with_protocol(ProtocolMode::Legacy);
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
    let err =
        Client::connect(ServerConfig::http("expiring", srv.server_url()).with_timeout_secs(5.0))
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

/// Event-stream replies and sessions `s-1`, `s-2`, …; the server forgets `s-1` once `forget`
/// is set, refuses the GET stream of `s-1` (405) and holds the GET of any later session
/// unanswered until the client lets go.
fn forgetful_sse_server(forget: Arc<AtomicBool>) -> HttpServer {
    let issued = AtomicUsize::new(0);
    HttpServer::start(move |req, conn| {
        let sid = req.header("mcp-session-id").map(str::to_owned);
        if req.method == "GET" {
            if sid.as_deref() == Some("s-1") {
                conn.respond(405, &[("Allow", "POST")], b"");
            } else {
                conn.wait_for_peer_close();
            }
            return;
        }
        let msg = req.json();
        if sid.as_deref() == Some("s-1") && forget.load(Ordering::SeqCst) {
            conn.respond(404, &[], b"session not found");
            return;
        }
        let Some(reply) = support_remote::mcp::answer(&msg) else {
            conn.accepted();
            return;
        };
        let new_sid = (msg["method"] == "initialize")
            .then(|| format!("s-{}", issued.fetch_add(1, Ordering::SeqCst) + 1));
        let extra: Vec<(&str, &str)> = new_sid
            .iter()
            .map(|s| ("Mcp-Session-Id", s.as_str()))
            .collect();
        conn.sse_start(&extra);
        let _ = conn.event(None, &reply);
        conn.sse_end();
    })
}

#[test]
fn a_stalled_get_stream_after_a_reinitialization_holds_up_no_request() {
    let forget = Arc::new(AtomicBool::new(false));
    let srv = forgetful_sse_server(forget.clone());
    let timeout = Duration::from_secs(1);
    let client = connect(&srv.server_url(), timeout.as_secs_f64());
    client.list_tools().expect("list");
    forget.store(true, Ordering::SeqCst);
    // The 404 re-initializes the session, which opens the GET stream again: the server holds
    // that GET, and the listing that met the 404 is answered all the same, in time.
    let started = Instant::now();
    let tools = client
        .list_tools()
        .expect("the listing after re-initializing");
    let took = started.elapsed();
    assert_eq!(tools.len(), 2);
    assert!(took < timeout + Duration::from_secs(1), "{took:?}");
    srv.wait_for(Duration::from_secs(5), |r| {
        r.method == "GET" && r.header("mcp-session-id") == Some("s-2")
    })
    .expect("the GET stream of the new session was opened");
    client.list_tools().expect("a later listing");
    client.close().expect("close");
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
    let err =
        Client::connect(ServerConfig::http("silent", srv.server_url()).with_timeout_secs(0.5))
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
    let err = Client::connect(ServerConfig::http("html", srv.server_url()).with_timeout_secs(5.0))
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
    let err = Client::connect(ServerConfig::http("picky", srv.server_url()).with_timeout_secs(5.0))
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
    let err = Client::connect(ServerConfig::http("gone", &url).with_timeout_secs(2.0))
        .expect_err("refused");
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
            .with_header("X-Api-Key", "h-SECRET")
            .with_timeout_secs(2.0),
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
    let (notify, rx) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    let builder = Client::builder(ServerConfig::http("loop", srv.url()).with_timeout_secs(5.0))
        .on_notification(notify);
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
    let client = Client::builder(ServerConfig::http("elicit", srv.url()).with_timeout_secs(5.0))
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
        .with_bearer_token("s3cret")
        .with_header("X-Team", "blue")
        .with_timeout_secs(5.0);
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
            .with_auth_provider(provider)
            .with_timeout_secs(5.0),
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
            .with_bearer_token("wrong")
            .with_timeout_secs(5.0),
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
    assert_eq!(e.www_authenticate(), None, "the server sent no challenge");
}

const CHALLENGE: &str = r#"Bearer realm="mcp", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#;

#[test]
fn a_401_on_connect_keeps_the_www_authenticate_challenge() {
    let srv = McpHttp::start(Options {
        require_auth: Some("Bearer right".into()),
        challenge: Some(CHALLENGE.into()),
        ..Options::default()
    });
    let err = Client::connect(ServerConfig::http("auth", srv.url()).with_timeout_secs(5.0))
        .expect_err("401");
    let e = connect_error(&err);
    assert_eq!(e.kind(), ConnectErrorKind::Auth);
    assert_eq!(e.http_status(), Some(401));
    assert_eq!(e.www_authenticate(), Some(CHALLENGE));
    assert_eq!(err.www_authenticate(), Some(CHALLENGE));
    assert!(!err.is_retryable());
}

#[test]
fn a_401_after_connect_is_unauthorized_with_the_challenge_not_closed() {
    let srv = McpHttp::start(Options {
        require_auth: Some("Bearer fresh".into()),
        challenge: Some(CHALLENGE.into()),
        ..Options::default()
    });
    let revoked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = revoked.clone();
    let provider = AuthProvider::new(move || {
        Ok(if r.load(std::sync::atomic::Ordering::SeqCst) {
            "Bearer expired".into()
        } else {
            "Bearer fresh".into()
        })
    });
    let client = Client::connect(
        ServerConfig::http("auth", srv.url())
            .with_auth_provider(provider)
            .with_timeout_secs(5.0),
    )
    .expect("connect");
    revoked.store(true, std::sync::atomic::Ordering::SeqCst);
    let err = client.list_tools().expect_err("401");
    match &err {
        Error::Unauthorized {
            server,
            status,
            detail,
            www_authenticate,
        } => {
            assert_eq!(server, "auth");
            assert_eq!(*status, 401);
            assert!(detail.contains("HTTP 401"), "{detail}");
            assert_eq!(www_authenticate.as_deref(), Some(CHALLENGE));
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(!err.is_retryable());
    assert!(
        !err.to_string().contains("expired"),
        "no token shown: {err}"
    );
    assert!(
        err.to_string()
            .starts_with("server `auth`: not authorized: "),
        "{err}"
    );
    // The connection itself is still usable once the credentials are good again.
    revoked.store(false, std::sync::atomic::Ordering::SeqCst);
    client.list_tools().expect("list with a fresh token");
    client.close().expect("close");
}

#[test]
fn a_403_is_unauthorized_with_its_insufficient_scope_challenge() {
    let srv = McpHttp::start(Options::default());
    let client = connect(&srv.url(), 5.0);
    let err = client.call_tool("forbidden", json!({})).expect_err("403");
    assert!(
        matches!(&err, Error::Unauthorized { status: 403, .. }),
        "{err:?}"
    );
    assert_eq!(
        err.www_authenticate(),
        Some(r#"Bearer error="insufficient_scope", scope="admin""#)
    );
    client.close().expect("close");
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
    let client = Client::connect(ServerConfig::http("thr1", srv.url()).with_timeout_secs(5.0))
        .expect("connect");
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

// ---- the message size cap ----------------------------------------------------------------------

const CAP: usize = 1 << 20;

fn capped(url: &str) -> Client {
    Client::connect(
        ServerConfig::http("cap", url)
            .with_max_message_bytes(CAP)
            .with_timeout_secs(10.0),
    )
    .expect("connect")
}

/// The error of an answer over the cap: a protocol error naming the cap and its value.
fn assert_over_the_cap(err: &Error) {
    match err {
        Error::Protocol {
            server,
            kind,
            detail,
            ..
        } => {
            assert_eq!(server, "cap");
            assert_eq!(*kind, ProtocolErrorKind::TooLarge);
            assert!(
                detail.contains("`max_message_bytes`") && detail.contains(&CAP.to_string()),
                "{detail}"
            );
            assert!(detail.contains("exceeds"), "{detail}");
        }
        other => panic!("expected a protocol error naming the cap, got {other:?}"),
    }
}

#[test]
fn an_sse_event_of_many_data_lines_one_byte_over_the_cap_fails_the_call_at_once() {
    let srv = McpHttp::start(Options {
        sse: true,
        ..Options::default()
    });
    let client = capped(&srv.url());
    // Exactly at the cap: one event of ~1,000 lines, joined into valid JSON.
    let r = client
        .call_tool("big", json!({"bytes": CAP, "line": 1024}))
        .expect("an answer of exactly the cap");
    assert!(r.content.len() > 1000, "{} items", r.content.len());
    let started = Instant::now();
    let err = client
        .call_tool("big", json!({"bytes": CAP + 1, "line": 1024}))
        .expect_err("one byte over");
    assert_over_the_cap(&err);
    assert!(err.to_string().contains("event"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection goes on.
    let r = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .expect("call");
    assert_eq!(text(&r), "3");
    client.close().expect("close");
}

#[test]
fn a_json_body_over_the_cap_fails_with_or_without_a_content_length() {
    let srv = McpHttp::start(Options::default());
    let client = capped(&srv.url());
    for chunked in [false, true] {
        client
            .call_tool(
                "big",
                json!({"bytes": CAP, "line": 4096, "chunked": chunked}),
            )
            .expect("exactly the cap");
        let err = client
            .call_tool(
                "big",
                json!({"bytes": CAP + 1, "line": 4096, "chunked": chunked}),
            )
            .expect_err("one byte over");
        assert_over_the_cap(&err);
        assert!(err.to_string().contains("JSON reply"), "{err}");
    }
    client.close().expect("close");
}

#[test]
fn an_oversized_answer_is_abandoned_not_read_into_memory() {
    // 64 times the cap, as a JSON body and as SSE events: the client stops at the cap.
    for sse in [false, true] {
        let srv = McpHttp::start(Options {
            sse,
            ..Options::default()
        });
        let client = capped(&srv.url());
        client.list_tools().expect("warm up");
        let reset = reset_peak_rss();
        let before = peak_rss();
        let err = client
            .call_tool(
                "big",
                json!({"bytes": 64 * CAP, "line": 1024, "chunked": true}),
            )
            .expect_err("over the cap");
        assert_over_the_cap(&err);
        let grew = peak_rss().saturating_sub(before);
        if before > 0 {
            assert!(
                grew < 24 * CAP as u64,
                "peak memory grew by {grew} bytes (sse: {sse}, peak reset: {reset})"
            );
        }
        client.close().expect("close");
    }
}

#[test]
fn an_oversized_event_on_the_get_stream_is_skipped_and_the_stream_goes_on() {
    let srv = McpHttp::start(Options {
        get_stream: true,
        sessions: true,
        ..Options::default()
    });
    let (notify, rx) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    let builder = Client::builder(
        ServerConfig::http("cap", srv.url())
            .with_max_message_bytes(CAP)
            .with_timeout_secs(5.0),
    )
    .on_notification(notify);
    let client = builder.connect().expect("connect");
    let note = |data: Value| {
        json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": data}})
    };
    srv.state.push(note(json!("x".repeat(2 * CAP))));
    srv.state.push(note(json!("after")));
    let (_, n) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("the notification after the oversized one");
    match n {
        Notification::Log(m) => assert_eq!(m.data, json!("after")),
        other => panic!("unexpected {other:?}"),
    }
    client.close().expect("close");
    let gets = srv.requests().iter().filter(|r| r.method == "GET").count();
    assert_eq!(gets, 1, "the stream was not reconnected");
}

// ---- redirects ---------------------------------------------------------------------------------

#[test]
fn a_same_origin_307_from_mcp_to_mcp_slash_is_followed_by_every_request() {
    // Starlette's answer to `/mcp` when the app is mounted at `/mcp/`.
    let srv = McpHttp::start(Options {
        sessions: true,
        get_stream: true,
        sse: true,
        redirects: vec![Redirect::new("/mcp", 307, "http://127.0.0.1:{port}/mcp/")],
        ..Options::default()
    });
    let (notify, rx) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    let builder = Client::builder(
        ServerConfig::http("slash", srv.url())
            .with_header("X-Api-Key", "k-123")
            .with_timeout_secs(5.0),
    )
    .on_notification(notify);
    let client = builder.connect().expect("connect through the 307");
    let r = client
        .call_tool("add", json!({"a": 2, "b": 5}))
        .expect("call");
    assert_eq!(text(&r), "7");
    client.call_tool("notify", json!({})).expect("notify");
    let (_, n) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("a notification on the redirected GET stream");
    assert!(matches!(n, Notification::Log(_)), "{n:?}");
    client.close().expect("close");
    let reqs = srv.requests();
    // Every request went to `/mcp` first (307 is temporary), then to `/mcp/` with the same
    // method, body and headers.
    for (method, body) in reqs
        .iter()
        .filter(|r| r.path == "/mcp")
        .map(|r| (r.method.clone(), r.body.clone()))
    {
        let followed = reqs
            .iter()
            .find(|r| r.path == "/mcp/" && r.method == method && r.body == body)
            .unwrap_or_else(|| panic!("{method} was not repeated at /mcp/"));
        assert_eq!(followed.header("x-api-key"), Some("k-123"));
    }
    for method in ["POST", "GET", "DELETE"] {
        assert!(
            reqs.iter().any(|r| r.path == "/mcp/" && r.method == method),
            "{method} reached /mcp/"
        );
    }
    let init = reqs
        .iter()
        .find(|r| r.path == "/mcp/" && r.rpc_method() == "tools/call")
        .expect("the call at /mcp/");
    assert_eq!(init.header("mcp-session-id"), Some("s-1"));
}

#[test]
fn a_308_moves_the_endpoint_for_later_requests() {
    let srv = McpHttp::start(Options {
        redirects: vec![Redirect::new("/mcp", 308, "/v2/mcp")],
        ..Options::default()
    });
    let client = connect(&srv.url(), 5.0);
    client.list_tools().expect("list");
    client.list_tools().expect("list again");
    client.close().expect("close");
    let at_old = srv.requests().iter().filter(|r| r.path == "/mcp").count();
    assert_eq!(
        at_old, 1,
        "only the first request met the permanent redirect"
    );
    let at_new = srv
        .requests()
        .iter()
        .filter(|r| r.path == "/v2/mcp")
        .count();
    assert!(at_new >= 4, "{at_new} requests at the new URL");
}

#[test]
fn a_redirect_loop_stops_after_five_hops() {
    let srv = HttpServer::start_redirecting(
        vec![
            Redirect::new("/a", 307, "/b"),
            Redirect::new("/b", 307, "/a"),
        ],
        |_req, conn| conn.respond(500, &[], b""),
    );
    let err = Client::connect(ServerConfig::http("loop", srv.url("/a")).with_timeout_secs(5.0))
        .expect_err("a loop");
    assert!(err.to_string().contains("more than 5 redirects"), "{err}");
    assert_eq!(srv.requests().len(), 6);
}

#[test]
fn a_302_to_another_origin_is_refused_and_the_other_origin_gets_nothing() {
    let other = McpHttp::start(Options::default());
    // The same machine by another name is another origin.
    let target = format!("http://localhost:{}/mcp?token=s3cret", other.server.port());
    let srv =
        HttpServer::start_redirecting(vec![Redirect::new("/mcp", 302, &target)], |_req, conn| {
            conn.respond(500, &[], b"")
        });
    let err = Client::connect(
        ServerConfig::http("moved", srv.url("/mcp"))
            .with_header("X-Api-Key", "k-123")
            .with_bearer_token("t0ken")
            .with_timeout_secs(5.0),
    )
    .expect_err("refused");
    let text = err.to_string();
    let shown = format!("http://localhost:{}/mcp?<redacted>", other.server.port());
    assert!(text.contains(&shown), "names the target: {text}");
    assert!(text.contains("another origin"), "{text}");
    assert!(!text.contains("s3cret") && !text.contains("t0ken") && !text.contains("k-123"));
    assert_eq!(connect_error(&err).http_status(), Some(302));
    assert!(
        other.requests().is_empty(),
        "the other origin received nothing"
    );
    assert_eq!(srv.requests().len(), 1, "one POST, not followed");
}

#[test]
fn a_cross_origin_redirect_is_followed_on_opt_in_without_credentials() {
    let other = McpHttp::start(Options {
        get_stream: true,
        ..Options::default()
    });
    let target = format!("http://127.0.0.1:{}/mcp", other.server.port());
    let srv =
        HttpServer::start_redirecting(vec![Redirect::new("/mcp", 302, &target)], |_req, conn| {
            conn.respond(500, &[], b"")
        });
    let client = Client::connect(
        ServerConfig::http("moved", srv.url("/mcp"))
            .with_header("X-Api-Key", "k-123")
            .with_bearer_token("t0ken")
            .with_follow_cross_origin_redirects(true)
            .with_timeout_secs(5.0),
    )
    .expect("connect through the redirect");
    let r = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .expect("call");
    assert_eq!(text(&r), "2");
    client.close().expect("close");
    let theirs = other.requests();
    assert!(theirs.iter().any(|r| r.rpc_method() == "tools/call"));
    for r in &theirs {
        assert_eq!(r.header("x-api-key"), None, "{} {}", r.method, r.path);
        assert_eq!(r.header("authorization"), None, "{} {}", r.method, r.path);
    }
    for r in srv.requests() {
        assert_eq!(
            r.header("x-api-key"),
            Some("k-123"),
            "the home origin gets them"
        );
    }
}

// ---- reconnecting the GET stream ----------------------------------------------------------------

/// A server whose GET stream sends `stream` and ends at once; POSTs are answered as usual.
fn ending_get_stream(stream: &'static str) -> HttpServer {
    HttpServer::start(move |req, conn| {
        if req.method == "GET" {
            conn.sse_start(&[]);
            let _ = conn.chunk(stream);
            conn.sse_end();
            return;
        }
        match support_remote::mcp::answer(&req.json()) {
            Some(a) => conn.json(200, &[], &a),
            None => conn.accepted(),
        }
    })
}

/// Times of the first `n` GETs, waiting up to 15 s for them.
fn get_times(srv: &HttpServer, n: usize) -> Vec<Instant> {
    let gets = |l: &[support_remote::Req]| l.iter().filter(|r| r.method == "GET").count();
    srv.wait_until(Duration::from_secs(15), |l| gets(l) >= n)
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.at)
        .take(n)
        .collect()
}

#[test]
fn a_retry_0_get_stream_is_reconnected_with_a_growing_delay() {
    let srv = ending_get_stream("retry: 0\n\n");
    let client = connect(&srv.url("/mcp"), 5.0);
    let t = get_times(&srv, 4);
    assert_eq!(t.len(), 4, "three reconnections within 15 s");
    // At least 250 ms, 500 ms, 1 s: a floor under `retry: 0`, doubling while nothing arrives.
    let gaps: Vec<Duration> = t.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] >= Duration::from_millis(240), "{gaps:?}");
    assert!(gaps[1] >= Duration::from_millis(490), "{gaps:?}");
    assert!(gaps[2] >= Duration::from_millis(990), "{gaps:?}");
    let started = Instant::now();
    client.close().expect("close");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "close does not wait for the backoff"
    );
    let total = srv.requests().iter().filter(|r| r.method == "GET").count();
    assert!(total < 8, "{total} GETs");
}

#[test]
fn a_stream_that_delivers_resets_the_backoff_but_not_below_the_floor() {
    let note =
        "retry: 0\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
    let srv = ending_get_stream(note);
    let client = connect(&srv.url("/mcp"), 5.0);
    let t = get_times(&srv, 4);
    assert_eq!(t.len(), 4);
    for w in t.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap >= Duration::from_millis(200), "{gap:?}");
        assert!(
            gap < Duration::from_secs(5),
            "the backoff was reset: {gap:?}"
        );
    }
    client.close().expect("close");
}

#[test]
fn close_interrupts_a_long_reconnection_wait_at_once() {
    let srv = ending_get_stream("retry: 20000\n\n");
    let client = connect(&srv.url("/mcp"), 5.0);
    let t = get_times(&srv, 1);
    assert_eq!(t.len(), 1);
    let started = Instant::now();
    client.close().expect("close");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        srv.requests().iter().filter(|r| r.method == "GET").count(),
        1
    );
}

#[test]
fn an_error_without_an_id_in_a_post_reply_answers_that_post_at_once() {
    let srv = McpHttp::start(Options::default());
    let client = Client::connect(ServerConfig::http("idless", srv.url()).with_timeout_secs(30.0))
        .expect("connect");
    let started = std::time::Instant::now();
    let err = client
        .call_tool("idless_error", json!({}))
        .expect_err("the server answers with an error");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the call waited for its timeout"
    );
    match &err {
        Error::Rpc { code, message, .. } => {
            assert_eq!(*code, ErrorCode::PARSE_ERROR);
            assert_eq!(message, "could not parse that");
        }
        other => panic!("expected the server's error, got {other:?}"),
    }
    client.ping().expect("the connection goes on");
}

#[test]
fn a_flood_of_notifications_on_the_get_stream_does_not_delay_a_call_past_its_timeout() {
    let srv = McpHttp::start(Options {
        get_stream: true,
        sessions: true,
        ..Options::default()
    });
    let client = Arc::new(
        Client::connect(ServerConfig::http("flood", srv.url()).with_timeout_secs(2.0))
            .expect("connect"),
    );
    for _ in 0..50_000 {
        srv.state
            .push(json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "flood"}}));
    }
    common::flood::add_returns_during_a_flood(&client, Duration::from_secs(15));
    client.close().expect("close");
}
