//! The Hub's tools: collisions and routing, allow-lists, `list_changed` refresh, calls from many
//! threads, and the exported JSON.

mod common;
mod hub_support;

use std::sync::Arc;

use hub_support::{fixture, wait_for};
use mcp_blocking::config::{HostedMcpServer, Template};
use mcp_blocking::hub::{CollisionPolicy, HubEvent, Run, Setting};
use mcp_blocking::{Error, Hub};
use serde_json::json;

fn two() -> Hub {
    Hub::new([
        fixture("a", "", &["--extra-tools", "1"]),
        fixture("b", "", &["--extra-tools", "2"]),
    ])
}

fn who(hub: &Hub, tool: &str) -> String {
    hub.call_tool(tool, json!({"name": "HUB_FIXTURE_NAME"}))
        .unwrap()
        .text()
}

#[test]
fn colliding_names_are_prefixed_and_routed_to_their_server() {
    let hub = two();
    let set = hub.resolve(&Run::new());
    let names = set.names();
    assert!(names.contains(&"a__echo") && names.contains(&"b__echo"));
    assert!(names.contains(&"a__gen_0") && names.contains(&"b__gen_0"));
    assert!(names.contains(&"gen_1"), "unique names stay as they are");
    assert!(!names.contains(&"echo"));
    assert_eq!(who(&hub, "a__env"), "a");
    assert_eq!(who(&hub, "b__env"), "b");
    let gen1 = set.tools.iter().find(|t| t.name == "gen_1").unwrap();
    assert_eq!(
        (gen1.server.as_str(), gen1.tool.name.as_str()),
        ("b", "gen_1")
    );
    assert!(matches!(
        hub.call_tool("echo", json!({"text": "x"})),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn collision_policy_first_wins() {
    let hub = Hub::builder()
        .servers([
            fixture("a", "", &[]),
            fixture("b", "", &["--extra-tools", "1"]),
        ])
        .collisions(CollisionPolicy::FirstWins)
        .build();
    let set = hub.resolve(&Run::new());
    assert_eq!(who(&hub, "env"), "a");
    let gen0 = set.tools.iter().find(|t| t.name == "gen_0").unwrap();
    assert_eq!(gen0.server, "b");
    assert_eq!(
        set.tools.iter().filter(|t| t.tool.name == "echo").count(),
        1
    );
}

#[test]
fn collision_policy_prefix_all_with_a_custom_separator() {
    let hub = Hub::builder()
        .servers([fixture("a", "", &[])])
        .collisions(CollisionPolicy::PrefixAll)
        .name_separator("-")
        .build();
    let set = hub.resolve(&Run::new());
    assert!(set.names().iter().all(|n| n.starts_with("a-")));
    assert_eq!(who(&hub, "a-env"), "a");
}

#[test]
fn the_run_allow_list_filters_tools() {
    let hub = two();
    let set = hub.resolve(&Run::new().tools(Setting::list(["echo", "gen_1", "b__add"])));
    assert_eq!(set.names(), ["a__echo", "b__echo", "b__add", "gen_1"]);
    // A run that says nothing inherits: every tool.
    assert!(hub.resolve(&Run::new()).tools.len() > 4);
    // A run that says None gets none, and the connections stay.
    assert!(hub
        .resolve(&Run::new().tools(Setting::None))
        .tools
        .is_empty());
    assert!(hub
        .resolve(&Run::new().servers(Setting::None))
        .tools
        .is_empty());
    assert_eq!(hub.connected_servers(), ["a", "b"]);
}

#[test]
fn allow_lists_resolve_through_the_levels() {
    let hub = Hub::builder()
        .servers([fixture("a", "", &[])])
        .global_tools(Setting::list(["echo", "add"]))
        .host_tools(Setting::Inherit)
        .build();
    assert_eq!(hub.resolve(&Run::new()).names(), ["echo", "add"]);
    let group_none = Hub::builder()
        .servers([fixture("a", "", &[])])
        .group_tools(Setting::None)
        .build();
    assert!(group_none.resolve(&Run::new()).tools.is_empty());
    assert_eq!(
        group_none
            .resolve(&Run::new().tools(Setting::list(["echo"])))
            .names(),
        ["echo"]
    );
}

#[test]
fn list_changed_refreshes_that_servers_tools() {
    let hub = two();
    let events = hub.events();
    hub.resolve(&Run::new());
    assert!(!hub.tools().iter().any(|t| t.name == "fresh"));
    let r = hub
        .call_tool("b__add_tool", json!({"name": "fresh"}))
        .unwrap();
    assert_eq!(r.text(), "added fresh");
    wait_for(
        &events,
        |e| matches!(e, HubEvent::ToolsRefreshed { server, .. } if server == "b"),
    );
    let fresh = hub.tools().into_iter().find(|t| t.name == "fresh").unwrap();
    assert_eq!(fresh.server, "b");
    assert_eq!(
        hub.call_tool("fresh", json!({"text": "new"}))
            .unwrap()
            .text(),
        "new"
    );
    assert!(hub.resolve(&Run::new()).names().contains(&"fresh"));
}

#[test]
fn routed_calls_from_many_threads() {
    let hub = Arc::new(two());
    hub.resolve(&Run::new());
    std::thread::scope(|s| {
        for t in 0..8 {
            let hub = Arc::clone(&hub);
            s.spawn(move || {
                for i in 0..50 {
                    let (tool, server) = if (t + i) % 2 == 0 {
                        ("a__echo", "a")
                    } else {
                        ("b__echo", "b")
                    };
                    let text = format!("{t}-{i}");
                    assert_eq!(
                        hub.call_tool(tool, json!({"text": text})).unwrap().text(),
                        text
                    );
                    assert_eq!(who(&hub, &format!("{server}__env")), server);
                }
            });
        }
    });
}

#[test]
fn exports_in_the_three_shapes() {
    let hub = Hub::new([fixture("a", "", &[])]);
    let set = hub.resolve(&Run::new().tools(Setting::list(["echo"])));
    let echo_schema = set.tools[0].tool.input_schema.clone();
    assert_eq!(echo_schema["properties"]["text"]["type"], "string");
    let description = set.tools[0].description().to_owned();

    assert_eq!(
        set.to_openai_chat(),
        json!([{"type": "function", "function": {
            "name": "echo", "description": description, "parameters": echo_schema}}])
    );
    let hosted = HostedMcpServer::from_value(&json!({"type": "mcp", "server_label": "context7",
        "server_url": "https://mcp.context7.com/mcp", "allowed_tools": ["get-library-docs"],
        "require_approval": "never"}))
    .unwrap();
    assert_eq!(
        set.to_openai_responses(std::slice::from_ref(&hosted)),
        json!([{"type": "function", "name": "echo", "description": description,
            "parameters": echo_schema, "strict": false},
            {"type": "mcp", "server_label": "context7", "server_url": "https://mcp.context7.com/mcp",
            "allowed_tools": ["get-library-docs"], "require_approval": "never"}])
    );
    assert_eq!(
        set.to_anthropic(),
        json!([{"name": "echo", "description": description, "input_schema": echo_schema}])
    );
}

#[test]
fn a_template_sets_the_host_level() {
    let text = format!(
        "---\nmcp:\n  - name: t\n    transport: {{type: stdio, command: '{}'}}\ntools: [echo, add]\n---\nPrompt.\n",
        hub_support::fixture_path()
    );
    let template = Template::parse(&text).unwrap();
    let hub = Hub::builder().template(&template).build();
    assert_eq!(hub.resolve(&Run::new()).names(), ["echo", "add"]);
    assert_eq!(hub.connected_servers(), ["t"]);
}

#[test]
fn paginated_and_stateless_era_lists_are_kept_whole_and_in_order() {
    // Pages of 4 (the fixture's 30 tools and 3 more: 9 pages), and a 2026-07-28 server whose
    // page is checked as one value first.
    let paged = fixture("paged", "", &["--page-size", "4", "--extra-tools", "3"]);
    let modern = fixture("modern", "", &["--modern", "--tasks"]);
    let hub = Hub::new([paged.clone(), modern.clone()]);
    assert!(hub.connect_all().is_empty());
    for config in [paged, modern] {
        let server = config.name().to_owned();
        let direct = mcp_blocking::Client::connect(config).unwrap();
        let listed = direct.list_tools().unwrap();
        direct.close().unwrap();
        let kept: Vec<_> = hub
            .tools()
            .into_iter()
            .filter(|t| t.server == server)
            .map(|t| t.tool)
            .collect();
        assert!(listed.len() > 4, "{server}: {}", listed.len());
        assert_eq!(kept, listed, "{server}");
    }
}
