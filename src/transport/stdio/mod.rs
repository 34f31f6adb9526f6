//! The stdio transport: a child process spoken to over its stdin and stdout.
//!
//! ```text
//!   open(): spawn (no shell, allow-listed env, own process group) ──> register pipes with poller
//!   send(): write the line (queued in the poller when the pipe is full)
//!   close(): close stdin ─2 s─> SIGTERM group ─2 s─> SIGKILL group ──> reap, sweep the group
//! ```
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the transport handle: open, send, close |
//! | `process.rs` | the child process: spawn, end, reap, sweep its group |
//! | `pipes.rs` | one child's pipes: stdout framed and routed, stderr kept as a tail |
//! | `stdin.rs` | what callers write, coalesced; what the poller finishes writing |
//! | `lead.rs` | who reads stdout: a waiting caller (leader/follower) or the poller thread |
//! | `poller.rs` | [`ConnectionPoller`]: one thread serving the pipes of many children |
//! | `frame.rs` | what a child writes, made into messages, whoever reads it (every platform) |
//! | `sandbox/` | the confinement of a sandboxed server: Landlock, rlimits, the proxy |
//! | `launch.rs` | the Windows rules for finding a command and passing a batch file's arguments |
//! | `windows/` | the transport on Windows: a thread per pipe, a Job Object per server |
//!
//! All but `frame.rs`, `launch.rs` and `windows/` are Unix-only.

mod frame;
mod launch;
#[cfg(unix)]
mod lead;
#[cfg(unix)]
mod pipes;
#[cfg(unix)]
mod poller;
#[cfg(unix)]
mod process;
pub(crate) mod sandbox;
#[cfg(unix)]
mod stdin;
#[cfg(windows)]
mod windows;

#[cfg(unix)]
use crate::sync::lock;
#[cfg(unix)]
use std::sync::atomic::{AtomicBool, Ordering};
#[cfg(unix)]
use std::sync::{Arc, Mutex};
#[cfg(unix)]
use std::time::{Duration, Instant};

#[cfg(unix)]
use rustix::process::Pid;

#[cfg(unix)]
use self::pipes::Conn;
#[cfg(unix)]
pub use self::poller::ConnectionPoller;
#[cfg(unix)]
use self::process::{describe_exit, status_text, Proc};
#[cfg(windows)]
pub(crate) use self::windows::open;
#[cfg(windows)]
pub use self::windows::ConnectionPoller;
#[cfg(unix)]
use super::outgoing::Kind;
#[cfg(unix)]
use super::{Caller, Closing, Leaving, Outgoing, Sink, StderrTail, Transport};
#[cfg(unix)]
use crate::config::Limits;
use crate::config::StdioConfig;
use crate::error::Error;
#[cfg(unix)]
use crate::error::{ConnectError, ConnectErrorKind};
#[cfg(unix)]
use crate::protocol::jsonrpc::RequestId;
#[cfg(unix)]
use crate::protocol::session::Event;
#[cfg(unix)]
use crossbeam_channel::RecvTimeoutError;

/// What became of a write to a child's stdin.
pub(crate) enum WriteOutcome {
    /// Written, or queued for the poller (or the caller writing now) to finish.
    Written,
    /// stdin is closed (the child exited or the connection was closed).
    Closed,
    /// Too much was already queued (`queued` bytes; the cap is `cap`) and the deadline passed.
    TimedOut { queued: usize, cap: usize },
}

/// How a connection the client closed ended, with the server's exit (`status`: how the process
/// ended, in words) when it was seen.
fn closed_by_client(status: Option<String>) -> String {
    match status {
        Some(s) => format!("closed by the client; the server process {s}"),
        None => "closed by the client".to_owned(),
    }
}

/// The error for a write that did not go through; `ending` waits briefly for the end of the
/// connection to be reported (the exit and the last stderr lines), `tail` gives the stderr tail.
fn write_failed(
    server: &str,
    outcome: WriteOutcome,
    ending: impl FnOnce() -> Option<(String, String)>,
    tail: impl FnOnce() -> String,
) -> Result<(), Error> {
    match outcome {
        WriteOutcome::Written => Ok(()),
        WriteOutcome::Closed => {
            // The process is ending: its exit (status, last stderr lines) is reported in a
            // moment and explains more than "stdin is closed".
            let (detail, stderr_tail) =
                ending().unwrap_or_else(|| ("the server's stdin is closed".to_owned(), tail()));
            Err(Error::Closed {
                server: server.to_owned(),
                detail,
                stderr_tail,
            })
        }
        WriteOutcome::TimedOut { queued, cap } => Err(Error::Transport {
            server: server.to_owned(),
            status: None,
            detail: format!(
                "the server is not reading its stdin: {queued} bytes wait for it, and more \
                 would pass the {cap} byte limit (`max_queued_write_bytes`)"
            ),
            source: None,
        }),
    }
}

#[cfg(unix)]
pub(crate) struct StdioTransport {
    server: Arc<str>,
    // Drop order is significant: the connection is unregistered (pipes deleted from the poller,
    // then closed) in `close`, before the poller handle may go away.
    conn: Arc<Conn>,
    poller: ConnectionPoller,
    child: Arc<Mutex<Proc>>,
    pgid: Option<Pid>,
    closed: AtomicBool,
    /// Set once we gave up on a request (sent `notifications/cancelled`) or on the connection
    /// itself ([`Closing::Abort`]): the server is busy with work nobody waits for, so closing
    /// waits only briefly for it to notice the end of its stdin before SIGTERM.
    gave_up: AtomicBool,
    /// The sandbox's proxy, stopped (its threads joined) once the process has ended.
    proxy: Mutex<Option<sandbox::proxy::Proxy>>,
    /// What the sandbox applied, for a sandboxed server.
    sandbox: Option<crate::config::SandboxReport>,
    /// A sandboxed server's temporary folder, removed once the process has ended.
    temp: Mutex<Option<sandbox::PrivateTemp>>,
}

