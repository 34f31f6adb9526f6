//! The loopback proxy a sandboxed server's network goes through: HTTP `CONNECT` (for TLS and
//! anything else) and plain HTTP requests in absolute form, admitted only for the hosts and
//! ports of the server's [`Network::Domains`](crate::config::Network::Domains) rules.
//!
//! One per sandboxed connection: a listener on `127.0.0.1`, port 0, served by one named
//! thread, which runs each connection on a named thread of its own (at most
//! `MAX_CONNECTIONS` at once); `stop` (and drop) shuts every socket and joins every thread.

use std::io;
use std::net::SocketAddr;

use crate::config::DomainRule;

/// A running proxy.
pub(crate) struct Proxy {
    addr: SocketAddr,
}

impl Proxy {
    /// Starts the proxy for `server` (named in its threads and log lines), admitting hosts
    /// that one of `allow` matches and none of `deny`.
    pub(crate) fn start(
        server: &str,
        allow: Vec<DomainRule>,
        deny: Vec<DomainRule>,
    ) -> io::Result<Proxy> {
        let _ = (server, allow, deny);
        Err(io::Error::new(io::ErrorKind::Unsupported, "not built yet"))
    }

    /// Where it listens (`127.0.0.1` and its port).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, shuts every open connection and joins every thread. Idempotent.
    pub(crate) fn stop(&mut self) {}
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop();
    }
}
