//! The run loop against a scripted model on loopback (`mcp_fixture_server::scripted_model`)
//! driving real fixture MCP servers: parallel calls, errors fed back as text, unknown and
//! timed-out tools, the turn limit, API-safe names, discovery, allow-lists, retries, the
//! Anthropic format, approval and cancellation. The scripted model checks every request (tool
//! names valid, every call id answered once, in order); each test asserts it saw no violation.

mod common;
mod hub_support;

use common::agent::{chat, events, no_violations};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hub_support::fixture;
use mcp_blocking::agent::{Agent, AgentError, AgentEvent, AnthropicMessages, HttpOptions, Message};
use mcp_blocking::config::Limits;
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{
    call, call_containing, call_index, calls, ScriptedModel, Step,
};
use serde_json::json;

#[test]
fn parallel_calls_run_at_once_and_are_answered_in_the_models_order() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        Step::Call(
            "Let me check.".into(),
            vec![
                call("slow", json!({"ms": 600})),
                call("echo", json!({"text": "quick"})),
                call("add", json!({"a": 2, "b": 3})),
            ],
        ),
        Step::Summary("Results: ".into()),
    ])
    .unwrap();
    let (seen, on_event) = events();
    let mut agent = Agent::new(&hub, chat(&model)).on_event(on_event);
    let out = agent.run("do three things").unwrap();
    assert_eq!(out.text, "Results: done after 600 ms\nquick\n5");
    assert_eq!(out.turns, 2);
    assert_eq!(out.usage.total(), 30);
    let tools: Vec<&str> = out.tool_calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(tools, ["slow", "echo", "add"]);
    assert!(out
        .tool_calls
        .iter()
        .all(|c| !c.is_error && c.server.as_deref() == Some("fx")));
    // All three started before the slow one finished: they ran in parallel.
    let seen = seen.lock().unwrap();
    let slow_finished = seen
        .iter()
        .position(|e| matches!(e, AgentEvent::ToolCallFinished { tool, .. } if tool == "slow"))
        .unwrap();
    let started = seen[..slow_finished]
        .iter()
        .filter(|e| matches!(e, AgentEvent::ToolCallStarted { .. }))
        .count();
    assert_eq!(started, 3, "{seen:?}");
    assert!(matches!(&seen[0], AgentEvent::ModelText { turn: 1, text } if text == "Let me check."));
    // The key went to the model as a bearer token.
    assert_eq!(
        model.requests()[0].key.as_deref(),
        Some("Bearer sk-test-key")
    );
    no_violations(&model);
}

#[test]
fn tool_errors_unknown_tools_and_bad_arguments_go_back_as_text() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("fail", json!({})),
            call("rpc_error", json!({})),
            call("no_such_tool", json!({})),
            mcp_fixture_server::scripted_model::PlannedCall {
                tool: mcp_fixture_server::scripted_model::Pick::Name("echo".into()),
                arguments: "{not json".into(),
            },
        ]),
        Step::Summary(String::new()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model));
    let out = agent.run("break things").unwrap();
    assert!(
        out.tool_calls.iter().all(|c| c.is_error),
        "{:?}",
        out.tool_calls
    );
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(lines[0], "the tool failed on purpose");
    assert!(
        lines[1].contains("deliberate error") && lines[1].contains("`rpc_error`"),
        "{}",
        lines[1]
    );
    assert!(lines[2].starts_with("Tool not found: `no_such_tool`. The available tools are: "));
    assert!(lines[2].contains("echo"));
    assert!(
        lines[3].contains("not valid") && lines[3].contains("JSON"),
        "{}",
        lines[3]
    );
    assert_eq!(out.tool_calls[2].server, None);
    no_violations(&model);
}

#[test]
fn a_tool_that_times_out_is_reported_and_the_run_goes_on() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        calls(vec![call("slow", json!({"ms": 10_000}))]),
        Step::Summary("got: ".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).tool_timeout(Duration::from_millis(300));
    let out = agent.run("wait").unwrap();
    assert!(out.tool_calls[0].is_error);
    assert!(
        out.text.contains("did not answer within 0.3 s"),
        "{}",
        out.text
    );
    no_violations(&model);
}

