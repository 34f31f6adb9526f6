//! Where no sandbox can be applied (every system but Linux), a server asked to run in one does
//! not start, with an error naming what is missing; with best effort it starts and its report
//! says that nothing was applied.
#![cfg(not(target_os = "linux"))]

mod common;

use mcp_blocking::config::{ConfigErrorKind, Sandbox};
use mcp_blocking::{Client, Error, ServerConfig};
use serde_json::json;

fn fixture(sandbox: Sandbox) -> ServerConfig {
    ServerConfig::stdio("sbx", common::fixture::path()).with_sandbox(sandbox)
}

#[test]
fn a_sandbox_fails_closed_or_starts_as_best_effort_saying_so() {
    let e = Client::connect(fixture(Sandbox::new().allow_domain("example.com"))).unwrap_err();
    match &e {
        Error::Config(c) => {
            assert_eq!(c.kind, ConfigErrorKind::Unenforceable);
            assert_eq!(c.server.as_deref(), Some("sbx"));
            assert!(c.message.contains("applied on Linux"), "{e}");
        }
        other => panic!("{other}"),
    }
    let client = Client::connect(fixture(Sandbox::new().best_effort())).unwrap();
    assert_eq!(
        client
            .call_tool("echo", json!({"text": "hi"}))
            .unwrap()
            .text(),
        "hi"
    );
    let report = client.sandbox_report().expect("a report");
    assert!(!report.is_complete());
    assert!(report.applied.is_empty(), "{report:?}");
    assert!(report.proxy.is_none(), "{report:?}");
    client.close().unwrap();
}