/// The command line, for messages.
pub(crate) fn command_line(cfg: &StdioConfig) -> String {
    let mut s = cfg.command.clone();
    for a in &cfg.args {
        s.push(' ');
        if a.contains(' ') {
            s.push_str(&format!("{a:?}"));
        } else {
            s.push_str(a);
        }
    }
    s
}

/// Spawns the server and registers its pipes with `poller`; the lines it writes to stderr are
/// kept in `tail`.
#[cfg(unix)]
pub(crate) fn open(
    server: &str,
    cfg: &StdioConfig,
    sandbox: Option<&crate::config::Sandbox>,
    limits: &Limits,
    poller: &ConnectionPoller,
    sink: Arc<dyn Sink>,
    tail: StderrTail,
) -> Result<Arc<StdioTransport>, Error> {
    let prepared = match sandbox {
        Some(s) => Some(sandbox::prepare(server, cfg, s)?),
        None => None,
    };
    let (proc, pgid, pipes) = process::spawn(server, cfg, prepared.as_ref())?;
    let (proxy, report, temp) = match prepared {
        Some(p) => (p.proxy, Some(p.report), p.temp),
        None => (None, None, None),
    };
    let child = Arc::new(Mutex::new(proc));
    let probe_child = Arc::clone(&child);
    let exit_probe = Box::new(move || describe_exit(&probe_child));
    let server: Arc<str> = server.into();
    let conn = match poller.register(Arc::clone(&server), pipes, limits, sink, exit_probe, tail) {
        Ok(conn) => conn,
        Err(e) => {
            lock(&child).kill_and_reap();
            let target = format!("`{}`", command_line(cfg));
            let detail = format!("could not watch the pipes of {target}: {e}");
            return Err(
                ConnectError::new(&server, &target, ConnectErrorKind::Unreachable, detail)
                    .with_source(e)
                    .into(),
            );
        }
    };
    Ok(Arc::new(StdioTransport {
        server,
        conn,
        poller: poller.clone(),
        child,
        pgid,
        closed: AtomicBool::new(false),
        gave_up: AtomicBool::new(false),
        proxy: Mutex::new(proxy),
        sandbox: report,
        temp: Mutex::new(temp),
    }))
}

#[cfg(unix)]
impl StdioTransport {
    /// What the sandbox applied, for a sandboxed server.
    pub(crate) fn sandbox_report(&self) -> Option<crate::config::SandboxReport> {
        self.sandbox.clone()
    }
}

#[cfg(unix)]
impl Transport for StdioTransport {
    fn send(&self, msg: Outgoing) -> Result<(), Error> {
        if msg.kind == Kind::Notification && msg.method() == "notifications/cancelled" {
            self.gave_up.store(true, Ordering::Relaxed);
        }
        // A request's caller waits for its answer next: stdout is handed to it before the write
        // (when nobody reads it), so a quick answer does not wake the poller thread first.
        let claim = match (msg.kind, &msg.id) {
            (Kind::Request, Some(RequestId::Number(id))) => {
                self.conn.claim_for(self.poller.os_poller(), *id);
                Some(*id)
            }
            _ => {
                self.conn.watch_if_unclaimed(self.poller.os_poller());
                None
            }
        };
        let outcome = self
            .poller
            .write(&self.conn, msg.frame, msg.deadline, claim);
        if let (Some(id), false) = (claim, matches!(outcome, WriteOutcome::Written)) {
            self.conn.unclaim(self.poller.os_poller(), id);
        }
        write_failed(
            &self.server,
            outcome,
            || self.conn.wait_end(Duration::from_millis(500)),
            || self.conn.stderr_tail(),
        )
    }

    fn wait<'a>(
        &'a self,
        caller: &Caller<'a>,
        deadline: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        self.conn
            .wait(self.poller.os_poller(), caller, self, deadline)
    }

    /// A request was given up (its slot filled): the caller reading stdout, whichever it is,
    /// looks at its slot again at once.
    fn interrupt(&self, _id: i64) {
        if let Some(Some(w)) = self.conn.waker.get() {
            w.wake();
        }
    }

    /// A connection given up before it was usable ([`Closing::Abort`]): its process gets
    /// SIGTERM soon after its stdin is closed.
    fn close(&self, how: Closing) -> Result<(), Error> {
        if how == Closing::Abort {
            self.gave_up.store(true, Ordering::Relaxed);
        }
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let status = self.end_process(self.gave_up.load(Ordering::Relaxed));
        // The process group is gone: nothing uses the proxy any more.
        if let Some(mut proxy) = lock(&self.proxy).take() {
            proxy.stop();
        }
        drop(lock(&self.temp).take());
        self.poller.unregister(&self.conn);
        let detail = closed_by_client(status.map(status_text));
        self.conn.end(detail);
        Ok(())
    }
}

/// A caller that followed, or was handed stdout and did not lead, passes its role on as it
/// stops waiting (see `lead.rs`).
#[cfg(unix)]
impl Leaving for StdioTransport {
    fn leave(&self, caller: &Caller<'_>) {
        self.conn.stop_waiting(self.poller.os_poller(), caller)
    }
}

#[cfg(unix)]
impl Drop for StdioTransport {
    fn drop(&mut self) {
        let _ = self.close(Closing::Graceful);
    }
}
