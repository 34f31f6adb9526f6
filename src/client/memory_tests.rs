//! Client protocol behaviour against an in-process server (no process, no thread of ours).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

use super::{CallOptions, Client};
use crate::config::ServerConfig;
use crate::error::{ConnectErrorKind, Error, InvalidArgumentKind, ProtocolErrorKind};
use crate::protocol::jsonrpc::ErrorCode;

type Sent = crate::testing::TestServer;

/// A client whose server is `f`; returns it with the log of what the client sent.
fn client(f: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static) -> (Client, Sent) {
    client_with(
        Client::builder(
            ServerConfig::stdio("mem", "unused")
                .with_protocol(crate::config::ProtocolMode::Legacy)
                .with_timeout_secs(1.0),
        ),
        f,
    )
}

fn client_with(
    builder: super::ClientBuilder,
    f: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static,
) -> (Client, Sent) {
    let server = crate::testing::TestServer::from_fn("mem", f);
    let c = builder.in_process(Arc::new(server.clone())).build();
    (c, server)
}

fn init_result(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "mem", "version": "1"}})
}

/// A server that completes the handshake and then answers with `then`.
fn server(
    then: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static,
) -> impl Fn(&Value) -> Vec<Value> + Send + Sync {
    move |m: &Value| match m["method"].as_str() {
        Some("initialize") => {
            vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": init_result("2025-11-25")})]
        }
        Some("notifications/initialized") => vec![],
        _ => then(m),
    }
}

fn methods(sent: &Sent) -> Vec<String> {
    sent.received_methods()
}

#[test]
fn handshake_is_initialize_then_initialized() {
    let (c, sent) = client(server(|_| vec![]));
    c.open().unwrap();
    assert_eq!(methods(&sent), ["initialize", "notifications/initialized"]);
    let init = &sent.received()[0];
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "mcp-blocking");
    assert!(init["id"].is_i64(), "integer ids");
}

#[test]
fn an_unsupported_version_is_refused_and_names_both() {
    let (c, sent) = client(|m: &Value| match m["method"].as_str() {
        Some("initialize") => {
            vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": init_result("2030-01-01")})]
        }
        _ => vec![],
    });
    let err = c.open().unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("2030-01-01") && msg.contains("2025-11-25"),
        "{msg}"
    );
    assert!(
        matches!(&err, Error::Connect(e) if e.kind() == ConnectErrorKind::Protocol),
        "{err:?}"
    );
    assert_eq!(
        methods(&sent),
        ["initialize"],
        "no initialized after a refused version"
    );
}

#[test]
fn initialize_is_never_cancelled() {
    let (c, sent) = client(|_| vec![]);
    let err = c.open().unwrap_err();
    assert!(
        matches!(&err, Error::Connect(e) if e.kind() == ConnectErrorKind::TimedOut),
        "{err:?}"
    );
    assert!(err.is_timeout());
    assert_eq!(methods(&sent), ["initialize"]);
}

#[test]
fn an_initialize_answered_with_an_error_is_rejected_with_its_code() {
    let (c, sent) = client(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc": "2.0", "id": m["id"],
            "error": {"code": -32602, "message": "unsupported client"}})],
        _ => vec![],
    });
    let err = c.open().unwrap_err();
    let Error::Connect(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind(), ConnectErrorKind::Rejected);
    assert_eq!(
        e.rpc(),
        Some((ErrorCode::INVALID_PARAMS, "unsupported client"))
    );
    assert!(!err.is_timeout());
    assert!(
        err.to_string()
            .contains("refused `initialize`: error -32602: unsupported client"),
        "{err}"
    );
    assert_eq!(methods(&sent), ["initialize"]);
}

#[test]
fn a_malformed_initialize_result_is_a_protocol_error_with_the_parse_error_as_source() {
    let (c, _) = client(|m: &Value| match m["method"].as_str() {
        Some("initialize") => {
            vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": {"capabilities": 7}})]
        }
        _ => vec![],
    });
    let err = c.open().unwrap_err();
    let Error::Connect(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind(), ConnectErrorKind::Protocol);
    assert!(
        err.to_string().contains("malformed `initialize` result"),
        "{err}"
    );
    let source = std::error::Error::source(&err).expect("a source");
    assert!(source.is::<serde_json::Error>(), "{source:?}");
}

