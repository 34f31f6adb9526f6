//! The I/O-free protocol core.
pub(crate) mod jsonrpc;
