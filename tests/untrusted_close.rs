//! `close()` returns while an elicitation handler blocks forever; the handler learns the
//! connection closed, and its thread, still there after `close`, ends once the handler returns
//! and is joined by the next client that connects and closes: the thread count comes back.
//! (Alone in its own test binary so no other test's threads blur the counts.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::settle::settled;
use common::threads::{count as thread_count, names as thread_names};
use crossbeam_channel::{bounded, unbounded};
use mcp_blocking::handler::{close_signal, HandlerError};
use mcp_blocking::{Client, Error, ServerConfig};
use serde_json::json;

const HANG: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> ServerConfig {
    ServerConfig::stdio(name, common::fixture::path()).with_timeout_secs(20.0)
}

#[test]
fn close_returns_while_a_handler_blocks_and_its_thread_is_joined_after_it_returns() {
    let threads = thread_count();
    let (entered_tx, entered_rx) = unbounded();
    let (open_tx, open_rx) = unbounded::<()>();
    let (closed_tx, closed_rx) = bounded(1);
    let c = Arc::new(
        Client::builder(fixture("asker"))
            .elicitation(move |_: &str, _| {
                let _ = entered_tx.send(());
                // Waits on a person who never answers, until the test lets it go.
                let _ = open_rx.recv();
                let _ = closed_tx.send(close_signal().map(|s| s.is_closed()));
                Err(HandlerError::rejected("no answer"))
            })
            .connect()
            .unwrap(),
    );
    let caller = Arc::clone(&c);
    let call = std::thread::spawn(move || caller.call_tool("elicit", json!({"message": "?"})));
    entered_rx.recv_timeout(HANG).expect("the handler started");

    let (done_tx, done_rx) = bounded(1);
    let closer = Arc::clone(&c);
    std::thread::spawn(move || {
        let _ = done_tx.send(closer.close());
    });
    done_rx
        .recv_timeout(HANG)
        .expect("close returned while the handler blocks")
        .unwrap();
    let r = call.join().unwrap();
    assert!(matches!(r, Err(Error::Closed { .. })), "{r:?}");
    // The handler still runs on its own thread.
    assert!(
        thread_names().iter().any(|n| n == "mcp-requests-as"),
        "{:?}",
        thread_names()
    );

    open_tx.send(()).unwrap();
    assert_eq!(
        closed_rx.recv_timeout(HANG).unwrap(),
        Some(true),
        "the handler learns the connection closed"
    );
    drop(c);
    // The next client that connects and closes joins the thread the handler leaves.
    let other = Client::connect(fixture("other")).unwrap();
    other.close().unwrap();
    drop(other);
    let now = settled(thread_count, |n| *n == threads);
    assert_eq!(now, threads, "threads left: {:?}", thread_names());
}
