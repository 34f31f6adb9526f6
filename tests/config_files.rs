//! Every host config format in `fixtures/` loads into the expected servers, reloads equal from its
//! own `to_json`, and never shows an interpolated secret in `Debug`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mcp_blocking::config::{HostedMcpServer, LoadReport, Template, TransportConfig};
use mcp_blocking::{ConfigLoader, ServerConfig};
use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn summary(r: &LoadReport) -> Vec<(String, &'static str, String)> {
    r.servers
        .iter()
        .map(|s| {
            (
                s.name().to_owned(),
                s.transport_type(),
                s.url().or(s.command()).unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Serialises the servers as a RobotLab list and loads that back.
fn reload(r: &LoadReport) -> LoadReport {
    let list = Value::Array(r.servers.iter().map(ServerConfig::to_json).collect());
    ConfigLoader::new()
        .with_env(BTreeMap::new())
        .strict(true)
        .load_value(&list)
        .unwrap()
}

#[test]
fn claude_desktop() {
    let r = ConfigLoader::new()
        .with_env(env(&[("GITHUB_TOKEN", "ghp_secret123")]))
        .load(fixture("claude_desktop_config.json"))
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(
        summary(&r),
        [
            ("filesystem".into(), "stdio", "npx".into()),
            ("github".into(), "stdio", "npx".into()),
        ]
    );
    assert_eq!(r.skipped_disabled, ["remote-bridge"]);
    let TransportConfig::Stdio(gh) = r.servers[1].transport() else {
        panic!()
    };
    assert_eq!(gh.env["GITHUB_PERSONAL_ACCESS_TOKEN"], "ghp_secret123");
    assert!(!format!("{:?}", r).contains("ghp_secret123"));
    assert_eq!(reload(&r).servers, r.servers);
}

#[test]
fn dot_mcp_json_with_remote_entries() {
    let r = ConfigLoader::new()
        .with_env(env(&[("API_KEY", "sk-live-abcdef")]))
        .load(fixture("mcp.json"))
        .unwrap();
    assert!(r.is_ok(), "{:?}", r.errors);
    assert_eq!(
        summary(&r),
        [
            ("filesystem".into(), "stdio", "npx".into()),
            (
                "api".into(),
                "streamable-http",
                "https://api.example.com/mcp".into()
            ),
            (
                "docs".into(),
                "streamable-http",
                "https://docs.example.com/mcp".into()
            ),
            ("legacy".into(), "sse", "https://mcp.example.com/sse".into()),
        ]
    );
    let TransportConfig::Stdio(fs) = r.servers[0].transport() else {
        panic!()
    };
    assert_eq!(fs.args[2], "/data");
    assert_eq!(fs.env["DEBUG"], "false");
    let TransportConfig::StreamableHttp(api) = r.servers[1].transport() else {
        panic!()
    };
    assert_eq!(
        api.headers,
        [(
            "Authorization".to_string(),
            "Bearer sk-live-abcdef".to_string()
        )]
    );
    assert!(!api.detect_legacy_sse);
    let TransportConfig::StreamableHttp(docs) = r.servers[2].transport() else {
        panic!()
    };
    assert!(
        docs.detect_legacy_sse,
        "a url without a type may fall back to SSE"
    );
    assert_eq!(r.servers[2].timeout(), Duration::from_secs(30));
    assert!(!format!("{:?}", r.servers).contains("sk-live-abcdef"));
    assert_eq!(reload(&r).servers, r.servers);
}

#[test]
fn vscode_with_inputs_and_env_file() {
    let path = fixture("vscode/.vscode/mcp.json");
    let loader = ConfigLoader::new().with_env(BTreeMap::new());
    let r = loader.load(&path).unwrap();
    assert_eq!(r.servers.len(), 1, "the memory server needs its input");
    assert_eq!(r.errors[0].server.as_deref(), Some("memory"));

    let r = loader
        .with_inputs(env(&[("api-key", "input-secret-42")]))
        .strict(true)
        .load(&path)
        .unwrap();
    assert_eq!(
        summary(&r),
        [
            ("memory".into(), "stdio", "npx".into()),
            (
                "remote".into(),
                "streamable-http",
                "https://example.com/mcp".into()
            ),
        ]
    );
    let TransportConfig::Stdio(mem) = r.servers[0].transport() else {
        panic!()
    };
    assert_eq!(mem.env["API_KEY"], "input-secret-42");
    assert_eq!(mem.env["MEMORY_FILE_PATH"], "/tmp/memory.json");
    assert_eq!(mem.env["LOG_LEVEL"], "info");
    assert!(!format!("{r:?}").contains("input-secret-42"));
    assert_eq!(reload(&r).servers, r.servers);
}

#[test]
fn robotlab_yaml_list() {
    let r = ConfigLoader::new()
        .strict(true)
        .load(fixture("robotlab.yaml"))
        .unwrap();
    assert_eq!(
        summary(&r),
        [
            ("filesystem".into(), "stdio", "mcp-server-filesystem".into()),
            ("database".into(), "websocket", "ws://localhost:9090".into()),
            (
                "api".into(),
                "streamable-http",
                "https://server.example.com/neon/mcp".into()
            ),
        ]
    );
    assert_eq!(
        r.servers[0].description(),
        "Read, write, and search local files and directories"
    );
    assert_eq!(r.servers[0].timeout(), Duration::from_secs(30));
    assert_eq!(r.servers[2].timeout(), Duration::from_secs(5));
    assert_eq!(
        r.servers[0].to_json(),
        json!({
            "name": "filesystem",
            "description": "Read, write, and search local files and directories",
            "transport": {"type": "stdio", "command": "mcp-server-filesystem", "args": ["--root", "/data"], "env": {}},
            "timeout": 30.0
        })
    );
    assert_eq!(reload(&r).servers, r.servers);
}

#[test]
fn template_front_matter() {
    let t = ConfigLoader::new()
        .with_env(env(&[("GITHUB_TOKEN", "ghp_template_secret")]))
        .load_template(fixture("github_assistant.md"))
        .unwrap();
    assert_eq!(
        t.description.as_deref(),
        Some("GitHub assistant with MCP tool access")
    );
    assert_eq!(t.mcp.len(), 1);
    assert_eq!(t.mcp[0].name(), "github");
    assert_eq!(t.tools.as_ref().map(Vec::len), Some(3));
    assert_eq!(t.metadata["model"], "gpt-4o");
    assert_eq!(
        t.body,
        "You are a helpful GitHub assistant with access to GitHub tools via MCP.\n"
    );
    assert!(!format!("{t:?}").contains("ghp_template_secret"));
    let explicit = [ServerConfig::stdio("other", "x")];
    assert_eq!(t.mcp_servers(Some(&explicit))[0].name(), "other");
    assert_eq!(t.mcp_servers(None)[0].name(), "github");
}

#[test]
fn template_without_front_matter_is_all_body() {
    let t = Template::parse("Just a prompt.\n").unwrap();
    assert_eq!(
        (t.body.as_str(), t.mcp.len(), t.tools.is_none()),
        ("Just a prompt.\n", 0, true)
    );
}

#[test]
fn hosted_list() {
    let r = HostedMcpServer::load_list(fixture("hosted_mcp.json")).unwrap();
    assert_eq!(
        r.servers
            .iter()
            .map(|s| s.server_label.as_str())
            .collect::<Vec<_>>(),
        ["context7", "deepwiki"]
    );
    let messages: Vec<String> = r
        .errors
        .iter()
        .map(|e| ConfigErrorNoFile(e).to_string())
        .collect();
    assert_eq!(
        messages,
        [
            "server `context7`: [2].server_label: duplicate server_label `context7`",
            "server `broken-headers`: [3].headers: expected a mapping of strings, found a string",
            "server `no-type`: [4].type: missing `type`",
        ]
    );
    assert_eq!(
        r.to_json(),
        json!([
            {"type": "mcp", "server_label": "context7", "server_url": "https://mcp.context7.com/mcp",
             "headers": {"CONTEXT7_API_KEY": "ctx7-example-key"},
             "allowed_tools": ["resolve-library-id", "get-library-docs"], "require_approval": "never"},
            {"type": "mcp", "server_label": "deepwiki", "server_url": "https://mcp.deepwiki.com/mcp",
             "require_approval": "always"}
        ])
    );
    let c = r.servers[0].to_server_config();
    assert_eq!(
        c,
        ServerConfig::http("context7", "https://mcp.context7.com/mcp")
            .with_header("CONTEXT7_API_KEY", "ctx7-example-key")
    );
    assert!(!format!("{:?}", r.servers).contains("ctx7-example-key"));
}

/// Displays an error without its file, for comparing messages.
struct ConfigErrorNoFile<'a>(&'a mcp_blocking::config::ConfigError);

impl std::fmt::Display for ConfigErrorNoFile<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut e = self.0.clone();
        e.file = None;
        write!(f, "{e}")
    }
}

#[test]
fn sse_and_websocket_entries_carry_interpolated_headers() {
    let doc = r#"{"mcpServers": {
        "old": {"type": "sse", "url": "https://mcp.example.com/${TENANT}/sse",
                "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "live": {"type": "ws", "url": "wss://mcp.example.com/ws",
                 "headers": {"X-Api-Key": "${TOKEN}"}}
    }}"#;
    let r = ConfigLoader::new()
        .with_env(env(&[
            ("TOKEN", "tok-sekrit-9"),
            ("TENANT", "tenant-sekrit-7"),
        ]))
        .strict(true)
        .load_str(doc)
        .unwrap();
    let TransportConfig::Sse(old) = r.server("old").unwrap().transport() else {
        panic!("{:?}", r.servers)
    };
    assert_eq!(old.url, "https://mcp.example.com/tenant-sekrit-7/sse");
    assert_eq!(
        old.headers,
        [(
            "Authorization".to_string(),
            "Bearer tok-sekrit-9".to_string()
        )]
    );
    let TransportConfig::WebSocket(live) = r.server("live").unwrap().transport() else {
        panic!("{:?}", r.servers)
    };
    assert_eq!(
        live.headers,
        [("X-Api-Key".to_string(), "tok-sekrit-9".to_string())]
    );
    let shown = format!("{:?} {:?}", r.servers, r);
    assert!(shown.contains("X-Api-Key"), "{shown}");
    assert!(
        !shown.contains("tok-sekrit-9") && !shown.contains("tenant-sekrit-7"),
        "{shown}"
    );
    assert_eq!(reload(&r).servers, r.servers);
}
