//! The era strategy fed with requests and answers: what it puts on the wire and what it makes
//! of what comes back.

use serde_json::{json, Value};

use super::*;
use crate::error::ErrorCode;
use crate::model::DiscoverResult;

fn answer(v: Value) -> Payload {
    Payload::Raw(serde_json::value::to_raw_value(&v).expect("raw"))
}

fn modern() -> Wire {
    Wire::Modern(Box::new(Modern::new(
        json!({"roots": {}}),
        json!({"name": "c", "version": "1"}),
    )))
}

fn modern_with_tasks() -> Wire {
    let mut wire = modern();
    let found: DiscoverResult = serde_json::from_value(json!({
        "supportedVersions": ["2026-07-28"],
        "capabilities": {"extensions": {TASKS_EXTENSION: {}}}
    }))
    .expect("discover result");
    let kept = wire.modern_mut().expect("modern").discovered(found);
    assert!(kept.is_ok());
    wire
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn legacy_sends_params_as_given_and_notifications_the_version_once_negotiated() {
    let before = Wire::legacy().prepare("tools/list", Some(json!({"cursor": "c"})), true);
    assert_eq!(before.params, Some(json!({"cursor": "c"})));
    assert!(before.headers.is_empty());
    assert!(Wire::legacy().notification_headers().is_empty());
    let after = Wire::Legacy(Some("2025-11-25".into()));
    let p = after.prepare("tools/list", None, true);
    assert_eq!(p.params, None);
    assert!(p.headers.is_empty(), "the session's version goes with it");
    assert_eq!(
        header(&after.notification_headers(), "MCP-Protocol-Version"),
        Some("2025-11-25")
    );
}

#[test]
fn legacy_answers_are_the_result_unread() {
    let step = Wire::legacy()
        .read("tools/call", answer(json!({"resultType": "whatever"})), 64)
        .expect("done");
    let Step::Done(Reply::Raw(_)) = step else {
        panic!("{step:?}")
    };
}

#[test]
fn modern_requests_carry_meta_and_their_headers() {
    let wire = modern();
    let p = wire.prepare(
        "tools/call",
        Some(json!({"name": "add", "arguments": {}})),
        true,
    );
    let params = p.params.expect("params");
    let meta = &params["_meta"];
    assert_eq!(meta[era::META_PROTOCOL_VERSION], json!("2026-07-28"));
    assert_eq!(meta[era::META_CLIENT_INFO]["name"], json!("c"));
    assert!(meta.get(era::META_LOG_LEVEL).is_none());
    assert_eq!(header(&p.headers, "Mcp-Method"), Some("tools/call"));
    assert_eq!(header(&p.headers, "Mcp-Name"), Some("add"));
    assert_eq!(
        header(&p.headers, "MCP-Protocol-Version"),
        Some("2026-07-28")
    );
    assert!(wire.notification_headers().is_empty());
    let bare = wire.prepare("tools/list", None, false);
    assert!(
        bare.headers.is_empty(),
        "none built for a transport without headers"
    );
    assert!(bare.params.is_some_and(|p| p["_meta"].is_object()));
}

#[test]
fn a_listed_tools_x_mcp_header_arguments_become_headers_and_bad_tools_are_left_out() {
    let wire = modern();
    let mut page = Reply::Value(json!({"tools": [
        {"name": "geo", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}}},
        {"name": "bad", "inputSchema": {"type": "object", "properties": {
            "o": {"type": "object", "x-mcp-header": "O"}}}}
    ]}));
    wire.keep_tools("s", &mut page);
    let Reply::Value(page) = page else {
        unreachable!()
    };
    assert_eq!(page["tools"].as_array().map(Vec::len), Some(1));
    let p = wire.prepare(
        "tools/call",
        Some(json!({"name": "geo", "arguments": {"region": "eu west"}})),
        true,
    );
    assert_eq!(header(&p.headers, "Mcp-Param-Region"), Some("eu west"));
}

#[test]
fn the_log_level_is_a_request_in_legacy_and_meta_in_modern() {
    let legacy = Wire::legacy().operation(Op::SetLevel(LoggingLevel::Warning));
    assert_eq!(
        legacy,
        Action::Request("logging/setLevel", Some(json!({"level": "warning"})))
    );
    let wire = modern();
    assert_eq!(
        wire.operation(Op::SetLevel(LoggingLevel::Warning)),
        Action::Nothing
    );
    let p = wire
        .prepare("tools/list", None, false)
        .params
        .expect("params");
    assert_eq!(p["_meta"][era::META_LOG_LEVEL], json!("warning"));
}