#[test]
fn the_turn_limit_is_a_typed_error_with_the_transcript() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let step = || calls(vec![call("echo", json!({"text": "again"}))]);
    let model = ScriptedModel::start(vec![step(), step(), step(), step()]).unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).max_turns(3);
    match agent.run("loop forever") {
        Err(AgentError::TurnLimit {
            turns,
            transcript,
            tool_calls,
            usage,
        }) => {
            assert_eq!(turns, 3);
            assert_eq!(tool_calls.len(), 3);
            assert_eq!(usage.total(), 45);
            // user, then (assistant, tool result) three times
            assert_eq!(transcript.len(), 7);
            assert!(matches!(&transcript[6], Message::ToolResult(r) if r.text() == "again"));
        }
        other => panic!("expected the turn limit, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 3);
    assert!(
        agent.messages().is_empty(),
        "the conversation is left as it was"
    );
    no_violations(&model);
}

#[test]
fn long_dotted_and_colliding_names_are_valid_and_route_back() {
    let s1 = format!("{}-one", "x".repeat(56));
    let s2 = format!("{}-two", "x".repeat(56));
    let long_tool = format!("tool.{}", "l".repeat(70));
    let hub = Hub::new([
        fixture(
            &s1,
            "",
            &["--extra-tool", &long_tool, "--extra-tool", "files.read"],
        ),
        fixture(&s2, "", &["--extra-tool", "héllo"]),
    ]);
    let model = ScriptedModel::start(vec![]).unwrap();
    // What is offered is decided by the Hub: look at the first request, then plan calls of
    // every offered echo-like tool by position.
    model.push([Step::Text("first".into())]);
    let mut agent = Agent::new(&hub, chat(&model));
    agent.run("list").unwrap();
    let names = model.requests()[0].tool_names();
    let wanted: Vec<usize> = hub
        .tools()
        .iter()
        .filter(|t| {
            ["echo", long_tool.as_str(), "files.read", "héllo"].contains(&t.tool.name.as_str())
        })
        .map(|t| names.iter().position(|n| *n == t.name).unwrap())
        .collect();
    assert_eq!(wanted.len(), 5, "{names:?}");
    model.push([
        calls(
            wanted
                .iter()
                .map(|&i| call_index(i, json!({"text": format!("t{i}")})))
                .collect(),
        ),
        Step::Summary(String::new()),
    ]);
    let out = agent.run("call them all").unwrap();
    let routed: Vec<(String, String)> = out
        .tool_calls
        .iter()
        .map(|c| (c.server.clone().unwrap(), c.tool.clone()))
        .collect();
    let mut expected: Vec<(String, String)> = hub
        .tools()
        .iter()
        .filter(|t| {
            ["echo", long_tool.as_str(), "files.read", "héllo"].contains(&t.tool.name.as_str())
        })
        .map(|t| (t.server.clone(), t.tool.name.clone()))
        .collect();
    let mut got = routed.clone();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    assert!(
        out.tool_calls.iter().all(|c| !c.is_error),
        "{:?}",
        out.tool_calls
    );
    // Each answer is the echo of its own call: routed to the right tool.
    for (c, i) in out.tool_calls.iter().zip(&wanted) {
        assert_eq!(c.output, format!("t{i}"));
    }
    assert!(names.contains(&"files_read".to_string()), "{names:?}");
    no_violations(&model);
}

#[test]
fn discovery_applies_to_the_first_run_only_and_the_allow_list_to_every_run() {
    let hub = Hub::builder()
        .servers([
            fixture("math", "add numbers and sums", &[]),
            fixture("weather", "weather forecasts and temperatures", &[]),
        ])
        .discovery(true)
        .build();
    let model = ScriptedModel::start(vec![
        calls(vec![call_containing("add", json!({"a": 1, "b": 2}))]),
        Step::Summary("sum: ".into()),
        Step::Text("no weather here".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).allow_tools(["add", "echo"]);
    assert_eq!(
        agent.run("please add these numbers").unwrap().text,
        "sum: 3"
    );
    assert_eq!(hub.connected_servers(), ["math"]);
    assert_eq!(
        agent.run("what about the weather forecasts?").unwrap().text,
        "no weather here"
    );
    assert_eq!(hub.connected_servers(), ["math"], "discovery ran once");
    for r in model.requests() {
        assert_eq!(r.tool_names(), ["echo", "add"], "the allow-list");
    }
    // The conversation went on: the third request carries both runs.
    let last = &model.requests()[2].body["messages"];
    assert_eq!(last.as_array().unwrap().len(), 5, "{last}");
    no_violations(&model);
}

#[test]
fn a_429_is_retried_after_retry_after_then_succeeds() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![
        Step::Status(429, Some(0)),
        Step::Status(503, None),
        Step::Text("finally".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model));
    assert_eq!(agent.run("hi").unwrap().text, "finally");
    assert_eq!(model.requests().len(), 3);
    // Out of retries: the status is the error, naming the endpoint, never the key.
    model.push([Step::Status(429, Some(0)), Step::Status(429, Some(0))]);
    let mut o = HttpOptions::default();
    o.max_retries = 1;
    let strict = chat(&model).http_options(o);
    let err = Agent::new(&hub, strict).run("again").unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, AgentError::Model { turn: 1, .. }));
    assert!(
        text.contains("HTTP 429") && text.contains("127.0.0.1"),
        "{text}"
    );
    assert!(!format!("{err:?}").contains("sk-test-key"));
}

