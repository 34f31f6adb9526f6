//! Stdio on Windows, as Windows users configure servers: a bare command name found as a `.cmd`
//! shim through `PATHEXT` (how `npx` and `uvx` are installed), a server whose own child ends with
//! it (its Job Object), a timeout that holds, and arguments `cmd.exe` would reinterpret refused.
//! Runs under Wine in CI (`.ci/windows/test`).
#![cfg(windows)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{fixture, tempdir::TempDir};
use mcp_blocking::{CallOptions, Client, Error, ServerConfig};
use serde_json::json;

/// A directory holding `fixture-shim.cmd`, which runs the fixture server with the shim's
/// arguments, as npm's `npx.cmd` runs node.
fn shim_dir() -> (TempDir, PathBuf) {
    let dir = TempDir::new("win-shim");
    let script = format!("@echo off\r\n\"{}\" %*\r\n", fixture::path());
    let shim = dir.file("fixture-shim.cmd", &script);
    let path = shim.parent().unwrap().to_path_buf();
    (dir, path)
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> String {
    format!(
        "{};{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn a_server_behind_a_cmd_shim_is_called_by_its_bare_name() {
    let (_dir, dir) = shim_dir();
    let cfg = ServerConfig::stdio("shim", "fixture-shim").with_env("PATH", path_with(&dir));
    let c = Client::connect(cfg).expect("`fixture-shim` is found as fixture-shim.cmd");
    let r = c.call_tool("echo", json!({"text": "through cmd"})).unwrap();
    assert_eq!(r.text(), "through cmd");
    c.close().unwrap();
}

#[test]
fn a_bare_name_found_nowhere_names_the_server_and_pathext() {
    let err = Client::connect(ServerConfig::stdio("ghost", "no-such-launcher-xyz")).unwrap_err();
    match &err {
        Error::Spawn { server, source, .. } => {
            assert_eq!(server, "ghost");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{err}");
        }
        other => panic!("expected Error::Spawn, got {other:?}"),
    }
    assert!(err.to_string().contains("PATHEXT"), "{err}");
}

#[test]
fn a_batch_argument_cmd_would_reinterpret_is_refused_before_anything_runs() {
    let (_dir, dir) = shim_dir();
    let cfg = ServerConfig::stdio("shim", "fixture-shim")
        .with_args(["--verbose\r\n& echo injected"])
        .with_env("PATH", path_with(&dir));
    let err = Client::connect(cfg).unwrap_err();
    assert!(
        matches!(&err, Error::Spawn { server, .. } if server == "shim"),
        "{err:?}"
    );
}

#[test]
fn closing_a_client_ends_the_grandchild_its_server_started() {
    let (_dir, dir) = shim_dir();
    // cmd.exe (the shim) -> the fixture server -> its grandchild, which the server never ends.
    let cfg = ServerConfig::stdio("tree", "fixture-shim")
        .with_args(["--spawn-grandchild"])
        .with_env("PATH", path_with(&dir));
    let c = Client::connect(cfg).unwrap();
    let pid: u32 = c
        .call_tool("grandchild_pid", json!({}))
        .unwrap()
        .text()
        .parse()
        .unwrap();
    assert!(
        common::process::running(pid),
        "the grandchild runs while its client is open"
    );
    let started = Instant::now();
    c.close().unwrap();
    assert!(
        !common::process::running(pid),
        "the grandchild {pid} outlived its client's close"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "close took {:?}",
        started.elapsed()
    );
}

#[test]
fn dropping_a_client_without_close_ends_its_server_s_tree_too() {
    let cfg = ServerConfig::stdio("tree", fixture::path()).with_args(["--spawn-grandchild"]);
    let c = Client::connect(cfg).unwrap();
    let pid: u32 = c
        .call_tool("grandchild_pid", json!({}))
        .unwrap()
        .text()
        .parse()
        .unwrap();
    drop(c);
    assert!(
        !common::process::running(pid),
        "the grandchild {pid} outlived its client"
    );
}

#[test]
fn a_call_the_server_does_not_answer_times_out_on_time() {
    let c = Client::connect(ServerConfig::stdio("slow", fixture::path())).unwrap();
    let started = Instant::now();
    let err = c
        .call_tool_with(
            "slow",
            json!({"ms": 30_000}),
            &CallOptions::new().timeout(Duration::from_millis(500)),
        )
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(&err, Error::Timeout { server, .. } if server == "slow"),
        "{err:?}"
    );
    assert!(
        took < Duration::from_millis(500) + Duration::from_secs(1),
        "{took:?}"
    );
    // The connection is still good for the next call.
    assert_eq!(
        c.call_tool("echo", json!({"text": "after"}))
            .unwrap()
            .text(),
        "after"
    );
    c.close().unwrap();
}

#[test]
fn a_server_that_stops_reading_fails_writes_by_their_deadline() {
    let c = Client::connect(ServerConfig::stdio("deaf", fixture::path())).unwrap();
    assert_eq!(
        c.call_tool("stop_reading", json!({})).unwrap().text(),
        "stopping"
    );
    let big = "x".repeat(1024 * 1024);
    let started = Instant::now();
    let mut failed = None;
    // The pipe and then our queue fill up; a call then fails by its deadline, never hangs.
    for _ in 0..200 {
        match c.call_tool_with(
            "echo",
            json!({"text": big}),
            &CallOptions::new().timeout(Duration::from_millis(300)),
        ) {
            Ok(_) => panic!("a server that stopped reading answered"),
            Err(e) => {
                if !matches!(e, Error::Timeout { .. }) {
                    failed = Some(e);
                    break;
                }
                failed = Some(e);
            }
        }
        if started.elapsed() > Duration::from_secs(5) {
            break;
        }
    }
    let err = failed.expect("a call failed");
    assert!(
        matches!(&err, Error::Timeout { server, .. } | Error::Transport { server, .. } if server == "deaf"),
        "{err:?}"
    );
    let started = Instant::now();
    c.close().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_crash_reports_the_exit_status_and_the_last_stderr_line() {
    let c = Client::connect(ServerConfig::stdio("crashy", fixture::path())).unwrap();
    let err = c.call_tool("crash", json!({"code": 7})).unwrap_err();
    match &err {
        Error::Closed {
            server,
            detail,
            stderr_tail,
        } => {
            assert_eq!(server, "crashy");
            assert!(detail.contains("status 7"), "{detail}");
            assert!(
                stderr_tail.contains("crashing now on purpose"),
                "{stderr_tail}"
            );
        }
        other => panic!("expected Error::Closed, got {other:?}"),
    }
}
