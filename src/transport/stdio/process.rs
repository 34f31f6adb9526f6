//! The server process: spawned without a shell in its own process group, ended politely
//! (stdin closed, then SIGTERM, then SIGKILL, each after a grace period) and reaped, its group
//! swept so no grandchild survives. While it ends, the closing thread reads its output (the
//! poller thread no longer watches it), so the exit wakes that thread alone.

use std::os::fd::{AsFd, BorrowedFd};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use polling::Poller;
use rustix::event::{PollFd, PollFlags};
use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

use super::pipes::{Conn, ReadSide};
use super::sandbox::Prepared;
use super::{command_line, launch::inherited_env, StdioTransport};
use crate::config::StdioConfig;
use crate::error::Error;
use crate::protocol::slot::HeldWakes;
use crate::sync::lock;

/// How long `close` waits at each step (stdin closed, then SIGTERM) before escalating.
const GRACE: Duration = Duration::from_secs(2);
/// How long a server we gave up a request to gets to end on the close of its stdin before
/// SIGTERM: enough for one that is reading to take in what we sent last (a cancellation) and
/// exit; one busy with the abandoned work is not reading, and waiting longer is lost time.
const BUSY_GRACE: Duration = Duration::from_millis(500);
/// How long `close` waits for the child to exit before it reads the child's output as it
/// comes (see `wait_for`): output that does not fit in the pipes waits that long at most.
const QUIET: Duration = Duration::from_millis(10);
/// The buffer for reading a closing child's stderr.
const STDERR_CHUNK: usize = 16 * 1024;

/// A child's stdin, stdout and stderr.
pub(super) type Pipes = (ChildStdin, ChildStdout, ChildStderr);

