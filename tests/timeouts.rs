//! Timeouts mean what they say and none can panic: exact in code, the host-config rule in files,
//! and every out-of-range value (NaN, infinities, negatives, zero, too long) at every entry point
//! gives a typed error naming the key and the server.

use std::time::Duration;

use mcp_blocking::config::{ConfigError, ConfigErrorKind, DEFAULT_TIMEOUT, MAX_TIMEOUT};
use mcp_blocking::error::InvalidArgumentKind;
use mcp_blocking::hub::Degradation;
use mcp_blocking::{CallOptions, Client, ConfigLoader, Error, Hub, ServerConfig};
use serde_json::json;

mod common;

use common::mcpb::mcpb;
use common::tempdir::TempDir;

/// Seconds that are not a valid timeout anywhere.
const BAD_SECS: [f64; 7] = [
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    -5.0,
    -0.0,
    0.0,
    1e300,
];

/// Durations that are not a valid timeout anywhere.
fn bad_durations() -> [Duration; 3] {
    [
        Duration::ZERO,
        Duration::MAX,
        MAX_TIMEOUT + Duration::from_nanos(1),
    ]
}

/// `timeout` values of a host config file (as written in JSON) that are out of range.
const BAD_JSON_TIMEOUTS: [&str; 8] = [
    "0",
    "-5",
    "-0.5",
    "1e300",
    "86400001",
    "\"NaN\"",
    "\"Infinity\"",
    "\"-inf\"",
];

/// `timeout` values of a host config file (as written in YAML) that are out of range.
const BAD_YAML_TIMEOUTS: [&str; 9] = [
    "0", "-5", "-0.5", "1e300", "1e400", ".nan", ".inf", "-.inf", "86400001",
];

/// Asserts a timeout error: kind, key, server (in the field and in the message), the range.
#[track_caller]
fn assert_timeout_error(e: &ConfigError, path: &str, server: &str) {
    assert_eq!(e.kind, ConfigErrorKind::InvalidValue, "{e}");
    assert_eq!(e.path, path, "{e}");
    assert_eq!(e.server.as_deref(), Some(server), "{e}");
    let text = e.to_string();
    assert!(text.contains(&format!("server `{server}`")), "{text}");
    assert!(text.contains("more than 0"), "{text}");
    assert!(text.contains("24 h"), "{text}");
    assert!(text.contains("found"), "{text}");
}

fn stdio(name: &str) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path())
}

/// The config error `Client::connect` returns for `config`.
#[track_caller]
fn connect_config_error(config: ServerConfig) -> ConfigError {
    match Client::connect(config) {
        Err(Error::Config(e)) => *e,
        Err(other) => panic!("expected a config error, got {other}"),
        Ok(_) => panic!("connected with an invalid timeout"),
    }
}

