//! WebSocket through `Client`: subprotocol `mcp`, text frames, ping/pong, the close handshake in
//! both directions, timeouts on a silent server, headers, bearer token and auth provider on
//! the handshake, and hostile servers: floods of pings or notifications, a server that never
//! reads, messages over `max_message_bytes`.

mod common;
mod support_remote;

use std::time::{Duration, Instant};

use common::settle::settled;
use common::threads::names as thread_names;
use mcp_blocking::config::{AuthProvider, ConfigErrorKind};
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::json;
use support_remote::ws::{Flood, WsServer};
use support_remote::HttpServer;

fn text(r: &mcp_blocking::model::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

fn connect(srv: &WsServer, name: &str) -> Client {
    Client::connect(ServerConfig::websocket(name, srv.url()).with_timeout_secs(5.0))
        .expect("connect")
}

#[test]
fn lists_and_calls_tools_with_the_mcp_subprotocol() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "ws");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    let r = client
        .call_tool("add", json!({"a": 20, "b": 22}))
        .expect("call");
    assert_eq!(text(&r), "42");
    client.close().expect("close");
    let seen = srv.seen();
    assert_eq!(seen.subprotocol.as_deref(), Some("mcp"));
    assert!(seen.texts[0].contains("\"initialize\""));
    for t in &seen.texts {
        serde_json::from_str::<serde_json::Value>(t).expect("one JSON message per text frame");
    }
}

#[test]
fn a_ping_is_answered_with_a_pong() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "ping");
    let r = client.call_tool("ping-me", json!({})).expect("call");
    assert_eq!(text(&r), "pong received");
    client.close().expect("close");
    assert_eq!(srv.seen().pongs, 1);
}

#[test]
fn close_sends_a_close_frame_and_ends_the_reader() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "thr3");
    client.list_tools().expect("list");
    assert!(thread_names().iter().any(|n| n == "mcp-ws:thr3"));
    let started = Instant::now();
    client.close().expect("close");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(srv.seen().close_frames, 1);
    let left = settled(thread_names, |names| {
        !names.iter().any(|n| n == "mcp-ws:thr3")
    });
    assert!(!left.iter().any(|n| n == "mcp-ws:thr3"), "{left:?}");
}

#[test]
fn a_server_close_fails_the_pending_call_at_once() {
    let srv = WsServer::start(true);
    let client = Client::connect(ServerConfig::websocket("c", srv.url()).with_timeout_secs(10.0))
        .expect("connect");
    let started = Instant::now();
    let err = client.call_tool("close-me", json!({})).expect_err("closed");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    client.close().expect("close");
}

#[test]
fn a_silent_server_times_out_on_time() {
    let srv = WsServer::start(false);
    let started = Instant::now();
    let err = Client::connect(ServerConfig::websocket("silent", srv.url()).with_timeout_secs(0.5))
        .expect_err("no initialize answer");
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2500), "{took:?}");
    assert!(err.to_string().contains("silent"), "{err}");
    assert_eq!(kind(&err), ConnectErrorKind::TimedOut);
}

#[test]
fn a_call_times_out_on_time() {
    let srv = WsServer::start(true);
    let client = connect(&srv, "slow");
    let started = Instant::now();
    let err = client
        .call_tool_with(
            "unknown-never",
            json!({}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        )
        .err();
    // The loopback server answers unknown tools with nothing: a timeout.
    assert!(matches!(err, Some(Error::Timeout { .. })), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(1500));
    client.close().expect("close");
}

#[test]
fn a_handshake_that_never_answers_times_out_on_time() {
    let srv = HttpServer::start(|_req, conn| conn.wait_for_peer_close());
    let url = format!("ws://127.0.0.1:{}/", srv.port());
    let started = Instant::now();
    let err = Client::connect(ServerConfig::websocket("hs", url).with_timeout_secs(0.5))
        .expect_err("no upgrade");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
    assert_eq!(kind(&err), ConnectErrorKind::TimedOut);
    assert!(err.is_timeout());
}

#[test]
fn a_handshake_timeout_does_not_wait_a_close_grace_on_a_stalled_server() {
    // Accepts the upgrade, then reads everything and answers nothing: not `initialize`, not
    // the client's close frame.
    let srv = HttpServer::start(|req, conn| {
        let key = req.header("sec-websocket-key").unwrap_or_default();
        let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
        let head = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
        );
        if conn.raw(head.as_bytes()).is_ok() {
            conn.wait_for_peer_close();
        }
    });
    let url = format!("ws://127.0.0.1:{}/", srv.port());
    let timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let err = Client::connect(
        ServerConfig::websocket("stall", url).with_timeout_secs(timeout.as_secs_f64()),
    )
    .expect_err("no initialize answer");
    let took = started.elapsed();
    // A close grace (min(timeout, 2 s)) on top of the timeout would be 3 s.
    assert!(took < timeout + Duration::from_secs(1), "{took:?}");
    assert_eq!(kind(&err), ConnectErrorKind::TimedOut);
    assert!(
        !thread_names().iter().any(|n| n == "mcp-ws:stall"),
        "the I/O thread is joined before connect returns"
    );
}

