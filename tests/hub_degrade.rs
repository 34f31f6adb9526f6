//! Degradation: failures a retry cannot make worse are retried with backoff (a closed
//! connection reconnected first), then the server leaves the tool set, is reported, and is
//! reconnected on a later run; a call that may have run is sent again only when the tool says
//! it is idempotent or the policy names it.

mod common;
mod hub_support;

use std::path::PathBuf;
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
    // `crash` kills its server on every call: named as safe to retry, it is retried on a new
    // process, which dies too, and the server is degraded.
    let hub = Hub::builder()
        .servers([
            fixture("a", "", &[]),
            fixture("b", "", &["--extra-tools", "1"]),
        ])
        .degradation(quick_degradation(1).retry_tool("a__crash"))
        .build();
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
    let hub = Hub::builder()
        .servers([fixture("a", "", &[]), fixture("b", "", &[])])
        .degradation(quick_degradation(2).retry_tool("slow"))
        .build();
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

/// A call log file for the fixture's counting tools (`--call-log`), removed on drop.
struct CallLog(PathBuf);

impl CallLog {
    fn new(tag: &str) -> Self {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("mcpb-calls-{}-{tag}-{n}.log", std::process::id());
        CallLog(std::env::temp_dir().join(name))
    }

    fn flag(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }

    /// The logged calls as (tool, pid).
    fn calls(&self) -> Vec<(String, u32)> {
        std::fs::read_to_string(&self.0)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let (name, pid) = l.split_once(' ')?;
                Some((name.to_owned(), pid.parse().ok()?))
            })
            .collect()
    }

    fn count(&self, tool: &str) -> usize {
        self.calls().iter().filter(|(n, _)| n == tool).count()
    }
}

impl Drop for CallLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One fixture server `c` logging its counted calls, with quick retries.
fn counting_hub(log: &CallLog, degradation: mcp_blocking::hub::Degradation) -> Hub {
    let hub = Hub::builder()
        .servers([fixture("c", "", &["--call-log", log.flag()])])
        .degradation(degradation)
        .build();
    hub.resolve(&Run::new());
    hub
}

#[test]
fn a_tool_that_is_not_idempotent_is_not_sent_again_after_a_timeout() {
    let log = CallLog::new("timeout");
    let hub = counting_hub(&log, quick_degradation(2));
    let opts = CallOptions::new().timeout(Duration::from_millis(200));
    let err = hub
        .call_tool_with("counter", json!({"ms": 5000}), &opts)
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    // The server answers the next call: it counted one earlier call, not three.
    let next = hub.call_tool("counter", json!({})).unwrap();
    assert_eq!(next.text(), "2");
    assert_eq!(log.count("counter"), 2);
    // The server still answers `ping`, so it stays.
    assert!(hub.degraded_servers().is_empty());
    assert!(hub.tools().iter().any(|t| t.name == "counter"));
}

#[test]
fn an_idempotent_tool_is_sent_again_after_a_timeout() {
    let log = CallLog::new("idempotent");
    // Kept after the retries (not graceful), so a last call shows what the server counted.
    let hub = counting_hub(&log, quick_degradation(2).graceful(false));
    let opts = CallOptions::new().timeout(Duration::from_millis(200));
    let err = hub
        .call_tool_with("idempotent_counter", json!({"ms": 5000}), &opts)
        .unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    // The call and its two retries all reached the server, then this one.
    assert_eq!(hub.call_tool("counter", json!({})).unwrap().text(), "4");
    let calls = log.calls();
    assert_eq!(log.count("idempotent_counter"), 3, "{calls:?}");
    assert!(
        calls.windows(2).all(|w| w[0].1 == w[1].1),
        "one process, never reconnected: {calls:?}"
    );
}

#[test]
fn a_tool_named_by_the_policy_is_sent_again_after_a_timeout() {
    let log = CallLog::new("named");
    let hub = counting_hub(
        &log,
        quick_degradation(1).retry_tool("counter").graceful(false),
    );
    let opts = CallOptions::new().timeout(Duration::from_millis(200));
    let err = hub
        .call_tool_with("counter", json!({"ms": 5000}), &opts)
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(hub.call_tool("counter", json!({})).unwrap().text(), "3");
    assert_eq!(log.count("counter"), 3);
}

#[test]
fn an_idempotent_tool_that_keeps_timing_out_degrades_its_server() {
    let log = CallLog::new("degrades");
    let hub = counting_hub(&log, quick_degradation(1));
    let opts = CallOptions::new().timeout(Duration::from_millis(150));
    let err = hub
        .call_tool_with("idempotent_counter", json!({"ms": 5000}), &opts)
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(hub.degraded_servers(), ["c"]);
}

#[test]
fn a_retry_after_a_crash_reaches_a_new_process() {
    let log = CallLog::new("crash");
    let hub = counting_hub(&log, quick_degradation(1));
    let first_pid: u32 = hub
        .call_tool("counter", json!({}))
        .map(|_| log.calls()[0].1)
        .unwrap();
    // `crash_once` (idempotent) exits on its first call; the Hub reconnects, then retries.
    let result = hub.call_tool("crash_once", json!({})).unwrap();
    let calls = log.calls();
    assert_eq!(log.count("crash_once"), 2, "{calls:?}");
    let (crashed, answered) = (calls[1].1, calls[2].1);
    assert_eq!(
        crashed, first_pid,
        "the first attempt went to the first process"
    );
    assert_ne!(answered, first_pid, "the retry went to a new process");
    assert_eq!(result.text(), format!("pid {answered}"));
    assert!(hub.degraded_servers().is_empty());
    // The reconnected server serves the next call from the new process.
    hub.call_tool("counter", json!({})).unwrap();
    assert_eq!(log.calls().last().map(|c| c.1), Some(answered));
}

#[test]
fn a_crash_of_a_tool_that_is_not_idempotent_is_not_retried_but_the_server_is_reconnected() {
    let log = CallLog::new("no-retry");
    let hub = counting_hub(&log, quick_degradation(2));
    hub.call_tool("counter", json!({})).unwrap();
    let first_pid = log.calls()[0].1;
    let err = hub.call_tool("crash", json!({})).unwrap_err();
    assert!(matches!(err, Error::Closed { .. }), "{err}");
    assert!(hub.degraded_servers().is_empty());
    // Reconnected already: the next call needs no new run, and reaches a new process.
    let next = hub.call_tool("counter", json!({})).unwrap();
    assert_eq!(next.text(), "1", "a fresh process counts from one");
    let calls = log.calls();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_ne!(calls[1].1, first_pid);
}

#[test]
fn a_call_after_the_server_died_between_calls_reconnects_first() {
    let log = CallLog::new("between");
    // No retries at all: the reconnect is not a retry.
    let hub = counting_hub(&log, quick_degradation(0));
    let client = hub.client("c").unwrap();
    let _ = client.call_tool("crash", json!({}));
    assert!(!client.is_connected());
    let result = hub.call_tool("counter", json!({})).unwrap();
    assert_eq!(result.text(), "1");
    assert_eq!(log.count("counter"), 1);
    assert!(hub.degraded_servers().is_empty());
}
