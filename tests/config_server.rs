//! `ServerConfig`: builders, validation, `from_value` errors, `to_json` round trips and redaction.

use std::time::Duration;

use mcp_blocking::config::{
    AuthProvider, ConfigErrorKind, HttpConfig, SseConfig, TransportConfig, WebSocketConfig,
    DEFAULT_TIMEOUT,
};
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
            .with_args(["--root", "/data"])
            .with_env("DEBUG", "true")
            .with_description("Read, write, and search local files")
            .with_timeout_secs(30.0)
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
    assert!(ServerConfig::new("a", TransportConfig::Sse(SseConfig::new("http://h"))).is_ok());
    assert!(ServerConfig::new("a", TransportConfig::Sse(SseConfig::new(""))).is_err());
    let mut ws = WebSocketConfig::new("ws://h");
    ws.headers.push(("Bad Name".into(), "v".into()));
    let e = ServerConfig::new("w", TransportConfig::WebSocket(ws)).unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::InvalidValue);
    let mut http = HttpConfig::new("https://h");
    http.session_id = Some("s-1".into());
    assert!(ServerConfig::new("h", TransportConfig::StreamableHttp(http)).is_ok());
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
            .with_args(["x"])
            .with_env("K", "v")
            .with_cwd("/tmp")
            .with_inherit_env(true)
            .with_max_message_bytes(1024)
            .with_description("d")
            .with_timeout_secs(2000.0),
        ServerConfig::http("b", "https://h/mcp")
            .with_header("X-Key", "k")
            .with_bearer_token("t")
            .with_session_id("s1")
            .with_auth_provider(AuthProvider::new(|| Ok("Bearer z".into()))),
        ServerConfig::sse("c", "http://h/sse").with_timeout(Duration::from_secs(1500)),
        ServerConfig::sse("c2", "http://h/sse")
            .with_header("X-Key", "k")
            .with_bearer_token("t"),
        ServerConfig::websocket("d", "wss://h"),
        ServerConfig::websocket("d2", "wss://h")
            .with_header("X-Key", "k")
            .with_auth_provider(AuthProvider::new(|| Ok("Bearer z".into()))),
    ];
    for c in configs {
        let mut back = ServerConfig::from_value(&c.to_json()).unwrap();
        let auth = match c.transport() {
            TransportConfig::StreamableHttp(h) => h.auth.clone(),
            TransportConfig::Sse(s) => s.auth.clone(),
            TransportConfig::WebSocket(w) => w.auth.clone(),
            _ => None,
        };
        if let Some(a) = auth {
            back = back.with_auth_provider(a);
        }
        assert_eq!(back, c, "{}", c.to_json());
    }
}

#[test]
fn headers_bearer_and_auth_apply_to_every_remote_transport() {
    let auth = AuthProvider::new(|| Ok("Bearer z".into()));
    let want = vec![
        ("X-Key".to_string(), "k".to_string()),
        ("Authorization".to_string(), "Bearer t".to_string()),
    ];
    for s in [
        ServerConfig::http("h", "https://h/mcp"),
        ServerConfig::sse("s", "https://h/sse"),
        ServerConfig::websocket("w", "wss://h/ws"),
    ] {
        let s = s
            .with_header("X-Key", "k")
            .with_header("authorization", "old")
            .with_bearer_token("t")
            .with_auth_provider(auth.clone());
        s.validate().expect("valid");
        let (headers, has_auth) = match s.transport() {
            TransportConfig::StreamableHttp(h) => (&h.headers, h.auth.is_some()),
            TransportConfig::Sse(c) => (&c.headers, c.auth.is_some()),
            TransportConfig::WebSocket(c) => (&c.headers, c.auth.is_some()),
            other => panic!("{other:?}"),
        };
        assert_eq!(headers, &want, "{}", s.transport_type());
        assert!(has_auth, "{}", s.transport_type());
    }
}

#[test]
fn a_setter_the_transport_cannot_take_fails_validation() {
    let auth = AuthProvider::new(|| Ok("Bearer z".into()));
    let cases = [
        (
            ServerConfig::http("fs", "https://h").with_args(["x"]),
            "transport.args",
            "`args` applies only to stdio servers; `fs` is a streamable-http server",
        ),
        (
            ServerConfig::sse("fs", "https://h").with_env("K", "v"),
            "transport.env",
            "`env` applies only to stdio servers; `fs` is an sse server",
        ),
        (
            ServerConfig::websocket("fs", "wss://h").with_cwd("/tmp"),
            "transport.cwd",
            "`cwd` applies only to stdio servers; `fs` is a websocket server",
        ),
        (
            ServerConfig::http("fs", "https://h").with_inherit_env(true),
            "transport.inherit_env",
            "`inherit_env` applies only to stdio servers; `fs` is a streamable-http server",
        ),
        (
            ServerConfig::stdio("fs", "x").with_header("K", "v"),
            "transport.headers",
            "`header` applies only to remote (streamable-http, sse and websocket) servers; \
             `fs` is a stdio server",
        ),
        (
            ServerConfig::stdio("fs", "x").with_bearer_token("sekrit"),
            "transport.headers",
            "`bearer_token` applies only to remote (streamable-http, sse and websocket) servers; \
             `fs` is a stdio server",
        ),
        (
            ServerConfig::stdio("fs", "x").with_auth_provider(auth),
            "transport.auth",
            "`auth_provider` applies only to remote (streamable-http, sse and websocket) \
             servers; `fs` is a stdio server",
        ),
        (
            ServerConfig::sse("fs", "https://h").with_session_id("s"),
            "transport.session_id",
            "`session_id` applies only to streamable-http servers; `fs` is an sse server",
        ),
        (
            ServerConfig::websocket("fs", "wss://h").with_session_id("s"),
            "transport.session_id",
            "`session_id` applies only to streamable-http servers; `fs` is a websocket server",
        ),
    ];
    for (config, path, message) in cases {
        let e = config.validate().unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::NotApplicable, "{e}");
        assert_eq!(e.server.as_deref(), Some("fs"));
        assert_eq!(e.path, path);
        assert_eq!(e.message, message);
        assert!(!e.to_string().contains("sekrit"), "{e}");
        assert!(format!("{config:?}").contains("misapplied"), "{config:?}");
    }
}

