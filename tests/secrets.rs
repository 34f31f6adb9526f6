//! No secret of a server reaches an error's `Display` or `Debug` (its sources' included), the
//! `Debug` of a config or client, or a log line at any level: URL passwords and query values,
//! header and env values, and values that came from `${VAR}`, through every way connecting can
//! fail and through what a connected server says.
//!
//! This binary installs a logger that captures every level of every target, once, for all its
//! tests; each test checks the whole capture (so a leak in one test fails the others too).

mod common;
mod support_remote;

use std::collections::BTreeMap;
use std::net::TcpListener;

use common::capture::{capture_logs, logs};
use mcp_blocking::config::LoadReport;
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{Client, ConfigLoader, Error, ServerConfig};
use serde_json::json;
use support_remote::HttpServer;

/// The value of `${TOKEN}`.
const TOKEN: &str = "tok-S3CRET-7f3a9c";
/// A query value written in the file as it is.
const QUERY: &str = "qv-LITERAL-42b1";
/// A header value written in the file as it is.
const HEADER: &str = "hv-LITERAL-88c2";
/// An env value written in the file as it is.
const ENV: &str = "ev-LITERAL-19d4";
const ALL: [&str; 4] = [TOKEN, QUERY, HEADER, ENV];

#[track_caller]
fn assert_hidden(what: &str, text: &str) {
    for secret in ALL {
        assert!(
            !text.contains(secret),
            "{what} shows the secret `{secret}`:\n{text}"
        );
    }
}

/// Checks `Display` and `Debug` of `e` and of every source below it.
#[track_caller]
fn assert_error_hidden(e: &Error) {
    assert_hidden("Display", &e.to_string());
    assert_hidden("Debug", &format!("{e:?}"));
    let mut next = std::error::Error::source(e);
    while let Some(cause) = next {
        assert_hidden("a source's Display", &cause.to_string());
        assert_hidden("a source's Debug", &format!("{cause:?}"));
        next = cause.source();
    }
}

/// Checks every log line of this crate's targets, at every level. Other crates' lines are
/// their own: ureq, for one, shows a request's path and query at trace level, by its design.
#[track_caller]
fn assert_logs_hidden() {
    for line in logs() {
        if line
            .split(' ')
            .nth(1)
            .is_some_and(|t| t.starts_with("mcp_blocking"))
        {
            assert_hidden("a log line", &line);
        }
    }
}

/// A loopback port nothing listens on.
fn refused_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// A URL to `port` with the token as password and query value, and a plain query value.
fn url(scheme: &str, port: u16) -> String {
    format!("{scheme}://ada:${{TOKEN}}@127.0.0.1:{port}/mcp?api_key=${{TOKEN}}&plain={QUERY}")
}

