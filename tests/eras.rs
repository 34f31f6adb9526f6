//! Both protocol eras against the fixture server: a legacy one (2025-11-25, `initialize`) and a
//! modern one (`--modern`: 2026-07-28, `server/discover`, stateless). Every public `Client`
//! method gives the same result in both; `Auto` finds each; the server's input requests
//! (multi-round-trip in the modern era, server-to-client requests in the legacy one) reach the
//! same handlers; `subscribe` works in both; what one era lacks is `Error::Unsupported`.

mod common;
mod support_remote;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Duration;

use mcp_blocking::config::{ProtocolEra, ProtocolMode, MODERN_PROTOCOL_VERSION};
use mcp_blocking::handler::{
    notification_channel, Notification, ServerNotification, NOTIFICATION_CHANNEL_CAPACITY,
};
use mcp_blocking::model::{
    CompletionReference, CreateMessageResult, ElicitResult, LoggingLevel, Root,
};
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Map, Value};

fn server(name: &str, modern: bool) -> ServerConfig {
    let cfg = ServerConfig::stdio(name, common::fixture::path()).with_timeout_secs(10.0);
    if modern {
        cfg.with_args(["--modern"])
    } else {
        cfg
    }
}

fn connect(modern: bool, mode: ProtocolMode) -> (Client, Receiver<ServerNotification>) {
    let (notify, notes) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
    let builder = Client::builder(server("fixture", modern).with_protocol(mode))
        .roots(vec![Root::new("file:///work")])
        .sampling(|_server: &str, _p| Ok(CreateMessageResult::text("m", "sampled")))
        .elicitation(|_server: &str, p| {
            let mut content = Map::new();
            content.insert("age".into(), json!(p.message.len()));
            Ok(ElicitResult::accept(content))
        })
        .on_notification(notify);
    (builder.connect().expect("connect"), notes)
}

/// What every public request method returns, as JSON, for comparison across eras.
fn everything(c: &Client) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut put = |what: &str, v: Value| out.push((what.to_owned(), v));
    put("tools", json!(c.list_tools().unwrap()));
    put("tools_page", json!(c.list_tools_page(None).unwrap()));
    put(
        "echo",
        json!(c.call_tool("echo", json!({"text": "héllo"})).unwrap()),
    );
    put(
        "add",
        json!(c.call_tool("add", json!({"a": 2, "b": 3})).unwrap()),
    );
    put("fail", json!(c.call_tool("fail", json!({})).unwrap()));
    put(
        "progress",
        json!(c
            .call_tool_with(
                "progress",
                json!({"steps": 2}),
                &CallOptions::new().on_progress(|_| {})
            )
            .unwrap()),
    );
    let rpc = c.call_tool("rpc_error", json!({})).unwrap_err();
    put("rpc_error", json!(format!("{rpc}")));
    put("resources", json!(c.list_resources().unwrap()));
    put(
        "resources_page",
        json!(c.list_resources_page(None).unwrap()),
    );
    put("templates", json!(c.list_resource_templates().unwrap()));
    put(
        "templates_page",
        json!(c.list_resource_templates_page(None).unwrap()),
    );
    put(
        "readme",
        json!(c.read_resource("fixture://readme").unwrap()),
    );
    put("item", json!(c.read_resource("fixture://items/7").unwrap()));
    let missing = c.read_resource("fixture://nope").unwrap_err();
    put("missing", json!(missing.is_resource_not_found()));
    put("prompts", json!(c.list_prompts().unwrap()));
    put("prompts_page", json!(c.list_prompts_page(None).unwrap()));
    put(
        "greeting",
        json!(c.get_prompt("greeting", json!({"name": "Ada"})).unwrap()),
    );
    put(
        "complete",
        json!(c
            .complete(CompletionReference::prompt("greeting"), "name", "al", None)
            .unwrap()),
    );
    c.set_logging_level(LoggingLevel::Warning).unwrap();
    put(
        "log_filtered",
        json!(c
            .call_tool("log", json!({"level": "info", "message": "x"}))
            .unwrap()),
    );
    put(
        "log_sent",
        json!(c
            .call_tool("log", json!({"level": "error", "message": "x"}))
            .unwrap()),
    );
    put(
        "raw",
        c.request(
            "tools/call",
            Some(json!({"name": "echo", "arguments": {"text": "r"}})),
            &CallOptions::new(),
        )
        .unwrap(),
    );
    // The server's questions, answered by the same handlers in both eras.
    put(
        "elicit",
        json!(c.call_tool("elicit", json!({"message": "hello"})).unwrap()),
    );
    put(
        "sample",
        json!(c.call_tool("sample", json!({"prompt": "p"})).unwrap()),
    );
    put("roots", json!(c.call_tool("roots", json!({})).unwrap()));
    c.set_roots(vec![Root::new("file:///other")]).unwrap();
    put(
        "roots_after_set",
        json!(c.call_tool("roots", json!({})).unwrap()),
    );
    put("server_info", json!(c.server_info()));
    put("capabilities", json!(c.capabilities()));
    put("instructions", json!(c.instructions()));
    let init = c.initialize_result().expect("connected");
    put(
        "initialize_result",
        json!([init.server_info, init.capabilities, init.instructions]),
    );
    put("server_name", json!(c.server_name()));
    put("config_mode_json", json!(c.is_connected()));
    c.notify("notifications/whatever", None).unwrap();
    // Closing and opening again: the same era, the same answers.
    let era = c.protocol_era();
    c.close().unwrap();
    put(
        "after_disconnect",
        json!([c.is_connected(), c.protocol_era().is_none()]),
    );
    assert!(matches!(c.list_tools(), Err(Error::NotConnected { .. })));
    c.open().unwrap();
    assert_eq!(c.protocol_era(), era);
    put(
        "reopened",
        json!([
            c.is_connected(),
            c.call_tool("echo", json!({"text": "again"})).unwrap()
        ]),
    );
    put(
        "stderr_tail_is_text",
        json!(c.stderr_tail().len() < 1 << 20),
    );
    out
}

