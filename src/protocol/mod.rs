//! The I/O-free protocol core.
pub(crate) mod era;
#[cfg(test)]
mod fuzz_tests;
pub(crate) mod jsonrpc;
pub(crate) mod session;