/// Loads a host config file whose servers carry the secrets.
fn load(servers: serde_json::Value) -> LoadReport {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("mcpb-secrets-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(".mcp.json");
    let doc = json!({ "mcpServers": servers });
    std::fs::write(&file, doc.to_string()).expect("write config");
    let report = ConfigLoader::new()
        .with_env(BTreeMap::from([("TOKEN".to_owned(), TOKEN.to_owned())]))
        .strict(true)
        .load(&file)
        .expect("load");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report
}

fn remote(kind: &str, url: String) -> serde_json::Value {
    json!({
        "type": kind,
        "url": url,
        "headers": {"Authorization": "Bearer ${TOKEN}", "X-Literal": HEADER},
        "timeout": 5
    })
}

fn fixture(args: &[&str]) -> serde_json::Value {
    json!({
        "command": common::fixture::path(),
        "args": args,
        "env": {"SECRET_ENV": ENV, "TOKEN_ENV": "${TOKEN}"},
        "timeout": 5
    })
}

/// Connects `name` of `report`, which must fail; checks the config, the client and the error.
#[track_caller]
fn failed_connect(report: &LoadReport, name: &str) -> Error {
    let config = report.server(name).expect("the server").clone();
    assert_hidden("Debug of the config", &format!("{config:?}"));
    let client = Client::new(config);
    assert_hidden("Debug of the client", &format!("{client:?}"));
    let err = client.open().expect_err("connecting must fail");
    assert_error_hidden(&err);
    assert_eq!(err.server(), Some(name), "{err}");
    if let Error::Connect(c) = &err {
        assert_hidden("the target", c.target());
        assert_hidden("the stderr tail", c.stderr_tail());
    }
    err
}

fn connect_kind(err: &Error) -> Option<ConnectErrorKind> {
    match err {
        Error::Connect(c) => Some(c.kind()),
        _ => None,
    }
}

#[test]
fn a_refused_port_on_every_remote_transport() {
    capture_logs();
    let port = refused_port();
    let report = load(json!({
        "http": remote("http", url("http", port)),
        "sse": remote("sse", url("http", port)),
        "ws": remote("ws", url("ws", port)),
    }));
    for name in ["http", "sse", "ws"] {
        let err = failed_connect(&report, name);
        assert_eq!(
            connect_kind(&err),
            Some(ConnectErrorKind::Unreachable),
            "{err}"
        );
        assert!(err.to_string().contains("127.0.0.1"), "{err}");
    }
    assert_logs_hidden();
}

#[test]
fn an_http_server_that_echoes_the_request_in_its_refusal() {
    capture_logs();
    let server = HttpServer::start(|req, conn| {
        let echo = format!("{} {}\n{:?}", req.method, req.path, req.headers);
        conn.respond(401, &[("Content-Type", "text/plain")], echo.as_bytes());
    });
    let report = load(json!({ "echoes": remote("http", url("http", server.port())) }));
    let err = failed_connect(&report, "echoes");
    assert_eq!(connect_kind(&err), Some(ConnectErrorKind::Auth), "{err}");
    // The secrets did reach the server, and its answer quoting them is in the error, hidden.
    let seen = server.requests();
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
    assert!(err.to_string().contains("<redacted>"), "{err}");
    assert_logs_hidden();
}

#[test]
fn a_server_that_prints_its_arguments_and_exits_at_start() {
    capture_logs();
    // An unknown flag: the fixture prints it (`unknown argument: --token=...`) and exits 64.
    let report = load(json!({ "crashes": fixture(&["--token=${TOKEN}"]) }));
    let err = failed_connect(&report, "crashes");
    assert_eq!(connect_kind(&err), Some(ConnectErrorKind::Closed), "{err}");
    let Error::Connect(c) = &err else {
        unreachable!()
    };
    assert!(
        c.stderr_tail()
            .contains("unknown argument: --token=<redacted>"),
        "{}",
        c.stderr_tail()
    );
    assert!(c.target().contains("--token=<redacted>"), "{}", c.target());
    // The stderr line was logged, hidden.
    assert!(
        logs()
            .iter()
            .any(|l| l.contains("[crashes] fixture: unknown argument: --token=<redacted>")),
        "{:#?}",
        logs()
    );
    assert_logs_hidden();
}

#[test]
fn a_server_that_never_answers_the_handshake() {
    capture_logs();
    let mut silent = fixture(&["--never-answer", "--protocol-version", "${TOKEN}"]);
    silent["timeout"] = json!(1);
    let report = load(json!({ "silent": silent }));
    let err = failed_connect(&report, "silent");
    assert!(err.is_timeout(), "{err}");
    assert!(err.to_string().contains("<redacted>"), "{err}");
    assert_logs_hidden();
}

#[test]
fn a_command_that_came_from_a_variable_and_does_not_exist() {
    capture_logs();
    let mut missing = fixture(&[]);
    missing["command"] = json!("/nonexistent/${TOKEN}/mcp-server");
    let report = load(json!({ "missing": missing }));
    let err = failed_connect(&report, "missing");
    assert!(matches!(err, Error::Spawn { .. }), "{err}");
    assert!(
        err.to_string().contains("/nonexistent/<redacted>/"),
        "{err}"
    );
    assert_logs_hidden();
}

#[test]
fn what_a_connected_server_says_is_hidden_too() {
    capture_logs();
    let report = load(json!({ "talks": fixture(&[]) }));
    let config: ServerConfig = report.server("talks").expect("server").clone();
    let client = Client::connect(config).expect("connect");
    // A JSON-RPC error quoting a secret (the fixture names the unknown tool).
    let err = client
        .call_tool(TOKEN, json!({}))
        .expect_err("unknown tool");
    assert!(matches!(err, Error::Rpc { .. }), "{err}");
    assert_error_hidden(&err);
    // A log notification and stderr lines quoting secrets.
    client
        .call_tool(
            "log",
            json!({"level": "error", "message": format!("key {ENV}")}),
        )
        .expect("log");
    client
        .call_tool(
            "log",
            json!({"level": "debug", "message": {"token": TOKEN}}),
        )
        .expect("log");
    // The log notifications are handled on their own thread: wait for the first to be logged
    // before the server goes away.
    let logged = |l: &String| l.contains("[talks] fixture: key <redacted>");
    common::settle::settled(logs, |all| all.iter().any(logged));
    // The process dies, leaving a stderr tail; the error is hidden.
    let err = client
        .call_tool("crash", json!({}))
        .expect_err("the server exits");
    assert!(matches!(err, Error::Closed { .. }), "{err}");
    assert_error_hidden(&err);
    assert_hidden("the stderr tail", &client.stderr_tail());
    assert!(logs().iter().any(logged), "{:#?}", logs());
    assert_logs_hidden();
}

/// A piece of `secret` (six characters or more) that `text` shows, if any.
fn piece_of<'a>(text: &str, secret: &'a str) -> Option<&'a str> {
    (0..=secret.len() - 6)
        .map(|i| &secret[i..i + 6])
        .find(|piece| text.contains(piece))
}

