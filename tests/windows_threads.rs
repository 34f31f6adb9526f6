//! The threads of stdio servers on Windows: three per server (`mcp-stdout`, `mcp-stderr`,
//! `mcp-stdin`), joined when the server closes. Alone in its own test binary, so no other
//! test's servers blur the count. Runs under Wine in CI (`.ci/windows/test`).
#![cfg(windows)]

mod common;

use common::fixture;
use mcp_blocking::{Client, ServerConfig};

/// How many of this process's threads serve stdio pipes.
fn pipe_threads() -> usize {
    common::threads::names()
        .iter()
        .filter(|n| n.starts_with("mcp-std"))
        .count()
}

#[test]
fn each_server_has_three_pipe_threads_and_closing_joins_them() {
    let before = pipe_threads();
    let clients: Vec<Client> = (0..3)
        .map(|i| Client::connect(ServerConfig::stdio(format!("t{i}"), fixture::path())).unwrap())
        .collect();
    assert_eq!(pipe_threads(), before + 9, "{:?}", common::threads::names());
    for c in clients {
        c.close().unwrap();
    }
    // `close` joins them: none is left when it returns.
    assert_eq!(pipe_threads(), before, "{:?}", common::threads::names());
}
