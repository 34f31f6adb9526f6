//! Answered SSE replies are read to their end so their connections return to the pool: inline,
//! by the caller, when the end has arrived with the answer or arrives a moment later (the usual
//! case: servers end the stream right after the response); otherwise in the background by the
//! reply-drain thread.
//! One named thread, started with the first SSE reply whose end had not arrived, and ended by
//! close (its queue's sender is dropped).

use crate::sync::lock;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{Receiver, Sender};

use super::reply::ReplyStream;
use super::Inner;
use crate::transport::sse_parser::EventTooLarge;
use crate::transport::web::buffered::{is_not_yet, only_buffered};
use crate::transport::web::{deliver_frame, skip_oversized};
use crate::transport::Sink;

/// Replies whose rest is read in the background so their connection can be reused.
const MAX_DRAINING: usize = 8;

/// The drain thread's queue and handle.
#[derive(Default)]
pub(super) struct Drain {
    /// The queue; dropped on close, which ends the thread.
    pub(super) tx: Option<Sender<ReplyStream>>,
    /// The thread, joined on close.
    pub(super) thread: Option<JoinHandle<()>>,
}

impl Inner {
    /// Passes the rest of an answered SSE reply to the drain thread (servers close the stream
    /// right after the response); reading it to its end returns the connection to the pool.
    /// When the drain queue is full the reply is dropped, which closes its connection.
    /// The thread starts with the first reply, under the lock close() takes, so none starts
    /// after close.
    pub(super) fn hand_off(&self, mut reader: ReplyStream) {
        if !only_buffered(|| read_arrived(&self.server, &*self.sink, &mut reader)) {
            return;
        }
        let mut drain = lock(&self.drain);
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if drain.tx.is_none() {
            let (tx, rx) = crossbeam_channel::bounded::<ReplyStream>(MAX_DRAINING);
            let (server, sink) = (self.server.clone(), Arc::clone(&self.sink));
            match std::thread::Builder::new()
                .name(format!("mcp-drain:{}", self.server))
                .spawn(move || drain_replies(&server, &*sink, rx))
            {
                Ok(h) => {
                    drain.tx = Some(tx);
                    drain.thread = Some(h);
                }
                Err(e) => {
                    log::debug!("server `{}`: no reply-drain thread: {e}", self.server);
                    return;
                }
            }
        }
        if let Some(tx) = &drain.tx {
            let _ = tx.try_send(reader);
        }
    }
}

/// Reads what has arrived of an answered reply, delivering anything in it; returns whether more
/// is to come (false: the reply ended, and its connection is back in the pool, or it broke).
fn read_arrived(server: &str, sink: &dyn Sink, reply: &mut ReplyStream) -> bool {
    loop {
        match reply.next_event() {
            Ok(Some(ev)) if ev.is_message() => {
                deliver_frame(server, sink, ev.data.as_bytes(), None);
            }
            Ok(Some(_)) => {}
            Ok(None) => return false,
            Err(e) if is_not_yet(&e) => return true,
            Err(e) => {
                if let Some(t) = EventTooLarge::find(&e) {
                    skip_oversized(server, "an answered reply", sink, t);
                    continue;
                }
                log::debug!("server `{server}`: an answered reply stream broke: {e}");
                return false;
            }
        }
    }
}

/// The drain thread: reads answered SSE replies to their end, delivering anything that still
/// comes, until the transport closes.
fn drain_replies(server: &str, sink: &dyn Sink, replies: Receiver<ReplyStream>) {
    for mut reply in replies {
        loop {
            match reply.next_event() {
                Ok(Some(ev)) if ev.is_message() => {
                    deliver_frame(server, sink, ev.data.as_bytes(), None);
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    if let Some(t) = EventTooLarge::find(&e) {
                        skip_oversized(server, "an answered reply", sink, t);
                        continue;
                    }
                    log::debug!("server `{server}`: an answered reply stream broke: {e}");
                    break;
                }
            }
        }
    }
}