/// A fresh directory under the system temp dir, removed on drop.
fn json_file(timeout: &str) -> String {
    format!(r#"{{"mcpServers": {{"srv": {{"command": "mcp-x", "timeout": {timeout}}}}}}}"#)
}

fn yaml_file(timeout: &str) -> String {
    format!("mcpServers:\n  srv:\n    command: mcp-x\n    timeout: {timeout}\n")
}

/// The one server a file's text loads into.
#[track_caller]
fn loaded(text: &str) -> ServerConfig {
    let report = ConfigLoader::new().load_str(text).expect("load");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    report.servers.into_iter().next().expect("one server")
}

/// The one error a file's text reports.
#[track_caller]
fn load_error(text: &str) -> ConfigError {
    let report = ConfigLoader::new().load_str(text).expect("load");
    assert!(
        report.servers.is_empty(),
        "{text} loaded {:?}",
        report.servers
    );
    report.errors.into_iter().next().expect("one error")
}

// ---- in code the timeout is exact ------------------------------------------------------------

#[test]
fn timeout_secs_is_exact_seconds() {
    let t = |secs: f64| stdio("s").with_timeout_secs(secs).timeout();
    assert_eq!(t(1800.0), Duration::from_secs(30 * 60));
    assert_eq!(t(3600.0), Duration::from_secs(3600));
    assert_eq!(t(1000.0), Duration::from_secs(1000));
    assert_eq!(t(0.25), Duration::from_millis(250));
    assert_eq!(t(86_400.0), MAX_TIMEOUT);
}

#[test]
fn with_timeout_takes_the_duration_as_it_is() {
    let s = stdio("s").with_timeout(Duration::from_millis(250));
    assert_eq!(s.timeout(), Duration::from_millis(250));
    assert!(s.validate().is_ok());
    let s = stdio("s").with_timeout(MAX_TIMEOUT);
    assert_eq!(s.timeout(), MAX_TIMEOUT);
    assert!(s.validate().is_ok());
}

#[test]
fn a_sub_second_timeout_fires_on_time() {
    let started = std::time::Instant::now();
    let err = Client::connect(
        stdio("mute")
            .with_args(["--never-answer"])
            .with_timeout_secs(0.25),
    )
    .expect_err("the server never answers");
    let took = started.elapsed();
    // Not earlier than asked. (How much later depends on the machine's load, so no upper bound
    // is asserted here; that the value is kept exactly is checked on `timeout()` above.)
    assert!(took >= Duration::from_millis(240), "{took:?}");
    assert!(err.is_timeout(), "{err:?}");
    assert!(err.to_string().contains("mute"), "{err}");
}

// ---- in files the host-config rule applies ---------------------------------------------------

#[test]
fn a_file_timeout_below_one_second_is_one_second() {
    assert_eq!(loaded(&json_file("0.5")).timeout(), Duration::from_secs(1));
    assert_eq!(loaded(&yaml_file("0.5")).timeout(), Duration::from_secs(1));
}

#[test]
fn a_file_timeout_of_1000_or_more_is_milliseconds() {
    assert_eq!(loaded(&json_file("5000")).timeout(), Duration::from_secs(5));
    assert_eq!(loaded(&yaml_file("5000")).timeout(), Duration::from_secs(5));
    assert_eq!(
        loaded(&json_file("1800000")).timeout(),
        Duration::from_secs(1800)
    );
    assert_eq!(loaded(&json_file("86400000")).timeout(), MAX_TIMEOUT);
}

#[test]
fn a_file_timeout_under_1000_is_seconds() {
    assert_eq!(loaded(&json_file("30")).timeout(), Duration::from_secs(30));
    assert_eq!(
        loaded(&yaml_file("999")).timeout(),
        Duration::from_secs(999)
    );
}

#[test]
fn a_file_without_timeout_gets_the_default() {
    assert_eq!(loaded(&json_file("null")).timeout(), DEFAULT_TIMEOUT);
    let text = r#"{"mcpServers": {"srv": {"command": "mcp-x"}}}"#;
    assert_eq!(loaded(text).timeout(), DEFAULT_TIMEOUT);
}

#[test]
fn from_value_follows_the_host_rule() {
    let t = |v: serde_json::Value| {
        ServerConfig::from_value(&json!({
            "name": "v", "transport": {"type": "stdio", "command": "x"}, "timeout": v
        }))
        .expect("valid")
        .timeout()
    };
    assert_eq!(t(json!(0.5)), Duration::from_secs(1));
    assert_eq!(t(json!(5000)), Duration::from_secs(5));
    assert_eq!(t(json!(30)), Duration::from_secs(30));
}

// ---- out of range in code: the error comes at connect ----------------------------------------

#[test]
fn timeout_secs_out_of_range_fails_at_connect() {
    for secs in BAD_SECS {
        let config = stdio("bad-secs").with_timeout_secs(secs);
        assert_eq!(config.timeout(), DEFAULT_TIMEOUT, "{secs}");
        let e = connect_config_error(config);
        assert_timeout_error(&e, "timeout", "bad-secs");
    }
}

#[test]
fn timeout_secs_error_shows_the_value_found() {
    let e = stdio("shown")
        .with_timeout_secs(1e300)
        .validate()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "server `shown`: timeout: the timeout must be more than 0 s and at most 86400 s (24 h), \
         found 1e300 s"
    );
    let e = stdio("shown")
        .with_timeout_secs(f64::NAN)
        .validate()
        .unwrap_err();
    assert_eq!(e.found.as_deref(), Some("NaN s"));
}

