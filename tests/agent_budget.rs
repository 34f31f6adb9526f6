//! What a run lets servers and the model cost, against a scripted model on loopback and real
//! fixture servers: a 10 MB tool result cut to the budget with its notice, 10,000 tool calls of
//! one turn on a bounded pool of named threads, and the servers' instructions in the system
//! prompt (opt-in, labelled, only the servers whose tools the run offers).

mod common;
mod hub_support;

use common::agent::{chat, no_violations};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use hub_support::fixture;
use mcp_blocking::agent::{Agent, AgentEvent};
use mcp_blocking::config::Limits;
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::{json, Value};

/// The `content` of the `role: tool` messages of a Chat request body.
fn tool_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The system message of a Chat request body.
fn system(body: &Value) -> String {
    body["messages"][0]
        .get("content")
        .filter(|_| body["messages"][0]["role"] == "system")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

#[test]
fn a_10_mb_tool_result_reaches_the_model_cut_to_the_budget_with_its_notice() {
    const TEN_MB: u64 = 10_000_000;
    const BUDGET: usize = 50_000;
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        calls(vec![call("large", json!({"bytes": TEN_MB}))]),
        Step::Text("read it".into()),
    ])
    .unwrap();
    let mut agent =
        Agent::new(&hub, chat(&model)).limits(Limits::default().with_max_tool_result_bytes(BUDGET));
    let out = agent.run("fetch the big one").unwrap();
    let sent = &tool_messages(&model.requests()[1].body)[0];
    // The kept text, the cut mark, then the notice.
    let (kept, notice) = sent.split_once('…').expect("a cut mark");
    assert_eq!(kept.len(), BUDGET);
    assert!(
        notice.contains(&format!(
            "its text is {TEN_MB} bytes and only the first {BUDGET} are shown"
        )) && notice.contains("narrower arguments"),
        "{notice}"
    );
    assert!(sent.len() < BUDGET + 1_000, "{} bytes sent", sent.len());
    // The record holds what the model read, not the 10 MB.
    assert_eq!(out.tool_calls[0].output.len(), sent.len());
    assert!(!out.tool_calls[0].is_error);
    no_violations(&model);
}

#[test]
fn a_result_within_the_default_budget_is_sent_whole() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        calls(vec![call("large", json!({"bytes": 90_000}))]),
        Step::Text("ok".into()),
    ])
    .unwrap();
    Agent::new(&hub, chat(&model)).run("fetch").unwrap();
    let sent = &tool_messages(&model.requests()[1].body)[0];
    assert_eq!(sent.len(), 90_000);
    assert!(!sent.contains('…'));
    no_violations(&model);
}

#[test]
fn ten_thousand_calls_of_one_turn_run_on_at_most_the_configured_threads() {
    const CALLS: usize = 10_000;
    const THREADS: usize = 4;
    let hub = Hub::new([fixture("fx", "", &[])]);
    let planned = (0..CALLS)
        .map(|i| call("echo", json!({"text": format!("n{i}")})))
        .collect();
    let model = ScriptedModel::start(vec![calls(planned), Step::Text("done".into())]).unwrap();
    let names = Arc::new(Mutex::new(HashSet::new()));
    let started = Arc::new(Mutex::new(0usize));
    let (n, s) = (Arc::clone(&names), Arc::clone(&started));
    let limits = Limits::default()
        .with_max_tool_calls_per_turn(CALLS)
        .with_max_parallel_tool_calls(THREADS);
    let mut agent = Agent::new(&hub, chat(&model))
        .limits(limits)
        .on_event(move |e| {
            if let AgentEvent::ToolCallStarted { .. } = e {
                let name = std::thread::current().name().unwrap_or("").to_owned();
                n.lock().unwrap().insert(name);
                *s.lock().unwrap() += 1;
            }
        });
    let out = agent.run("many").unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(*started.lock().unwrap(), CALLS, "every call ran");
    assert!(out.tool_calls.iter().all(|c| !c.is_error));
    assert_eq!(out.tool_calls[CALLS - 1].output, format!("n{}", CALLS - 1));
    let names = names.lock().unwrap();
    assert!(
        !names.is_empty()
            && names.len() <= THREADS
            && names.iter().all(|n| n.starts_with("mcp-agent-call-")),
        "the calls ran on {names:?}"
    );
    assert_eq!(tool_messages(&model.requests()[1].body).len(), CALLS);
    no_violations(&model);
}

#[test]
fn server_instructions_are_opt_in_labelled_and_only_for_offered_servers() {
    let hub = Hub::new([fixture("fx", "", &[]), fixture("fy", "", &[])]);
    let model = ScriptedModel::start(vec![
        Step::Text("a".into()),
        Step::Text("b".into()),
        Step::Text("c".into()),
    ])
    .unwrap();
    Agent::new(&hub, chat(&model))
        .system_prompt("Be brief.")
        .run("hi")
        .unwrap();
    Agent::new(&hub, chat(&model))
        .system_prompt("Be brief.")
        .server_instructions(true)
        .run("hi")
        .unwrap();
    // Both fixtures offer `echo`: fy's is `fy__echo`; only fy's tools are allowed.
    Agent::new(&hub, chat(&model))
        .server_instructions(true)
        .allow_tools(["fy__echo"])
        .run("hi")
        .unwrap();
    let r = model.requests();
    assert_eq!(system(&r[0].body), "Be brief.");
    let with = system(&r[1].body);
    assert!(with.starts_with("Be brief.\n\n"), "{with}");
    for server in ["fx", "fy"] {
        assert!(
            with.contains(&format!(
                "<server-instructions server=\"{server}\">\nFixture server for mcp-blocking \
                 tests.\n</server-instructions>"
            )),
            "{with}"
        );
    }
    let only = system(&r[2].body);
    assert!(
        only.contains("server=\"fy\"") && !only.contains("server=\"fx\""),
        "{only}"
    );
    no_violations(&model);
}