#[test]
fn a_secret_quoted_past_the_echo_cut_is_hidden_not_cut_in_half() {
    capture_logs();
    let report = load(json!({ "cut": fixture(&[]) }));
    let config: ServerConfig = report.server("cut").expect("server").clone();
    let client = Client::connect(config).expect("connect");
    // Text is echoed up to 1,024 bytes (`max_echo_bytes`): each secret of this server starts 10
    // bytes before.
    let secrets = [TOKEN, ENV];
    for secret in secrets {
        // The fixture's error is `Unknown tool: NAME` (14 bytes before the name).
        let name = format!("{}{secret}", "p".repeat(1_000));
        let err = client
            .call_tool(&name, json!({}))
            .expect_err("unknown tool");
        for text in [err.to_string(), format!("{err:?}")] {
            assert!(text.contains("bytes cut"), "the message was cut: {text}");
            assert_eq!(piece_of(&text, secret), None, "{text}");
        }
        // A log message, cut where the log line quotes it.
        let quoted = format!("{}{secret}", "p".repeat(1_014));
        client
            .call_tool("log", json!({"level": "error", "message": quoted}))
            .expect("log");
    }
    let logged = |all: &Vec<String>| {
        all.iter()
            .filter(|l| l.contains("[cut] fixture: ppp"))
            .count()
            == secrets.len()
    };
    let all = common::settle::settled(logs, logged);
    assert!(logged(&all), "{all:#?}");
    // This crate's lines (see `assert_logs_hidden`).
    let own = |l: &String| {
        l.split(' ')
            .nth(1)
            .is_some_and(|t| t.starts_with("mcp_blocking"))
    };
    for line in all.iter().filter(|l| own(l)) {
        for secret in secrets {
            assert_eq!(piece_of(line, secret), None, "{line}");
        }
    }
}

#[test]
fn a_config_error_about_a_url_hides_what_came_from_a_variable() {
    capture_logs();
    let doc = json!({"mcpServers": {
        "bad": {"type": "http", "url": "ftp://mcp.example.com/${TOKEN}/mcp?key=${TOKEN}"},
    }});
    let report = ConfigLoader::new()
        .with_env(BTreeMap::from([("TOKEN".to_owned(), TOKEN.to_owned())]))
        .load_str(&doc.to_string())
        .expect("a report");
    let [e] = report.errors.as_slice() else {
        panic!("{report:?}")
    };
    assert_hidden("a config error", &e.to_string());
    assert_hidden("a config error's Debug", &format!("{e:?}"));
    assert!(
        e.to_string()
            .contains("ftp://mcp.example.com/<redacted>/mcp?<redacted>"),
        "{e}"
    );
    assert_logs_hidden();
}
