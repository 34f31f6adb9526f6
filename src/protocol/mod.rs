//! The I/O-free protocol core.
pub(crate) mod jsonrpc;
pub(crate) mod session;
