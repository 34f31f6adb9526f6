//! [`notification_channel`]: notifications delivered through a bounded channel, as one more
//! notification handler.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, TrySendError};
use std::sync::Arc;

use super::{Notification, ServerNotification};
use crate::throttle::{more, Throttle};

/// A capacity for [`notification_channel`] that a program reading its notifications as they
/// come never fills: 1,024 unread notifications.
pub const NOTIFICATION_CHANNEL_CAPACITY: usize = 1024;

thread_local! {
    /// Where the client whose notification thread this is counts the notifications its
    /// channels dropped.
    static DROPPED: RefCell<Option<Arc<AtomicU64>>> = const { RefCell::new(None) };
}

/// Makes `counter` the one a full channel counts its drops in on this thread (a dispatcher
/// thread, once, as it starts).
pub(crate) fn set_drop_counter(counter: Arc<AtomicU64>) {
    DROPPED.with(|d| *d.borrow_mut() = Some(counter));
}

/// Counts one dropped notification for the client whose handler is running, if any.
fn count_drop() {
    DROPPED.with(|d| {
        if let Some(counter) = d.borrow().as_ref() {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
}

/// A notification handler that delivers through a channel holding at most `capacity` unread
/// notifications (at least 1), and the receiving end; install the handler with
/// [`ClientBuilder::on_notification`](crate::ClientBuilder::on_notification).
///
/// The client's notification thread never waits for the receiver: when the channel is full,
/// the new notification is dropped (for this channel only), counted in
/// [`Client::dropped_notifications`](crate::Client::dropped_notifications), and a warning is
/// logged (at most once a second). A server can send notifications at will, so the bound keeps
/// a program that is slow to read from growing memory; a receiver that is dropped is simply no
/// longer sent to.
///
/// ```no_run
/// use mcp_blocking::{Client, ServerConfig};
/// use mcp_blocking::handler::{notification_channel, NOTIFICATION_CHANNEL_CAPACITY};
/// let (notify, notifications) = notification_channel(NOTIFICATION_CHANNEL_CAPACITY);
/// let client = Client::builder(ServerConfig::stdio("fs", "mcp-server-filesystem"))
///     .on_notification(notify)
///     .connect()?;
/// for (server, n) in notifications.try_iter() {
///     println!("{server}: {n:?}");
/// }
/// # Ok::<(), mcp_blocking::Error>(())
/// ```
pub fn notification_channel(
    capacity: usize,
) -> (
    impl Fn(&str, Notification) + Send + Sync + 'static,
    mpsc::Receiver<ServerNotification>,
) {
    let (tx, rx) = mpsc::sync_channel(capacity.max(1));
    let full = Throttle::default();
    let notify = move |server: &str, n: Notification| {
        if let Err(TrySendError::Full(_)) = tx.try_send((server.to_owned(), n)) {
            count_drop();
            if let Some(unlogged) = full.hit() {
                log::warn!(
                    "server `{server}`: the notification channel is full (the program is not \
                     reading it); a notification is dropped{}",
                    more(unlogged)
                );
            }
        }
    };
    (notify, rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_channel_drops_the_newest_and_counts_it_for_the_running_client() {
        let counter = Arc::new(AtomicU64::new(0));
        set_drop_counter(Arc::clone(&counter));
        let (notify, rx) = notification_channel(2);
        for _ in 0..5 {
            notify("s", Notification::ToolsListChanged);
        }
        assert_eq!(counter.load(Ordering::Relaxed), 3);
        assert_eq!(rx.try_iter().count(), 2);
    }

    #[test]
    fn a_channel_holds_at_least_one() {
        let (notify, rx) = notification_channel(0);
        notify("s", Notification::PromptsListChanged);
        assert_eq!(
            rx.try_recv().unwrap(),
            ("s".to_owned(), Notification::PromptsListChanged)
        );
    }
}
