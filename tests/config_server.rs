//! `ServerConfig`: builders, validation, `from_value` errors, `to_json` round trips and redaction.

use std::time::Duration;

use mcp_blocking::config::{AuthProvider, ConfigErrorKind, TransportConfig, DEFAULT_TIMEOUT};
use mcp_blocking::ServerConfig;
use serde_json::json;

fn err(v: serde_json::Value) -> mcp_blocking::config::ConfigError {
    ServerConfig::from_value(&v).unwrap_err()
}

#[test]
fn robotlab_shape_loads() {
    let s = ServerConfig::from_value(&json!({
        "name": "filesystem",
        "description": "Read, write, and search local files",
        "transport": {"type": "stdio", "command": "mcp-server-filesystem", "args": ["--root", "/data"],
                      "env": {"DEBUG": "true"}},
        "timeout": 30
    }))
    .unwrap();
    assert_eq!(
        s,
        ServerConfig::stdio("filesystem", "mcp-server-filesystem")
            .args(["--root", "/data"])
            .env("DEBUG", "true")
            .with_description("Read, write, and search local files")
            .timeout_secs(30.0)
    );
}

#[test]
fn timeout_is_normalised_like_robotlab() {
    let t = |v: serde_json::Value| {
        ServerConfig::from_value(
            &json!({"name": "a", "transport": {"type": "sse", "url": "http://x"}, "timeout": v}),
        )
        .unwrap()
        .timeout()
    };
    assert_eq!(t(json!(null)), DEFAULT_TIMEOUT);
    assert_eq!(t(json!(30)), Duration::from_secs(30));
    assert_eq!(t(json!(5000)), Duration::from_secs(5));
    assert_eq!(t(json!(0.5)), Duration::from_secs(1));
}

#[test]
fn type_names_are_case_insensitive_and_ws_is_websocket() {
    let s = ServerConfig::from_value(
        &json!({"name": "n", "transport": {"type": "WS", "url": "ws://h:1"}}),
    )
    .unwrap();
    assert_eq!(s.transport_type(), "websocket");
    let s = ServerConfig::from_value(
        &json!({"name": "n", "transport": {"type": "Http", "url": "https://h"}}),
    )
    .unwrap();
    assert_eq!(s.transport_type(), "streamable-http");
}

#[test]
fn invalid_type_suggests_the_nearest() {
    let e =
        err(json!({"name": "oops", "transport": {"type": "streamable_http", "url": "https://x"}}));
    assert_eq!(e.kind, ConfigErrorKind::UnknownTransport);
    assert_eq!(e.suggestion.as_deref(), Some("streamable-http"));
    assert_eq!(e.to_string(), "server `oops`: transport.type: unknown transport type `streamable_http`, expected one of: stdio, sse, ws, websocket, streamable-http, http (did you mean `streamable-http`?)");
    let e =
        err(json!({"name": "oops", "transport": {"type": "streamableHttp", "url": "https://x"}}));
    assert_eq!(e.to_string(), "server `oops`: transport.type: unknown transport type `streamableHttp`, expected one of: stdio, sse, ws, websocket, streamable-http, http (did you mean `streamable-http`?)");
}

#[test]
fn unknown_key_suggests_the_nearest() {
    let e = err(json!({"name": "fs", "transport": {"type": "stdio", "comand": "x"}}));
    assert_eq!(e.kind, ConfigErrorKind::UnknownKey);
    assert_eq!(
        e.to_string(),
        "server `fs`: transport.comand: unknown key `comand` (did you mean `command`?)"
    );
    let e =
        err(json!({"name": "fs", "timeuot": 3, "transport": {"type": "stdio", "command": "x"}}));
    assert_eq!(
        e.to_string(),
        "server `fs`: timeuot: unknown key `timeuot` (did you mean `timeout`?)"
    );
}

#[test]
fn flat_transport_shows_the_nested_form() {
    let e = err(json!({"name": "gh", "transport": "stdio", "command": "x"}));
    assert_eq!(e.kind, ConfigErrorKind::FlatTransport);
    assert_eq!(e.to_string(), "server `gh`: transport: `transport` must be a mapping, not the string `stdio`; write `transport: { type: stdio, command: x }`");
}

#[test]
fn stdio_without_command_is_an_error() {
    for t in [
        json!({"type": "stdio"}),
        json!({"type": "stdio", "command": ""}),
    ] {
        let e = err(json!({"name": "fs", "transport": t}));
        assert_eq!(e.kind, ConfigErrorKind::MissingField);
        assert_eq!(
            e.to_string(),
            "server `fs`: transport.command: stdio transport needs a `command`"
        );
    }
}

#[test]
fn network_without_url_is_an_error() {
    let e = err(json!({"name": "api", "transport": {"type": "streamable-http"}}));
    assert_eq!(e.kind, ConfigErrorKind::MissingField);
    assert_eq!(
        e.to_string(),
        "server `api`: transport.url: streamable-http transport needs a `url`"
    );
}

