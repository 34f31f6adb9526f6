//! A call made while a server floods the client: it must end (answered or timed out) by its
//! timeout plus a generous slack.

use std::sync::Arc;
use std::time::Duration;

use mcp_blocking::Client;
use serde_json::json;

/// Calls the loopback servers' `add` tool (1 + 2) on its own thread and checks that the call
/// ends within `hang_after` (a hang detector, not a timing assertion) with `3` or a timeout.
pub fn add_returns_during_a_flood(client: &Arc<Client>, hang_after: Duration) {
    let (tx, rx) = crossbeam_channel::bounded(1);
    let caller = Arc::clone(client);
    let call = std::thread::Builder::new()
        .name("flood-caller".into())
        .spawn(move || {
            let _ = tx.send(caller.call_tool("add", json!({"a": 1, "b": 2})));
        })
        .expect("spawn the caller");
    let outcome = rx.recv_timeout(hang_after).expect("the call returned");
    call.join().expect("the caller thread");
    match outcome {
        Ok(r) => assert_eq!(r.text(), "3", "{r:?}"),
        Err(e) => assert!(e.is_timeout(), "{e:?}"),
    }
}
