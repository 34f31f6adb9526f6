//! 100 connect/close cycles leave no file descriptor, thread or child process behind.
//! (Alone in its own test binary so no other test's threads or pipes blur the counts.)

mod common;

use common::{fixture, settle::settled};
use mcp_blocking::{Client, ServerConfig};
use serde_json::json;

fn count_dir(path: &str) -> usize {
    std::fs::read_dir(path).map(|d| d.count()).unwrap_or(0)
}

/// Live (non-zombie) processes whose parent is this process.
fn live_children() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            fields.len() > 1 && fields[1] == me
        })
        .count()
}

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
    let fds = count_dir("/proc/self/fd");
    let threads = count_dir("/proc/self/task");
    let children = live_children();
    for i in 1..=100 {
        cycle(i);
    }
    assert_eq!(count_dir("/proc/self/fd"), fds, "file descriptors leaked");
    let now = settled(|| count_dir("/proc/self/task"), |n| *n == threads);
    assert_eq!(now, threads, "threads leaked");
    assert_eq!(live_children(), children, "child processes leaked");
    // Zombies count too: every child was reaped.
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
