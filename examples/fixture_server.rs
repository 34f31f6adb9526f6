//! The fixture server alone: serves MCP on stdin/stdout with the flags it is given (see the
//! `mcp-fixture-server` crate under `fixtures/server/`). The tests spawn it; the other examples
//! serve the fixture from their own executable instead (`--serve-fixture`).
//!
//! Run with `cargo run --example mcp-fixture-server -- --page-size 2` (then type JSON-RPC lines).

use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_fixture_server::serve(&[], std::env::args().skip(1))
}