#[test]
fn the_anthropic_format_is_spoken_and_checked() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        Step::Call(
            "Calling.".into(),
            vec![call("echo", json!({"text": "a"})), call("fail", json!({}))],
        ),
        Step::Summary("claude saw: ".into()),
    ])
    .unwrap();
    let claude = AnthropicMessages::new("claude-test")
        .base_url(&model.anthropic_base_url())
        .api_key("sk-ant-test");
    let mut agent = Agent::new(&hub, claude).system_prompt("Be brief.");
    let out = agent.run("go").unwrap();
    assert_eq!(out.text, "claude saw: a\nthe tool failed on purpose");
    let reqs = model.requests();
    assert_eq!(reqs[0].format, "anthropic");
    assert_eq!(reqs[0].key.as_deref(), Some("sk-ant-test"));
    assert_eq!(reqs[0].body["system"], "Be brief.");
    assert!(reqs[0].body["tools"][0].get("input_schema").is_some());
    assert_eq!(reqs[1].body["messages"][2]["content"][1]["is_error"], true);
    no_violations(&model);
}

#[test]
fn a_declined_call_is_not_run() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        calls(vec![
            call("counter", json!({})),
            call("echo", json!({"text": "ok"})),
        ]),
        Step::Summary(String::new()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, chat(&model)).approve(|a| a.tool != "counter");
    let out = agent.run("count").unwrap();
    assert_eq!(out.text, "The user declined the call of `counter`.\nok");
    // The counter never ran: the next call counts 1.
    assert_eq!(hub.call_tool("counter", json!({})).unwrap().text(), "1");
    no_violations(&model);
}

#[test]
fn cancelling_from_another_thread_stops_after_the_running_calls() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        calls(vec![call("slow", json!({"ms": 200}))]),
        Step::Text("never asked".into()),
    ])
    .unwrap();
    let agent = Agent::new(&hub, chat(&model));
    let cancel = agent.cancel_handle();
    let mut agent = agent.on_event(move |e| {
        if matches!(e, AgentEvent::ToolCallStarted { .. }) {
            let c = cancel.clone();
            // Another thread fires it while the call runs.
            std::thread::scope(|s| {
                s.spawn(move || c.cancel());
            });
        }
    });
    match agent.run("slowly") {
        Err(AgentError::Cancelled { transcript }) => assert_eq!(transcript.len(), 3),
        other => panic!("expected a cancelled run, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 1);
    assert_eq!(model.remaining(), 1);
    no_violations(&model);
}

#[test]
fn responses_carries_hosted_servers_and_answers_their_approval_requests() {
    use mcp_blocking::agent::OpenAiResponses;
    use mcp_blocking::config::{HostedMcpServer, RequireApproval};
    let hub = Hub::new([fixture("fx", "", &[])]);
    let model = ScriptedModel::start(vec![
        Step::Approve("docs".into(), "search_docs".into()),
        calls(vec![call("echo", json!({"text": "from fx"}))]),
        Step::Summary("seen: ".into()),
    ])
    .unwrap();
    let mut docs = HostedMcpServer::new("docs", "https://docs.example.com/mcp");
    docs.require_approval = Some(RequireApproval::Always);
    let responses = OpenAiResponses::new("gpt-test")
        .base_url(&model.base_url())
        .api_key("sk-resp")
        .hosted([docs]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = Arc::clone(&asked);
    let mut agent = Agent::new(&hub, responses)
        .allow_tools(["echo"])
        .approve(move |req| {
            a.lock()
                .unwrap()
                .push((req.server.clone(), req.tool.clone(), req.hosted));
            true
        });
    let out = agent.run("look it up").unwrap();
    assert_eq!(out.text, "seen: from fx");
    assert_eq!(out.turns, 3);
    assert_eq!(
        *asked.lock().unwrap(),
        [
            ("docs".to_string(), "search_docs".to_string(), true),
            ("fx".to_string(), "echo".to_string(), false)
        ]
    );
    let reqs = model.requests();
    assert_eq!(reqs[0].format, "responses");
    let tools = reqs[0].body["tools"].as_array().unwrap();
    assert_eq!(tools[0]["name"], "echo");
    assert_eq!(tools[1]["type"], "mcp");
    assert_eq!(tools[1]["require_approval"], "always");
    let input = reqs[1].body["input"].as_array().unwrap();
    let answer = input.last().unwrap();
    assert_eq!(answer["type"], "mcp_approval_response");
    assert_eq!(answer["approve"], true);
    no_violations(&model);
}

#[test]
fn an_answer_over_the_size_cap_is_refused() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![Step::Text("x".repeat(2000))]).unwrap();
    let mut o = HttpOptions::default();
    o.max_response_bytes = 1000;
    let mut agent = Agent::new(&hub, chat(&model).http_options(o));
    let err = agent.run("hi").unwrap_err();
    assert!(err.to_string().contains("larger than 1000 bytes"), "{err}");
}

