//! A server we connect to is untrusted: floods of server requests and notifications, huge
//! method names, long stderr lines and oversized answers cost the client a bounded amount of
//! queueing and logging; calls keep working; handlers cannot hang `close` or hold notifications.
//! (Memory use is measured in `untrusted_memory.rs`, threads in `untrusted_close.rs`.)

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use mcp_blocking::config::Limits;
use mcp_blocking::handler::{close_signal, HandlerError, Notification};
use mcp_blocking::model::{CreateMessageResult, LoggingMessage};
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::{json, Value};

/// The hang detector: anything that should return, returns well within this.
const HANG: Duration = Duration::from_secs(30);

fn fixture(name: &str, args: &[&str]) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path())
        .with_args(args.iter().copied())
        .with_timeout_secs(20.0)
}

/// Every log record of the test process: level, target, length and the first bytes.
struct Capture {
    records: Mutex<Vec<Record>>,
}

#[derive(Clone, Debug)]
struct Record {
    level: log::Level,
    target: String,
    len: usize,
    /// The first 300 bytes and the last 40 (or all of it).
    head: String,
}

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let text = record.args().to_string();
        let mut head = text.clone();
        if text.len() > 340 {
            let mut end = 300;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let mut start = text.len() - 40;
            while !text.is_char_boundary(start) {
                start += 1;
            }
            head = format!("{} [...] {}", &text[..end], &text[start..]);
        }
        self.records.lock().unwrap().push(Record {
            level: record.level(),
            target: record.target().to_owned(),
            len: text.len(),
            head,
        });
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

/// The records that name `server` (as ``server `NAME` `` or `[NAME]`).
fn logs_of(server: &str) -> Vec<Record> {
    let a = format!("server `{server}`");
    let b = format!("[{server}]");
    capture()
        .records
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.head.contains(&a) || r.head.contains(&b))
        .cloned()
        .collect()
}

fn flood_answers(c: &Client, at_least: usize) -> Value {
    let text = c
        .call_tool("flood_answers", json!({ "at_least": at_least }))
        .unwrap()
        .text();
    serde_json::from_str(&text).unwrap()
}

fn small_queues(n: usize) -> Limits {
    Limits::default().with_max_queued_server_messages(n)
}

/// A handler gate: each `wait` blocks until `release` (or until the gate is dropped).
#[derive(Clone)]
struct Gate {
    entered: Sender<String>,
    open: Receiver<()>,
}

fn gate() -> (Gate, Receiver<String>, Sender<()>) {
    let (entered, entered_rx) = unbounded();
    let (open_tx, open) = unbounded();
    (Gate { entered, open }, entered_rx, open_tx)
}

impl Gate {
    fn wait(&self, what: String) {
        let _ = self.entered.send(what);
        let _ = self.open.recv();
    }
}

#[test]
fn unknown_requests_with_huge_method_names_get_short_answers_and_few_log_lines() {
    let _ = capture();
    let c = Client::connect(fixture(
        "hugenames",
        &["--flood-requests", "60", "--method-bytes", "262144"],
    ))
    .unwrap();
    // The flood comes before this answer on the server's stdout.
    assert_eq!(
        c.call_tool("echo", json!({"text": "through"}))
            .unwrap()
            .text(),
        "through"
    );
    let answers = flood_answers(&c, 60);
    assert_eq!(answers["codes"], json!({"-32601": 60}), "{answers}");
    let longest = answers["longest_message"].as_u64().unwrap() as usize;
    assert!(
        longest <= Limits::default().max_echo_bytes + 64,
        "a reply echoed {longest} bytes of a method name"
    );
    c.close().unwrap();
    let logs = logs_of("hugenames");
    let total: usize = logs.iter().map(|r| r.len).sum();
    let longest = logs.iter().map(|r| r.len).max().unwrap_or(0);
    assert!(longest < 2048, "a log line of {longest} bytes");
    assert!(
        total < 16 * 1024,
        "{total} bytes of log for 60 unknown requests"
    );
}

