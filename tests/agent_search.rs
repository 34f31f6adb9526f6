//! Tool search against a scripted model on loopback and a Hub of 50 in-process servers × 30
//! tools (`agent_search_catalog`): what the first request carries with and without it, a tool
//! reached through a search, a tool called before it was found, pinned tools.

mod agent_search_catalog;
mod common;

use common::agent::{chat, no_violations};
use std::sync::{Arc, Mutex};

use agent_search_catalog as catalog;
use mcp_blocking::agent::{Agent, AgentEvent, ToolSearch};
use mcp_blocking::testing::TestServer;
use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::json;

/// The `tools/call` names a server received.
fn called(server: &TestServer) -> Vec<String> {
    server
        .received()
        .iter()
        .filter(|m| m["method"] == "tools/call")
        .map(|m| m["params"]["name"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn server<'a>(servers: &'a [(String, TestServer)], name: &str) -> &'a TestServer {
    &servers.iter().find(|(n, _)| n == name).expect("a server").1
}

#[test]
fn with_1500_tools_the_first_request_carries_under_5_percent_of_the_definitions() {
    let (hub, _servers) = catalog::hub();
    let model = ScriptedModel::start(vec![
        Step::Text("plain".into()),
        Step::Text("search".into()),
    ])
    .unwrap();
    Agent::new(&hub, chat(&model)).run("hello").unwrap();
    Agent::new(&hub, chat(&model))
        .tool_search(ToolSearch::new())
        .run("hello")
        .unwrap();
    let requests = model.requests();
    let plain = catalog::tool_bytes(&requests[0].body);
    let search = catalog::tool_bytes(&requests[1].body);
    assert_eq!(requests[0].tool_names().len(), 1500);
    assert_eq!(requests[1].tool_names(), ["search_tools"]);
    assert!(
        plain > 500_000,
        "the plain run's definitions are {plain} bytes"
    );
    assert!(
        search * 20 < plain,
        "with search the tools take {search} bytes, without {plain}: not under 5%"
    );
    no_violations(&model);
}

#[test]
fn a_scripted_model_finds_a_tool_it_was_not_offered_and_calls_it() {
    let (hub, servers) = catalog::hub();
    let model = ScriptedModel::start(vec![
        calls(vec![call(
            "search_tools",
            json!({"query": "refund a stripe charge", "limit": 5}),
        )]),
        calls(vec![call("create_refund", json!({"name": "order 42"}))]),
        Step::Summary("Done: ".into()),
    ])
    .unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let mut agent = Agent::new(&hub, chat(&model))
        .tool_search(ToolSearch::new())
        .on_event(move |e| s.lock().unwrap().push(e.clone()));
    let out = agent.run("Refund the last charge of order 42").unwrap();
    assert_eq!(out.turns, 3);
    assert_eq!(
        out.text,
        r#"Done: stripe/create_refund {"name":"order 42"}"#
    );
    let requests = model.requests();
    let first = requests[0].tool_names();
    assert_eq!(first, ["search_tools"]);
    let second = requests[1].tool_names();
    assert!(
        second.contains(&"create_refund".to_owned()) && second.len() <= 6,
        "{second:?}"
    );
    // The search's answer named the tool, with its description.
    assert!(
        out.tool_calls[0]
            .output
            .contains("- create_refund: Creates a refund in the Stripe payments"),
        "{}",
        out.tool_calls[0].output
    );
    assert_eq!(out.tool_calls[0].server, None);
    // The call reached the Stripe server, and no other server got a call.
    assert_eq!(called(server(&servers, "stripe")), ["create_refund"]);
    let others: usize = servers
        .iter()
        .filter(|(n, _)| n != "stripe")
        .map(|(_, s)| called(s).len())
        .sum();
    assert_eq!(others, 0);
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter().any(
            |e| matches!(e, AgentEvent::ToolsFound { turn: 1, query, tools, .. }
            if query == "refund a stripe charge" && tools.contains(&"create_refund".to_owned()))
        ),
        "{seen:?}"
    );
    assert!(!seen
        .iter()
        .any(|e| matches!(e, AgentEvent::ToolCallStarted { tool, .. } if tool == "search_tools")));
    no_violations(&model);
}

#[test]
fn a_tool_called_before_it_was_found_is_loaded_not_run() {
    let (hub, servers) = catalog::hub();
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("delete_invoice", json!({"id": "in_1", "confirm": true})),
            call("no_such_tool", json!({})),
        ]),
        calls(vec![call(
            "delete_invoice",
            json!({"id": "in_1", "confirm": true}),
        )]),
        Step::Summary(String::new()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).tool_search(ToolSearch::new());
    let out = agent.run("delete invoice in_1").unwrap();
    let first = &out.tool_calls[0];
    assert!(
        first.is_error
            && first
                .output
                .starts_with("Not run: `delete_invoice` was not loaded")
    );
    assert_eq!(first.server.as_deref(), Some("stripe"));
    let unknown = &out.tool_calls[1];
    assert!(
        unknown.is_error
            && unknown
                .output
                .starts_with("Tool not found: `no_such_tool`. Call `search_tools`"),
        "{}",
        unknown.output
    );
    // Loaded by the refused call: offered in the second request, and then it ran, once.
    assert!(model.requests()[1]
        .tool_names()
        .contains(&"delete_invoice".to_owned()));
    assert!(!out.tool_calls[2].is_error, "{:?}", out.tool_calls[2]);
    assert_eq!(called(server(&servers, "stripe")), ["delete_invoice"]);
    no_violations(&model);
}

#[test]
fn pinned_tools_are_offered_in_every_turn() {
    let (hub, _servers) = catalog::hub();
    let model = ScriptedModel::start(vec![
        calls(vec![call("get_forecast", json!({"id": "paris"}))]),
        Step::Text("sunny".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model))
        .tool_search(ToolSearch::new().pin(["get_forecast", "list_issue"]));
    agent.run("weather in paris?").unwrap();
    for r in model.requests() {
        assert_eq!(
            r.tool_names(),
            ["search_tools", "list_issue", "get_forecast"]
        );
    }
    no_violations(&model);
}

#[test]
fn the_next_run_offers_the_tools_the_conversation_used_not_all_it_found() {
    let (hub, _servers) = catalog::hub();
    let model = ScriptedModel::start(vec![
        calls(vec![call(
            "search_tools",
            json!({"query": "weather forecast"}),
        )]),
        calls(vec![call("get_forecast", json!({"id": "paris"}))]),
        Step::Text("sunny".into()),
        Step::Text("again".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).tool_search(ToolSearch::new());
    agent.run("weather in paris?").unwrap();
    let found = model.requests()[1].tool_names();
    assert!(found.len() > 2, "the search found several: {found:?}");
    assert_eq!(agent.run("and tomorrow?").unwrap().text, "again");
    assert_eq!(
        model.requests()[3].tool_names(),
        ["search_tools", "get_forecast"]
    );
    no_violations(&model);
}
