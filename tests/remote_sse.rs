//! Legacy HTTP+SSE through `Client`: the `endpoint` event (relative URLs, another origin
//! refused), POST + stream routing, a stream that ends, handshake timeouts, auto-detection
//! from a URL given without a type, headers, bearer token and auth provider on the stream and
//! every POST, the message size cap, redirects, and 401/403 with their challenge.

mod common;
mod support_remote;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::settle::settled;
use common::threads::names as thread_names;
use mcp_blocking::config::{AuthProvider, ConfigErrorKind};
use mcp_blocking::error::{ConnectErrorKind, ProtocolErrorKind};
use mcp_blocking::{Client, ConfigLoader, Error, ServerConfig};
use serde_json::json;
use support_remote::mcp::McpSse;
use support_remote::{HttpServer, Redirect};

fn text(r: &mcp_blocking::model::CallToolResult) -> String {
    let v = serde_json::to_value(r).expect("serialise result");
    v["content"][0]["text"].as_str().unwrap_or("").to_owned()
}

#[test]
fn lists_and_calls_tools_over_legacy_sse() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("old", srv.server.url("/sse")).with_timeout_secs(5.0))
            .expect("connect");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    let r = client
        .call_tool("add", json!({"a": 4, "b": 5}))
        .expect("call");
    assert_eq!(text(&r), "9");
    client.close().expect("close");
    let posts: Vec<_> = srv
        .server
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert!(posts.iter().all(|r| r.path == "/messages?sid=1"));
    assert_eq!(posts[0].rpc_method(), "initialize");
}

#[test]
fn a_relative_endpoint_resolves_against_the_stream_url() {
    let srv = McpSse::start("messages?sid=2");
    let client =
        Client::connect(ServerConfig::sse("rel", srv.server.url("/sse")).with_timeout_secs(5.0))
            .expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    let post = srv
        .server
        .requests()
        .into_iter()
        .find(|r| r.method == "POST")
        .expect("a POST");
    assert_eq!(post.path, "/messages?sid=2");
}

#[test]
fn an_endpoint_on_another_origin_is_refused() {
    let srv = McpSse::start("http://evil.example/messages?sid=1");
    let err =
        Client::connect(ServerConfig::sse("o", srv.server.url("/sse")).with_timeout_secs(5.0))
            .expect_err("refused");
    assert!(err.to_string().contains("origin"), "{err}");
    assert!(srv.server.requests().iter().all(|r| r.method != "POST"));
}

#[test]
fn an_endpoint_on_another_port_is_refused() {
    let srv = McpSse::start("http://127.0.0.1:1/messages");
    let err =
        Client::connect(ServerConfig::sse("p", srv.server.url("/sse")).with_timeout_secs(5.0))
            .expect_err("refused");
    assert!(err.to_string().contains("origin"), "{err}");
}

#[test]
fn a_stream_that_ends_fails_the_pending_call_at_once() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("end", srv.server.url("/sse")).with_timeout_secs(10.0))
            .expect("connect");
    let started = Instant::now();
    let err = client
        .call_tool("die", json!({}))
        .expect_err("stream ended");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    client.close().expect("close");
}

#[test]
fn a_stream_without_an_endpoint_event_times_out_on_time() {
    let srv = HttpServer::start(|_req, conn| {
        conn.sse_start(&[]);
        conn.wait_for_peer_close();
    });
    let started = Instant::now();
    let err = Client::connect(ServerConfig::sse("mute", srv.url("/sse")).with_timeout_secs(0.5))
        .expect_err("no endpoint");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_millis(2000), "{took:?}");
    assert!(err.to_string().contains("mute"), "{err}");
    assert!(
        matches!(&err, Error::Connect(e) if e.kind() == ConnectErrorKind::TimedOut),
        "{err:?}"
    );
    assert!(err.to_string().contains("`endpoint` event"), "{err}");
}