#[test]
fn a_call_times_out_within_its_timeout_while_a_server_floods_and_reads_nothing() {
    let c = Arc::new(
        Client::connect(fixture(
            "noreader",
            &[
                "--flood-requests",
                "300",
                "--method-bytes",
                "65536",
                "--stop-reading",
            ],
        ))
        .unwrap(),
    );
    let (done_tx, done_rx) = bounded(1);
    let caller = Arc::clone(&c);
    let t = std::thread::spawn(move || {
        let r = caller.call_tool_with(
            "echo",
            json!({"text": "x"}),
            &CallOptions::new().timeout(Duration::from_secs(1)),
        );
        let _ = done_tx.send(r);
    });
    let r = done_rx.recv_timeout(HANG).expect("the call returned");
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    t.join().unwrap();
    c.close().unwrap();
}

#[test]
fn requests_beyond_the_queue_are_answered_client_busy_at_once() {
    let _ = capture();
    let (g, entered, open) = gate();
    let c = Arc::new(
        Client::builder(
            fixture(
                "busy",
                &[
                    "--flood-requests",
                    "16",
                    "--flood-method",
                    "sampling/createMessage",
                    "--flood-on-call",
                ],
            )
            .with_limits(small_queues(8)),
        )
        .sampling(move |_: &str, _| {
            g.wait("sampling".into());
            Ok(CreateMessageResult::text("m", "done"))
        })
        .connect()
        .unwrap(),
    );
    // One request in the handler...
    let sampler = Arc::clone(&c);
    let sample = std::thread::spawn(move || sampler.call_tool("sample", json!({"prompt": "p"})));
    entered.recv_timeout(HANG).expect("the handler started");
    // ... eight of the sixteen wait for it, and the other eight are refused without waiting.
    // (Eight answers fit the answers' queue even before its thread sends one.)
    assert_eq!(c.call_tool("flood", json!({})).unwrap().text(), "flooded");
    let answers = flood_answers(&c, 8);
    assert_eq!(answers["codes"], json!({"-32000": 8}), "{answers}");
    for _ in 0..9 {
        open.send(()).unwrap();
    }
    let answers = flood_answers(&c, 16);
    assert_eq!(answers["codes"], json!({"-32000": 8, "0": 8}), "{answers}");
    let text = sample.join().unwrap().unwrap().text();
    assert!(text.contains("done"), "{text}");
    c.close().unwrap();
    let busy = logs_of("busy")
        .iter()
        .filter(|r| r.level == log::Level::Warn && r.head.contains("client busy"))
        .count();
    assert!((1..8).contains(&busy), "{busy} warnings for 8 refusals");
}

#[test]
fn notifications_beyond_the_queue_are_dropped_with_few_warnings() {
    let _ = capture();
    let (g, entered, open) = gate();
    let c = Client::builder(
        fixture(
            "dropping",
            &["--flood-notifications", "20", "--flood-on-call"],
        )
        .with_limits(small_queues(4)),
    )
    .on_notification(move |_: &str, n: Notification| {
        if let Notification::Log(LoggingMessage { data, .. }) = n {
            g.wait(data.as_str().unwrap_or("").to_owned());
        }
    })
    .connect()
    .unwrap();
    c.call_tool("log", json!({"level": "info", "message": "first"}))
        .unwrap();
    assert_eq!(entered.recv_timeout(HANG).unwrap(), "first");
    // The handler is busy: four of the twenty wait, sixteen are dropped.
    assert_eq!(c.call_tool("flood", json!({})).unwrap().text(), "flooded");
    drop(open);
    let seen: Vec<String> = (0..4)
        .map(|_| entered.recv_timeout(HANG).expect("a queued notification"))
        .collect();
    assert!(seen.iter().all(|s| s.starts_with("flood ")), "{seen:?}");
    assert!(seen[0].starts_with("flood 1 "), "{seen:?}");
    // The queue is empty now; the next notification is the next one the handler sees: none of
    // the sixteen others was kept.
    c.call_tool("log", json!({"level": "info", "message": "last"}))
        .unwrap();
    assert_eq!(entered.recv_timeout(HANG).unwrap(), "last");
    c.close().unwrap();
    let warnings = logs_of("dropping")
        .iter()
        .filter(|r| r.level == log::Level::Warn && r.head.contains("dropping"))
        .count();
    assert!(
        (1..16).contains(&warnings),
        "{warnings} warnings for 16 drops"
    );
}

