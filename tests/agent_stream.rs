//! Streamed answers and interruption, against the scripted model on loopback (which answers as
//! server-sent events in each API's format when asked to stream) and real fixture MCP servers:
//! a streamed run ends exactly as an unstreamed one, pieces arrive before the rest of the answer
//! is written, and `CancelHandle::cancel` ends a run in the middle of a model answer (streamed
//! or whole) or of a slow tool call, whose server is sent `notifications/cancelled`.

mod common;
mod hub_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::agent::run_cancelled_when;
use hub_support::fixture;
use mcp_blocking::agent::{
    Agent, AgentError, AgentEvent, AnthropicMessages, CancelHandle, HttpOptions, Model, ModelDelta,
    OpenAiChat, OpenAiResponses, RunOutput,
};
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{call, ScriptedModel, Step};
use serde_json::{json, Value};

fn options() -> HttpOptions {
    let mut o = HttpOptions::default();
    o.base_delay = Duration::from_millis(10);
    o.timeout = Duration::from_secs(30);
    o
}

/// The three built-in models, by name, for `model`.
fn model_for(api: &str, model: &ScriptedModel) -> Box<dyn Model> {
    match api {
        "chat" => Box::new(
            OpenAiChat::new("scripted")
                .base_url(&model.base_url())
                .api_key("sk-test-key")
                .http_options(options()),
        ),
        "anthropic" => Box::new(
            AnthropicMessages::new("scripted")
                .base_url(&model.anthropic_base_url())
                .api_key("sk-ant-test")
                .http_options(options()),
        ),
        _ => Box::new(
            OpenAiResponses::new("scripted")
                .base_url(&model.base_url())
                .api_key("sk-resp-test")
                .http_options(options()),
        ),
    }
}

const APIS: [&str; 3] = ["chat", "anthropic", "responses"];

/// The text before the calls: none for Responses, whose scripted answer puts a message item
/// after its function calls (which its own checks take for calls left unanswered).
fn preamble(api: &str) -> &'static str {
    if api == "responses" {
        ""
    } else {
        "Let me look that up for you."
    }
}

fn script(api: &str) -> Vec<Step> {
    vec![
        Step::Call(
            preamble(api).into(),
            vec![
                call("echo", json!({"text": "streamed pieces"})),
                call("add", json!({"a": 20, "b": 22})),
            ],
        ),
        Step::Summary("Here is what I found: ".into()),
    ]
}

/// Runs the script once, streamed or not, returning the output and the deltas seen.
fn run_once(api: &str, hub: &Hub, stream: bool) -> (RunOutput, Vec<ModelDelta>, Vec<Value>) {
    let model = ScriptedModel::start(script(api)).unwrap();
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let d = Arc::clone(&deltas);
    let mut agent = Agent::new(hub, model_for(api, &model))
        .stream(stream)
        .on_event(move |e| {
            if let AgentEvent::ModelDelta { delta, .. } = e {
                d.lock().unwrap().push(delta.clone());
            }
        });
    let out = agent.run("look it up").unwrap();
    assert_eq!(model.violations(), Vec::<String>::new());
    let bodies = model.requests().into_iter().map(|r| r.body).collect();
    let deltas = deltas.lock().unwrap().clone();
    (out, deltas, bodies)
}

