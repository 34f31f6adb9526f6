//! Graceful degradation of hosted MCP servers (@robojs/ai's sequence) against the scripted
//! Responses endpoint: a failure the hosted servers cause is retried with backoff; when it
//! persists, the failing servers are left out of the request, the model is told in its system
//! prompt, and their labels are reported on the run's result and through `on_event`. Failures
//! that are not the hosted servers' are returned at once, and the next request carries every
//! hosted server again.

mod common;
mod hub_support;

use common::agent::events;
use std::time::Duration;

use hub_support::fixture;
use mcp_blocking::agent::{
    Agent, AgentError, AgentEvent, HttpOptions, ModelError, OpenAiResponses,
};
use mcp_blocking::config::HostedMcpServer;
use mcp_blocking::hub::Degradation;
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{call, calls, Received, ScriptedModel, Step};
use serde_json::{json, Value};

/// OpenAI's answer when it cannot list a hosted server's tools.
fn failed_dependency(label: &str) -> Step {
    Step::StatusBody(
        424,
        json!({"error": {"message": format!(
            "Error retrieving tool list from MCP server: '{label}'. Http status code: 503 \
             (Service Unavailable)"), "type": "external_connector_error"}}),
    )
}

fn hosted() -> [HostedMcpServer; 2] {
    [
        HostedMcpServer::new("docs", "https://docs.example.com/mcp"),
        HostedMcpServer::new("search", "https://search.example.net/mcp"),
    ]
}

fn responses(model: &ScriptedModel, degradation: Degradation) -> OpenAiResponses {
    let mut o = HttpOptions::default();
    o.timeout = Duration::from_secs(30);
    o.base_delay = Duration::from_millis(1);
    OpenAiResponses::new("gpt-test")
        .base_url(&model.base_url())
        .api_key("sk-hosted-test")
        .http_options(o)
        .hosted(hosted())
        .degradation(degradation)
}

fn quick() -> Degradation {
    Degradation::default()
        .extra_retries(2)
        .base_delay(Duration::from_millis(1))
        .max_delay(Duration::from_millis(4))
}

/// The hosted labels a request carried.
fn labels(r: &Received) -> Vec<String> {
    r.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "mcp")
        .map(|t| t["server_label"].as_str().unwrap_or("").to_owned())
        .collect()
}

fn instructions(r: &Received) -> String {
    r.body["instructions"].as_str().unwrap_or("").to_owned()
}

#[test]
fn a_failure_the_retry_cures_degrades_nothing() {
    let hub = Hub::default();
    let model =
        ScriptedModel::start(vec![failed_dependency("docs"), Step::Text("ok".into())]).unwrap();
    let (seen, on_event) = events();
    let mut agent = Agent::new(&hub, responses(&model, quick())).on_event(on_event);
    let out = agent.run("hi").unwrap();
    assert_eq!(out.text, "ok");
    assert!(out.degraded_mcp_servers.is_empty());
    let reqs = model.requests();
    assert_eq!(reqs.len(), 2, "one failure, one retry");
    for r in &reqs {
        assert_eq!(
            labels(r),
            ["docs", "search"],
            "the retry carries every server"
        );
        assert!(!instructions(r).contains("Status note"));
    }
    assert!(!seen
        .lock()
        .unwrap()
        .iter()
        .any(|e| matches!(e, AgentEvent::HostedServersDegraded { .. })));
    assert!(out.to_json().get("degraded_mcp_servers").is_none());
}

#[test]
fn a_persistent_failure_leaves_out_the_named_server_tells_the_model_and_reports_it() {
    let hub = Hub::new([fixture("fx", "", &[])]);
    // Three failures (the first request and two retries), the degraded request, then a tool
    // call and the next turn.
    let model = ScriptedModel::start(vec![
        failed_dependency("docs"),
        failed_dependency("docs"),
        failed_dependency("docs"),
        calls(vec![call("echo", json!({"text": "still works"}))]),
        Step::Summary("seen: ".into()),
    ])
    .unwrap();
    let (seen, on_event) = events();
    let mut agent = Agent::new(&hub, responses(&model, quick()))
        .system_prompt("Be brief.")
        .allow_tools(["echo"])
        .on_event(on_event);
    let out = agent.run("look it up").unwrap();
    assert_eq!(out.text, "seen: still works");
    assert_eq!(out.degraded_mcp_servers, ["docs"]);
    assert_eq!(out.to_json()["degraded_mcp_servers"], json!(["docs"]));
    let reqs = model.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs[..3] {
        assert_eq!(labels(r), ["docs", "search"]);
        assert_eq!(instructions(r), "Be brief.");
    }
    // The degraded request: `search` kept, `docs` gone, the note after the system prompt.
    assert_eq!(labels(&reqs[3]), ["search"]);
    assert_eq!(
        instructions(&reqs[3]),
        "Be brief.\n\nStatus note: the external tools of these hosted MCP servers are \
         unavailable right now and were removed from this request: `docs`. Do not try to use \
         them; if the user needs them, say that they are unavailable."
    );
    let names: Vec<&str> = reqs[3].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["echo"], "the Hub's tools stay");
    // The next turn carries every hosted server again, and no note.
    assert_eq!(labels(&reqs[4]), ["docs", "search"]);
    assert_eq!(instructions(&reqs[4]), "Be brief.");
    let degraded: Vec<(usize, Vec<String>)> = seen
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::HostedServersDegraded { turn, servers } => Some((*turn, servers.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(degraded, [(1, vec!["docs".to_owned()])]);
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[test]
fn a_failure_naming_no_server_leaves_them_all_out() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![
        Step::StatusBody(424, json!({"error": {"message": "Failed Dependency"}})),
        Step::StatusBody(424, json!({"error": {"message": "Failed Dependency"}})),
        Step::Text("without tools".into()),
    ])
    .unwrap();
    let degradation = quick().extra_retries(1);
    let mut agent = Agent::new(&hub, responses(&model, degradation));
    let out = agent.run("hi").unwrap();
    assert_eq!(out.degraded_mcp_servers, ["docs", "search"]);
    let reqs = model.requests();
    assert_eq!(reqs.len(), 3);
    assert!(labels(&reqs[2]).is_empty());
    assert!(reqs[2].body.get("tools").is_none(), "{}", reqs[2].body);
    // No system prompt of its own: the note is the whole of it.
    assert!(instructions(&reqs[2]).starts_with("Status note: "));
    assert!(instructions(&reqs[2]).contains("`docs`, `search`"));
}

