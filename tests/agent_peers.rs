//! The run loop against the reference `server-everything` (installed on first use under
//! `target/peers/`, see `tests/common/peers.rs`) and the scripted model: real tool names with
//! hyphens, structured content and an image result passed as Chat Completions allows.
// Linux only: the peers run on the Node and Python that `common::peers` installs for Linux.
#![cfg(unix)]

mod common;

use common::peers;
use mcp_blocking::agent::{Agent, OpenAiChat};
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::json;

#[test]
fn server_everything_tools_through_the_loop() {
    let hub = Hub::new([peers::npm().everything()]);
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("get-sum", json!({"a": 2, "b": 40})),
            call("echo", json!({"message": "hi there"})),
            call("get-tiny-image", json!({})),
        ]),
        Step::Summary("everything said: ".into()),
    ])
    .unwrap();
    let chat = OpenAiChat::new("scripted").base_url(&model.base_url());
    let mut agent = Agent::new(&hub, chat);
    let out = agent.run("add, echo and show me an image").unwrap();
    assert!(
        out.tool_calls.iter().all(|c| !c.is_error),
        "{:?}",
        out.tool_calls
    );
    assert!(out.text.contains("42"), "{}", out.text);
    assert!(out.text.contains("Echo: hi there"), "{}", out.text);
    // The image went to the model in a user message after the tool messages.
    let second = &model.requests()[1].body["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user");
    let url = last["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,"), "{url}");
    assert_eq!(model.violations(), Vec::<String>::new());
}