#[test]
fn a_404_on_the_stream_is_a_typed_error() {
    let srv = HttpServer::start(|_req, conn| conn.respond(404, &[], b"no such stream"));
    let err = Client::connect(ServerConfig::sse("nf", srv.url("/sse")).with_timeout_secs(2.0))
        .expect_err("404");
    match &err {
        Error::Connect(e) => {
            assert_eq!(e.kind(), ConnectErrorKind::Unreachable);
            assert_eq!(e.http_status(), Some(404));
            assert_eq!(e.target(), srv.url("/sse"));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("no such stream"), "{err}");
}

#[test]
fn a_url_without_a_type_falls_back_to_legacy_sse() {
    let srv = McpSse::start("/messages?sid=1");
    let doc = format!(
        r#"{{"mcpServers": {{"auto": {{"url": "{}", "timeout": 5}}}}}}"#,
        srv.server.url("/sse")
    );
    let report = ConfigLoader::new().load_str(&doc).expect("config");
    let cfg = report.server("auto").expect("server").clone();
    let client = Client::connect(cfg).expect("connect");
    let r = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .expect("call");
    assert_eq!(text(&r), "2");
    client.close().expect("close");
    let reqs = srv.server.requests();
    assert_eq!(reqs[0].method, "POST", "Streamable HTTP is tried first");
    assert_eq!(reqs[0].path, "/sse");
    assert!(reqs.iter().any(|r| r.method == "GET" && r.path == "/sse"));
}

#[test]
fn without_detection_a_405_is_an_error() {
    let srv = McpSse::start("/messages?sid=1");
    let err = Client::connect(
        ServerConfig::http("strict", srv.server.url("/sse")).with_timeout_secs(2.0),
    )
    .expect_err("405");
    assert!(err.to_string().contains("405"), "{err}");
}

#[test]
fn the_stream_thread_ends_on_close() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("thr2", srv.server.url("/sse")).with_timeout_secs(5.0))
            .expect("connect");
    assert!(thread_names().iter().any(|n| n == "mcp-sse:thr2"));
    let started = Instant::now();
    client.close().expect("close");
    assert!(started.elapsed() < Duration::from_secs(2));
    let left = settled(thread_names, |names| {
        !names.iter().any(|n| n == "mcp-sse:thr2")
    });
    assert!(!left.iter().any(|n| n == "mcp-sse:thr2"), "{left:?}");
}

/// An auth provider that hands out `Bearer n-1`, `Bearer n-2`, … and then fails after `ok` calls.
fn counting_auth(ok: usize) -> (AuthProvider, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let auth = AuthProvider::new(move || {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        if n > ok {
            Err("the token could not be refreshed".into())
        } else {
            Ok(format!("Bearer n-{n}"))
        }
    });
    (auth, calls)
}

#[test]
fn headers_and_the_bearer_token_go_on_the_stream_and_every_post() {
    let srv = McpSse::start("/messages?sid=1");
    let config = ServerConfig::sse("hdr", srv.server.url("/sse"))
        .with_header("X-Api-Key", "k-1")
        .with_bearer_token("t0ken")
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    assert_eq!(client.list_tools().expect("list").len(), 2);
    let r = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .expect("call");
    assert_eq!(text(&r), "3");
    client.close().expect("close");
    let reqs = srv.server.requests();
    assert!(reqs.iter().any(|r| r.method == "GET"), "{reqs:?}");
    assert!(reqs.iter().filter(|r| r.method == "POST").count() >= 4);
    for r in &reqs {
        assert_eq!(
            r.header_values("x-api-key"),
            ["k-1"],
            "{} {}",
            r.method,
            r.path
        );
        assert_eq!(
            r.header_values("authorization"),
            ["Bearer t0ken"],
            "{} {}",
            r.method,
            r.path
        );
    }
}

#[test]
fn the_auth_provider_is_asked_for_the_stream_and_for_every_post() {
    let srv = McpSse::start("/messages?sid=1");
    let (auth, calls) = counting_auth(usize::MAX);
    let config = ServerConfig::sse("auth", srv.server.url("/sse"))
        .with_bearer_token("replaced")
        .with_auth_provider(auth)
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    client
        .call_tool("echo", json!({"text": "hi"}))
        .expect("call");
    client.close().expect("close");
    let reqs = srv.server.requests();
    assert_eq!(calls.load(Ordering::SeqCst), reqs.len());
    let mut seen: Vec<&str> = reqs
        .iter()
        .map(|r| match r.header_values("authorization")[..] {
            [one] => one,
            ref other => panic!("{} {}: {other:?}", r.method, r.path),
        })
        .collect();
    let get = reqs.iter().position(|r| r.method == "GET").expect("a GET");
    assert!(seen[get].starts_with("Bearer n-"), "{seen:?}");
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), reqs.len(), "one fresh value per request");
}