#[test]
fn the_first_misapplied_setter_is_reported() {
    let e = ServerConfig::http("api", "https://h")
        .with_cwd("/tmp")
        .with_args(["x"])
        .validate()
        .unwrap_err();
    assert_eq!(e.path, "transport.cwd");
}

#[test]
fn root_certificates_on_a_stdio_server_are_refused_at_once() {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("certificate");
    let e = ServerConfig::stdio("fs", "x")
        .with_tls_root_certificates_pem(key.cert.pem())
        .unwrap_err();
    assert_eq!(e.kind, ConfigErrorKind::NotApplicable);
    assert_eq!(
        e.to_string(),
        "server `fs`: transport.root_certificates: \
        `tls_root_certificates_pem` applies only to remote (streamable-http, sse and websocket) \
        servers; `fs` is a stdio server"
    );
}

#[test]
fn a_header_that_is_not_http_syntax_is_an_error_that_hides_the_value() {
    for s in [
        ServerConfig::http("h", "https://h"),
        ServerConfig::sse("h", "https://h"),
        ServerConfig::websocket("h", "wss://h"),
    ] {
        let e = s
            .clone()
            .with_header("X-Key", "sekrit\r\nX-Evil: 1")
            .validate()
            .unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::InvalidValue, "{e}");
        assert_eq!(e.path, "transport.headers");
        assert!(e.to_string().contains("`X-Key`"), "{e}");
        assert!(!e.to_string().contains("sekrit"), "{e}");
        let e = s.with_header("X Key", "v").validate().unwrap_err();
        assert_eq!(e.kind, ConfigErrorKind::InvalidValue, "{e}");
        assert!(e.to_string().contains("\"X Key\""), "{e}");
    }
}

#[test]
fn sse_and_websocket_entries_take_headers_but_not_a_session() {
    for (kind, url) in [("sse", "https://h/sse"), ("websocket", "wss://h")] {
        let s = ServerConfig::from_value(&json!({"name": "r",
            "transport": {"type": kind, "url": url, "headers": {"X-Key": "k"}}}))
        .unwrap();
        assert_eq!(s, ServerConfig::from_value(&s.to_json()).unwrap());
        assert_eq!(s.to_json()["transport"]["headers"]["X-Key"], "k");
        let e = err(json!({"name": "r",
            "transport": {"type": kind, "url": url, "session_id": "s"}}));
        assert_eq!(e.kind, ConfigErrorKind::NotApplicable);
        assert_eq!(e.path, "transport.session_id");
    }
}

#[test]
fn debug_of_sse_and_websocket_settings_redacts() {
    for s in [
        ServerConfig::sse("s", "https://user:sekrit-1@h/sse?key=sekrit-2"),
        ServerConfig::websocket("w", "wss://user:sekrit-1@h/ws?key=sekrit-2"),
    ] {
        let s = s
            .with_header("X-Key", "sekrit-3")
            .with_bearer_token("sekrit-4")
            .with_auth_provider(AuthProvider::new(|| Ok("Bearer sekrit-5".into())));
        let d = format!("{s:?}");
        assert!(d.contains("X-Key") && d.contains("Authorization"), "{d}");
        assert!(d.contains("user:<redacted>@h"), "{d}");
        for secret in ["sekrit-1", "sekrit-2", "sekrit-3", "sekrit-4", "sekrit-5"] {
            assert!(!d.contains(secret), "{d}");
        }
    }
}

#[test]
fn debug_redacts_env_and_header_values() {
    let s = ServerConfig::stdio("a", "cmd").with_env("TOKEN", "sekrit-1");
    let d = format!("{s:?}");
    assert!(d.contains("TOKEN") && !d.contains("sekrit-1"), "{d}");
    let h = ServerConfig::http("b", "https://h/mcp?api_key=sekrit-2")
        .with_header("X-Key", "sekrit-3")
        .with_bearer_token("sekrit-4");
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
        .with_header("authorization", "old")
        .with_bearer_token("new");
    let TransportConfig::StreamableHttp(h) = s.transport() else {
        panic!()
    };
    assert_eq!(
        h.headers,
        vec![("Authorization".to_string(), "Bearer new".to_string())]
    );
}

#[test]
fn the_message_cap_applies_to_every_transport() {
    for s in [
        ServerConfig::stdio("fs", "x"),
        ServerConfig::http("fs", "https://h"),
        ServerConfig::sse("fs", "https://h"),
        ServerConfig::websocket("fs", "wss://h"),
    ] {
        let s = s.with_max_message_bytes(10);
        assert!(s.validate().is_ok(), "{s:?}");
        assert_eq!(s.limits().max_message_bytes, 10);
    }
}
