//! Reading only what has already arrived: a connector layer that lets the thread reading a reply
//! ask "read on, but only from what is already buffered", so the end of an answered event-stream
//! reply can be read inline (returning its connection to the pool at once) when it came with the
//! answer, and is otherwise left to the reply-drain thread.
//!
//! ```text
//!   ureq connection: TCP ─> (TLS) ─> Buffered ─> pool
//!   Buffered::await_input: normally waits for the socket (passes through);
//!                          inside `only_buffered(..)` on this thread: WouldBlock at once
//! ```

use std::cell::Cell;
use std::fmt;
use std::io;

use ureq::unversioned::transport::{Buffers, ConnectionDetails, Connector, NextTimeout, Transport};

thread_local! {
    /// Whether reads on this thread may use only what is buffered already.
    static ONLY_BUFFERED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with reads on this thread limited to what has already been received: a read that
/// would wait for the socket fails at once with [`io::ErrorKind::WouldBlock`] instead (nothing
/// is consumed; the reply can be read on later, anywhere).
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
        if ONLY_BUFFERED.with(Cell::get) {
            return Err(ureq::Error::Io(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the rest of the reply has not arrived yet",
            )));
        }
        self.0.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.0.is_open()
    }

    fn is_tls(&self) -> bool {
        self.0.is_tls()
    }
}