#[test]
fn a_timeout_sends_cancelled_with_the_request_id() {
    let (c, sent) = client(server(|_| vec![]));
    c.open().unwrap();
    let err = c
        .call_tool_with(
            "t",
            json!({}),
            &CallOptions::new().timeout(Duration::from_millis(50)),
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::Timeout { ref method, .. } if method == "tools/call"),
        "{err:?}"
    );
    let sent = sent.received();
    let call = &sent[2];
    let cancel = &sent[3];
    assert_eq!(cancel["method"], "notifications/cancelled");
    assert_eq!(cancel["params"]["requestId"], call["id"]);
    assert!(cancel.get("id").is_none(), "a notification has no id");
}

#[test]
fn cancel_pending_cancels_the_call_in_flight_and_close_ends_it() {
    let (seen_tx, seen_rx) = std::sync::mpsc::channel::<Value>();
    let seen_tx = Mutex::new(seen_tx);
    let (c, sent) = client(server(move |m| {
        if m["method"] == "tools/call" {
            let _ = seen_tx.lock().unwrap().send(m["id"].clone());
        }
        vec![]
    }));
    c.open().unwrap();
    assert_eq!(c.cancel_pending("nothing to cancel").unwrap(), 0);
    let c = Arc::new(c);
    let caller = {
        let c = Arc::clone(&c);
        std::thread::Builder::new()
            .name("cancel-test-call".into())
            .spawn(move || {
                c.call_tool_with(
                    "t",
                    json!({}),
                    &CallOptions::new().timeout(Duration::from_secs(30)),
                )
            })
            .unwrap()
    };
    let id = seen_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(c.cancel_pending("interrupted").unwrap(), 1);
    let cancel = sent
        .received()
        .into_iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("a cancellation was sent");
    assert_eq!(cancel["params"]["requestId"], id);
    assert_eq!(cancel["params"]["reason"], "interrupted");
    c.close().unwrap();
    let err = caller.join().unwrap().unwrap_err();
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
    assert!(matches!(
        c.cancel_pending("closed").unwrap_err(),
        Error::NotConnected { .. }
    ));
}

#[test]
fn rpc_errors_are_errors() {
    let (c, _) = client(server(|m| {
        vec![
            json!({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32602, "message": "bad", "data": [1]}}),
        ]
    }));
    c.open().unwrap();
    match c.call_tool("t", json!({})) {
        Err(Error::Rpc {
            server,
            code,
            message,
            data,
        }) => {
            assert_eq!(
                (server.as_str(), code, message.as_str()),
                ("mem", ErrorCode::INVALID_PARAMS, "bad")
            );
            assert_eq!(data.as_deref(), Some(&json!([1])));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_repeated_cursor_stops_pagination() {
    let (c, _) = client(server(|m| {
        vec![
            json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "same"}}),
        ]
    }));
    c.open().unwrap();
    let err = c.list_tools().unwrap_err();
    assert!(
        matches!(err, Error::Protocol { .. }) && err.to_string().contains("same"),
        "{err:?}"
    );
}

#[test]
fn a_malformed_result_is_a_protocol_error() {
    let (c, _) = client(server(|m| {
        vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": "nope"}})]
    }));
    c.open().unwrap();
    assert!(matches!(c.list_tools(), Err(Error::Protocol { .. })));
}

/// Answers a tool call by first sending the server request `req`; the client's answer to it
/// becomes the tool's text.
fn asks(req: Value) -> impl Fn(&Value) -> Vec<Value> + Send + Sync {
    let call_id = Mutex::new(Value::Null);
    server(move |m| {
        if m["method"] == "tools/call" {
            *call_id.lock().unwrap() = m["id"].clone();
            vec![req.clone()]
        } else if m.get("method").is_none() && m["id"] == "s1" {
            let text = serde_json::to_string(m).unwrap();
            let id = call_id.lock().unwrap().clone();
            vec![
                json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": text}]}}),
            ]
        } else {
            vec![]
        }
    })
}

fn answer_to(c: &Client) -> Value {
    serde_json::from_str(&c.call_tool("t", json!({})).unwrap().text()).unwrap()
}

#[test]
fn unknown_server_requests_get_method_not_found() {
    let (c, _) = client(asks(
        json!({"jsonrpc": "2.0", "id": "s1", "method": "tasks/list"}),
    ));
    c.open().unwrap();
    assert_eq!(answer_to(&c)["error"]["code"], -32601);
}

#[test]
fn server_ping_is_answered_with_an_empty_object() {
    let (c, _) = client(asks(
        json!({"jsonrpc": "2.0", "id": "s1", "method": "ping"}),
    ));
    c.open().unwrap();
    assert_eq!(answer_to(&c)["result"], json!({}));
}

