//! A chatty server and a program slow to read: `handler::notification_channel` and
//! `Hub::events` hold at most their capacity, drop the newest past it, count what they dropped,
//! and never hold the thread that feeds them.

mod common;
mod hub_support;

use std::sync::mpsc;
use std::time::Duration;

use hub_support::fixture;
use mcp_blocking::handler::{notification_channel, Notification};
use mcp_blocking::hub::{HubEvent, Run};
use mcp_blocking::{Client, Hub};
use serde_json::json;

/// Each call of the fixture's `notify_list_changed` sends three notifications.
const ROUNDS: usize = 60;

#[test]
fn a_full_notification_channel_drops_the_newest_and_counts_them() {
    // A second handler, called after the channel's for each notification, says how many the
    // channel has been offered.
    let (offered_tx, offered) = mpsc::channel();
    let (notify, rx) = notification_channel(4);
    let builder = Client::builder(fixture("chatty", "", &[])).on_notification(notify);
    let client = builder
        .on_notification(move |_, _| {
            let _ = offered_tx.send(());
        })
        .connect()
        .unwrap();
    for _ in 0..ROUNDS {
        client.call_tool("notify_list_changed", json!({})).unwrap();
    }
    // Nothing is read from `rx` until the client has handled every notification: the
    // notification thread was never held by the full channel.
    for n in 0..ROUNDS * 3 {
        offered
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("notification {n} was not handled: {e}"));
    }
    let kept: Vec<Notification> = rx.try_iter().map(|(_, n)| n).collect();
    assert_eq!(
        kept,
        [
            Notification::ToolsListChanged,
            Notification::PromptsListChanged,
            Notification::ResourcesListChanged,
            Notification::ToolsListChanged,
        ],
        "the oldest four are kept"
    );
    assert_eq!(client.dropped_notifications(), (ROUNDS * 3 - 4) as u64);
    // Read again, the channel takes new notifications.
    client.call_tool("notify_list_changed", json!({})).unwrap();
    let (_, next) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(next, Notification::ToolsListChanged);
}

#[test]
fn a_full_hub_event_channel_drops_the_newest_and_counts_them() {
    let hub = Hub::new([fixture("chatty", "", &[])]);
    let slow = hub.events_with_capacity(2);
    // A receiver that keeps up, offered each event right after `slow`.
    let all = hub.events();
    hub.resolve(&Run::new());
    let connected = all.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        matches!(connected, HubEvent::Connected { .. }),
        "{connected:?}"
    );
    for _ in 0..ROUNDS {
        hub.call_tool("notify_list_changed", json!({})).unwrap();
    }
    // Every list_changed refreshes the tools: one event each.
    for n in 0..ROUNDS {
        let e = all
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|e| panic!("refresh {n} was not reported: {e}"));
        assert!(matches!(e, HubEvent::ToolsRefreshed { .. }), "{e:?}");
    }
    let kept: Vec<HubEvent> = slow.try_iter().collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(matches!(kept[0], HubEvent::Connected { .. }), "{kept:?}");
    assert_eq!(hub.dropped_events(), (ROUNDS + 1 - 2) as u64);
}
