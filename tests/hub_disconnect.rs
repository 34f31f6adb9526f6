//! `Hub::disconnect` (and dropping the Hub) leaves no server process and no thread behind.
//! (Alone in its own test binary so no other test's threads or processes blur the counts.)
// Linux only: each server's process is found by its environment in `/proc/<pid>/environ`.
#![cfg(unix)]

mod common;
mod hub_support;

use common::settle::settled;
use hub_support::{broken, count_dir, fixture, live_fixture_names, wait_for};
use mcp_blocking::hub::{HubEvent, Run};
use mcp_blocking::Hub;
use serde_json::json;

#[test]
fn disconnect_and_drop_leave_no_process_or_thread() {
    let threads = count_dir("/proc/self/task");
    assert_eq!(live_fixture_names(), Vec::<String>::new());

    let hub = Hub::new([
        fixture("d1", "", &[]),
        fixture("d2", "", &["--extra-tools", "1"]),
        fixture("d3", "", &[]),
        broken("d4"),
    ]);
    let events = hub.events();
    hub.resolve(&Run::new());
    assert_eq!(live_fixture_names(), ["d1", "d2", "d3"]);
    // Start a notification dispatcher too.
    hub.call_tool("d2__add_tool", json!({"name": "extra"}))
        .unwrap();
    wait_for(&events, |e| matches!(e, HubEvent::ToolsRefreshed { .. }));
    assert!(count_dir("/proc/self/task") > threads);

    hub.disconnect();
    assert_eq!(
        live_fixture_names(),
        Vec::<String>::new(),
        "server processes left"
    );
    let now = settled(|| count_dir("/proc/self/task"), |n| *n == threads);
    assert_eq!(now, threads, "threads left");
    assert!(hub.connected_servers().is_empty());
    assert!(hub.tools().is_empty());

    // Usable again after a disconnect; dropping it cleans up the same way.
    hub.resolve(&Run::new());
    assert_eq!(live_fixture_names(), ["d1", "d2", "d3"]);
    drop(events);
    drop(hub);
    assert_eq!(
        live_fixture_names(),
        Vec::<String>::new(),
        "server processes left"
    );
    let now = settled(|| count_dir("/proc/self/task"), |n| *n == threads);
    assert_eq!(now, threads, "threads left");
    let zombies = hub_support::children()
        .into_iter()
        .filter(|(_, s)| s == "Z")
        .count();
    assert_eq!(zombies, 0, "unreaped children");
}