#[test]
fn a_streamed_run_ends_exactly_as_an_unstreamed_one_in_all_three_apis() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    for api in APIS {
        let (whole, none, bodies) = run_once(api, &hub, false);
        assert!(none.is_empty(), "{api}: no deltas without streaming");
        assert!(bodies.iter().all(|b| b.get("stream").is_none()), "{api}");
        let (streamed, deltas, bodies) = run_once(api, &hub, true);
        assert!(bodies.iter().all(|b| b["stream"] == true), "{api}");
        if api == "chat" {
            assert_eq!(bodies[0]["stream_options"]["include_usage"], true);
        }
        // The same run: text, calls, usage, and every message (the raw ones re-sent included).
        assert_eq!(streamed, whole, "{api}");
        assert_eq!(streamed.text, "Here is what I found: streamed pieces\n42");
        // The pieces add up to the answers: the text of both turns, and each call's arguments.
        let text: String = deltas
            .iter()
            .filter_map(|d| match d {
                ModelDelta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, format!("{}{}", preamble(api), streamed.text), "{api}");
        let texts = deltas
            .iter()
            .filter(|d| matches!(d, ModelDelta::Text(_)))
            .count();
        assert!(
            texts >= 3,
            "{api}: the text came in several pieces: {deltas:?}"
        );
        for (i, record) in streamed.tool_calls.iter().enumerate() {
            let mut id = None;
            let mut name = None;
            let mut arguments = String::new();
            let mut pieces = 0;
            for d in &deltas {
                if let ModelDelta::ToolCall {
                    index,
                    id: di,
                    name: dn,
                    arguments: da,
                } = d
                {
                    if *index == i {
                        id = id.or(di.clone());
                        name = name.or(dn.clone());
                        arguments.push_str(da);
                        pieces += 1;
                    }
                }
            }
            assert_eq!(id.as_deref(), Some(record.id.as_str()), "{api}");
            assert_eq!(name.as_deref(), Some(record.name.as_str()), "{api}");
            let args: Value = serde_json::from_str(&arguments).expect("the pieces make JSON");
            assert_eq!(args, record.arguments, "{api}");
            assert!(pieces >= 3, "{api}: call {i} came in {pieces} pieces");
        }
    }
}

#[test]
fn each_piece_arrives_before_the_rest_of_the_answer_is_written() {
    // The model holds the rest of its answer until a piece reached the program: the run ends
    // only if pieces are handed on as they arrive.
    let hub = Hub::default();
    for api in APIS {
        let model = Arc::new(
            ScriptedModel::start(vec![Step::Gated("one two three four five six".into())]).unwrap(),
        );
        let m = Arc::clone(&model);
        let first = Arc::new(Mutex::new(None));
        let f = Arc::clone(&first);
        let mut agent = Agent::new(&hub, model_for(api, &model))
            .stream(true)
            .on_event(move |e| {
                if let AgentEvent::ModelDelta {
                    delta: ModelDelta::Text(t),
                    ..
                } = e
                {
                    f.lock().unwrap().get_or_insert_with(|| t.clone());
                    m.release();
                }
            });
        let out = agent.run("count").unwrap();
        assert_eq!(out.text, "one two three four five six", "{api}");
        let first = first.lock().unwrap().clone().expect("a piece");
        assert!(
            first.len() < out.text.len(),
            "{api}: the first piece was `{first}`"
        );
    }
}

/// Cancels `cancel` from another thread when the returned function is called, recording when.
fn canceller(cancel: CancelHandle) -> (Arc<Mutex<Option<Instant>>>, impl Fn() + Send + Sync) {
    let at = Arc::new(Mutex::new(None));
    let a = Arc::clone(&at);
    (at, move || {
        let c = cancel.clone();
        let a = Arc::clone(&a);
        std::thread::scope(|s| {
            s.spawn(move || {
                a.lock().unwrap().get_or_insert_with(Instant::now);
                c.cancel();
            });
        });
    })
}

/// The time from the cancellation to the run's end, checked against a generous bound (the
/// requirement is one second; the figure is printed for the record).
fn ended_soon(what: &str, cancelled_at: Instant) -> Duration {
    let took = cancelled_at.elapsed();
    eprintln!("{what}: the run ended {took:?} after the cancellation");
    assert!(
        took < Duration::from_secs(3),
        "{what}: the run took {took:?} to end after the cancellation (the bar is 1 s)"
    );
    took
}

