//! The agent under the servers' policies, against the scripted model and a fixture server: an
//! excluded tool is never offered to the model nor run; a tool left out of an auto-approve list
//! is refused without an approval hook (the model is told it needs approval) and the hook is
//! told it is required; a trusted server, or one whose file says nothing, runs as before.

mod common;
mod hub_support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hub_support::fixture;
use mcp_blocking::agent::{Agent, ApprovalDecision, HttpOptions, OpenAiChat, ToolApproval};
use mcp_blocking::config::{Approval, RuleSource, ServerPolicy};
use mcp_blocking::Hub;
use mcp_fixture_server::scripted_model::{call, calls, ScriptedModel, Step};
use serde_json::json;

fn chat(model: &ScriptedModel) -> OpenAiChat {
    let mut o = HttpOptions::default();
    o.base_delay = Duration::from_millis(10);
    o.timeout = Duration::from_secs(30);
    OpenAiChat::new("scripted")
        .base_url(&model.base_url())
        .api_key("sk-test-key")
        .http_options(o)
}

/// A fixture server whose file auto-approves `echo` only (Cline's `alwaysAllow`).
fn hub_with(approval: Approval) -> Hub {
    let policy = ServerPolicy::new()
        .with_approval(approval)
        .with_approval_source(RuleSource::key("mcpServers.fx.alwaysAllow"))
        .with_file(Path::new("cline_mcp_settings.json"));
    Hub::new([fixture("fx", "", &[]).with_policy(policy)])
}

/// The model calls `counter` (not auto-approved) and `echo` (auto-approved), then sums up.
fn counter_and_echo() -> ScriptedModel {
    ScriptedModel::start(vec![
        calls(vec![
            call("counter", json!({})),
            call("echo", json!({"text": "ok"})),
        ]),
        Step::Summary(String::new()),
    ])
    .unwrap()
}

fn counter_runs(hub: &Hub) -> String {
    hub.call_tool("counter", json!({})).unwrap().text()
}

#[test]
fn without_a_hook_a_tool_left_out_of_the_auto_approve_list_is_refused() {
    let hub = hub_with(Approval::Tools(vec!["echo".into()]));
    let model = counter_and_echo();
    let mut agent = Agent::new(&hub, chat(&model));
    let out = agent.run("count").unwrap();
    let (counter, echo) = (&out.tool_calls[0], &out.tool_calls[1]);
    assert!(counter.is_error);
    assert!(
        counter
            .output
            .starts_with("Not run: the tool `counter` of server `fx` needs the user's approval"),
        "{}",
        counter.output
    );
    assert!(
        counter
            .output
            .contains("`mcpServers.fx.alwaysAllow` in cline_mcp_settings.json"),
        "{}",
        counter.output
    );
    assert!(!echo.is_error);
    assert_eq!(echo.output, "ok");
    // The counter never ran: the next call counts 1.
    assert_eq!(counter_runs(&hub), "1");
    assert_eq!(model.violations(), Vec::<String>::new());
}

#[test]
fn the_hook_is_told_which_calls_need_approval_and_where_that_was_written() {
    let hub = hub_with(Approval::Tools(vec!["echo".into()]));
    let model = counter_and_echo();
    let asked: Arc<Mutex<Vec<ToolApproval>>> = Arc::default();
    let seen = Arc::clone(&asked);
    let mut agent = Agent::new(&hub, chat(&model)).approve(move |ask| {
        seen.lock().unwrap().push(ask.clone());
        if ask.required {
            ApprovalDecision::DeclineWith("Ask the user first.".into())
        } else {
            ApprovalDecision::Approve
        }
    });
    let out = agent.run("count").unwrap();
    assert_eq!(out.text, "Ask the user first.\nok");
    let mut asked = asked.lock().unwrap().clone();
    asked.sort_by(|a, b| a.tool.cmp(&b.tool));
    assert_eq!(asked.len(), 2);
    assert!(asked[0].tool == "counter" && asked[0].required && !asked[0].hosted);
    let rule = asked[0].rule.clone().unwrap();
    assert_eq!(rule.key, "mcpServers.fx.alwaysAllow");
    assert_eq!(
        rule.file.as_deref(),
        Some(Path::new("cline_mcp_settings.json"))
    );
    assert!(asked[1].tool == "echo" && !asked[1].required && asked[1].rule.is_none());
    assert_eq!(counter_runs(&hub), "1");
}

#[test]
fn a_hook_that_approves_runs_the_call() {
    let hub = hub_with(Approval::Tools(vec!["echo".into()]));
    let model = counter_and_echo();
    let mut agent = Agent::new(&hub, chat(&model)).approve(|_| true);
    assert_eq!(agent.run("count").unwrap().text, "1\nok");
}

#[test]
fn a_trusted_server_and_one_whose_file_says_nothing_run_without_a_hook() {
    for approval in [Approval::All, Approval::Unset] {
        let hub = hub_with(approval.clone());
        let model = counter_and_echo();
        let mut agent = Agent::new(&hub, chat(&model));
        assert_eq!(agent.run("count").unwrap().text, "1\nok", "{approval:?}");
    }
}

#[test]
fn an_excluded_tool_is_not_offered_to_the_model_nor_run() {
    let policy = ServerPolicy::new()
        .exclude_tools(["counter"])
        .with_exclude_source(RuleSource::key("mcpServers.fx.excludeTools"));
    let hub = Hub::new([fixture("fx", "", &[]).with_policy(policy)]);
    let model = counter_and_echo();
    let mut agent = Agent::new(&hub, chat(&model));
    let out = agent.run("count").unwrap();
    let offered = model.requests()[0].tool_names();
    assert!(offered.contains(&"echo".to_string()), "{offered:?}");
    assert!(!offered.contains(&"counter".to_string()), "{offered:?}");
    assert!(out.tool_calls[0].is_error);
    assert!(out.tool_calls[0]
        .output
        .starts_with("Tool not found: `counter`"));
    // Called past the agent, the Hub refuses it too, naming the server.
    let err = hub.call_tool("counter", json!({})).unwrap_err();
    assert_eq!(err.server(), Some("fx"));
    assert!(
        err.to_string().contains("excluded by `excludeTools`"),
        "{err}"
    );
}