#[test]
fn a_refused_upgrade_is_a_typed_error() {
    let srv = HttpServer::start(|_req, conn| conn.respond(403, &[], b"forbidden"));
    let url = format!("ws://127.0.0.1:{}/", srv.port());
    let err = Client::connect(ServerConfig::websocket("no", url).with_timeout_secs(2.0))
        .expect_err("403");
    match &err {
        Error::Connect(e) => {
            assert_eq!(e.kind(), ConnectErrorKind::Auth);
            assert_eq!(e.http_status(), Some(403));
        }
        other => panic!("{other:?}"),
    }
    // The body may or may not have arrived with the head; the status always has.
    assert!(err.to_string().contains("HTTP 403"), "{err}");
}

#[test]
fn a_refused_connection_is_unreachable_with_the_os_error_as_source() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let err = Client::connect(ServerConfig::websocket("gone", &url).with_timeout_secs(2.0))
        .expect_err("refused");
    assert_eq!(kind(&err), ConnectErrorKind::Unreachable);
    let io = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the OS error");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(err.to_string().contains(&url), "{err}");
}

/// The kind of the connect error `err`, or a panic naming what came instead.
fn kind(err: &Error) -> ConnectErrorKind {
    match err {
        Error::Connect(e) => e.kind(),
        other => panic!("expected a connect error, got {other:?}"),
    }
}

#[test]
fn headers_and_the_bearer_token_go_on_the_handshake() {
    let srv = WsServer::start(true);
    let config = ServerConfig::websocket("hdr", srv.url())
        .with_header("X-Api-Key", "k-1")
        .with_bearer_token("t0ken")
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .expect("call");
    assert_eq!(text(&r), "5");
    client.close().expect("close");
    assert_eq!(srv.handshake_header("x-api-key"), ["k-1"]);
    assert_eq!(srv.handshake_header("authorization"), ["Bearer t0ken"]);
    assert_eq!(srv.seen().subprotocol.as_deref(), Some("mcp"));
}

#[test]
fn the_auth_provider_value_goes_on_the_handshake() {
    let srv = WsServer::start(true);
    let config = ServerConfig::websocket("auth", srv.url())
        .with_bearer_token("replaced")
        .with_auth_provider(AuthProvider::new(|| Ok("Bearer fresh".into())))
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    client.close().expect("close");
    assert_eq!(srv.handshake_header("authorization"), ["Bearer fresh"]);
    assert_eq!(srv.handshake_header("sec-websocket-protocol"), ["mcp"]);
}

