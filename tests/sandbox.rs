//! Sandboxed stdio servers (Linux, Landlock): the fixture server's normal tools work in a
//! sandbox, and each escape its `escape` tool tries is refused there and succeeds without one.
#![cfg(target_os = "linux")]

mod common;

use mcp_blocking::config::{ConfigErrorKind, Sandbox};
use mcp_blocking::{Client, Error, ServerConfig};
use serde_json::json;

fn fixture(sandbox: Option<Sandbox>) -> ServerConfig {
    let c = ServerConfig::stdio("sbx", common::fixture::path());
    match sandbox {
        Some(s) => c.with_sandbox(s),
        None => c,
    }
}

#[test]
fn a_sandboxed_server_answers_and_reports_what_was_applied() {
    let client = Client::connect(fixture(Some(Sandbox::new()))).unwrap();
    let text = client
        .call_tool("echo", json!({"text": "hi"}))
        .unwrap()
        .text();
    assert_eq!(text, "hi");
    let report = client.sandbox_report().expect("a report");
    assert!(report.is_complete(), "{report:?}");
    assert!(report.landlock_abi.unwrap() >= 6, "{report:?}");
    assert!(
        report
            .applied
            .iter()
            .any(|a| a.contains("filesystem rules")),
        "{report:?}"
    );
    assert!(
        report.applied.iter().any(|a| a.contains("TCP: no connect")),
        "{report:?}"
    );
    client.close().unwrap();
    let plain = Client::connect(fixture(None)).unwrap();
    assert!(plain.sandbox_report().is_none());
}

#[test]
fn a_command_outside_the_granted_paths_does_not_start() {
    let e = Client::connect(fixture(Some(Sandbox::new().without_default_paths()))).unwrap_err();
    match &e {
        Error::Spawn { source, .. } => {
            assert!(source.to_string().contains("in its sandbox"), "{e}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_denied_path_inside_a_granted_one_is_refused_before_spawning() {
    let dir = common::tempdir::TempDir::new("sbx-deny");
    let e = Client::connect(fixture(Some(
        Sandbox::new()
            .allow_write(dir.path())
            .deny_read(dir.path().join("secret")),
    )))
    .unwrap_err();
    match e {
        Error::Config(c) => {
            assert_eq!(c.kind, ConfigErrorKind::Unenforceable);
            assert_eq!(c.server.as_deref(), Some("sbx"));
        }
        other => panic!("{other}"),
    }
}
