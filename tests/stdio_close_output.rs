//! What a stdio server writes while it is being closed: its stderr is still logged line by line
//! and kept, and output that does not fit in the pipes does not hold up its exit. Also: the
//! process-wide poller's thread still ends a moment after the last server closed.
//!
//! The servers here are small `sh` scripts, so that what they write after their stdin closed is
//! exactly known. (Alone in its own test binary: the thread check needs no other client.)
#![cfg(unix)]

mod common;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::settle::settled;
use mcp_blocking::config::ProtocolMode;
use mcp_blocking::{Client, ServerConfig};

/// Every log record of the test process: target and message.
struct Capture {
    records: Mutex<Vec<(String, String)>>,
}

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        self.records
            .lock()
            .unwrap()
            .push((record.target().to_owned(), record.args().to_string()));
    }

    fn flush(&self) {}
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::new(Capture {
            records: Mutex::new(Vec::new()),
        }));
        log::set_logger(c).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Trace);
        c
    })
}

/// The stderr lines logged for `server`, in order, without the `[server] ` prefix.
fn stderr_logged(server: &str) -> Vec<String> {
    let prefix = format!("[{server}] ");
    capture()
        .records
        .lock()
        .unwrap()
        .iter()
        .filter(|(target, _)| target == "mcp_blocking::stderr")
        .filter_map(|(_, msg)| msg.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

/// Whether a log line names `server` and says `what`.
fn logged(server: &str, what: &str) -> bool {
    let name = format!("server `{server}`");
    capture()
        .records
        .lock()
        .unwrap()
        .iter()
        .any(|(_, msg)| msg.contains(&name) && msg.contains(what))
}

/// A server in `sh`: answers `initialize` (with the id it was sent), reads until its stdin
/// closes, then runs `at_close` and exits with status 3.
fn sh_server(name: &str, at_close: &str) -> ServerConfig {
    let script = format!(
        r#"read line
id=$(printf '%s' "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"sh","version":"0"}}}}}}\n' "$id"
while read line; do :; done
{at_close}
exit 3"#
    );
    ServerConfig::stdio(name, "sh")
        .with_args(["-c", script.as_str()])
        .with_protocol(ProtocolMode::Legacy)
        .with_timeout_secs(20.0)
}

#[test]
fn stderr_written_while_closing_is_logged_line_by_line_and_kept() {
    let _ = capture();
    let c = Client::connect(sh_server(
        "lastwords",
        "echo 'closing: first line' >&2; echo 'closing: second line' >&2; \
         printf 'closing: no newline at the end' >&2",
    ))
    .unwrap();
    let started = Instant::now();
    c.close().unwrap();
    // It exited on its own, without waiting for SIGTERM.
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(!logged("lastwords", "SIGTERM"));
    assert_eq!(
        stderr_logged("lastwords"),
        [
            "closing: first line",
            "closing: second line",
            "closing: no newline at the end"
        ]
    );
}

#[test]
fn output_larger_than_the_pipes_at_close_does_not_hold_up_the_exit() {
    let _ = capture();
    // 300 KB of stderr (more than a pipe holds) in one line, then a short one; 2 MB of blank
    // stdout lines (more than the 1 MiB stdout pipe).
    let c = Client::connect(sh_server(
        "flood_at_close",
        "yes '' | head -n 2000000; \
         head -c 300000 /dev/zero | tr '\\0' 'x' >&2; echo >&2; echo 'after the flood' >&2",
    ))
    .unwrap();
    let started = Instant::now();
    c.close().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the server was left blocked on a full pipe: {:?}",
        started.elapsed()
    );
    assert!(!logged("flood_at_close", "SIGTERM"));
    let lines = stderr_logged("flood_at_close");
    assert_eq!(
        lines.len(),
        2,
        "{:?}",
        lines.iter().map(String::len).collect::<Vec<_>>()
    );
    assert!(
        lines[0].starts_with("xxx") && lines[0].contains("bytes cut"),
        "{}",
        &lines[0][..80]
    );
    assert_eq!(lines[1], "after the flood");
}

#[test]
fn the_process_wide_poller_thread_ends_a_moment_after_the_last_server_closed() {
    let poller_running = || {
        std::fs::read_dir("/proc/self/task")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("comm")).ok())
            .any(|n| n.trim() == "mcp-poller")
    };
    let _ = capture();
    for round in 0..2 {
        let c = Client::connect(sh_server(&format!("linger{round}"), "")).unwrap();
        assert!(poller_running(), "a server registered starts the thread");
        c.close().unwrap();
        // Closing does not wake the thread; it still ends on its own after its linger.
        let still = (0..3).fold(true, |running, _| {
            running && settled(poller_running, |r| !r)
        });
        assert!(!still, "round {round}: the poller thread did not end");
    }
}
