//! The Hub's clients answer their servers with the handlers and roots the Hub was built with:
//! each server's `sampling/createMessage`, `elicitation/create` and `roots/list` reach the one
//! handler, named by the server that asked; a Hub built without them declares none.

mod common;
mod hub_support;

use std::sync::{Arc, Mutex};

use hub_support::fixture;
use mcp_blocking::model::{CreateMessageResult, ElicitResult, Root};
use mcp_blocking::Hub;
use serde_json::json;

fn text(r: &mcp_blocking::model::CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_server_of_the_hub_is_answered_by_the_hubs_handlers() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (a, b) = (Arc::clone(&asked), Arc::clone(&asked));
    let hub = Hub::builder()
        .servers([fixture("one", "", &[]), fixture("two", "", &[])])
        .sampling(move |server, _params| {
            a.lock().unwrap().push(format!("sampling {server}"));
            Ok(CreateMessageResult::text(
                "scripted",
                format!("hello from {server}"),
            ))
        })
        .elicitation(move |server, _params| {
            b.lock().unwrap().push(format!("elicitation {server}"));
            let mut answer = serde_json::Map::new();
            answer.insert("name".into(), json!(server));
            answer.insert("age".into(), json!(7));
            Ok(ElicitResult::accept(answer))
        })
        .roots(vec![Root::new("file:///data").with_name("data")])
        .build();
    hub.connect_all();
    let sampled = hub
        .call_tool("one__sample", json!({"prompt": "hi"}))
        .unwrap();
    assert!(
        text(&sampled).contains("hello from one"),
        "{}",
        text(&sampled)
    );
    let elicited = hub
        .call_tool("two__elicit", json!({"message": "who?"}))
        .unwrap();
    let t = text(&elicited);
    assert!(t.contains("\"accept\"") && t.contains("\"two\""), "{t}");
    let roots = hub.call_tool("one__roots", json!({})).unwrap();
    assert!(text(&roots).contains("file:///data"), "{}", text(&roots));
    assert_eq!(
        *asked.lock().unwrap(),
        ["sampling one", "elicitation two"],
        "each request reached the one handler, named by its server"
    );
}

#[test]
fn a_hub_without_handlers_declares_none() {
    let hub = Hub::builder().servers([fixture("one", "", &[])]).build();
    hub.connect_all();
    let r = hub.call_tool("sample", json!({"prompt": "hi"})).unwrap();
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("sampling/createMessage error"),
        "{}",
        text(&r)
    );
}