#[test]
fn operations_take_the_form_of_their_era() {
    let (legacy, modern) = (Wire::legacy(), modern());
    assert_eq!(legacy.operation(Op::Ping), Action::Request("ping", None));
    assert_eq!(modern.operation(Op::Ping), Action::Unsupported("ping"));
    assert_eq!(
        legacy.operation(Op::RootsChanged),
        Action::Notify("notifications/roots/list_changed")
    );
    assert_eq!(modern.operation(Op::RootsChanged), Action::Nothing);
    assert_eq!(
        legacy.operation(Op::Subscribe("file:///a")),
        Action::Request("resources/subscribe", Some(json!({"uri": "file:///a"})))
    );
    let Action::Listen { key, grant, .. } = modern.operation(Op::Subscribe("file:///a")) else {
        panic!("a listen")
    };
    assert_eq!(key, "file:///a");
    assert!(grant.granted(&json!({"notifications": {"resourceSubscriptions": ["file:///a"]}})));
    assert!(!grant.granted(&json!({"notifications": {"resourceSubscriptions": []}})));
    assert_eq!(
        modern.operation(Op::Unsubscribe("file:///a")),
        Action::EndListen("file:///a".into())
    );
    assert_eq!(
        legacy.operation(Op::Unsubscribe("file:///a")),
        Action::Request("resources/unsubscribe", Some(json!({"uri": "file:///a"})))
    );
}

#[test]
fn list_changes_are_listened_for_only_in_modern_and_only_when_announced() {
    let caps: ServerCapabilities =
        serde_json::from_value(json!({"tools": {"listChanged": true}, "prompts": {}}))
            .expect("caps");
    assert!(Wire::legacy().list_changes(&caps).is_none());
    let Some(Action::Listen { notifications, .. }) = modern().list_changes(&caps) else {
        panic!("a listen")
    };
    assert_eq!(notifications, json!({"toolsListChanged": true}));
    assert!(modern()
        .list_changes(&ServerCapabilities::default())
        .is_none());
}

#[test]
fn modern_result_types_are_checked() {
    let wire = modern();
    let done = wire
        .read(
            "tools/list",
            answer(json!({"resultType": "complete", "tools": []})),
            64,
        )
        .expect("done");
    let Step::Done(Reply::Value(v)) = done else {
        panic!("{done:?}")
    };
    assert_eq!(v, json!({"tools": []}));
    let unknown = wire.read("tools/list", answer(json!({"resultType": "later"})), 64);
    assert!(matches!(unknown, Err(Refusal::Protocol(d)) if d.contains("`later`")));
    let input = wire.read(
        "tools/list",
        answer(json!({"resultType": "input_required"})),
        64,
    );
    assert!(matches!(input, Err(Refusal::Protocol(d)) if d.contains("asked for input")));
    let task = wire.read(
        "tools/call",
        answer(json!({"resultType": "task", "taskId": "t"})),
        64,
    );
    assert!(matches!(task, Err(Refusal::Protocol(d)) if d.contains("did not ask for")));
}

#[test]
fn a_task_is_a_step_when_the_extension_is_offered() {
    let wire = modern_with_tasks();
    let p = wire
        .prepare("tools/list", None, false)
        .params
        .expect("params");
    assert!(p["_meta"][era::META_CLIENT_CAPABILITIES]["extensions"][TASKS_EXTENSION].is_object());
    let step = wire
        .read(
            "tools/call",
            answer(json!({"resultType": "task", "taskId": "t"})),
            64,
        )
        .expect("task");
    let Step::Task(v) = step else {
        panic!("{step:?}")
    };
    assert_eq!(v["taskId"], json!("t"));
    assert_eq!(wire.tasks_extension(), Some(true));
    assert_eq!(Wire::legacy().tasks_extension(), None);
}

