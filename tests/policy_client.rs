//! A server's policy, enforced by the client itself: an excluded tool is neither listed nor
//! called, on every call path, and nothing is sent for a refused call; a remote server whose file
//! asked for a sandbox is not reached.

use mcp_blocking::config::{ConfigErrorKind, RuleSource, SandboxSettings, ServerPolicy};
use mcp_blocking::model::{CallToolResult, Content, Tool};
use mcp_blocking::testing::TestServer;
use mcp_blocking::{CallOptions, Error, ServerConfig};
use serde_json::json;

fn tool(name: &str) -> Tool {
    Tool::new(name, json!({"type": "object"}))
}

fn server() -> TestServer {
    let ok = |_: &mcp_blocking::testing::ToolCall<'_>| {
        Ok(CallToolResult::success(vec![Content::text("ran")]))
    };
    TestServer::new("gem")
        .tool(tool("echo"), ok)
        .tool(tool("crash"), ok)
        .tool(tool("delete_repo"), ok)
}

fn calls(server: &TestServer) -> usize {
    server
        .received_methods()
        .iter()
        .filter(|m| *m == "tools/call")
        .count()
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[test]
fn without_a_policy_every_tool_is_listed_and_callable() {
    let s = server();
    let client = s.connect().unwrap();
    assert_eq!(
        names(&client.list_tools().unwrap()),
        ["echo", "crash", "delete_repo"]
    );
    assert!(client.call_tool("crash", json!({})).is_ok());
    assert_eq!(calls(&s), 1);
}

#[test]
fn an_excluded_tool_is_neither_listed_nor_called_on_any_path() {
    let s = server();
    let policy = ServerPolicy::new()
        .exclude_tools(["crash", "delete_*"])
        .with_exclude_source(RuleSource::key("mcpServers.gem.excludeTools"));
    let config = ServerConfig::stdio("gem", "x").with_policy(policy);
    let client = s.client_builder_for(config).connect().unwrap();
    assert_eq!(names(&client.list_tools().unwrap()), ["echo"]);
    let page = client.list_tools_page(None).unwrap();
    assert_eq!(names(&page.tools), ["echo"]);

    let err = client.call_tool("crash", json!({})).unwrap_err();
    match &err {
        Error::ToolNotAllowed { server, refusal } => {
            assert_eq!(server, "gem");
            assert_eq!(refusal.tool, "crash");
            assert_eq!(refusal.source.key, "mcpServers.gem.excludeTools");
        }
        other => panic!("expected ToolNotAllowed, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "server `gem`: tool `crash` is excluded by `excludeTools` (`mcpServers.gem.excludeTools`)"
    );
    assert!(matches!(
        client.call_tool_with("delete_repo", json!({}), &CallOptions::default()),
        Err(Error::ToolNotAllowed { .. })
    ));
    assert!(matches!(
        client.request(
            "tools/call",
            Some(json!({"name": "crash", "arguments": {}})),
            &CallOptions::default()
        ),
        Err(Error::ToolNotAllowed { .. })
    ));
    assert!(matches!(
        client.call_tool_as_task("crash", json!({}), &CallOptions::default()),
        Err(Error::ToolNotAllowed { .. })
    ));
    // Nothing reached the server for the refused calls; an allowed one still runs.
    assert_eq!(calls(&s), 0);
    assert!(client.call_tool("echo", json!({})).is_ok());
    assert_eq!(calls(&s), 1);
}

#[test]
fn an_inclusion_list_offers_and_calls_only_its_tools() {
    let s = server();
    let config =
        ServerConfig::stdio("gem", "x").with_policy(ServerPolicy::new().include_tools(["echo"]));
    let client = s.client_builder_for(config).connect().unwrap();
    assert_eq!(names(&client.list_tools().unwrap()), ["echo"]);
    let err = client.call_tool("crash", json!({})).unwrap_err();
    assert!(
        err.to_string().contains("not in the inclusion list"),
        "{err}"
    );
    assert_eq!(calls(&s), 0);
}

#[test]
fn a_remote_server_that_asked_for_a_sandbox_is_not_reached() {
    let s = server();
    let sandbox = SandboxSettings::new(RuleSource::key("servers.fs.sandboxEnabled"));
    let config = ServerConfig::http("fs", "http://127.0.0.1:9/mcp")
        .with_policy(ServerPolicy::new().with_sandbox(sandbox.clone()));
    let err = config.validate().unwrap_err();
    assert_eq!(err.kind, ConfigErrorKind::Unenforceable);
    assert_eq!(err.path, "servers.fs.sandboxEnabled");
    assert!(
        err.to_string()
            .contains("`sandboxEnabled` asks for a sandbox, and a remote server"),
        "{err}"
    );
    let err = s.client_builder_for(config).connect().unwrap_err();
    assert!(
        matches!(&err, Error::Config(c) if c.kind == ConfigErrorKind::Unenforceable),
        "{err}"
    );
    // Nothing was started: the handshake never reached the server.
    assert!(s.received_methods().is_empty());
    // A stdio server's file sandbox is the one it is spawned in.
    let stdio =
        ServerConfig::stdio("fs", "x").with_policy(ServerPolicy::new().with_sandbox(sandbox));
    stdio.validate().unwrap();
    assert_eq!(
        stdio.sandbox().unwrap().source().key,
        "servers.fs.sandboxEnabled"
    );
}