#[test]
fn cancelling_interrupts_a_streamed_answer_in_the_middle() {
    let hub = Hub::default();
    for api in APIS {
        // The model never finishes its answer (it waits for a release that never comes).
        let model = ScriptedModel::start(vec![Step::Gated("never finished".into())]).unwrap();
        let agent = Agent::new(&hub, model_for(api, &model)).stream(true);
        let (at, cancel) = canceller(agent.cancel_handle());
        let mut agent = agent.on_event(move |e| {
            if matches!(e, AgentEvent::ModelDelta { .. }) {
                cancel();
            }
        });
        let ran = agent.run("go");
        ended_soon(
            &format!("{api}, streamed answer"),
            at.lock().unwrap().expect("cancelled"),
        );
        assert!(
            matches!(ran, Err(AgentError::Cancelled { .. })),
            "{api}: {ran:?}"
        );
        assert_eq!(model.requests().len(), 1);
    }
}

/// Waits (by a deadline) until `model` has received `n` requests.
fn received(model: &ScriptedModel, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while model.requests().len() < n {
        assert!(Instant::now() < deadline, "the model never got request {n}");
        std::thread::yield_now();
    }
}

#[test]
fn cancelling_interrupts_a_whole_answer_being_waited_for() {
    let hub = Hub::default();
    for api in APIS {
        let model = ScriptedModel::start(vec![Step::Stall(Duration::from_secs(60))]).unwrap();
        let mut agent = Agent::new(&hub, model_for(api, &model));
        let (ran, at) = run_cancelled_when(&mut agent, "go", || received(&model, 1));
        ended_soon(&format!("{api}, whole answer"), at);
        assert!(
            matches!(ran, Err(AgentError::Cancelled { .. })),
            "{api}: {ran:?}"
        );
    }
}