#[test]
fn a_second_server_failing_after_the_first_is_left_out_too() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![
        failed_dependency("docs"),
        failed_dependency("search"),
        Step::Text("alone".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, responses(&model, quick().extra_retries(0)));
    let out = agent.run("hi").unwrap();
    assert_eq!(out.degraded_mcp_servers, ["docs", "search"]);
    let reqs = model.requests();
    assert_eq!(labels(&reqs[1]), ["search"]);
    assert!(labels(&reqs[2]).is_empty());
}

#[test]
fn without_graceful_degradation_the_error_is_returned_after_the_retries() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![
        failed_dependency("docs"),
        failed_dependency("docs"),
        failed_dependency("docs"),
        Step::Text("never".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, responses(&model, quick().graceful(false)));
    match agent.run("hi") {
        Err(AgentError::Model {
            source: ModelError::Status {
                status, message, ..
            },
            ..
        }) => {
            assert_eq!(status, 424);
            assert!(message.contains("'docs'"), "{message}");
        }
        other => panic!("expected the 424, got {other:?}"),
    }
    assert_eq!(
        model.requests().len(),
        3,
        "the first request and two retries"
    );
    assert_eq!(model.remaining(), 1);
}

#[test]
fn a_failure_that_is_not_the_hosted_servers_is_returned_at_once() {
    let hub = Hub::default();
    let model = ScriptedModel::start(vec![
        Step::StatusBody(
            401,
            json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        ),
        Step::Text("never".into()),
    ])
    .unwrap();
    let mut agent = Agent::new(&hub, responses(&model, quick()));
    let err = agent.run("hi").unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::Model {
                source: ModelError::Status { status: 401, .. },
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!err.to_string().contains("sk-hosted-test"));
    assert_eq!(model.requests().len(), 1, "not retried, nothing left out");
}

#[test]
fn cancelling_during_the_backoff_ends_the_run() {
    let hub = Hub::default();
    let model =
        ScriptedModel::start(vec![failed_dependency("docs"), Step::Text("late".into())]).unwrap();
    let slow = Degradation::default()
        .extra_retries(1)
        .base_delay(Duration::from_secs(60))
        .max_delay(Duration::from_secs(60));
    let mut agent = Agent::new(&hub, responses(&model, slow));
    let cancel = agent.cancel_handle();
    let model_ref = &model;
    let result = std::thread::scope(|s| {
        let run = s.spawn(move || agent.run("hi"));
        // Cancel once the first (failing) request has been answered.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while model_ref.requests().is_empty() && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        cancel.cancel();
        run.join().unwrap()
    });
    assert!(
        matches!(result, Err(AgentError::Cancelled { .. })),
        "{result:?}"
    );
    assert_eq!(model.requests().len(), 1);
}

#[test]
fn the_configured_hosted_servers_and_the_files_options_can_be_read_back() {
    let list = HostedMcpServer::parse_list(&json!({
        "mcpServers": [
            {"type": "mcp", "server_label": "context7", "server_url": "https://mcp.context7.com/mcp",
             "headers": {"CONTEXT7_API_KEY": "k-secret"}, "require_approval": "never"},
            {"type": "mcp", "server_label": "context7", "server_url": "https://other/mcp"}
        ],
        "mcp": {"gracefulDegradation": false, "extraRetries": 3, "baseDelayMs": 100,
                "maxDelayMs": 1000}
    }))
    .unwrap();
    assert_eq!(list.errors.len(), 1, "the duplicate label is skipped");
    let model = OpenAiResponses::new("gpt-test").hosted_list(&list);
    let servers: Vec<&str> = model
        .hosted_servers()
        .iter()
        .map(|s| s.server_label.as_str())
        .collect();
    assert_eq!(servers, ["context7"]);
    let d = model.degradation_policy();
    assert_eq!(
        (d.graceful, d.extra_retries, d.base_delay, d.max_delay),
        (false, 3, Duration::from_millis(100), Duration::from_secs(1))
    );
    assert!(!format!("{model:?}").contains("k-secret"));
    // A bad options block is an error at its key.
    let err = HostedMcpServer::parse_list(&json!({"mcpServers": [], "mcp": {"extraRetrys": 1}}))
        .unwrap_err();
    assert!(err.to_string().contains("mcp.extraRetrys"), "{err}");
    let err = HostedMcpServer::parse_list(&json!({"mcpServers": [], "mcp": {"extraRetries": 99}}))
        .unwrap_err();
    assert!(err.to_string().contains("at most"), "{err}");
    let _: Value = list.to_json();
}
