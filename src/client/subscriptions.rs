//! The bookkeeping of `subscriptions/listen` (modern era): what the dispatcher consults for each
//! notification ([`Subscriptions`]), and the listens a connection keeps open, each on its own
//! thread ([`Listens`]; see `listen.rs` for how they open and end). Empty in the legacy era.

use std::collections::HashSet;
use std::sync::Mutex;
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use serde_json::Value;

use crate::error::Error;
use crate::protocol::era;
use crate::protocol::jsonrpc::InNotification;
use crate::sync::lock;

/// What `subscriptions/listen` sends the client that `subscribe` waits for.
pub(crate) enum ListenEvent {
    /// `notifications/subscriptions/acknowledged`'s params.
    Ack(Value),
    /// The listen request ended (before being acknowledged, or after).
    Ended(Result<(), Error>),
}

/// The subscription bookkeeping the notification dispatcher consults.
#[derive(Default)]
pub(crate) struct Subscriptions {
    /// The subscriptions whose messages are delivered (listen request ids).
    pub(crate) active: Mutex<HashSet<i64>>,
    /// Every listen id this connection opened (messages of the others are not ours to drop).
    pub(crate) opened: Mutex<HashSet<i64>>,
    /// The `subscribe` waiting for an acknowledgement.
    pub(crate) waiter: Mutex<Option<Sender<ListenEvent>>>,
}

impl Subscriptions {
    /// Whether the dispatcher should stop here: an acknowledgement (handed to `subscribe`) or a
    /// message of a subscription that was ended (dropped).
    pub(crate) fn intercept(&self, n: &InNotification) -> bool {
        let params: Option<Value> = n
            .params
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok());
        if n.method == "notifications/subscriptions/acknowledged" {
            if let Some(tx) = lock(&self.waiter).as_ref() {
                let _ = tx.try_send(ListenEvent::Ack(params.unwrap_or(Value::Null)));
            }
            return true;
        }
        let sid = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(era::META_SUBSCRIPTION_ID))
            .and_then(Value::as_i64);
        match sid {
            Some(id) => lock(&self.opened).contains(&id) && !lock(&self.active).contains(&id),
            None => false,
        }
    }
}

/// One open `subscriptions/listen`.
pub(crate) struct Listen {
    /// What it is kept under: the uri, or the key of the list changes.
    pub(crate) key: String,
    /// The listen request's id.
    pub(crate) id: i64,
    /// The thread waiting for the request's end.
    pub(crate) thread: JoinHandle<()>,
}

/// The listens of a connection.
#[derive(Default)]
pub(crate) struct Listens {
    /// One per subscribed key.
    pub(crate) open: Mutex<Vec<Listen>>,
    /// Listen threads of ended subscriptions, joined on close.
    pub(crate) ended: Mutex<Vec<JoinHandle<()>>>,
    /// Serialises `subscribe`: one listen waits for its acknowledgement at a time.
    pub(crate) subscribing: Mutex<()>,
}

impl Listens {
    /// Ends the subscriptions' threads (after the transport closed and the calls failed).
    pub(crate) fn join(&self) {
        let mut threads: Vec<JoinHandle<()>> = lock(&self.ended).drain(..).collect();
        threads.extend(lock(&self.open).drain(..).map(|l| l.thread));
        for t in threads {
            let _ = t.join();
        }
    }
}