#[test]
fn url_mode_elicitation_is_refused_with_invalid_params() {
    let builder = Client::builder(
        ServerConfig::stdio("mem", "unused")
            .with_protocol(crate::config::ProtocolMode::Legacy)
            .with_timeout_secs(1.0),
    )
    .elicitation(|_: &str, _| Ok(crate::model::ElicitResult::decline()));
    let (c, sent) = client_with(
        builder,
        asks(
            json!({"jsonrpc": "2.0", "id": "s1", "method": "elicitation/create",
                    "params": {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}}),
        ),
    );
    c.open().unwrap();
    assert_eq!(answer_to(&c)["error"]["code"], -32602);
    assert_eq!(
        sent.received()[0]["params"]["capabilities"]["elicitation"],
        json!({"form": {}})
    );
}

#[test]
fn url_mode_elicitation_reaches_a_handler_that_takes_it() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let builder = Client::builder(
        ServerConfig::stdio("mem", "unused")
            .with_protocol(crate::config::ProtocolMode::Legacy)
            .with_timeout_secs(1.0),
    )
    .elicitation(move |_: &str, p: crate::model::ElicitParams| {
        s.lock()
            .unwrap()
            .push((p.is_url_mode(), p.url.clone(), p.elicitation_id.clone()));
        Ok(crate::model::ElicitResult::decline())
    })
    .elicitation_url_mode(true);
    let (c, sent) = client_with(
        builder,
        asks(
            json!({"jsonrpc": "2.0", "id": "s1", "method": "elicitation/create",
                    "params": {"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"}}),
        ),
    );
    c.open().unwrap();
    assert_eq!(answer_to(&c)["result"]["action"], "decline");
    assert_eq!(
        *seen.lock().unwrap(),
        [(true, Some("https://x".to_owned()), Some("e".to_owned()))]
    );
    assert_eq!(
        sent.received()[0]["params"]["capabilities"]["elicitation"],
        json!({"form": {}, "url": {}})
    );
}

#[test]
fn a_handler_error_reaches_the_server() {
    let builder = Client::builder(
        ServerConfig::stdio("mem", "unused")
            .with_protocol(crate::config::ProtocolMode::Legacy)
            .with_timeout_secs(1.0),
    )
    .sampling(|_: &str, _| Err(crate::handler::HandlerError::rejected("no thanks")));
    let (c, _) = client_with(
        builder,
        asks(
            json!({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                    "params": {"messages": [], "maxTokens": 5}}),
        ),
    );
    c.open().unwrap();
    let answer = answer_to(&c);
    assert_eq!(answer["error"]["code"], -1);
    assert_eq!(answer["error"]["message"], "no thanks");
}

#[test]
fn a_late_answer_after_a_timeout_is_dropped_and_the_next_call_gets_its_own() {
    // The server answers each call with the previous call's id first (a late answer), then its own.
    let last = Mutex::new(None::<Value>);
    let (c, _) = client(server(move |m| {
        let mut last = last.lock().unwrap();
        let mut out = Vec::new();
        if let Some(prev) = last.take() {
            out.push(json!({"jsonrpc": "2.0", "id": prev, "result": {"content": [{"type": "text", "text": "late"}]}}));
        }
        if m["params"]["arguments"]["answer"] == json!(true) {
            out.push(json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "mine"}]}}));
        } else {
            *last = Some(m["id"].clone());
        }
        out
    }));
    c.open().unwrap();
    let quick = CallOptions::new().timeout(Duration::from_millis(30));
    assert!(matches!(
        c.call_tool_with("t", json!({"answer": false}), &quick),
        Err(Error::Timeout { .. })
    ));
    assert_eq!(
        c.call_tool("t", json!({"answer": true})).unwrap().text(),
        "mine"
    );
}

#[test]
fn an_out_of_range_call_timeout_sends_nothing() {
    let (c, sent) = client(server(|m| {
        vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": []}})]
    }));
    c.open().unwrap();
    for opts in [
        CallOptions::new().timeout(Duration::ZERO),
        CallOptions::new().timeout(Duration::MAX),
        CallOptions::new().max_total_timeout(Duration::ZERO),
        CallOptions::new().max_total_timeout(Duration::MAX),
    ] {
        let err = c.call_tool_with("t", json!({}), &opts).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { server, kind: InvalidArgumentKind::OutOfRange, detail }
                if server == "mem" && detail.starts_with("CallOptions::")),
            "{err:?}"
        );
    }
    assert_eq!(methods(&sent), ["initialize", "notifications/initialized"]);
}

