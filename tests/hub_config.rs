//! A Hub built from configuration: each server's policy is applied (an excluded tool is neither
//! offered nor called, the call refused naming the server), a loaded file's `mcp` options block
//! sets the degradation, and servers given to the builder win over a template's front matter
//! whatever the order of the calls.

mod common;
mod hub_support;

use std::time::Duration;

use hub_support::fixture;
use mcp_blocking::config::{LoadReport, RuleSource, ServerPolicy, Template};
use mcp_blocking::hub::{Degradation, Run};
use mcp_blocking::model::CallToolResult;
use mcp_blocking::{Error, Hub, ServerConfig};
use serde_json::json;

fn excluding_echo(name: &str) -> ServerConfig {
    fixture(name, "", &[]).with_policy(
        ServerPolicy::new()
            .exclude_tools(["echo", "sl*"])
            .with_exclude_source(RuleSource::key(format!("mcpServers.{name}.excludeTools"))),
    )
}

fn refused_server(r: Result<CallToolResult, Error>) -> (String, String) {
    match r {
        Err(Error::ToolNotAllowed { server, refusal }) => (server, refusal.tool),
        other => panic!("expected ToolNotAllowed, got {other:?}"),
    }
}

#[test]
fn a_server_with_a_policy_offers_only_what_it_allows_beside_one_without() {
    let hub = Hub::new([fixture("a", "", &[]), excluding_echo("b")]);
    let set = hub.resolve(&Run::new());
    let names = set.names();
    // `b` offers no `echo`, so `a`'s does not collide and keeps its name.
    assert!(
        names.contains(&"echo") && names.contains(&"slow"),
        "{names:?}"
    );
    assert!(!names.contains(&"b__echo") && !names.contains(&"a__echo"));
    assert!(set
        .tools
        .iter()
        .all(|t| t.server != "b" || (t.tool.name != "echo" && !t.tool.name.starts_with("sl"))));
    assert!(hub
        .tools()
        .iter()
        .any(|t| t.server == "b" && t.tool.name == "add"));
    // The unprefixed name goes to `a`, which allows it.
    assert_eq!(
        hub.call_tool("echo", json!({"text": "hi"})).unwrap().text(),
        "hi"
    );
    // `b`'s own, by its prefixed name: refused, naming `b` and the rule.
    let (server, tool) = refused_server(hub.call_tool("b__echo", json!({"text": "x"})));
    assert_eq!((server.as_str(), tool.as_str()), ("b", "echo"));
}

#[test]
fn a_call_of_an_excluded_tool_is_refused_naming_its_server() {
    let hub = Hub::new([excluding_echo("gem")]);
    hub.resolve(&Run::new());
    let err = hub.call_tool("echo", json!({"text": "x"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "server `gem`: tool `echo` is excluded by `excludeTools` (`mcpServers.gem.excludeTools`)"
    );
    let (server, tool) = refused_server(hub.call_tool("slow", json!({})));
    assert_eq!((server.as_str(), tool.as_str()), ("gem", "slow"));
    // A name no policy refuses is still merely unknown.
    assert!(matches!(
        hub.call_tool("nope", json!({})),
        Err(Error::InvalidArgument { ref server, .. }) if server == "hub"
    ));
    assert!(hub
        .server_policy("gem")
        .is_some_and(|p| !p.allows_tool("echo")));
    assert!(hub.server_policy("other").is_none());
}

// The in-process server is the `testing` feature's.
#[cfg(feature = "testing")]
#[test]
fn an_injected_tool_list_passes_the_clients_policy() {
    use mcp_blocking::model::{Content, Tool};
    use mcp_blocking::testing::TestServer;
    use std::sync::Arc;
    let ok = |_: &mcp_blocking::testing::ToolCall<'_>| {
        Ok(CallToolResult::success(vec![Content::text("ran")]))
    };
    let tool = |n: &str| Tool::new(n, json!({"type": "object"}));
    let s = TestServer::new("gem")
        .tool(tool("echo"), ok)
        .tool(tool("crash"), ok);
    let config =
        ServerConfig::stdio("gem", "x").with_policy(ServerPolicy::new().exclude_tools(["crash"]));
    let client = Arc::new(s.client_builder_for(config).connect().unwrap());
    let hub = Hub::default();
    hub.inject(
        vec![client],
        vec![("gem".into(), vec![tool("echo"), tool("crash")])],
    );
    let offered: Vec<String> = hub.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(offered, ["echo"]);
    let (server, tool) = refused_server(hub.call_tool("crash", json!({})));
    assert_eq!((server.as_str(), tool.as_str()), ("gem", "crash"));
    assert!(!s.received_methods().iter().any(|m| m == "tools/call"));
}

#[test]
fn a_loaded_files_options_block_sets_the_degradation() {
    let quick = Degradation::default()
        .extra_retries(4)
        .base_delay(Duration::from_millis(7))
        .max_delay(Duration::from_millis(70));
    let mut report = LoadReport::default();
    report.servers.push(fixture("a", "", &[]));
    report.degradation = Some(quick.clone());
    let hub = Hub::builder().config_report(&report).build();
    assert_eq!(hub.degradation(), &quick);
    assert!(hub.connect_all().is_empty());
    assert_eq!(hub.connected_servers(), ["a"]);

    // Without a block, the default stays; a later `degradation` call replaces the file's.
    report.degradation = None;
    let hub = Hub::builder().config_report(&report).build();
    assert_eq!(hub.degradation(), &Degradation::default());
    report.degradation = Some(quick);
    let mine = Degradation::default().extra_retries(1);
    let hub = Hub::builder()
        .config_report(&report)
        .degradation(mine.clone())
        .build();
    assert_eq!(hub.degradation(), &mine);
}

fn template() -> Template {
    let fixture = hub_support::fixture_path();
    Template::parse(&format!(
        "---\nmcp: [{{name: tmpl, transport: {{type: stdio, command: '{fixture}'}}}}]\n\
         tools: [add]\n---\nHi.\n"
    ))
    .unwrap()
}

fn connected(hub: &Hub) -> Vec<String> {
    assert!(hub.connect_all().is_empty());
    hub.connected_servers()
}

#[test]
fn servers_given_to_the_builder_win_over_a_templates_whatever_the_order() {
    let t = template();
    let given = || [fixture("given", "", &[])];
    let before = Hub::builder().servers(given()).template(&t).build();
    assert_eq!(connected(&before), ["given"]);
    let after = Hub::builder().template(&t).servers(given()).build();
    assert_eq!(connected(&after), ["given"]);
    // Alone, the template's servers and allow-list are the host level.
    let alone = Hub::builder().template(&t).build();
    assert_eq!(connected(&alone), ["tmpl"]);
    assert_eq!(alone.resolve(&Run::new()).names(), ["add"]);
}

#[test]
fn tools_given_to_the_builder_win_over_a_templates_whatever_the_order() {
    use mcp_blocking::hub::Setting;
    let t = template();
    for hub in [
        Hub::builder()
            .host_tools(Setting::list(["echo"]))
            .template(&t)
            .build(),
        Hub::builder()
            .template(&t)
            .host_tools(Setting::list(["echo"]))
            .build(),
    ] {
        assert_eq!(hub.resolve(&Run::new()).names(), ["echo"]);
    }
}
