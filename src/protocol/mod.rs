//! The I/O-free protocol core.
#[cfg(test)]
mod fuzz_tests;
pub(crate) mod era;
pub(crate) mod jsonrpc;
pub(crate) mod session;
