//! Transports move framed JSON-RPC messages and nothing else.
//!
//! A transport is opened with a [`Sink`] that receives everything it reads (and, for stdio, a
//! [`StderrTail`] that keeps the server's last stderr lines); the [`Transport`] handle writes
//! [`Outgoing`] messages (each with its kind, id, method and deadline), has a caller wait for
//! its answer ([`Transport::wait`]), stops a caller's read of a request given up by another
//! thread ([`Transport::interrupt`]), and closes ([`Transport::close`]). How a transport shares
//! reading among waiting callers is its own business: a role it gives a [`Caller`] is taken
//! back when the caller is dropped (see `caller.rs`). Protocol logic (ids, pending requests,
//! routing) lives in [`crate::protocol::session`], never here. No transport reaches into
//! another: what the HTTP-based ones share is in `web/`.

use std::time::Instant;

use crossbeam_channel::RecvTimeoutError;

use crate::error::Error;

use crate::protocol::jsonrpc::{Inbound, RequestId};
use crate::protocol::session::Event;
pub(crate) use caller::{Caller, Leaving};
pub(crate) use outgoing::Outgoing;
pub(crate) use stderr_tail::StderrTail;

mod caller;
pub(crate) mod http;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod memory;
pub(crate) mod outgoing;
pub(crate) mod proxy;
pub(crate) mod sse;
pub(crate) mod sse_parser;
pub(crate) mod stderr_tail;
pub(crate) mod stdio;
pub(crate) mod web;
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

/// How a connection closes (see [`Transport::close`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closing {
    /// With the transport's close handshake, and grace for work the peer still has in hand.
    Graceful,
    /// Without waiting on the peer: no close handshake and no grace for work the peer still has
    /// in hand, for a connection given up before it was ever usable (a handshake that failed,
    /// the connect timeout already spent). Threads are still ended and joined, or (a handler
    /// that will not end) joined later as a graceful close would. A transport with nothing to
    /// skip closes as gracefully.
    Abort,
}

/// One connection as its callers use it: send a message, wait for a request's answer, stop a
/// request given up by another thread, close.
pub(crate) trait Transport: Send + Sync {
    /// Sends one message (its frame has no trailing newline; its kind, id and method come with
    /// it, so nothing needs parsing here). Must return by its deadline (when it has one) with
    /// [`Error::Timeout`]-worthy failure reported as `Err`.
    ///
    /// Transports whose replies come back on the same exchange (Streamable HTTP) may deliver them
    /// to the [`Sink`] before returning, or, for a request whose caller waits
    /// ([`Outgoing::caller_waits`]), leave the rest of the reply to [`wait`](Self::wait), whose
    /// deadline moves on with the caller's progress.
    fn send(&self, msg: Outgoing) -> Result<(), Error>;

    /// Waits until `deadline` for the next event of a caller's request (progress or its
    /// answer). By default the caller simply waits on its slot while an I/O thread routes what
    /// arrives; a transport may instead let the caller read the connection itself (stdio does:
    /// see `stdio/lead.rs`), and may wake a waiting caller with [`Event::Wake`] through
    /// `caller.tx` to have it call `wait` again. A role the transport gives the caller here
    /// (a hand-off it has not taken yet, a reply kept for it) is taken back when the caller
    /// stops waiting: the transport [enlists](Caller::enlist) it.
    fn wait<'a>(
        &'a self,
        caller: &Caller<'a>,
        deadline: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        caller.rx.recv_deadline(deadline)
    }

    /// Request `id` was given up by another thread, and its slot already holds its end: a
    /// caller that reads the connection itself in `wait` for it (and so does not look at its
    /// slot) stops reading now.
    fn interrupt(&self, _id: i64) {}

    /// Closes the connection, ends and joins every thread, and (stdio) ends the process.
    /// Idempotent: a later call, whatever [`Closing`] it asks for, closes nothing more.
    fn close(&self, how: Closing) -> Result<(), Error>;
}
