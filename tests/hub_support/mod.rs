//! Helpers shared by the `hub_*` tests (included with `mod hub_support;`, after `mod common;`; no
//! tests of its own).
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::time::Duration;

use mcp_blocking::hub::{Degradation, HubEvent};
use mcp_blocking::ServerConfig;

/// The fixture server executable.
pub fn fixture_path() -> &'static str {
    crate::common::fixture::path()
}

/// A fixture server with a description and extra flags.
pub fn fixture(name: &str, description: &str, flags: &[&str]) -> ServerConfig {
    ServerConfig::stdio(name, fixture_path())
        .with_args(flags.iter().copied())
        .with_description(description)
        .with_env("HUB_FIXTURE_NAME", name)
}

/// A fixture server that exits at start-up.
pub fn broken(name: &str) -> ServerConfig {
    fixture(name, "always broken", &["--crash-on-start"])
}

/// A fixture server that takes `secs` to start (a shell sleeps, then execs the fixture).
#[cfg(unix)]
pub fn slow_start(name: &str, secs: f64) -> ServerConfig {
    ServerConfig::stdio(name, "sh")
        .with_args([
            "-c".to_string(),
            format!("sleep {secs}; exec \"$0\""),
            fixture_path().to_string(),
        ])
        .with_description("slow to start")
}

/// Degradation with tiny delays, so tests do not wait.
pub fn quick_degradation(extra_retries: u32) -> Degradation {
    Degradation::default()
        .extra_retries(extra_retries)
        .base_delay(Duration::from_millis(1))
        .max_delay(Duration::from_millis(4))
}

/// Waits (bounded) for an event matching `pred`.
pub fn wait_for(
    rx: &std::sync::mpsc::Receiver<HubEvent>,
    pred: impl Fn(&HubEvent) -> bool,
) -> HubEvent {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) if pred(&e) => return e,
            Ok(_) => continue,
            Err(e) => panic!("no matching hub event within 10 s: {e}"),
        }
    }
}

/// Entries of a /proc directory.
pub fn count_dir(path: &str) -> usize {
    std::fs::read_dir(path).map(|d| d.count()).unwrap_or(0)
}

/// Pids of this process's children, with their state letter.
pub fn children() -> Vec<(u32, String)> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let f: Vec<&str> = stat.rsplit(')').next()?.split_whitespace().collect();
            (f.len() > 1 && f[1] == me).then(|| (pid, f[0].to_string()))
        })
        .collect()
}

/// Names (from `HUB_FIXTURE_NAME`) of the live fixture children of this process.
pub fn live_fixture_names() -> Vec<String> {
    let mut names: Vec<String> = children()
        .into_iter()
        .filter(|(_, state)| state != "Z")
        .filter_map(|(pid, _)| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
            env.split(|b| *b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok())
                .find_map(|kv| kv.strip_prefix("HUB_FIXTURE_NAME=").map(str::to_owned))
        })
        .collect();
    names.sort();
    names
}