#[test]
fn url_scheme_is_checked() {
    let e =
        err(json!({"name": "w", "transport": {"type": "websocket", "url": "https://h/x?key=abc"}}));
    assert_eq!(e.kind, ConfigErrorKind::InvalidUrl);
    assert_eq!(e.to_string(), "server `w`: transport.url: websocket url must start with ws:// or wss://, found `https://h/x?<redacted>`");
    let e = ServerConfig::sse("s", "ftp://h").validate().unwrap_err();
    assert_eq!(
        e.to_string(),
        "server `s`: transport.url: sse url must start with http:// or https://, found `ftp://h`"
    );
}

#[test]
fn empty_name_is_an_error() {
    let e = err(json!({"name": "", "transport": {"type": "stdio", "command": "x"}}));
    assert_eq!(e.to_string(), "name: server name is empty");
    assert_eq!(
        ServerConfig::stdio("", "x").validate().unwrap_err().kind,
        ConfigErrorKind::MissingField
    );
}

#[test]
fn wrong_json_types_name_the_path() {
    let e = err(
        json!({"name": "fs", "transport": {"type": "stdio", "command": "x", "args": ["a", 3]}}),
    );
    assert_eq!(e.kind, ConfigErrorKind::WrongType);
    assert_eq!(
        e.to_string(),
        "server `fs`: transport.args[1]: expected a string, found a number"
    );
    let e =
        err(json!({"name": "fs", "transport": {"type": "stdio", "command": "x", "args": "a b"}}));
    assert_eq!(
        e.to_string(),
        "server `fs`: transport.args: expected a list of strings, found a string"
    );
    let e =
        err(json!({"name": "fs", "transport": {"type": "stdio", "command": "x"}, "timeout": "30"}));
    assert_eq!(
        e.to_string(),
        "server `fs`: timeout: expected a number of seconds, found a string"
    );
    let e = err(
        json!({"name": "fs", "transport": {"type": "stdio", "command": "x", "env": {"PORT": 80}}}),
    );
    assert_eq!(
        e.to_string(),
        "server `fs`: transport.env.PORT: expected a string, found a number"
    );
    assert_eq!(
        (e.found.as_deref(), e.expected.as_deref()),
        (Some("a number"), Some("a string"))
    );
}

#[test]
fn command_and_url_together_is_an_error() {
    let e = err(
        json!({"name": "x", "transport": {"type": "stdio", "command": "x", "url": "http://h"}}),
    );
    assert_eq!(e.kind, ConfigErrorKind::CommandAndUrl);
}

#[test]
fn new_validates() {
    assert!(ServerConfig::new(
        "a",
        TransportConfig::Sse {
            url: "http://h".into()
        }
    )
    .is_ok());
    assert!(ServerConfig::new("a", TransportConfig::Sse { url: "".into() }).is_err());
}

#[test]
fn to_json_has_all_four_keys() {
    assert_eq!(
        ServerConfig::sse("y", "http://x").to_json(),
        json!({"name": "y", "description": "", "transport": {"type": "sse", "url": "http://x"}, "timeout": 15.0})
    );
}

#[test]
fn round_trips_every_transport() {
    let configs = [
        ServerConfig::stdio("a", "cmd")
            .args(["x"])
            .env("K", "v")
            .cwd("/tmp")
            .inherit_env(true)
            .max_message_bytes(1024)
            .with_description("d")
            .timeout_secs(2000.0),
        ServerConfig::http("b", "https://h/mcp")
            .header("X-Key", "k")
            .bearer_token("t")
            .session_id("s1")
            .auth_provider(AuthProvider::new(|| Ok("Bearer z".into()))),
        ServerConfig::sse("c", "http://h/sse").with_timeout(Duration::from_secs(1500)),
        ServerConfig::websocket("d", "wss://h"),
    ];
    for c in configs {
        let mut back = ServerConfig::from_value(&c.to_json()).unwrap();
        if let TransportConfig::StreamableHttp(h) = &c.transport() {
            if let Some(a) = &h.auth {
                back = back.auth_provider(a.clone());
            }
        }
        assert_eq!(back, c, "{}", c.to_json());
    }
}

#[test]
fn debug_redacts_env_and_header_values() {
    let s = ServerConfig::stdio("a", "cmd").env("TOKEN", "sekrit-1");
    let d = format!("{s:?}");
    assert!(d.contains("TOKEN") && !d.contains("sekrit-1"), "{d}");
    let h = ServerConfig::http("b", "https://h/mcp?api_key=sekrit-2")
        .header("X-Key", "sekrit-3")
        .bearer_token("sekrit-4");
    let d = format!("{h:?}");
    assert!(d.contains("X-Key") && d.contains("Authorization"), "{d}");
    for s in ["sekrit-2", "sekrit-3", "sekrit-4"] {
        assert!(!d.contains(s), "{d}");
    }
    // to_json is for saving, so it keeps the values.
    assert_eq!(h.to_json()["transport"]["headers"]["X-Key"], "sekrit-3");
}

#[test]
fn bearer_token_replaces_authorization() {
    let s = ServerConfig::http("b", "https://h")
        .header("authorization", "old")
        .bearer_token("new");
    let TransportConfig::StreamableHttp(h) = s.transport() else {
        panic!()
    };
    assert_eq!(
        h.headers,
        vec![("Authorization".to_string(), "Bearer new".to_string())]
    );
}
