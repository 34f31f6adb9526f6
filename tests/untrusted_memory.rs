//! What a hostile stdio server can make the client hold stays near the configured caps: a flood
//! of requests with 1 MiB method names, a flood of 1 MiB notifications for a blocked handler, a
//! 64 MiB stderr line, a 48 MiB answer over an 8 MiB message cap, and our own writes to a server
//! that reads nothing. Each phase measures the peak resident memory of this process
//! (`VmHWM`, reset before the phase where the kernel allows it; the peak working set on
//! Windows) against its starting resident memory (`VmRSS`, the working set).
//! (Alone in its own test binary, phases one after the other, so nothing else blurs the numbers.)

mod common;

use std::time::Duration;

use common::memory;
use crossbeam_channel::{bounded, unbounded};
use mcp_blocking::config::Limits;
use mcp_blocking::handler::Notification;
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::json;

const MIB: usize = 1024 * 1024;
/// What the process may grow by besides the caps: allocator slack, the transient copies of the
/// message being parsed, thread stacks touched.
const SLACK: usize = 24 * MIB;
const HANG: Duration = Duration::from_secs(60);

/// How much the peak resident memory rose above the resident memory at the start while `f`
/// ran, in bytes.
fn peak_growth(f: impl FnOnce()) -> usize {
    let before = memory::resident();
    let reset = memory::reset_peak();
    let before_peak = memory::resident().peak;
    f();
    let after_peak = memory::resident().peak;
    let base = if reset {
        before.now
    } else {
        // Without a reset the old peak may hide this one: measure above it (never a false
        // alarm, possibly a miss).
        before.now.max(before_peak)
    };
    after_peak.saturating_sub(base) as usize
}

fn fixture(name: &str, args: &[&str], limits: Limits) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path())
        .with_args(args.iter().copied())
        .with_timeout_secs(30.0)
        .with_limits(limits)
}

fn check(phase: &str, growth: usize, cap: usize) {
    eprintln!("{phase}: peak grew {:.1} MiB", growth as f64 / MIB as f64);
    assert!(
        growth < 2 * cap + SLACK,
        "{phase}: the peak grew {growth} bytes; the cap is {cap}"
    );
}

#[test]
fn a_hostile_server_costs_about_the_caps() {
    // Warm up: the first connection sets up what every later one reuses.
    let c = Client::connect(fixture("warmup", &[], Limits::default())).unwrap();
    c.close().unwrap();

    // 100 requests with 1 MiB method names: each is answered "not found" with the name cut.
    let cap = 2 * MIB;
    let growth = peak_growth(|| {
        let c = Client::connect(fixture(
            "names",
            &["--flood-requests", "100", "--method-bytes", "1048576"],
            Limits::default().with_max_message_bytes(cap),
        ))
        .unwrap();
        assert_eq!(
            c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
            "x"
        );
        c.close().unwrap();
    });
    check("100 requests with 1 MiB method names", growth, cap);

    // 100 notifications of 1 MiB while the handler is blocked on the first.
    let growth = peak_growth(|| {
        let (entered_tx, entered_rx) = unbounded();
        let (open_tx, open_rx) = bounded::<()>(0);
        let c = Client::builder(fixture(
            "notes",
            &["--flood-notifications", "100", "--message-bytes", "1048576"],
            Limits::default().with_max_message_bytes(cap),
        ))
        .on_notification(move |_: &str, n: Notification| {
            if let Notification::Log(_) = n {
                let _ = entered_tx.send(());
                let _ = open_rx.recv();
            }
        })
        .connect()
        .unwrap();
        entered_rx.recv_timeout(HANG).expect("the handler started");
        // After the flood on the server's stdout: every notification has been read.
        assert_eq!(
            c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
            "x"
        );
        drop(open_tx);
        c.close().unwrap();
    });
    check("100 notifications of 1 MiB", growth, cap);

    // A 64 MiB stderr line: only its first max_echo_bytes are kept.
    let growth = peak_growth(|| {
        let c = Client::connect(fixture(
            "stderr",
            &["--stderr-line-bytes", "67108864"],
            Limits::default(),
        ))
        .unwrap();
        let err = c.call_tool("crash", json!({})).unwrap_err();
        let Error::Closed { stderr_tail, .. } = &err else {
            panic!("{err:?}")
        };
        assert!(stderr_tail.contains("bytes cut)"), "{stderr_tail}");
    });
    check("a 64 MiB stderr line", growth, 0);

    // A 48 MiB answer over an 8 MiB cap: discarded as it streams.
    let cap = 8 * MIB;
    let growth = peak_growth(|| {
        let c = Client::connect(fixture(
            "oversized",
            &[],
            Limits::default().with_max_message_bytes(cap),
        ))
        .unwrap();
        let err = c
            .call_tool("large", json!({"bytes": 48 * MIB}))
            .unwrap_err();
        assert!(err.to_string().contains("max_message_bytes"), "{err}");
        assert_eq!(
            c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
            "x"
        );
        c.close().unwrap();
    });
    check("a 48 MiB answer over an 8 MiB cap", growth, cap);

    // 40 calls of 1 MiB each to a server that reads nothing, with a 2 MiB write queue.
    let cap = 2 * MIB;
    let growth = peak_growth(|| {
        let c = Client::connect(fixture(
            "unread",
            &[],
            Limits::default().with_max_queued_write_bytes(cap),
        ))
        .unwrap();
        assert_eq!(
            c.call_tool("stop_reading", json!({})).unwrap().text(),
            "stopping"
        );
        let quick = CallOptions::new().timeout(Duration::from_millis(50));
        let text = "x".repeat(MIB);
        for _ in 0..40 {
            let r = c.call_tool_with("echo", json!({ "text": text }), &quick);
            assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
        }
        c.close().unwrap();
    });
    check("40 MiB written to a server that reads nothing", growth, cap);
}
