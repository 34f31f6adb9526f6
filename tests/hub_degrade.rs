//! Degradation: retryable failures are retried with backoff, then the server leaves the tool
//! set, is reported, and is reconnected on a later run.

mod common;
mod hub_support;

use std::time::{Duration, Instant};

use hub_support::{fixture, quick_degradation, wait_for};
use mcp_blocking::error::ErrorCode;
use mcp_blocking::hub::{HubEvent, Run};
use mcp_blocking::{CallOptions, Error, Hub};
use serde_json::json;

fn pair(extra_retries: u32) -> Hub {
    Hub::builder()
        .servers([
            fixture("a", "", &[]),
            fixture("b", "", &["--extra-tools", "1"]),
        ])
        .degradation(quick_degradation(extra_retries))
        .build()
}

#[test]
fn a_server_killed_mid_run_is_degraded_then_reconnected() {
    let hub = pair(1);
    let events = hub.events();
    let before = hub.resolve(&Run::new());
    assert!(before.names().contains(&"a__echo"));
    assert_eq!(hub.status_note(), None);

    let err = hub.call_tool("a__crash", json!({})).unwrap_err();
    assert!(err.is_retryable(), "{err}");
    wait_for(
        &events,
        |e| matches!(e, HubEvent::Degraded { server, .. } if server == "a"),
    );
    assert_eq!(hub.degraded_servers(), ["a"]);
    let removed = &hub.degraded()[0].tools;
    assert!(removed.contains(&"a__echo".to_string()));
    assert!(hub.tools().iter().all(|t| t.server == "b"));
    // The other server's names do not change while `a` is away.
    assert!(hub.tools().iter().any(|t| t.name == "b__echo"));
    assert_eq!(
        hub.call_tool("b__echo", json!({"text": "still"}))
            .unwrap()
            .text(),
        "still"
    );
    let note = hub.status_note().unwrap();
    assert!(note.contains("`a`") && note.contains("`a__echo`"), "{note}");
    assert!(matches!(
        hub.call_tool("a__echo", json!({"text": "x"})),
        Err(Error::InvalidArgument { .. })
    ));

    // The next run reconnects it.
    let after = hub.resolve(&Run::new());
    assert_eq!(after.degraded, []);
    assert_eq!(hub.degraded_servers(), Vec::<String>::new());
    assert!(after.names().contains(&"a__echo"));
    assert_eq!(
        hub.call_tool("a__echo", json!({"text": "back"}))
            .unwrap()
            .text(),
        "back"
    );
    assert_eq!(hub.status_note(), None);
}

#[test]
fn retryable_failures_are_retried_extra_retries_times() {
    let hub = pair(2);
    hub.resolve(&Run::new());
    let timeout = Duration::from_millis(150);
    let opts = CallOptions::new().timeout(timeout);
    let t = Instant::now();
    let err = hub
        .call_tool_with("a__slow", json!({"ms": 5000}), &opts)
        .unwrap_err();
    let took = t.elapsed();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    // One call and two retries, each waiting for its timeout.
    assert!(took >= timeout * 3, "took {took:?}");
    assert!(took < timeout * 3 + Duration::from_secs(3), "took {took:?}");
    assert_eq!(hub.degraded_servers(), ["a"]);
}

#[test]
fn a_non_retryable_error_does_not_degrade() {
    let hub = pair(1);
    hub.resolve(&Run::new());
    let err = hub.call_tool("a__rpc_error", json!({})).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Rpc {
                code: ErrorCode(-32000),
                ..
            }
        ),
        "{err}"
    );
    assert!(hub.degraded_servers().is_empty());
    assert_eq!(
        hub.call_tool("a__echo", json!({"text": "ok"}))
            .unwrap()
            .text(),
        "ok"
    );
}

#[test]
fn without_graceful_degradation_the_server_stays() {
    let hub = Hub::builder()
        .servers([fixture("a", "", &[])])
        .degradation(quick_degradation(1).graceful(false))
        .build();
    hub.resolve(&Run::new());
    let err = hub.call_tool("crash", json!({})).unwrap_err();
    assert!(err.is_retryable());
    assert!(hub.degraded_servers().is_empty());
    assert!(hub.tools().iter().any(|t| t.name == "echo"));
    // The dead connection is noticed and replaced by the next run.
    hub.resolve(&Run::new());
    assert_eq!(
        hub.call_tool("echo", json!({"text": "again"}))
            .unwrap()
            .text(),
        "again"
    );
}
