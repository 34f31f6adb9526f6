//! The I/O-free protocol core.
pub(crate) mod era;
#[cfg(test)]
mod fuzz_tests;
mod in_place;
pub(crate) mod jsonrpc;
pub(crate) mod session;
pub(crate) mod slot;
pub(crate) mod task_end;
pub(crate) mod wire;
