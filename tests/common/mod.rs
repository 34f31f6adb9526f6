//! Helpers shared by integration tests (`mod common;`).

// Each test file uses only some of the helpers.
#[allow(dead_code)]
pub mod peers;
