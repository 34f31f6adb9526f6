//! 100 connect/close cycles leave no file descriptor (handle, on Windows), thread or child
//! process behind.
//! (Alone in its own test binary so no other test's threads or pipes blur the counts.)

mod common;

use common::process::{children, open_handles};
use common::threads::count as thread_count;
use common::{fixture, settle::settled};
use mcp_blocking::{Client, ServerConfig};
use serde_json::json;

fn cycle(i: usize) {
    let c = Client::connect(ServerConfig::stdio(format!("cycle{i}"), fixture::path())).unwrap();
    assert_eq!(
        c.call_tool("echo", json!({"text": "x"})).unwrap().text(),
        "x"
    );
    c.close().unwrap();
}

#[test]
fn hundred_connect_close_cycles_leak_nothing() {
    cycle(0);
    let fds = open_handles();
    let threads = thread_count();
    let kids = children().len();
    for i in 1..=100 {
        cycle(i);
    }
    assert_eq!(open_handles(), fds, "file descriptors leaked");
    let now = settled(thread_count, |n| *n == threads);
    assert_eq!(now, threads, "threads leaked");
    assert_eq!(children().len(), kids, "child processes leaked");
    // Zombies count too: every child was reaped.
    #[cfg(unix)]
    {
        let me = std::process::id().to_string();
        let zombies = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                let f: Vec<&str> = stat
                    .rsplit(')')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .collect();
                f.len() > 1 && f[1] == me && f[0] == "Z"
            })
            .count();
        assert_eq!(zombies, 0, "unreaped children");
    }
}
