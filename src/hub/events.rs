//! The Hub's event channels ([`Hub::events`](super::Hub::events)): one bounded channel per
//! receiver, fed without ever waiting.
//!
//! ```text
//!   emit(event) ──each receiver's channel──> room: sent
//!                                       ├──> full: dropped for that receiver, counted, warned
//!                                       │    (at most one warning a second)
//!                                       └──> receiver gone: the channel is forgotten
//! ```
//!
//! Events are sent from the thread where they happen (a connecting thread, a server's
//! notification thread), so a receiver that is slow to read must not hold that thread, and a
//! server that makes events happen at will (`tools/list_changed`) must not grow memory without
//! bound: a full channel drops the newest event.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, SyncSender, TrySendError};
use std::sync::Mutex;

use super::HubEvent;
use crate::sync::lock;
use crate::throttle::{more, Throttle};

/// The receivers of a Hub's events.
#[derive(Default)]
pub(crate) struct Events {
    senders: Mutex<Vec<SyncSender<HubEvent>>>,
    dropped: AtomicU64,
    full: Throttle,
}

impl Events {
    /// A new receiver whose channel holds at least one and at most `capacity` events.
    pub(crate) fn subscribe(&self, capacity: usize) -> mpsc::Receiver<HubEvent> {
        let (tx, rx) = mpsc::sync_channel(capacity.max(1));
        lock(&self.senders).push(tx);
        rx
    }

    /// Offers `event` to every receiver; never waits.
    pub(crate) fn emit(&self, event: &HubEvent) {
        let mut senders = lock(&self.senders);
        senders.retain(|tx| match tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                if let Some(unlogged) = self.full.hit() {
                    log::warn!(
                        "a Hub event receiver is not reading: its channel is full, an event is \
                         dropped{}",
                        more(unlogged)
                    );
                }
                true
            }
            Err(TrySendError::Disconnected(_)) => false,
        });
    }

    /// Events dropped so far because a receiver's channel was full (all receivers).
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}
