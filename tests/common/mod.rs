//! Shared by the integration tests (`mod common;`): the agent tests' scripted model client
//! and event recorder (`agent`), a logger that keeps what is logged
//! (`capture`), the fixture server's path (`fixture`), the `mcpb` binary as every CLI test runs
//! it (`mcpb`, with the feature `cli`), this process's resident memory (`memory`) and threads
//! by name (`threads`), another process by its id (`process`: running? end it),
//! `settle::settled` for values the kernel updates late, `tempdir::TempDir`, and real MCP peers
//! (`peers` installs them, `launch` starts one that listens on loopback; Linux only).
//!
//! Not under `tests/support_remote/`: the library's unit tests and `examples/bench_http.rs`
//! include that folder, and `peers` names the `mcp_blocking` crate.

// Each test file uses only some of the helpers.
#[allow(dead_code)]
pub mod agent;
#[allow(dead_code)]
pub mod capture;
#[allow(dead_code)]
pub mod fixture;
#[allow(dead_code)]
pub mod flood;
// The real peers run on Linux only (the Node and Python installs are Linux's).
#[cfg(unix)]
#[allow(dead_code)]
pub mod launch;
#[cfg(feature = "cli")]
#[allow(dead_code)]
pub mod mcpb;
#[allow(dead_code)]
pub mod memory;
#[cfg(unix)]
#[allow(dead_code)]
pub mod peers;
#[allow(dead_code)]
pub mod process;
#[allow(dead_code)]
pub mod settle;
#[allow(dead_code)]
pub mod tempdir;
#[allow(dead_code)]
pub mod threads;
