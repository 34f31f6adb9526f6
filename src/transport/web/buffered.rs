//! Reading only what has arrived: a connector layer that lets the thread reading a reply ask
//! "read on, but only what is there or on its way right now", so the end of an answered
//! event-stream reply can be read inline (returning its connection to the pool at once) when it
//! came with the answer or just after it, and is otherwise left to the reply-drain thread.
//!
//! ```text
//!   ureq connection: TCP ─> (TLS) ─> Buffered ─> pool
//!   Buffered::await_input: normally waits for the socket (passes through);
//!                          inside `only_buffered(..)` on this thread: waits a moment
//!                          (`ARRIVING`, at most a scheduler tick), then WouldBlock
//! ```

use std::cell::Cell;
use std::fmt;
use std::io;

use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

/// How long a read inside [`only_buffered`] waits for bytes on their way (the socket's timeout
/// has a resolution of a scheduler tick, so this is a few milliseconds at most).
const ARRIVING: std::time::Duration = std::time::Duration::from_micros(500);

thread_local! {
    /// Whether reads on this thread may use only what is buffered already.
    static ONLY_BUFFERED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with reads on this thread limited to what has been received or arrives within a
/// moment: a read that would wait longer fails with [`io::ErrorKind::WouldBlock`] instead
/// (nothing is consumed; the reply can be read on later, anywhere).
pub(crate) fn only_buffered<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            ONLY_BUFFERED.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(ONLY_BUFFERED.with(|c| c.replace(true)));
    f()
}

/// Whether an error is the one [`only_buffered`] makes: the rest has not arrived yet.
pub(crate) fn is_not_yet(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// The connector layer (the last of the chain).
#[derive(Debug, Default)]
pub(crate) struct BufferedConnector;

impl<In: Transport> Connector<In> for BufferedConnector {
    type Out = BufferedTransport<In>;

    fn connect(
        &self,
        _details: &ConnectionDetails,
        chained: Option<In>,
    ) -> Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(BufferedTransport))
    }
}

/// A connection that honours [`only_buffered`].
pub(crate) struct BufferedTransport<T>(T);

impl<T: Transport> fmt::Debug for BufferedTransport<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BufferedTransport").field(&self.0).finish()
    }
}

impl<T: Transport> Transport for BufferedTransport<T> {
    fn buffers(&mut self) -> &mut dyn Buffers {
        self.0.buffers()
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.0.transmit_output(amount, timeout)
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        if !ONLY_BUFFERED.with(Cell::get) {
            return self.0.await_input(timeout);
        }
        // What is on its way right now (the end of a stream written just after its last event)
        // is worth a moment; anything later is left for another thread to read.
        let moment = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from(ARRIVING),
            reason: timeout.reason,
            per_read: None,
            per_write: None,
        };
        let moment = if timeout.after < moment.after {
            timeout
        } else {
            moment
        };
        match self.0.await_input(moment) {
            Err(ureq::Error::Timeout(_)) => Err(ureq::Error::Io(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the rest of the reply has not arrived yet",
            ))),
            other => other,
        }
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}