#[test]
fn a_long_retry_after_is_cut_to_the_longest_wait() {
    let hub = Hub::default();
    let model =
        ScriptedModel::start(vec![Step::Status(429, Some(3600)), Step::Text("ok".into())]).unwrap();
    let mut o = HttpOptions::default();
    o.max_delay = Duration::from_millis(20);
    let started = std::time::Instant::now();
    let mut agent = Agent::new(&hub, chat(&model).http_options(o));
    assert_eq!(agent.run("hi").unwrap().text, "ok");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "waited for the hour"
    );
}

#[test]
fn a_model_slower_than_its_timeout_is_a_timeout_error() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![Step::Stall(Duration::from_secs(30))]).unwrap();
    let mut o = HttpOptions::default();
    o.timeout = Duration::from_millis(300);
    let mut agent = Agent::new(&hub, chat(&model).http_options(o));
    let err = agent.run("hi").unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::Model {
                source: mcp_blocking::agent::ModelError::Timeout { .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("no answer within 0.3 s"), "{err}");
}

#[test]
fn a_turn_of_5000_calls_runs_the_capped_number_on_a_bounded_pool() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    let planned = (0..5_000)
        .map(|i| call("echo", json!({"text": format!("n{i}")})))
        .collect();
    let model = ScriptedModel::start(vec![calls(planned), Step::Text("done".into())]).unwrap();
    // How many calls run at once, and the most seen.
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (r, m) = (Arc::clone(&running), Arc::clone(&most));
    let limits = Limits::default()
        .with_max_tool_calls_per_turn(40)
        .with_max_parallel_tool_calls(3);
    let mut agent = Agent::new(&hub, chat(&model))
        .limits(limits)
        .on_event(move |e| match e {
            AgentEvent::ToolCallStarted { .. } => {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
            }
            AgentEvent::ToolCallFinished { .. } => {
                r.fetch_sub(1, Ordering::SeqCst);
            }
            _ => {}
        });
    let started = Instant::now();
    let out = agent.run("many").unwrap();
    assert!(started.elapsed() < Duration::from_secs(120));
    assert_eq!(out.text, "done");
    assert_eq!(out.tool_calls.len(), 5_000, "one result per call");
    let (ran, refused) = out.tool_calls.split_at(40);
    assert!(ran.iter().all(|c| !c.is_error), "the first 40 ran");
    assert_eq!(ran[39].output, "n39");
    assert!(refused
        .iter()
        .all(|c| c.is_error && c.server.is_none() && c.output.contains("at most 40 run per turn")));
    let most = most.load(Ordering::SeqCst);
    assert!((1..=3).contains(&most), "{most} calls ran at once");
    // The model read one result per call id, the refused ones included.
    no_violations(&model);
    let last = model.requests().pop().unwrap();
    let results = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    assert_eq!(results, 5_000);
}
