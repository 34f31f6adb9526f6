//! The server process: spawned without a shell in its own process group, ended politely
//! (stdin closed, then SIGTERM, then SIGKILL, each after a grace period) and reaped, its group
//! swept so no grandchild survives.

use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

use super::{command_line, StdioTransport, INHERITED_ENV};
use crate::config::StdioConfig;
use crate::error::Error;
use crate::sync::lock;

/// How long `close` waits at each step (stdin closed, then SIGTERM) before escalating.
const GRACE: Duration = Duration::from_secs(2);

/// A child's stdin, stdout and stderr.
pub(super) type Pipes = (ChildStdin, ChildStdout, ChildStderr);

/// Spawns the server: no shell, the allow-listed environment (or all of it when asked), its own
/// process group; returns the process, its group and its three pipes.
pub(super) fn spawn(server: &str, cfg: &StdioConfig) -> Result<(Proc, Option<Pid>, Pipes), Error> {
    let mut cmd = Command::new(&cfg.command);
    cmd.args(&cfg.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !cfg.inherit_env {
        cmd.env_clear();
        for name in INHERITED_ENV {
            if let Some(v) = std::env::var_os(name) {
                // Bash exported functions are never passed on.
                if !v.to_string_lossy().starts_with("()") {
                    cmd.env(name, v);
                }
            }
        }
    }
    cmd.envs(&cfg.env);
    if let Some(cwd) = &cfg.cwd {
        cmd.current_dir(cwd);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|source| Error::Spawn {
        server: server.to_owned(),
        command: command_line(cfg),
        source,
    })?;
    let pgid = Pid::from_raw(child.id() as i32);
    let pipes = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
        (Some(i), Some(o), Some(e)) => (i, o, e),
        _ => unreachable!("all three pipes were requested"),
    };
    // A pidfd (Linux 5.3+) lets `close` wait for the exit without polling; without one,
    // `wait_for` falls back to short pauses.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let pidfd = pgid.and_then(|pid| {
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
    });
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let pidfd = None;
    Ok((Proc { child, pidfd }, pgid, pipes))
}

/// Describes how the child ended, waiting briefly for it: stdout closes as the process exits.
/// Runs on the poller thread, so it never waits for a `close` in progress (which holds the
/// child) and waits at most a few milliseconds for the exit itself.
pub(super) fn describe_exit(child: &Mutex<Proc>) -> String {
    let Ok(mut c) = child.try_lock() else {
        return "the server process is being closed".to_owned();
    };
    match wait_for(&mut c, Duration::from_millis(50)) {
        Some(status) => format!("the server process {}", status_text(status)),
        None => "the server closed its stdout".to_owned(),
    }
}

pub(super) fn status_text(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("was killed by signal {sig}");
        }
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_owned(),
    }
}

/// The child and, where the OS has them, a descriptor that becomes readable when it exits.
pub(crate) struct Proc {
    child: Child,
    pidfd: Option<std::os::fd::OwnedFd>,
}

impl Proc {
    /// Ends the process at once (the connection could not be set up) and reaps it.
    pub(super) fn kill_and_reap(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to `limit` for the child to exit, and reaps it.
fn wait_for(proc: &mut Proc, limit: Duration) -> Option<ExitStatus> {
    if let Ok(Some(status)) = proc.child.try_wait() {
        return Some(status);
    }
    let deadline = crate::deadline::after(limit);
    if let Some(pidfd) = &proc.pidfd {
        loop {
            let now = Instant::now();
            let wait =
                rustix::event::Timespec::try_from(deadline.saturating_duration_since(now)).ok();
            let mut fds = [rustix::event::PollFd::new(
                pidfd,
                rustix::event::PollFlags::IN,
            )];
            if let Err(rustix::io::Errno::INTR) = rustix::event::poll(&mut fds, wait.as_ref()) {
                continue;
            }
            // Readable (exited), timed out, or the poll failed: either way, ask once more.
            return proc.child.try_wait().ok().flatten();
        }
    }
    // No pidfd: process exit has no descriptor to wait on, so poll with short, growing pauses.
    let mut pause = Duration::from_micros(200);
    loop {
        if let Ok(Some(status)) = proc.child.try_wait() {
            return Some(status);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

impl StdioTransport {
    /// Ends the child as the spec asks: stdin closed, then SIGTERM, then SIGKILL, each after a
    /// grace period; then the process group is swept so no grandchild survives.
    pub(super) fn end_process(&self) -> Option<ExitStatus> {
        self.poller.close_stdin(&self.conn);
        let mut child = lock(&self.child);
        let mut status = wait_for(&mut child, GRACE);
        if status.is_none() {
            log::debug!(
                "server `{}`: still running {GRACE:?} after stdin closed; sending SIGTERM",
                self.server
            );
            self.signal_group(Signal::TERM);
            status = wait_for(&mut child, GRACE);
        }
        if status.is_none() {
            log::warn!("server `{}`: ignored SIGTERM; sending SIGKILL", self.server);
            self.signal_group(Signal::KILL);
            let _ = child.child.kill();
            status = child.child.wait().ok();
        }
        drop(child);
        self.sweep_group();
        status
    }

    fn signal_group(&self, sig: Signal) {
        if let Some(pgid) = self.pgid {
            let _ = kill_process_group(pgid, sig);
        }
    }

    /// After the server exited, other members of its group (grandchildren such as the real
    /// server behind `npx`) may remain: ask them to stop, then make sure.
    fn sweep_group(&self) {
        let Some(pgid) = self.pgid else { return };
        if !group_alive(pgid) {
            return;
        }
        let _ = kill_process_group(pgid, Signal::TERM);
        let deadline = Instant::now() + GRACE;
        // No descriptor tells when a whole group has gone: poll with short, growing pauses.
        let mut pause = Duration::from_micros(500);
        while group_alive(pgid) {
            if Instant::now() >= deadline {
                log::warn!(
                    "server `{}`: processes of its group ignored SIGTERM; sending SIGKILL",
                    self.server
                );
                let _ = kill_process_group(pgid, Signal::KILL);
                return;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

/// Whether any process of the group still runs. Where `/proc` is readable, zombies (dead, only
/// waiting for their new parent to reap them) do not count; elsewhere any member does.
fn group_alive(pgid: Pid) -> bool {
    if test_kill_process_group(pgid).is_err() {
        return false;
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    let pgid = pgid.as_raw_nonzero().get().to_string();
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // After the command's closing parenthesis: state, ppid, pgrp, ...
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            fields.len() > 2 && fields[2] == pgid && fields[0] != "Z"
        })
}
