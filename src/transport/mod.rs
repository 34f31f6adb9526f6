//! Transports move framed JSON-RPC messages and nothing else.
//!
//! A transport is opened with a [`Sink`] that receives everything it reads; the [`Transport`]
//! handle writes. Protocol logic (ids, pending requests, routing) lives in
//! [`crate::protocol::session`], never here.

use std::time::Instant;

use crate::error::Error;
use crate::protocol::jsonrpc::{Inbound, RequestId};

pub(crate) mod http;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod memory;
pub(crate) mod pipes;
pub(crate) mod poller;
pub(crate) mod proxy;
pub(crate) mod sse;
pub(crate) mod sse_parser;
pub(crate) mod stdio;
pub(crate) mod ws;

/// Where a transport delivers what it reads. Implemented by the client's shared state.
///
/// Both methods are called on I/O threads: they must be quick and must never block on user code.
pub(crate) trait Sink: Send + Sync {
    /// One parsed inbound message.
    fn deliver(&self, msg: Inbound);
    /// The answer to request `id` arrived but cannot be delivered (too large): its caller fails
    /// at once with `detail` instead of waiting for its timeout.
    fn reject(&self, _id: RequestId, _detail: String) {}

    /// The connection ended; `detail` says why (exit status, stream end), `stderr_tail` quotes the
    /// server's last stderr lines when there are any. Called at most once per transport.
    fn closed(&self, detail: String, stderr_tail: String);

    /// `text` with the server's secrets hidden (the redaction rule of `config/redact.rs`), for
    /// messages and log lines that quote the url, a command line or what the server wrote.
    /// Without the server's configuration at hand, URLs lose their password and query.
    fn redact(&self, text: &str) -> String {
        crate::config::Secrets::default().redact(text).into_owned()
    }
}

/// Computes the extra HTTP headers of an outbound frame (see [`Transport::set_header_hook`]).
pub(crate) type HeaderHook =
    std::sync::Arc<dyn Fn(&[u8]) -> Option<Vec<(String, String)>> + Send + Sync>;

/// The writing half of a connection.
pub(crate) trait Transport: Send + Sync {
    /// Sends one serialised JSON-RPC message (no trailing newline). Must return by `deadline`
    /// (when given) with [`Error::Timeout`]-worthy failure reported as `Err`.
    ///
    /// Transports whose replies come back on the same exchange (Streamable HTTP) may deliver them
    /// to the [`Sink`] before returning.
    fn send(&self, frame: Vec<u8>, deadline: Option<Instant>) -> Result<(), Error>;

    /// Called once the handshake has negotiated a protocol version (HTTP sends it as a header).
    fn set_protocol_version(&self, _version: &str) {}

    /// Installs the function that gives an outbound frame's extra HTTP headers (the modern
    /// era's `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`; `None` for a
    /// frame that is not a modern request); `None` removes it (a connection that turned out
    /// legacy). Only Streamable HTTP uses it.
    fn set_header_hook(&self, _hook: Option<HeaderHook>) {}

    /// Leader/follower: a caller may read the connection itself until `done()` (its answer has
    /// been routed) or `deadline`, instead of waiting for an I/O thread's hand-off. On leaving,
    /// `handoff()` may ask another waiting caller to take over (returning whether it did).
    /// Returns `false` when the transport does not support it or another thread is reading.
    fn lead(
        &self,
        _deadline: Instant,
        _done: &dyn Fn() -> bool,
        _handoff: &dyn Fn() -> bool,
    ) -> bool {
        false
    }

    /// A caller that was asked to take over reading (see [`lead`](Self::lead)) leaves without
    /// doing so; `handoff()` may ask another.
    fn decline_lead(&self, _handoff: &dyn Fn() -> bool) {}

    /// The last lines the server wrote to stderr, when the transport has a process.
    fn stderr_tail(&self) -> String {
        String::new()
    }

    /// Closes the connection, ends and joins every thread, and (stdio) ends the process.
    /// Idempotent.
    fn close(&self) -> Result<(), Error>;
}