#[test]
fn a_failing_auth_provider_fails_connect_naming_the_server_without_the_token() {
    let srv = WsServer::start(true);
    let config = ServerConfig::websocket("locked", srv.url())
        .with_bearer_token("sekrit-token")
        .with_auth_provider(AuthProvider::new(|| {
            Err("the token could not be refreshed".into())
        }))
        .with_timeout_secs(5.0);
    let err = Client::connect(config).expect_err("the provider fails");
    match &err {
        Error::Connect(c) => assert_eq!(c.kind(), ConnectErrorKind::Auth, "{err:?}"),
        other => panic!("expected a connect error, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("server `locked`"), "{text}");
    assert!(text.contains("auth provider"), "{text}");
    assert!(!text.contains("sekrit-token"), "{text}");
    assert!(srv.seen().headers.is_empty(), "no handshake was sent");
}

#[test]
fn a_setting_a_websocket_cannot_take_fails_connect_before_the_handshake() {
    let srv = WsServer::start(true);
    for config in [
        ServerConfig::websocket("w", srv.url()).with_env("K", "v"),
        ServerConfig::websocket("w", srv.url()).with_session_id("s-1"),
    ] {
        let err = Client::connect(config).expect_err("cannot apply");
        let Error::Config(e) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(e.kind, ConfigErrorKind::NotApplicable);
        assert!(
            err.to_string().ends_with("`w` is a websocket server"),
            "{err}"
        );
    }
    assert!(srv.seen().headers.is_empty(), "no handshake was sent");
}

/// The request timeout of the flood tests.
const CALL_TIMEOUT: Duration = Duration::from_secs(2);
/// How long past its deadline a call may take before it counts as hung: generous, since this
/// only tells "returned" from "hung" on a loaded machine. The design's slack is one batch of
/// reads (64 frames or 1 MiB) plus one message.
const HANG: Duration = Duration::from_secs(8);

/// The process's peak resident memory so far, in bytes (`VmHWM`; the peak working set on
/// Windows).
fn peak_rss() -> u64 {
    common::memory::resident().peak
}

/// Runs `f` on its own thread; panics if it has not returned within `limit` (a hang).
fn within<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("test-call".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn");
    match rx.recv_timeout(limit) {
        Ok(v) => {
            handle.join().expect("join");
            v
        }
        Err(_) => panic!("{what} hung: no return within {limit:?}"),
    }
}

/// Calls `ping` and `add` a few times against a flooding server: each returns, with an answer
/// or a timeout, before its deadline plus [`HANG`]. Returns how many were answered.
fn calls_return_during_a_flood(client: &std::sync::Arc<Client>) -> usize {
    let mut answered = 0;
    for round in 0..3 {
        let c = std::sync::Arc::clone(client);
        let outcome = within(CALL_TIMEOUT + HANG, "ping", move || {
            let started = Instant::now();
            (c.ping(), started.elapsed())
        });
        match outcome {
            (Ok(()), _) => answered += 1,
            (Err(Error::Timeout { .. }), took) => assert!(took >= CALL_TIMEOUT, "{took:?}"),
            (Err(e), _) => panic!("round {round}: ping: {e:?}"),
        }
        let c = std::sync::Arc::clone(client);
        let outcome = within(CALL_TIMEOUT + HANG, "call_tool", move || {
            c.call_tool("add", json!({"a": round, "b": 1}))
        });
        match outcome {
            Ok(r) => {
                assert_eq!(text(&r), format!("{}", round + 1));
                answered += 1;
            }
            Err(Error::Timeout { .. }) => {}
            Err(e) => panic!("round {round}: call_tool: {e:?}"),
        }
    }
    answered
}

fn flood_client(srv: &WsServer, name: &str) -> std::sync::Arc<Client> {
    let config = ServerConfig::websocket(name, srv.url()).with_timeout(CALL_TIMEOUT);
    let client = within(CALL_TIMEOUT + HANG, "connect", move || {
        Client::connect(config)
    });
    std::sync::Arc::new(client.expect("connect"))
}

/// Closes the client during the flood: it returns within the close grace (2 s) plus slack, and
/// the I/O thread is gone.
fn close_returns_promptly(client: std::sync::Arc<Client>, thread: &str) {
    let took = within(Duration::from_secs(6), "close", move || {
        let started = Instant::now();
        client.close().expect("close");
        started.elapsed()
    });
    assert!(took < Duration::from_secs(4), "{took:?}");
    let left = settled(thread_names, |names| !names.iter().any(|n| n == thread));
    assert!(!left.iter().any(|n| n == thread), "{left:?}");
}

#[test]
fn a_ping_flood_neither_holds_up_calls_nor_grows_memory() {
    let srv = WsServer::flood(Flood::Pings);
    let before = peak_rss();
    let client = flood_client(&srv, "pingflood");
    let answered = calls_return_during_a_flood(&client);
    close_returns_promptly(client, "mcp-ws:pingflood");
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 256 << 20, "peak memory grew by {} MiB", grown >> 20);
    // The server reads, so the answers get through; and its pings were answered.
    assert!(answered > 0, "no call was answered during the flood");
    let seen = std::sync::Arc::clone(&srv.seen);
    drop(srv);
    let seen = seen.lock().unwrap().clone();
    assert!(seen.flooded > 1000, "{seen:?}");
    assert!(seen.pongs > 0, "{seen:?}");
    assert_eq!(seen.close_frames, 1);
}

#[test]
fn a_notification_flood_neither_holds_up_calls_nor_grows_memory() {
    let srv = WsServer::flood(Flood::Notifications);
    let before = peak_rss();
    let client = flood_client(&srv, "noteflood");
    let answered = calls_return_during_a_flood(&client);
    close_returns_promptly(client, "mcp-ws:noteflood");
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 256 << 20, "peak memory grew by {} MiB", grown >> 20);
    assert!(answered > 0, "no call was answered during the flood");
    let seen = std::sync::Arc::clone(&srv.seen);
    drop(srv);
    assert!(seen.lock().unwrap().flooded > 1000);
}

