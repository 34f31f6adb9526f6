//! [`Opener`]: how a client reaches its server when not through the transport its config
//! names. Every client holds an optional one, so connecting has one path for both; the one
//! opener there is serves an in-process server (`mcp_blocking::testing`).

use std::sync::Arc;

use crate::transport::{Sink, Transport};

/// Opens the transport of each connection a client makes, in place of the configured one.
pub(crate) trait Opener: Send + Sync {
    /// Opens the transport of one connection to `server`, handing what arrives to `sink`.
    fn open(&self, server: &str, sink: Arc<dyn Sink>) -> Arc<dyn Transport>;

    /// What connecting reaches, as messages show it.
    fn target(&self) -> String;
}

/// An in-process server, reached through the memory transport.
#[cfg(any(test, feature = "testing"))]
pub(crate) struct InProcess(pub(crate) Arc<dyn crate::transport::memory::InProcessServer>);

#[cfg(any(test, feature = "testing"))]
impl Opener for InProcess {
    fn open(&self, server: &str, sink: Arc<dyn Sink>) -> Arc<dyn Transport> {
        Arc::new(crate::transport::memory::MemoryTransport::new(
            server,
            sink,
            Arc::clone(&self.0),
        ))
    }

    fn target(&self) -> String {
        "the in-process server".into()
    }
}