#[test]
fn every_method_gives_the_same_result_in_both_eras() {
    let (legacy, _) = connect(false, ProtocolMode::Legacy);
    let (modern, _) = connect(true, ProtocolMode::Modern);
    assert_eq!(legacy.protocol_era(), Some(ProtocolEra::Legacy));
    assert_eq!(modern.protocol_era(), Some(ProtocolEra::Modern));
    assert_eq!(
        modern.protocol_version().as_deref(),
        Some(MODERN_PROTOCOL_VERSION)
    );
    assert_eq!(legacy.protocol_version().as_deref(), Some("2025-11-25"));
    assert!(modern.discover_result().is_some() && legacy.discover_result().is_none());
    let a = everything(&legacy);
    let b = everything(&modern);
    for ((what, l), (_, m)) in a.iter().zip(&b) {
        assert_eq!(l, m, "`{what}` differs between the eras");
    }
    assert_eq!(a.len(), b.len());
    // The answers really came from the handlers.
    let elicit = &a.iter().find(|(w, _)| w == "elicit").unwrap().1;
    assert!(elicit.to_string().contains(r#"\"age\":5"#), "{elicit}");
    let roots = &a.iter().find(|(w, _)| w == "roots_after_set").unwrap().1;
    assert!(roots.to_string().contains("file:///other"), "{roots}");
    legacy.close().unwrap();
    modern.close().unwrap();
}

#[test]
fn auto_finds_each_era() {
    let (legacy, _) = connect(false, ProtocolMode::Auto);
    assert_eq!(legacy.protocol_era(), Some(ProtocolEra::Legacy));
    assert_eq!(
        legacy
            .call_tool("echo", json!({"text": "a"}))
            .unwrap()
            .text(),
        "a"
    );
    let (modern, _) = connect(true, ProtocolMode::Auto);
    assert_eq!(modern.protocol_era(), Some(ProtocolEra::Modern));
    assert_eq!(
        modern
            .call_tool("echo", json!({"text": "b"}))
            .unwrap()
            .text(),
        "b"
    );
    // A modern request carried the version and capabilities in `_meta` (the fixture keeps the
    // first request's `_meta`).
    let meta: Value =
        serde_json::from_str(&modern.call_tool("client_info", json!({})).unwrap().text()).unwrap();
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        json!(MODERN_PROTOCOL_VERSION)
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"].is_object());
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        json!("mcp-blocking")
    );
}

#[test]
fn a_legacy_client_cannot_reach_a_modern_only_server_and_a_modern_one_no_legacy_server() {
    let e = Client::connect(server("m", true).with_protocol(ProtocolMode::Legacy)).unwrap_err();
    assert!(e.to_string().contains("initialize"), "{e}");
    let e = Client::connect(server("l", false).with_protocol(ProtocolMode::Modern)).unwrap_err();
    assert!(e.to_string().contains("refused `server/discover`"), "{e}");
}

fn updated(notes: &Receiver<ServerNotification>) -> Option<String> {
    loop {
        match notes.recv_timeout(Duration::from_secs(5)) {
            Ok((_, Notification::ResourceUpdated(u))) => return Some(u.uri),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
}

#[test]
fn subscribe_works_in_both_eras() {
    for modern in [false, true] {
        let (c, notes) = connect(modern, ProtocolMode::Auto);
        c.subscribe("fixture://readme").unwrap();
        let touched = c
            .call_tool("touch", json!({"uri": "fixture://readme"}))
            .unwrap();
        assert_eq!(touched.text(), "touched", "modern: {modern}");
        assert_eq!(
            updated(&notes).as_deref(),
            Some("fixture://readme"),
            "modern: {modern}"
        );
        c.unsubscribe("fixture://readme").unwrap();
        let after = c
            .call_tool("touch", json!({"uri": "fixture://readme"}))
            .unwrap();
        assert_eq!(after.text(), "not subscribed", "modern: {modern}");
        c.close().unwrap();
    }
}

#[test]
fn a_subscription_the_server_does_not_grant_is_an_error_in_the_modern_era() {
    let (c, _) = connect(true, ProtocolMode::Modern);
    let e = c.subscribe("https://elsewhere/x").unwrap_err();
    assert!(e.to_string().contains("did not grant"), "{e}");
    // The connection is still usable.
    assert_eq!(
        c.call_tool("echo", json!({"text": "ok"})).unwrap().text(),
        "ok"
    );
}

#[test]
fn what_the_modern_era_lacks_is_unsupported_naming_the_era() {
    let (c, _) = connect(true, ProtocolMode::Modern);
    match c.ping() {
        Err(Error::Unsupported {
            server,
            feature,
            era,
        }) => {
            assert_eq!(server, "fixture");
            assert_eq!(feature, "ping", "the bare method name");
            assert_eq!(era, ProtocolEra::Modern);
        }
        other => panic!("{other:?}"),
    }
    let text = c.ping().unwrap_err().to_string();
    assert!(text.contains("modern (2026-07-28)"), "{text}");
    assert!(
        text.contains(": `ping` does not exist"),
        "quoted once: {text}"
    );
    // The legacy era has it.
    let (l, _) = connect(false, ProtocolMode::Legacy);
    l.ping().unwrap();
}

#[test]
fn an_input_request_with_no_handler_fails_the_call_clearly() {
    let c = Client::connect(server("bare", true).with_protocol(ProtocolMode::Modern)).unwrap();
    let e = c.call_tool("elicit", json!({"message": "m"})).unwrap_err();
    assert!(matches!(e, Error::Rpc { .. }), "{e:?}");
    assert!(e.to_string().contains("elicitation/create"), "{e}");
}

#[test]
fn the_protocol_mode_is_a_config_file_key() {
    let v =
        json!({"name": "s", "protocol": "modern", "transport": {"type": "stdio", "command": "x"}});
    let cfg = ServerConfig::from_value(&v).unwrap();
    assert_eq!(cfg.protocol(), ProtocolMode::Modern);
    assert_eq!(ServerConfig::from_value(&cfg.to_json()).unwrap(), cfg);
    let bad =
        json!({"name": "s", "protocol": "2027", "transport": {"type": "stdio", "command": "x"}});
    let e = ServerConfig::from_value(&bad).unwrap_err();
    assert!(
        e.to_string().contains("auto, legacy or modern")
            || e.to_string().contains("`auto`, `legacy` or `modern`"),
        "{e}"
    );
    let sse = ServerConfig::sse("s", "http://127.0.0.1:1/sse").with_protocol(ProtocolMode::Modern);
    assert!(sse.validate().is_err());
}

/// A modern Streamable HTTP server: refuses the first request with 400 and `-32022` (as a server
/// that wants another version would), answers `server/discover`, and breaks the SSE reply of the
/// first `tools/call` after an event id, without the response.
fn modern_http() -> support_remote::HttpServer {
    let calls = Arc::new(AtomicUsize::new(0));
    let first = Arc::new(AtomicUsize::new(0));
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
        if first.fetch_add(1, Ordering::SeqCst) == 0 {
            let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "x"}}});
            conn.json(400, &[], &body);
            return;
        }
        let result = match msg["method"].as_str().unwrap_or("") {
            "server/discover" => json!({"supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}}, "resultType": "complete"}),
            "tools/list" => json!({"tools": [{"name": "where", "inputSchema": {"type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}},
                {"name": "bad", "inputSchema": {"type": "object",
                "properties": {"r": {"type": "object", "x-mcp-header": "R"}}}}]}),
            "tools/call" => {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    conn.sse_start(&[]);
                    let _ = conn.chunk("id: e1\ndata: \n\n");
                    conn.sse_end();
                    return;
                }
                json!({"content": [{"type": "text", "text": "here"}], "resultType": "complete"})
            }
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
fn modern_streamable_http_headers_refusals_and_a_broken_reply() {
    let srv = modern_http();
    let cfg = ServerConfig::http("web", srv.url("/mcp"))
        .with_timeout_secs(5.0)
        .with_protocol(ProtocolMode::Auto);
    let c = Client::connect(cfg).expect("connect after the version refusal");
    assert_eq!(c.protocol_era(), Some(ProtocolEra::Modern));
    let tools = c.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        ["where"],
        "the tool with an invalid x-mcp-header is left out"
    );
    let r = c
        .call_tool("where", json!({"region": " eu "}))
        .expect("re-issued");
    assert_eq!(r.text(), "here");
    // A 404 with a JSON-RPC error is that error.
    let e = c
        .request("nothing/here", None, &CallOptions::new())
        .unwrap_err();
    assert!(
        matches!(&e, Error::Rpc { code, .. } if code.0 == -32601),
        "{e:?}"
    );
    c.close().unwrap();

    let reqs = srv.requests();
    assert!(
        reqs.iter().all(|r| r.method == "POST"),
        "no GET stream, no DELETE"
    );
    assert!(reqs.iter().all(|r| r.header("mcp-session-id").is_none()));
    for r in &reqs {
        let m = r.json();
        if m.get("id").is_none() {
            continue;
        }
        assert_eq!(r.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(r.header("mcp-method"), m["method"].as_str());
        assert_eq!(
            m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
            json!("2026-07-28")
        );
    }
    let calls: Vec<_> = reqs
        .iter()
        .filter(|r| r.rpc_method() == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "the broken call was sent again");
    assert_ne!(
        calls[0].json()["id"],
        calls[1].json()["id"],
        "with a new id"
    );
    for call in calls {
        assert_eq!(call.header("mcp-name"), Some("where"));
        assert_eq!(call.header("mcp-param-region"), Some("=?base64?IGV1IA==?="));
    }
}

fn list_changed(notes: &Receiver<ServerNotification>) -> bool {
    loop {
        match notes.recv_timeout(Duration::from_secs(5)) {
            Ok((_, Notification::ToolsListChanged)) => return true,
            Ok(_) => {}
            Err(_) => return false,
        }
    }
}

#[test]
fn list_changes_reach_the_handlers_in_both_eras() {
    for modern in [false, true] {
        let (c, notes) = connect(modern, ProtocolMode::Auto);
        let added = c.call_tool("add_tool", json!({"name": "fresh"})).unwrap();
        assert_eq!(added.text(), "added fresh");
        assert!(list_changed(&notes), "modern: {modern}");
        assert!(c.list_tools().unwrap().iter().any(|t| t.name == "fresh"));
        c.close().unwrap();
    }
}

/// Auto mode, four connections to one legacy Streamable HTTP server started together: one
/// `server/discover` probe is sent, not four. The server holds its refusal of a probe until
/// another probe arrives (or half a second passes), so connections that each probed would all
/// be counted.
#[test]
fn connections_to_one_server_started_together_share_one_probe() {
    use std::sync::{Condvar, Mutex};
    let probes = Arc::new((Mutex::new(0usize), Condvar::new()));
    let seen = Arc::clone(&probes);
    let srv = support_remote::HttpServer::start(move |req, conn| {
        if req.method != "POST" {
            conn.respond(405, &[], b"");
            return;
        }
        let msg = req.json();
        if msg["method"] == "server/discover" {
            let (count, more) = &*seen;
            let mut n = count.lock().unwrap();
            *n += 1;
            more.notify_all();
            let _held = more
                .wait_timeout_while(n, Duration::from_millis(500), |n| *n < 2)
                .unwrap();
            let refusal = json!({"jsonrpc": "2.0", "id": msg["id"],
                "error": {"code": -32601, "message": "Method not found"}});
            conn.json(200, &[], &refusal);
            return;
        }
        match support_remote::mcp::answer(&msg) {
            Some(reply) => conn.json(200, &[], &reply),
            None => conn.accepted(),
        }
    });
    let url = srv.url("/mcp");
    let clients: Vec<Client> = std::thread::scope(|s| {
        let connecting: Vec<_> = (0..4)
            .map(|i| {
                let cfg = ServerConfig::http("web", url.clone()).with_timeout_secs(10.0);
                std::thread::Builder::new()
                    .name(format!("connect-{i}"))
                    .spawn_scoped(s, move || Client::connect(cfg).expect("connect"))
                    .unwrap()
            })
            .collect();
        connecting.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        *probes.0.lock().unwrap(),
        1,
        "one probe for four connections"
    );
    for c in clients {
        assert_eq!(c.protocol_era(), Some(ProtocolEra::Legacy));
        c.close().unwrap();
    }
}