#[test]
fn a_failing_auth_provider_fails_connect_naming_the_server_without_the_token() {
    let srv = McpSse::start("/messages?sid=1");
    let (auth, _) = counting_auth(0);
    let err = Client::connect(
        ServerConfig::sse("locked", srv.server.url("/sse"))
            .with_bearer_token("sekrit-token")
            .with_auth_provider(auth)
            .with_timeout_secs(5.0),
    )
    .expect_err("the provider fails");
    match &err {
        Error::Connect(c) => assert_eq!(c.kind(), ConnectErrorKind::Auth, "{err:?}"),
        other => panic!("expected a connect error, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("server `locked`"), "{text}");
    assert!(text.contains("auth provider"), "{text}");
    assert!(!text.contains("sekrit-token"), "{text}");
    assert!(srv.server.requests().is_empty(), "nothing was sent");
}

#[test]
fn an_auth_provider_that_fails_later_fails_that_request() {
    let srv = McpSse::start("/messages?sid=1");
    // The GET, `initialize` and `notifications/initialized` succeed; the next POST does not.
    let (auth, _) = counting_auth(3);
    let client = Client::connect(
        ServerConfig::sse("expiring", srv.server.url("/sse"))
            .with_auth_provider(auth)
            .with_timeout_secs(5.0),
    )
    .expect("connect");
    let err = client.list_tools().expect_err("the provider fails");
    assert!(matches!(err, Error::Transport { .. }), "{err:?}");
    assert!(err.to_string().contains("server `expiring`"), "{err}");
    client.close().expect("close");
}

#[test]
fn a_stdio_setting_on_an_sse_server_fails_connect_before_any_request() {
    let srv = McpSse::start("/messages?sid=1");
    let err = Client::connect(ServerConfig::sse("old", srv.server.url("/sse")).with_args(["--x"]))
        .expect_err("args cannot apply");
    let Error::Config(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind, ConfigErrorKind::NotApplicable);
    assert_eq!(
        err.to_string(),
        "server `old`: transport.args: `args` applies only to stdio servers; `old` is an sse server"
    );
    let err =
        Client::connect(ServerConfig::sse("old", srv.server.url("/sse")).with_session_id("s-1"))
            .expect_err("no session on legacy SSE");
    assert!(err.to_string().contains("`session_id`"), "{err}");
    assert!(srv.server.requests().is_empty());
}

#[test]
fn the_fallback_from_streamable_http_sends_the_headers_too() {
    let srv = McpSse::start("/messages?sid=1");
    let doc = format!(
        r#"{{"mcpServers": {{"auto": {{"url": "{}", "timeout": 5,
            "headers": {{"X-Api-Key": "${{KEY}}"}}}}}}}}"#,
        srv.server.url("/sse")
    );
    let report = ConfigLoader::new()
        .with_env([("KEY".to_owned(), "k-9".to_owned())].into_iter().collect())
        .load_str(&doc)
        .expect("config");
    let client = Client::connect(report.server("auto").expect("server").clone()).expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    let reqs = srv.server.requests();
    assert!(reqs.iter().any(|r| r.method == "GET"), "{reqs:?}");
    for r in &reqs {
        assert_eq!(
            r.header_values("x-api-key"),
            ["k-9"],
            "{} {}",
            r.method,
            r.path
        );
    }
}

// ---- the message size cap ----------------------------------------------------------------------

const CAP: usize = 1 << 20;

#[test]
fn an_oversized_answer_on_the_stream_fails_its_call_at_once_and_the_stream_goes_on() {
    let srv = McpSse::start("/messages?sid=1");
    let client = Client::connect(
        ServerConfig::sse("cap", srv.server.url("/sse"))
            .with_max_message_bytes(CAP)
            .with_timeout_secs(10.0),
    )
    .expect("connect");
    let r = client
        .call_tool("big", json!({"bytes": CAP, "line": 1024}))
        .expect("exactly the cap");
    assert!(r.content.len() > 1000);
    let started = Instant::now();
    let err = client
        .call_tool("big", json!({"bytes": CAP + 1, "line": 1024}))
        .expect_err("one byte over");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "at once, not at the timeout"
    );
    match &err {
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
        }
        other => panic!("expected a protocol error naming the cap, got {other:?}"),
    }
    let r = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .expect("the stream goes on");
    assert_eq!(text(&r), "3");
    client.close().expect("close");
}

// ---- redirects ---------------------------------------------------------------------------------

#[test]
fn the_stream_and_the_posts_follow_same_origin_redirects() {
    let srv = McpSse::start_redirecting(
        "messages?sid=1",
        vec![
            Redirect::new("/old/sse", 308, "/sse"),
            Redirect::new("/messages?sid=1", 307, "/messages/?sid=1"),
        ],
    );
    let client = Client::connect(
        ServerConfig::sse("moved", srv.server.url("/old/sse"))
            .with_header("X-Api-Key", "k-123")
            .with_timeout_secs(5.0),
    )
    .expect("connect");
    let r = client
        .call_tool("add", json!({"a": 2, "b": 2}))
        .expect("call");
    assert_eq!(text(&r), "4");
    client.close().expect("close");
    let reqs = srv.server.requests();
    assert!(reqs.iter().any(|r| r.method == "GET" && r.path == "/sse"));
    // The endpoint resolved against the URL that answered the stream (`/sse`, not `/old/sse`),
    // and its POSTs were redirected in turn.
    assert!(!reqs.iter().any(|r| r.path.starts_with("/old/messages")));
    let posts: Vec<_> = reqs
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/messages/?sid=1")
        .collect();
    assert!(posts.len() >= 2, "{reqs:?}");
    assert!(posts.iter().all(|r| r.header("x-api-key") == Some("k-123")));
}