#[test]
fn with_timeout_out_of_range_fails_at_connect() {
    for d in bad_durations() {
        let config = stdio("bad-duration").with_timeout(d);
        assert_eq!(config.timeout(), DEFAULT_TIMEOUT, "{d:?}");
        let e = connect_config_error(config);
        assert_timeout_error(&e, "timeout", "bad-duration");
    }
}

#[test]
fn a_bad_timeout_keeps_the_last_valid_one() {
    let config = stdio("s")
        .with_timeout_secs(30.0)
        .with_timeout_secs(f64::NAN);
    assert_eq!(config.timeout(), Duration::from_secs(30));
    assert!(config.validate().is_err());
}

#[test]
fn a_later_valid_timeout_replaces_a_bad_one() {
    let config = stdio("s")
        .with_timeout(Duration::MAX)
        .with_timeout_secs(2.0);
    assert_eq!(config.timeout(), Duration::from_secs(2));
    assert!(config.validate().is_ok());
}

// ---- out of range in files: the error comes at load ------------------------------------------

#[test]
fn json_file_timeouts_out_of_range_are_invalid_values() {
    for t in BAD_JSON_TIMEOUTS {
        let e = load_error(&json_file(t));
        assert_timeout_error(&e, "mcpServers.srv.timeout", "srv");
    }
}

#[test]
fn yaml_file_timeouts_out_of_range_are_invalid_values() {
    for t in BAD_YAML_TIMEOUTS {
        let e = load_error(&yaml_file(t));
        assert_timeout_error(&e, "mcpServers.srv.timeout", "srv");
    }
}

#[test]
fn a_file_timeout_error_shows_the_value_as_written() {
    let e = load_error(&json_file("-5"));
    assert_eq!(e.found.as_deref(), Some("-5"));
    let e = load_error(&yaml_file(".nan"));
    assert_eq!(e.found.as_deref(), Some("`.nan`"));
    let e = load_error(&json_file("1e300"));
    assert!(e.to_string().ends_with("found 1e300"), "{e}");
}

#[test]
fn a_file_timeout_error_names_the_file() {
    let dir = TempDir::new("file");
    for (name, text) in [
        ("bad.json", json_file("0")),
        ("bad.yaml", yaml_file(".inf")),
    ] {
        let path = dir.file(name, &text);
        let e = ServerConfig::load_all(&path).expect_err("strict load");
        assert_timeout_error(&e, "mcpServers.srv.timeout", "srv");
        assert_eq!(e.file.as_deref(), Some(path.as_path()));
        let report = ConfigLoader::new().load(&path).expect("lenient load");
        assert_timeout_error(&report.errors[0], "mcpServers.srv.timeout", "srv");
    }
}

#[test]
fn a_string_timeout_that_is_a_word_stays_a_type_error() {
    let e = load_error(&json_file("\"soon\""));
    assert_eq!(e.kind, ConfigErrorKind::WrongType, "{e}");
    assert_eq!(e.path, "mcpServers.srv.timeout");
}

#[test]
fn from_value_timeouts_out_of_range_are_invalid_values() {
    for t in [
        json!(0),
        json!(-5),
        json!(1e300),
        json!("NaN"),
        json!("inf"),
        json!("-inf"),
    ] {
        let e = ServerConfig::from_value(&json!({
            "name": "val", "transport": {"type": "stdio", "command": "x"}, "timeout": t
        }))
        .expect_err("out of range");
        assert_timeout_error(&e, "timeout", "val");
    }
}