#[test]
fn a_notification_reaches_its_handler_while_a_sampling_handler_is_blocked() {
    let (g, entered, open) = gate();
    let (note_tx, note_rx) = unbounded();
    let c = Arc::new(
        Client::builder(fixture("parallel", &[]))
            .sampling(move |_: &str, _| {
                g.wait("sampling".into());
                Ok(CreateMessageResult::text("m", "late"))
            })
            .on_notification(move |_: &str, n: Notification| {
                let _ = note_tx.send(n);
            })
            .connect()
            .unwrap(),
    );
    let sampler = Arc::clone(&c);
    let sample = std::thread::spawn(move || sampler.call_tool("sample", json!({"prompt": "p"})));
    entered
        .recv_timeout(HANG)
        .expect("the sampling handler started");
    c.call_tool("notify_list_changed", json!({})).unwrap();
    let n = note_rx
        .recv_timeout(HANG)
        .expect("a notification while sampling is blocked");
    assert_eq!(n, Notification::ToolsListChanged);
    open.send(()).unwrap();
    assert!(sample.join().unwrap().unwrap().text().contains("late"));
    c.close().unwrap();
}

#[test]
fn dropping_a_client_returns_while_an_elicitation_handler_blocks() {
    let (g, entered, open) = gate();
    let (closed_tx, closed_rx) = bounded(1);
    let c = Client::builder(fixture("dropwhileasking", &[]))
        .elicitation(move |_: &str, _| {
            g.wait("elicit".into());
            let _ = closed_tx.send(close_signal().map(|s| s.is_closed()));
            Err(HandlerError::rejected("too late"))
        })
        .connect()
        .unwrap();
    // The call gives up first; the handler still waits.
    let r = c.call_tool_with(
        "elicit",
        json!({"message": "name?"}),
        &CallOptions::new().timeout(Duration::from_millis(500)),
    );
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    entered.recv_timeout(HANG).expect("the handler started");
    let (dropped_tx, dropped_rx) = bounded(1);
    std::thread::spawn(move || {
        drop(c);
        let _ = dropped_tx.send(());
    });
    dropped_rx.recv_timeout(HANG).expect("drop returned");
    open.send(()).unwrap();
    // The handler can tell the connection has gone.
    assert_eq!(closed_rx.recv_timeout(HANG).unwrap(), Some(true));
}

#[test]
fn a_long_stderr_line_is_cut_and_marked_and_the_tail_keeps_its_lines() {
    let _ = capture();
    let limits = Limits::default()
        .with_stderr_tail_lines(3)
        .with_max_echo_bytes(100);
    let c = Client::connect(
        fixture(
            "longline",
            &["--stderr-banner", "--stderr-line-bytes", "3000000"],
        )
        .with_limits(limits),
    )
    .unwrap();
    // Exiting puts everything it wrote to stderr before the answer to this call.
    let err = c.call_tool("crash", json!({})).unwrap_err();
    let Error::Closed { stderr_tail, .. } = &err else {
        panic!("{err:?}");
    };
    // Six lines were written (three of the banner); the last three are kept.
    let long = format!("{}… (2999900 bytes cut)", "e".repeat(100));
    let lines: Vec<&str> = stderr_tail.lines().collect();
    assert_eq!(
        lines,
        [
            long.as_str(),
            "fixture: after the long line",
            "fixture: crashing now on purpose",
        ],
        "{stderr_tail}"
    );
    let stderr_logs: Vec<Record> = logs_of("longline")
        .into_iter()
        .filter(|r| r.target == "mcp_blocking::stderr")
        .collect();
    assert!(stderr_logs.iter().all(|r| r.len < 200), "{stderr_logs:?}");
    assert!(
        stderr_logs.iter().any(|r| r.head.contains("bytes cut)")),
        "{stderr_logs:?}"
    );
}