#[test]
fn a_server_that_floods_pings_and_never_reads_times_out_and_closes_on_time() {
    let srv = WsServer::flood(Flood::DeafPings);
    let before = peak_rss();
    let config = ServerConfig::websocket("deaf", srv.url()).with_timeout(CALL_TIMEOUT);
    // It never answers `initialize`: connecting times out, and closing the half-open connection
    // (the close frame cannot even be written) takes at most the close grace.
    let (outcome, took) = within(CALL_TIMEOUT + HANG, "connect", move || {
        let started = Instant::now();
        (Client::connect(config), started.elapsed())
    });
    let err = outcome.expect_err("no initialize answer");
    assert_eq!(kind(&err), ConnectErrorKind::TimedOut, "{err}");
    assert!(took >= CALL_TIMEOUT, "{took:?}");
    let grown = peak_rss().saturating_sub(before);
    assert!(grown < 256 << 20, "peak memory grew by {} MiB", grown >> 20);
    let left = settled(thread_names, |names| {
        !names.iter().any(|n| n == "mcp-ws:deaf")
    });
    assert!(!left.iter().any(|n| n == "mcp-ws:deaf"), "{left:?}");
    let seen = std::sync::Arc::clone(&srv.seen);
    drop(srv);
    let seen = seen.lock().unwrap().clone();
    assert!(seen.flooded > 1000, "{seen:?} {err} {took:?}");
}

#[test]
fn an_oversized_answer_fails_its_call_at_once_and_the_connection_carries_on() {
    let srv = WsServer::start(true);
    let config = ServerConfig::websocket("big", srv.url())
        .with_max_message_bytes(64 * 1024)
        .with_timeout_secs(20.0);
    let client = Client::connect(config).expect("connect");
    let started = Instant::now();
    let err = client
        .call_tool("big", json!({"bytes": 200_000}))
        .expect_err("over the cap");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Protocol { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "server `big`: protocol error: a message from the server exceeds the 65536 byte limit \
         (`max_message_bytes`) and was discarded"
    );
    // The rest of it was skipped: the next answers arrive.
    let r = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .expect("call");
    assert_eq!(text(&r), "3");
    let r = client
        .call_tool("big", json!({"bytes": 60_000}))
        .expect("under the cap");
    assert_eq!(text(&r).len(), 60_000);
    client.close().expect("close");
}

#[test]
fn an_oversized_notification_is_dropped_and_the_call_answered() {
    let srv = WsServer::start(true);
    let config = ServerConfig::websocket("bignote", srv.url())
        .with_max_message_bytes(64 * 1024)
        .with_timeout_secs(20.0);
    let client = Client::connect(config).expect("connect");
    let r = client
        .call_tool("big-notify", json!({"bytes": 200_000}))
        .expect("answered");
    assert_eq!(text(&r), "xx");
    client.close().expect("close");
}

#[test]
fn an_oversized_answer_that_names_no_request_first_fails_the_connection_with_the_cap() {
    let srv = WsServer::start(true);
    let config = ServerConfig::websocket("bigid", srv.url())
        .with_max_message_bytes(64 * 1024)
        .with_timeout_secs(20.0);
    let client = Client::connect(config).expect("connect");
    let started = Instant::now();
    let err = client
        .call_tool("big-id-last", json!({"bytes": 200_000}))
        .expect_err("over the cap");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let Error::Closed { detail, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(
        detail.contains("exceeds the 65536 byte limit (`max_message_bytes`)"),
        "{detail}"
    );
    assert!(matches!(client.ping(), Err(Error::Closed { .. })));
    client.close().expect("close");
}