// ---- per-call options: refused before anything is sent ---------------------------------------

/// Asserts the per-call error names the option and the server, and that the tool did not run.
#[track_caller]
fn assert_call_refused(client: &Client, opts: &CallOptions, option: &str) {
    let err = client
        .call_tool_with("add_tool", json!({"name": "never_added"}), opts)
        .expect_err("out-of-range option");
    match &err {
        Error::InvalidArgument {
            server,
            kind,
            detail,
            ..
        } => {
            assert_eq!(server, "calls");
            assert_eq!(*kind, InvalidArgumentKind::OutOfRange);
            assert!(
                detail.contains(&format!("CallOptions::{option} must be")),
                "{detail}"
            );
            assert!(detail.contains("24 h"), "{detail}");
        }
        other => panic!("expected InvalidArgument, got {other}"),
    }
    assert!(err.to_string().contains("server `calls`"), "{err}");
    let tools = client.list_tools().expect("the client still works");
    assert!(
        tools.iter().all(|t| t.name != "never_added"),
        "the refused call reached the server"
    );
}

#[test]
fn call_timeout_out_of_range_is_an_invalid_argument() {
    let client = Client::connect(stdio("calls").with_timeout_secs(10.0)).expect("connect");
    for d in bad_durations() {
        assert_call_refused(&client, &CallOptions::new().timeout(d), "timeout");
    }
}

#[test]
fn max_total_timeout_out_of_range_is_an_invalid_argument() {
    let client = Client::connect(stdio("calls").with_timeout_secs(10.0)).expect("connect");
    for d in bad_durations() {
        let opts = CallOptions::new()
            .on_progress(|_| {})
            .reset_timeout_on_progress(true)
            .max_total_timeout(d);
        assert_call_refused(&client, &opts, "max_total_timeout");
    }
}

#[test]
fn the_longest_valid_call_timeouts_are_accepted() {
    let client = Client::connect(stdio("calls").with_timeout_secs(10.0)).expect("connect");
    let opts = CallOptions::new()
        .timeout(MAX_TIMEOUT)
        .on_progress(|_| {})
        .reset_timeout_on_progress(true)
        .max_total_timeout(MAX_TIMEOUT);
    let r = client
        .call_tool_with("echo", json!({"text": "hi"}), &opts)
        .expect("a day is a valid timeout");
    assert_eq!(r.text(), "hi");
}

// ---- mcpb --timeout --------------------------------------------------------------------------