#[test]
fn an_oversized_answer_with_its_id_last_fails_its_call_at_once_and_others_are_unharmed() {
    let c = Arc::new(
        Client::connect(
            fixture("idlast", &["--id-last"])
                .with_max_message_bytes(1024 * 1024)
                .with_timeout_secs(120.0),
        )
        .unwrap(),
    );
    let (done_tx, done_rx) = bounded(1);
    let big = Arc::clone(&c);
    std::thread::spawn(move || {
        let _ = done_tx.send(big.call_tool("large", json!({"bytes": 8 * 1024 * 1024})));
    });
    for i in 0..20 {
        let text = format!("ok {i}");
        assert_eq!(
            c.call_tool("echo", json!({ "text": text })).unwrap().text(),
            text
        );
    }
    // Far sooner than its 120 s timeout, or the hang detector fires.
    let r = done_rx.recv_timeout(HANG).expect("the large call failed");
    match r {
        Err(Error::Protocol { detail, .. }) => {
            assert!(detail.contains("max_message_bytes"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.call_tool("echo", json!({"text": "after"}))
            .unwrap()
            .text(),
        "after"
    );
}

#[test]
fn a_write_past_the_queue_cap_fails_naming_it_and_the_connection_stays() {
    let c = Client::connect(
        fixture("stuckreader", &[])
            .with_limits(Limits::default().with_max_queued_write_bytes(256 * 1024))
            .with_timeout_secs(1.0),
    )
    .unwrap();
    assert_eq!(
        c.call_tool("stop_reading", json!({})).unwrap().text(),
        "stopping"
    );
    let big = json!({ "blob": "x".repeat(1024 * 1024) });
    // The pipe and the queue take the first ones; then a write waits for its deadline.
    let mut refused = None;
    for _ in 0..8 {
        if let Err(e) = c.notify("notifications/blob", Some(big.clone())) {
            refused = Some(e);
            break;
        }
    }
    match refused {
        Some(Error::Transport { detail, .. }) => {
            assert!(detail.contains("max_queued_write_bytes"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
    assert!(c.is_connected());
    let r = c.call_tool("echo", json!({"text": "x"}));
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    c.close().unwrap();
}

#[test]
fn server_log_messages_are_cut_when_forwarded() {
    let _ = capture();
    let (seen_tx, seen_rx) = unbounded();
    let c = Client::builder(fixture("bigmessages", &[]))
        .on_notification(move |_: &str, n: Notification| {
            let _ = seen_tx.send(n);
        })
        .connect()
        .unwrap();
    c.call_tool(
        "log",
        json!({"level": "warning", "message": "y".repeat(100_000)}),
    )
    .unwrap();
    // The message is forwarded to `log` before the handlers see it.
    let n = seen_rx.recv_timeout(HANG).unwrap();
    assert!(matches!(n, Notification::Log(_)), "{n:?}");
    let forwarded: Vec<Record> = logs_of("bigmessages")
        .into_iter()
        .filter(|r| r.target == "mcp_blocking::server_log")
        .collect();
    assert_eq!(forwarded.len(), 1, "{forwarded:?}");
    assert!(forwarded[0].len < 1200, "{forwarded:?}");
    assert!(forwarded[0].head.contains("bytes cut)"), "{forwarded:?}");
    c.close().unwrap();
}

#[test]
fn a_server_error_message_is_cut_in_the_error() {
    let c = Client::connect(
        fixture("longerror", &[]).with_limits(Limits::default().with_max_echo_bytes(40)),
    )
    .unwrap();
    let err = c
        .call_tool("no_such_tool_".repeat(10).as_str(), json!({}))
        .unwrap_err();
    match err {
        Error::Rpc { message, .. } => {
            assert!(message.ends_with("bytes cut)"), "{message}");
            assert!(message.len() < 80, "{message}");
        }
        other => panic!("{other:?}"),
    }
}