/// A client with a long timeout, so that a response that is dropped instead of failing its call
/// shows as a call that takes 30 s (and fails the `prompt` check) rather than an error.
fn patient(f: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static) -> (Client, Sent) {
    client_with(
        Client::builder(
            ServerConfig::stdio("mem", "unused")
                .with_protocol(crate::config::ProtocolMode::Legacy)
                .with_timeout_secs(30.0),
        ),
        f,
    )
}

/// Runs `call`, checking that it returned long before the 30 s timeout.
fn prompt<T>(call: impl FnOnce() -> T) -> T {
    let start = std::time::Instant::now();
    let out = call();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "the call waited {:?}: the answer was dropped, not failed",
        start.elapsed()
    );
    out
}

/// A server that answers `tools/call` with `odd(id)` and everything else properly.
fn odd_server(
    odd: impl Fn(&Value) -> Value + Send + Sync + 'static,
) -> impl Fn(&Value) -> Vec<Value> + Send + Sync {
    server(move |m| match m["method"].as_str() {
        Some("tools/call") => vec![odd(&m["id"])],
        Some("ping") => vec![json!({"jsonrpc": "2.0", "id": m["id"], "result": {}})],
        _ => vec![],
    })
}

/// Each way a response to a request we can identify breaks JSON-RPC 2.0, and the text its
/// error carries (after `server `mem`: protocol error: malformed `tools/call` result: `).
fn oddities() -> Vec<(Value, &'static str)> {
    let e = json!({"code": -32000, "message": "m"});
    vec![
        (
            json!({"jsonrpc": "1.0", "result": {}}),
            r#"the response has `"jsonrpc": "1.0"`, not "2.0""#,
        ),
        (
            json!({"result": {}}),
            r#"the response has no `"jsonrpc": "2.0"`"#,
        ),
        (
            json!({"jsonrpc": "2.0", "result": {}, "error": e}),
            "the response has both `result` and `error`",
        ),
        (
            json!({"jsonrpc": "2.0"}),
            "the response has neither `result` nor `error`",
        ),
        (
            json!({"jsonrpc": "2.0", "method": "x", "result": {}}),
            "the response has a `method` besides its `result` or `error`",
        ),
        (
            json!({"jsonrpc": "2.0", "error": "boom"}),
            "the response's `error` is not an object",
        ),
        (
            json!({"jsonrpc": "2.0", "error": {"message": "m"}}),
            "the response's `error` has no `code`",
        ),
        (
            json!({"jsonrpc": "2.0", "error": {"code": "1", "message": "m"}}),
            "the response's `error` has a `code` that is not an integer",
        ),
        (
            json!({"jsonrpc": "2.0", "error": {"code": 1e10, "message": "m"}}),
            "the response's `error` has a `code` that is not an integer",
        ),
        (
            json!({"jsonrpc": "2.0", "error": {"code": 4_294_967_296_i64, "message": "m"}}),
            "the response's `error` has a `code` out of the 32-bit range",
        ),
        (
            json!({"jsonrpc": "2.0", "error": {"code": 1}}),
            "the response's `error` has no `message`",
        ),
        (
            json!({"jsonrpc": "2.0", "error": {"code": 1, "message": 5}}),
            "the response's `error` has a `message` that is not a string",
        ),
    ]
}

fn with_id(mut msg: Value, id: &Value) -> Value {
    msg["id"] = id.clone();
    msg
}

#[test]
fn each_malformed_response_fails_its_call_at_once_naming_the_server() {
    for (odd, why) in oddities() {
        let reply = odd.clone();
        let (c, _) = patient(odd_server(move |id| with_id(reply.clone(), id)));
        c.open().unwrap();
        let err = prompt(|| c.call_tool("t", json!({}))).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Protocol {
                    kind: ProtocolErrorKind::Malformed,
                    ..
                }
            ),
            "{odd}: {err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!("server `mem`: protocol error: malformed `tools/call` result: {why}"),
            "{odd}"
        );
        // The connection is still good.
        c.ping().unwrap();
    }
}