#[test]
fn cancelling_cancels_a_slow_tool_call_and_its_server_is_told() {
    // The server logs each message it receives to stderr, which the client keeps.
    let hub = Hub::new([fixture("fx", "", &["--verbose"])]);
    let model = ScriptedModel::start(vec![
        Step::Call(String::new(), vec![call("slow", json!({"ms": 60000}))]),
        Step::Text("never asked".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, model_for("chat", &model)).stream(true);
    let (ran, at) = run_cancelled_when(&mut agent, "slowly", || {
        // Once the server has the call.
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = loop {
            if let Some(c) = hub.client("fx") {
                break c;
            }
            assert!(Instant::now() < deadline, "never connected");
            std::thread::yield_now();
        };
        while !client.stderr_tail().contains(r#""method":"tools/call""#) {
            assert!(Instant::now() < deadline, "the server never got the call");
            std::thread::yield_now();
        }
    });
    ended_soon("slow tool", at);
    match ran {
        Err(AgentError::Cancelled { transcript }) => assert_eq!(transcript.len(), 3),
        other => panic!("expected a cancelled run, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 1, "the model was not asked again");
    // The server was told, and it still serves (the cancelled call did not count against it).
    let told = hub.call_tool("cancelled_requests", json!({})).unwrap();
    let ids: Value = serde_json::from_str(&told.text()).unwrap();
    assert_eq!(ids.as_array().map(Vec::len), Some(1), "{ids}");
}

#[test]
#[cfg(feature = "testing")]
fn cancelling_ends_a_call_that_an_in_process_server_holds() {
    use mcp_blocking::model::{CallToolResult, Content, Tool};
    use mcp_blocking::testing::TestServer;
    use mcp_blocking::ServerConfig;
    // The handler holds the call until the test ends (a minute at the most): the cancellation,
    // not the handler or the 15 s timeout, must end the run.
    let (got_tx, got_rx) = crossbeam_channel::bounded::<()>(1);
    let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
    let server =
        TestServer::new("held").tool(Tool::new("hold", json!({"type": "object"})), move |_| {
            let _ = got_tx.try_send(());
            let _ = release_rx.recv_timeout(Duration::from_secs(60));
            Ok(CallToolResult::success(vec![Content::text("late")]))
        });
    let client = Arc::new(server.connect().unwrap());
    let hub = Hub::new([ServerConfig::stdio("held", "not-run")]);
    let tools = client.list_tools().unwrap();
    hub.inject(vec![client.clone()], vec![("held".into(), tools)]);
    let model = ScriptedModel::start(vec![
        Step::Call(String::new(), vec![call("hold", json!({}))]),
        Step::Text("never asked".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, model_for("chat", &model));
    let (ran, at) = run_cancelled_when(&mut agent, "hold on", || {
        got_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the server never got the call");
    });
    ended_soon("in-process tool", at);
    assert!(matches!(ran, Err(AgentError::Cancelled { .. })), "{ran:?}");
    assert_eq!(model.requests().len(), 1, "the model was not asked again");
    drop(release_tx);
}

#[test]
fn a_streamed_request_is_retried_after_its_retry_after_and_bounded_by_the_timeout() {
    let hub = Hub::default();
    // A 429 comes whole, before any stream: it is retried as on the unstreamed path.
    let model = ScriptedModel::start(vec![
        Step::Status(429, Some(0)),
        Step::Text("after the retry".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, model_for("chat", &model)).stream(true);
    assert_eq!(agent.run("go").unwrap().text, "after the retry");
    assert_eq!(model.requests().len(), 2);
    // The request's deadline covers the whole stream: one that stops in the middle ends then.
    let model = ScriptedModel::start(vec![Step::Gated("never finished".into())]).unwrap();
    let mut o = options();
    o.timeout = Duration::from_millis(300);
    let chat = OpenAiChat::new("scripted")
        .base_url(&model.base_url())
        .http_options(o);
    let mut agent = Agent::new(&hub, chat).stream(true).on_event(|_| {});
    match agent.run("go") {
        Err(AgentError::Model { source, .. }) => assert!(
            matches!(source, mcp_blocking::agent::ModelError::Timeout { .. }),
            "{source}"
        ),
        other => panic!("expected the model's timeout, got {other:?}"),
    }
}

/// Runs an agent on `hub` whose model calls `task_slow` (60 s), cancels it once `made` says the
/// server has the task, and returns the run's outcome after checking it ended soon.
fn cancel_a_slow_task(
    what: &str,
    hub: &Hub,
    made: impl Fn() -> bool + Send + Sync,
) -> Result<mcp_blocking::agent::RunOutput, AgentError> {
    let model = ScriptedModel::start(vec![
        Step::Call(String::new(), vec![call("task_slow", json!({"ms": 60000}))]),
        Step::Text("never asked".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(hub, model_for("chat", &model));
    let (ran, at) = run_cancelled_when(&mut agent, "slowly", || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !made() {
            assert!(Instant::now() < deadline, "the server never made the task");
            std::thread::yield_now();
        }
    });
    ended_soon(what, at);
    ran
}

#[test]
fn cancelling_a_tool_call_that_runs_as_a_task_cancels_the_task() {
    use mcp_blocking::model::TaskStatus;
    let hub = Hub::new([fixture("fx", "", &["--tasks"])]);
    let ran = cancel_a_slow_task("slow task", &hub, || {
        hub.client("fx")
            .and_then(|c| c.list_tasks().ok())
            .is_some_and(|tasks| !tasks.is_empty())
    });
    assert!(matches!(ran, Err(AgentError::Cancelled { .. })), "{ran:?}");
    // The task was cancelled at the server, not left running.
    let tasks = hub.client("fx").unwrap().list_tasks().unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].status, TaskStatus::Cancelled, "{tasks:?}");
}

#[test]
fn cancelling_a_tool_call_that_runs_as_a_modern_task_cancels_the_task() {
    use mcp_blocking::model::TaskStatus;
    // The 2026-07-28 tasks extension: no `tasks/list`; the fixture numbers its tasks.
    let hub = Hub::new([fixture("fx", "", &["--tasks", "--modern"])]);
    let ran = cancel_a_slow_task("slow modern task", &hub, || {
        hub.client("fx")
            .and_then(|c| c.get_task("task-1").ok())
            .is_some()
    });
    assert!(matches!(ran, Err(AgentError::Cancelled { .. })), "{ran:?}");
    let task = hub.client("fx").unwrap().get_task("task-1").unwrap();
    assert_eq!(task.status, TaskStatus::Cancelled, "{task:?}");
}