#[test]
fn a_stream_redirected_to_another_origin_is_refused() {
    let other = McpSse::start("/messages?sid=1");
    let target = format!("http://localhost:{}/sse", other.server.port());
    let srv = HttpServer::start_redirecting(vec![Redirect::new("/sse", 302, &target)], |_r, c| {
        c.respond(500, &[], b"")
    });
    let err = Client::connect(
        ServerConfig::sse("moved", srv.url("/sse"))
            .with_bearer_token("t0ken")
            .with_timeout_secs(5.0),
    )
    .expect_err("refused");
    assert!(err.to_string().contains(&target), "{err}");
    assert!(!err.to_string().contains("t0ken"));
    assert!(
        other.server.requests().is_empty(),
        "the other origin received nothing"
    );
}

#[test]
fn on_opt_in_the_other_origin_gets_the_stream_and_posts_without_credentials() {
    let other = McpSse::start("/messages?sid=1");
    let target = format!("http://127.0.0.1:{}/sse", other.server.port());
    let srv = HttpServer::start_redirecting(vec![Redirect::new("/sse", 302, &target)], |_r, c| {
        c.respond(500, &[], b"")
    });
    let client = Client::connect(
        ServerConfig::sse("moved", srv.url("/sse"))
            .with_bearer_token("t0ken")
            .with_header("X-Api-Key", "k-123")
            .with_follow_cross_origin_redirects(true)
            .with_timeout_secs(5.0),
    )
    .expect("connect");
    client.list_tools().expect("list");
    client.close().expect("close");
    let theirs = other.server.requests();
    assert!(theirs.iter().any(|r| r.method == "POST"));
    for r in &theirs {
        assert_eq!(r.header("authorization"), None, "{} {}", r.method, r.path);
        assert_eq!(r.header("x-api-key"), None, "{} {}", r.method, r.path);
    }
    let ours = srv.requests();
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].header("authorization"), Some("Bearer t0ken"));
}

// ---- 401 and 403 -------------------------------------------------------------------------------

#[test]
fn a_401_on_the_stream_is_an_auth_failure_with_the_challenge() {
    let challenge = r#"Bearer realm="legacy""#;
    let srv =
        HttpServer::start(move |_r, c| c.respond(401, &[("WWW-Authenticate", challenge)], b"no"));
    let err = Client::connect(ServerConfig::sse("auth", srv.url("/sse")).with_timeout_secs(5.0))
        .expect_err("401");
    match &err {
        Error::Connect(e) => {
            assert_eq!(e.kind(), ConnectErrorKind::Auth);
            assert_eq!(e.http_status(), Some(401));
            assert_eq!(e.www_authenticate(), Some(challenge));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_403_on_a_post_after_connect_is_unauthorized_with_the_challenge() {
    let srv = McpSse::start("/messages?sid=1");
    let client =
        Client::connect(ServerConfig::sse("auth", srv.server.url("/sse")).with_timeout_secs(5.0))
            .expect("connect");
    let err = client.call_tool("forbidden", json!({})).expect_err("403");
    match &err {
        Error::Unauthorized {
            status,
            www_authenticate,
            ..
        } => {
            assert_eq!(*status, 403);
            assert_eq!(
                www_authenticate.as_deref(),
                Some(r#"Bearer error="insufficient_scope", scope="admin""#)
            );
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
    assert!(!err.is_retryable());
    client.list_tools().expect("the connection goes on");
    client.close().expect("close");
}

#[test]
fn a_flood_of_notifications_on_the_stream_does_not_delay_a_call_past_its_timeout() {
    let srv = McpSse::start("/messages?sid=1");
    let client = Arc::new(
        Client::connect(ServerConfig::sse("flood", srv.server.url("/sse")).with_timeout_secs(2.0))
            .expect("connect"),
    );
    // 50,000 log notifications, queued on the stream ahead of the call's answer.
    let event = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"flood\"}}\n\n";
    for _ in 0..50 {
        srv.stream_tx
            .send(Some(serde_json::Value::String(event.repeat(1000))))
            .expect("queue the flood");
    }
    common::flood::add_returns_during_a_flood(&client, Duration::from_secs(15));
    client.close().expect("close");
}