/// Spawns the server: no shell, the allow-listed environment (or all of it when asked), its own
/// process group; returns the process, its group and its three pipes.
pub(super) fn spawn(
    server: &str,
    cfg: &StdioConfig,
    sandbox: Option<&Prepared>,
) -> Result<(Proc, Option<Pid>, Pipes), Error> {
    let mut cmd = Command::new(&cfg.command);
    cmd.args(&cfg.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !cfg.inherit_env {
        cmd.env_clear();
        for name in inherited_env() {
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
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    if let Some(prepared) = sandbox {
        cmd.envs(prepared.env.iter().map(|(k, v)| (k, v)));
        let setup = Arc::clone(&prepared.setup);
        // SAFETY: the closure runs in the child between fork and exec, where only
        // async-signal-safe work is sound. `ChildSetup::apply` makes system calls only, on
        // memory prepared before the fork (see `sandbox/landlock.rs`); the `Arc` is only read.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || setup.apply());
        }
    }
    let mut child = cmd.spawn().map_err(|source| Error::Spawn {
        server: server.to_owned(),
        command: command_line(cfg),
        source: match sandbox {
            // The sandbox is applied before exec: a command outside the paths it grants (or a
            // library it loads) cannot run.
            Some(_) => {
                let hint = match source.raw_os_error() {
                    Some(e) if e == rustix::io::Errno::ACCESS.raw_os_error() => {
                        "in its sandbox: the command, its interpreter and libraries must lie in \
                         the paths the sandbox grants"
                    }
                    _ => "the sandbox could not be applied, or the command not run in it",
                };
                std::io::Error::new(source.kind(), format!("{source} ({hint})"))
            }
            None => source,
        },
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
    match wait_for(&mut c, Duration::from_millis(50), None) {
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

/// A closing child's output, read by the closing thread itself while it waits for the exit:
/// the exit then wakes only that thread, not the poller thread too. stdout is read here when no
/// caller reads it (`stdout` holds it, see `Conn::lead_to_close`); stderr always (its lines are
/// logged as the poller thread logs them).
struct Output<'a> {
    conn: &'a Conn,
    poller: &'a Poller,
    stdout: Option<MutexGuard<'a, ReadSide>>,
    stderr: Option<ChildStderr>,
    chunk: Vec<u8>,
}

impl<'a> Output<'a> {
    /// Takes the output out of the poller (stdout only when no caller reads it). Before stdin
    /// closes: a child woken by its stdin closing may run (and exit) before this thread runs
    /// again, and the poller thread would be woken by its pipes ending.
    fn take(conn: &'a Conn, poller: &'a Poller) -> Self {
        let stdout = conn
            .reader
            .try_lock()
            .ok()
            .filter(|r| conn.lead_to_close(r, poller));
        Output {
            conn,
            poller,
            stdout,
            stderr: conn.take_stderr(poller),
            chunk: Vec::new(),
        }
    }

    fn stdout_fd(&self) -> Option<BorrowedFd<'_>> {
        self.stdout.as_ref()?.stdout.as_ref().map(|p| p.as_fd())
    }

    /// Handles what `poll` said of stdout and stderr.
    fn ready(&mut self, stdout: PollFlags, stderr: PollFlags) {
        let ended = PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL;
        if let Some(r) = self.stdout.as_mut() {
            if stdout.contains(PollFlags::IN) {
                let held = HeldWakes::hold();
                let _ = self.conn.read_available(r, self.poller);
                drop(held);
            } else if stdout.intersects(ended) {
                // Closed, and nothing left in it.
                drop(r.stdout.take());
            }
        }
        if let Some(pipe) = self.stderr.as_mut() {
            if stderr.contains(PollFlags::IN) {
                if self.chunk.is_empty() {
                    self.chunk = vec![0; STDERR_CHUNK];
                }
                if !self.conn.read_stderr(pipe, &mut self.chunk) {
                    self.stderr = None;
                }
            } else if stderr.intersects(ended) {
                self.conn.stderr_ended();
                self.stderr = None;
            }
        }
    }

    /// The child has exited (or was killed): what it wrote last is read, stdout goes back to
    /// the callers (closed) and stderr is closed.
    fn finish(mut self) {
        if let Ok((_, stdout, stderr)) = poll_output(None, Some(&self), Duration::ZERO) {
            self.ready(stdout, stderr);
        }
        if let Some(mut r) = self.stdout.take() {
            self.conn.stop_leading_to_close(&mut r, self.poller);
        }
    }
}

/// Waits up to `limit` for the child to exit, and reaps it; reads `out` meanwhile.
///
/// With a pidfd, the output is watched only after [`QUIET`]: a child that exits at once (most
/// do when their stdin closes) then wakes this thread once, at its exit, rather than once for
/// each pipe it closes on the way. Its output waits in the pipes meanwhile, read when it has
/// exited (see [`Output::finish`]), or from `QUIET` on.
fn wait_for(
    proc: &mut Proc,
    limit: Duration,
    mut out: Option<&mut Output<'_>>,
) -> Option<ExitStatus> {
    let start = Instant::now();
    let deadline = crate::deadline::add(start, limit);
    let quiet_until = match proc.pidfd {
        Some(_) => crate::deadline::add(start, QUIET.min(limit)),
        None => start,
    };
    // Without a pidfd, process exit has no descriptor to wait on: poll with short, growing
    // pauses.
    let mut pause = Duration::from_micros(200);
    loop {
        if proc.pidfd.is_none() {
            if let Ok(Some(status)) = proc.child.try_wait() {
                return Some(status);
            }
        }
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            return proc.child.try_wait().ok().flatten();
        }
        let quiet = now < quiet_until;
        let wait = if quiet {
            quiet_until - now
        } else if proc.pidfd.is_some() {
            left
        } else {
            let p = pause.min(left);
            pause = (pause * 2).min(Duration::from_millis(20));
            p
        };
        let watched = if quiet { None } else { out.as_deref() };
        let pidfd = proc.pidfd.as_ref().map(|p| p.as_fd());
        let (exited, stdout, stderr) = match poll_output(pidfd, watched, wait) {
            Ok(ready) => ready,
            Err(rustix::io::Errno::INTR) => continue,
            // A failed poll: ask once more, without waiting.
            Err(_) => return proc.child.try_wait().ok().flatten(),
        };
        if let Some(o) = out.as_deref_mut() {
            o.ready(stdout, stderr);
        }
        if exited {
            return proc.child.try_wait().ok().flatten();
        }
    }
}

/// Waits up to `wait` for `pidfd` (the exit) or the open pipes of `out`; returns whether the
/// child exited and what stdout and stderr have. Sleeps when there is nothing to watch.
fn poll_output(
    pidfd: Option<BorrowedFd<'_>>,
    out: Option<&Output<'_>>,
    wait: Duration,
) -> rustix::io::Result<(bool, PollFlags, PollFlags)> {
    let mut fds = Vec::with_capacity(3);
    let pid_at = at(&mut fds, pidfd);
    let (out_at, err_at) = match out {
        Some(o) => (
            at(&mut fds, o.stdout_fd()),
            at(&mut fds, o.stderr.as_ref().map(|p| p.as_fd())),
        ),
        None => (None, None),
    };
    if fds.is_empty() {
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        return Ok((false, PollFlags::empty(), PollFlags::empty()));
    }
    let timeout = rustix::event::Timespec::try_from(wait).ok();
    rustix::event::poll(&mut fds, timeout.as_ref())?;
    let flags = |i: Option<usize>| i.map_or(PollFlags::empty(), |i| fds[i].revents());
    Ok((!flags(pid_at).is_empty(), flags(out_at), flags(err_at)))
}

/// Adds `fd` (when there is one) to `fds`, for reading; returns its index.
fn at<'f>(fds: &mut Vec<PollFd<'f>>, fd: Option<BorrowedFd<'f>>) -> Option<usize> {
    fd.map(|fd| {
        fds.push(PollFd::from_borrowed_fd(fd, PollFlags::IN));
        fds.len() - 1
    })
}

impl StdioTransport {
    /// Ends the child as the spec asks: stdin closed, then SIGTERM, then SIGKILL, each after a
    /// grace period; then the process group is swept so no grandchild survives. The child's
    /// output is read by this thread meanwhile (see [`Output`]). With `busy` (we gave up on
    /// work it has in hand), SIGTERM follows the closing of stdin after [`BUSY_GRACE`] only: a
    /// server busy with a request is not reading its stdin and would notice its end only after
    /// that work.
    pub(super) fn end_process(&self, busy: bool) -> Option<ExitStatus> {
        let mut out = Output::take(&self.conn, self.poller.os_poller());
        self.poller.close_stdin(&self.conn);
        let mut child = lock(&self.child);
        let first_wait = if busy { BUSY_GRACE } else { GRACE };
        let mut status = wait_for(&mut child, first_wait, Some(&mut out));
        if status.is_none() {
            log::debug!(
                "server `{}`: still running {first_wait:?} after stdin closed; sending SIGTERM",
                self.server
            );
            self.signal_group(Signal::TERM);
            status = wait_for(&mut child, GRACE, Some(&mut out));
        }
        if status.is_none() {
            log::warn!("server `{}`: ignored SIGTERM; sending SIGKILL", self.server);
            self.signal_group(Signal::KILL);
            let _ = child.child.kill();
            status = child.child.wait().ok();
        }
        drop(child);
        out.finish();
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