#[test]
fn malformed_responses_in_a_batch_fail_their_calls_and_the_rest_is_delivered() {
    for (odd, why) in oddities() {
        let reply = odd.clone();
        let (c, _) = patient(odd_server(move |id| {
            json!([
                {"jsonrpc": "2.0", "method": "notifications/message",
                 "params": {"level": "info", "data": "beside"}},
                "not a message",
                with_id(reply.clone(), id),
            ])
        }));
        c.open().unwrap();
        let err = prompt(|| c.call_tool("t", json!({}))).unwrap_err();
        assert!(
            matches!(&err, Error::Protocol { server, kind: ProtocolErrorKind::Malformed, detail } if server == "mem" && detail.ends_with(why)),
            "{odd}: {err:?}"
        );
        c.ping().unwrap();
    }
}

#[test]
fn an_error_without_an_id_fails_the_only_pending_call_with_the_server_s_message() {
    let (c, _) = patient(odd_server(
        |_| json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}),
    ));
    c.open().unwrap();
    let err = prompt(|| c.call_tool("t", json!({}))).unwrap_err();
    assert!(
        matches!(&err, Error::Rpc { server, code, message, .. }
            if server == "mem" && *code == ErrorCode::PARSE_ERROR && message == "Parse error"),
        "{err:?}"
    );
    c.ping().unwrap();
    // A batch element without an id, the same.
    let (c, _) = patient(odd_server(
        |_| json!([{"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": "Invalid Request"}}]),
    ));
    c.open().unwrap();
    let err = prompt(|| c.call_tool("t", json!({}))).unwrap_err();
    assert!(
        matches!(&err, Error::Rpc { code, .. } if *code == ErrorCode::INVALID_REQUEST),
        "{err:?}"
    );
    c.ping().unwrap();
}

#[test]
fn an_error_without_an_id_has_its_message_cut_to_the_echo_limit() {
    let limits = crate::config::Limits::default().with_max_echo_bytes(10);
    let (c, _) = client_with(
        Client::builder(
            ServerConfig::stdio("mem", "unused")
                .with_protocol(crate::config::ProtocolMode::Legacy)
                .with_timeout_secs(30.0)
                .with_limits(limits),
        ),
        odd_server(
            |_| json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x".repeat(100_000)}}),
        ),
    );
    c.open().unwrap();
    let err = prompt(|| c.call_tool("t", json!({}))).unwrap_err();
    assert!(
        matches!(&err, Error::Rpc { message, .. } if *message == format!("{}… (99990 bytes cut)", "x".repeat(10))),
        "{err:?}"
    );
}

#[test]
fn an_error_without_an_id_during_the_handshake_fails_connect_at_once() {
    let (c, _) = patient(|m: &Value| match m["method"].as_str() {
        Some("initialize") => vec![json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "Parse error"}})],
        _ => vec![],
    });
    let err = prompt(|| c.open()).unwrap_err();
    match &err {
        Error::Connect(e) => {
            assert_eq!(e.kind(), ConnectErrorKind::Rejected, "{err}");
            assert!(err.to_string().contains("Parse error"), "{err}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_error_without_an_id_fails_no_call_when_several_are_pending() {
    let (seen_tx, seen_rx) = crossbeam_channel::bounded::<Value>(1);
    let first = Mutex::new(None::<Value>);
    let (c, _) = patient(server(move |m| {
        if m["method"] != "tools/call" {
            return vec![];
        }
        match m["params"]["name"].as_str() {
            // The first call is left waiting.
            Some("first") => {
                *first.lock().unwrap() = Some(m["id"].clone());
                let _ = seen_tx.send(m["id"].clone());
                vec![]
            }
            // The second gets an error without an id: two calls are pending.
            Some("second") => vec![json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "Parse error"}})],
            // The third is answered, and so, at last, is the first.
            _ => {
                let id = first
                    .lock()
                    .unwrap()
                    .clone()
                    .expect("the first call arrived");
                vec![
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "first"}]}}),
                    json!({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "third"}]}}),
                ]
            }
        }
    }));
    c.open().unwrap();
    std::thread::scope(|scope| {
        let waiting = std::thread::Builder::new()
            .name("first-call".into())
            .spawn_scoped(scope, || c.call_tool("first", json!({})))
            .unwrap();
        seen_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the first call reached the server");
        let quick = CallOptions::new().timeout(Duration::from_millis(200));
        let second = c.call_tool_with("second", json!({}), &quick);
        assert!(matches!(second, Err(Error::Timeout { .. })), "{second:?}");
        assert_eq!(c.call_tool("third", json!({})).unwrap().text(), "third");
        let first = prompt(|| waiting.join().unwrap());
        assert_eq!(first.unwrap().text(), "first");
    });
}