#[test]
fn mcpb_timeout_out_of_range_is_a_usage_error() {
    let line = format!("'{}'", common::fixture::path());
    for raw in [
        "NaN", "inf", "-inf", "-5", "0", "1e300", "1e21", "86401", "1e-12", "soon",
    ] {
        let arg = format!("--timeout={raw}");
        let o = mcpb(&["--stdio", &line, &arg, "ping"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{raw}: {err}");
        assert!(!err.contains("panicked"), "{raw}: {err}");
        assert!(
            err.contains(&format!(
                "--timeout must be a number of seconds more than 0 and at most 86400 (24 h), \
                 not `{raw}`"
            )),
            "{raw}: {err}"
        );
    }
}

#[test]
fn mcpb_timeout_is_exact_seconds() {
    let line = format!("'{}' --never-answer", common::fixture::path());
    let started = std::time::Instant::now();
    let o = mcpb(&["--stdio", &line, "--timeout", "0.1", "ping"]);
    let took = started.elapsed();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(took >= Duration::from_millis(90), "{took:?}");
}

#[test]
fn mcpb_config_file_timeout_out_of_range_is_a_config_error() {
    let dir = TempDir::new("mcpb");
    let path = dir.file("bad.json", &json_file("-5"));
    let file = path.to_str().expect("utf-8 path");
    let o = mcpb(&["--config", file, "--server", "srv", "ping"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("server `srv`"), "{err}");
    assert!(err.contains("mcpServers.srv.timeout"), "{err}");
    assert!(err.contains("found -5"), "{err}");
}

// ---- the Hub's delays ------------------------------------------------------------------------

#[test]
fn hub_degradation_delays_out_of_range_are_refused_at_build() {
    for (policy, key) in [
        (
            Degradation::default().base_delay(Duration::MAX),
            "degradation.base_delay",
        ),
        (
            Degradation::default().max_delay(MAX_TIMEOUT + Duration::from_nanos(1)),
            "degradation.max_delay",
        ),
    ] {
        let e = Hub::builder()
            .degradation(policy)
            .try_build()
            .expect_err("delay out of range");
        assert_eq!(e.kind, ConfigErrorKind::InvalidValue, "{e}");
        assert_eq!(e.path, key);
        assert!(e.to_string().starts_with("server `hub`: "), "{e}");
        assert!(e.to_string().contains("at most 86400 s (24 h)"), "{e}");
    }
}

#[test]
fn hub_connect_backoff_out_of_range_is_refused_at_build() {
    for (base, max, key) in [
        (
            Duration::MAX,
            Duration::from_secs(1),
            "connect_backoff.base",
        ),
        (Duration::from_secs(1), Duration::MAX, "connect_backoff.max"),
    ] {
        let e = Hub::builder()
            .connect_backoff(base, max)
            .try_build()
            .expect_err("backoff out of range");
        assert_eq!(e.kind, ConfigErrorKind::InvalidValue, "{e}");
        assert_eq!(e.path, key);
        assert_eq!(e.server.as_deref(), Some("hub"));
    }
}

#[test]
fn hub_zero_and_maximal_delays_are_valid() {
    let zero = Degradation::default()
        .base_delay(Duration::ZERO)
        .max_delay(Duration::ZERO);
    assert!(Hub::builder()
        .degradation(zero)
        .connect_backoff(Duration::ZERO, MAX_TIMEOUT)
        .try_build()
        .is_ok());
}

#[test]
fn hub_call_with_a_delay_out_of_range_returns_the_config_error() {
    let hub = Hub::builder()
        .servers([stdio("tools").with_timeout_secs(10.0)])
        .degradation(Degradation::default().max_delay(Duration::MAX))
        .build();
    assert!(hub.connect_all().is_empty());
    match hub.call_tool("echo", json!({"text": "hi"})) {
        Err(Error::Config(e)) => {
            assert_eq!(e.kind, ConfigErrorKind::InvalidValue);
            assert_eq!(e.path, "degradation.max_delay");
            assert_eq!(e.server.as_deref(), Some("hub"));
        }
        other => panic!("expected a config error, got {other:?}"),
    }
    hub.disconnect();
}

#[test]
fn hub_connect_backoff_of_duration_max_does_not_panic() {
    let hub = Hub::builder()
        .servers([stdio("broken").with_args(["--crash-on-start"])])
        .connect_backoff(Duration::MAX, Duration::MAX)
        .build();
    let run = mcp_blocking::hub::Run::new();
    assert!(hub.resolve(&run).failed_server_names().contains(&"broken"));
    // The second run computes "last attempt + Duration::MAX": not due, and no overflow.
    assert!(hub.resolve(&run).failed_server_names().contains(&"broken"));
    assert_eq!(hub.failures()[0].attempts, 1);
    hub.disconnect();
}

#[test]
fn hub_server_with_a_timeout_out_of_range_is_reported_as_failed() {
    let hub = Hub::new([stdio("bad-hub-timeout").with_timeout_secs(f64::INFINITY)]);
    let failures = hub.connect_all();
    assert_eq!(failures.len(), 1);
    let reason = &failures[0].reason;
    assert!(
        reason.starts_with("server `bad-hub-timeout`: timeout: the timeout must be"),
        "{reason}"
    );
    hub.disconnect();
}