#[test]
fn input_rounds_send_the_answers_and_state_back_and_are_bounded() {
    let wire = modern();
    let step = wire
        .read(
            "prompts/get",
            answer(json!({"resultType": "input_required",
                "inputRequests": {"r": {"method": "roots/list"}}, "requestState": "s"})),
            64,
        )
        .expect("input");
    let Step::Input { requests, state } = step else {
        panic!("{step:?}")
    };
    assert_eq!(requests["r"]["method"], json!("roots/list"));
    let params = Some(json!({"name": "p"}));
    let mut rounds = wire.rounds(params.clone(), 1);
    assert_eq!(rounds.params(), params);
    rounds.begin("prompts/get").expect("one round");
    let mut responses = Map::new();
    responses.insert("r".into(), json!({"roots": []}));
    rounds.answered(responses, state);
    let next = rounds.params().expect("params");
    assert_eq!(next["name"], json!("p"));
    assert_eq!(next["requestState"], json!("s"));
    assert_eq!(next["inputResponses"]["r"], json!({"roots": []}));
    let e = rounds.begin("prompts/get").unwrap_err();
    assert!(e.contains("1 rounds"), "{e}");
}

#[test]
fn a_legacy_request_is_sent_once_and_its_params_not_copied() {
    let mut rounds = Wire::legacy().rounds(Some(json!({"name": "t"})), 3);
    assert!(!rounds.may_resend());
    assert!(modern().rounds(None, 3).may_resend());
    assert_eq!(rounds.params(), Some(json!({"name": "t"})));
    assert_eq!(rounds.params(), None, "taken, not copied");
}

#[test]
fn retries_are_modern_and_each_happens_once() {
    let closed = Error::Closed {
        server: "s".into(),
        detail: "broke".into(),
        stderr_tail: String::new(),
    };
    let mismatch = Error::Rpc {
        server: "s".into(),
        code: ErrorCode(era::HEADER_MISMATCH),
        message: "headers".into(),
        data: None,
    };
    let mut tried = Retried::default();
    assert_eq!(
        Wire::legacy().retry("tools/call", &closed, true, &mut tried),
        Retry::No
    );
    let wire = modern();
    assert_eq!(
        wire.retry("tools/call", &closed, false, &mut tried),
        Retry::No
    );
    assert_eq!(
        wire.retry("tools/call", &closed, true, &mut tried),
        Retry::Reissue
    );
    assert_eq!(
        wire.retry("tools/call", &closed, true, &mut tried),
        Retry::No
    );
    assert_eq!(
        wire.retry("prompts/get", &mismatch, true, &mut tried),
        Retry::No
    );
    assert_eq!(
        wire.retry("tools/call", &mismatch, true, &mut tried),
        Retry::Relist
    );
    assert_eq!(
        wire.retry("tools/call", &mismatch, true, &mut tried),
        Retry::No
    );
}

fn discover_result(v: Value) -> DiscoverResult {
    serde_json::from_value(v).expect("discover result")
}

#[test]
fn a_refused_version_is_retried_at_a_listed_one_a_bounded_number_of_times() {
    let Wire::Modern(mut m) = modern() else {
        unreachable!()
    };
    let ours = json!({"supported": ["2026-07-28", "2030-01-01"]});
    for _ in 0..era::MAX_VERSION_RETRIES {
        assert!(m.retry_version(Some(&ours)));
        assert_eq!(m.version(), "2026-07-28");
    }
    assert!(
        !m.retry_version(Some(&ours)),
        "a server refusing every version"
    );
    let Wire::Modern(mut m) = modern() else {
        unreachable!()
    };
    assert!(!m.retry_version(Some(&json!({"supported": ["2030-01-01"]}))));
    assert!(!m.retry_version(None));
}

#[test]
fn discover_settles_on_a_version_both_speak_or_none() {
    let Wire::Modern(mut m) = modern() else {
        unreachable!()
    };
    let none_listed = discover_result(json!({"supportedVersions": [], "capabilities": {}}));
    assert!(m.discovered(none_listed).is_ok());
    assert_eq!(m.version(), "2026-07-28");
    let Wire::Modern(mut m) = modern() else {
        unreachable!()
    };
    let theirs = discover_result(json!({"supportedVersions": ["2030-01-01"], "capabilities": {}}));
    let back = m.discovered(theirs).unwrap_err();
    assert_eq!(back, vec!["2030-01-01".to_owned()]);
    let wire = Wire::Modern(m);
    assert!(wire.discover_result().is_none(), "not kept");
    assert_eq!(wire.tasks_extension(), Some(false));
}
