//! An in-process transport for unit tests: a closure plays the server.
//!
//! Every frame the client sends is handed to the closure as JSON; what the closure returns is
//! delivered back as if the server had written it. No thread, no pipe, no socket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use super::{Sink, Transport};
use crate::error::Error;
use crate::protocol::jsonrpc::Inbound;
use crate::sync::lock;

/// The server: given each message the client sends, returns the messages to send back.
pub(crate) type MemoryServer = dyn Fn(&Value) -> Vec<Value> + Send + Sync;

/// Every message the client sent, in order.
pub(crate) type SentLog = Arc<Mutex<Vec<Value>>>;

pub(crate) struct MemoryTransport {
    sink: Arc<dyn Sink>,
    server: Arc<MemoryServer>,
    sent: SentLog,
    closed: AtomicBool,
}

impl MemoryTransport {
    pub(crate) fn new(
        sink: Arc<dyn Sink>,
        server: Arc<MemoryServer>,
        sent: Arc<Mutex<Vec<Value>>>,
    ) -> Self {
        MemoryTransport {
            sink,
            server,
            sent,
            closed: AtomicBool::new(false),
        }
    }
}

impl Transport for MemoryTransport {
    fn send(&self, frame: Vec<u8>, _deadline: Option<Instant>) -> Result<(), Error> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(Error::Closed {
                server: "memory".into(),
                detail: "closed".into(),
                stderr_tail: String::new(),
            });
        }
        let msg: Value = serde_json::from_slice(&frame).map_err(|e| Error::Protocol {
            server: "memory".into(),
            detail: format!("the client sent invalid JSON: {e}"),
        })?;
        lock(&self.sent).push(msg.clone());
        for reply in (self.server)(&msg) {
            let bytes = serde_json::to_vec(&reply).map_err(|e| Error::Protocol {
                server: "memory".into(),
                detail: e.to_string(),
            })?;
            match Inbound::parse(&bytes) {
                Ok(msgs) => msgs.into_iter().for_each(|m| self.sink.deliver(m)),
                Err(e) => log::warn!("memory server sent an invalid message: {e}"),
            }
        }
        Ok(())
    }

    fn close(&self) -> Result<(), Error> {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.sink
                .closed("closed by the client".into(), String::new());
        }
        Ok(())
    }
}
