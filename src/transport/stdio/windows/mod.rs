//! The stdio transport on Windows: the same contract as on Unix, served by threads.
//!
//! ```text
//!   open(): resolve the command (PATHEXT, batch shims) ─> spawn suspended ─> Job Object ─> resume
//!   per server: `mcp-stdout` reads and frames stdout ─> Sink (responses to their callers)
//!               `mcp-stderr` keeps the last lines of stderr (and logs them)
//!               `mcp-stdin`  writes what callers queued (at most `max_queued_write_bytes`)
//!   wait(): the caller waits on its own slot, up to its deadline
//!   close(): close stdin ─2 s─> terminate the job (the server and everything it started)
//!            ─> reap ─> join the three threads
//! ```
//!
//! Windows cannot wait on anonymous pipes together (`polling` serves sockets there), so each
//! server's pipes get threads of their own: three per server, against none per server on Unix
//! (where one poller thread serves every server). A caller never blocks on a pipe: its write is
//! queued for `mcp-stdin` (a server that stops reading makes the writer wait, up to its
//! deadline, once the queue is full) and its answer comes through its slot.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the transport handle and [`ConnectionPoller`]'s Windows form |
//! | `conn.rs` | one server's pipes: the three threads, the stdin queue |
//! | `job.rs` | the Job Object: spawn suspended, assign, resume, terminate |

mod conn;
mod job;

use std::collections::HashMap;
use std::io;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::RecvTimeoutError;

use self::conn::Conn;
use self::job::Job;
use super::frame::Framer;
use super::launch;
use super::{closed_by_client, command_line, write_failed};
use crate::config::{Limits, StdioConfig};
use crate::error::Error;
use crate::protocol::session::Event;
use crate::sync::lock;
use crate::transport::outgoing::Kind;
use crate::transport::{Caller, Closing, Outgoing, Sink, StderrTail, Transport};

/// How long `close` waits for the server to exit once its stdin is closed, before it
/// terminates the job.
const GRACE: Duration = Duration::from_secs(2);
/// The same for a server we gave up a request to (see the Unix transport's `BUSY_GRACE`).
const BUSY_GRACE: Duration = Duration::from_millis(500);
/// How long `close` waits for the job's processes to be gone, and then for the pipe threads.
const REAP: Duration = Duration::from_secs(5);

/// The register of the stdio servers of one or more clients.
///
/// On Unix, one thread (`mcp-poller`) serves the pipes of every registered server. On Windows,
/// where anonymous pipes cannot be waited on together, each server's pipes are served by three
/// threads of its own (`mcp-stdout`, `mcp-stderr`, `mcp-stdin`), started with the server and
/// joined when it closes; the poller keeps the register, and [`stop`](Self::stop) ends every
/// registered server's pending requests, as on Unix.
///
/// ```
/// use mcp_blocking::ConnectionPoller;
/// let poller = ConnectionPoller::new();
/// poller.start()?;
/// assert!(poller.is_running());
/// poller.stop(std::time::Duration::from_secs(5))?;
/// assert!(!poller.is_running());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct ConnectionPoller {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    running: AtomicBool,
    next_id: AtomicUsize,
    conns: Mutex<HashMap<usize, Weak<Conn>>>,
}

impl std::fmt::Debug for ConnectionPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionPoller")
            .field("running", &self.is_running())
            .field("connections", &self.connection_count())
            .finish()
    }
}

impl ConnectionPoller {
    /// A poller, not yet running (registering a server starts it).
    ///
    /// # Panics
    /// Never on Windows (the signature matches Unix, where the OS may refuse a poller).
    pub fn new() -> Self {
        Self::default()
    }

    /// Like [`new`](Self::new).
    ///
    /// # Errors
    /// None on Windows.
    pub fn try_new() -> io::Result<Self> {
        Ok(Self::new())
    }

    /// The poller of every client given none.
    pub(crate) fn process_default() -> io::Result<Self> {
        static DEFAULT: Mutex<Option<ConnectionPoller>> = Mutex::new(None);
        Ok(lock(&DEFAULT).get_or_insert_with(Self::new).clone())
    }

    /// Marks the poller running. Idempotent.
    ///
    /// # Errors
    /// None on Windows (the servers' threads start with the servers).
    pub fn start(&self) -> io::Result<&Self> {
        self.shared.running.store(true, Ordering::SeqCst);
        Ok(self)
    }

    /// Whether the poller is running.
    pub fn is_running(&self) -> bool {
        self.shared.running.load(Ordering::SeqCst)
    }

    /// How many servers are registered.
    pub fn connection_count(&self) -> usize {
        lock(&self.shared.conns)
            .values()
            .filter(|c| c.strong_count() > 0)
            .count()
    }

    /// Fails every pending request of every registered server with
    /// [`Error::Closed`](crate::Error::Closed) ("the connection poller was stopped").
    ///
    /// # Errors
    /// None on Windows: nothing is waited for.
    pub fn stop(&self, _timeout: Duration) -> io::Result<&Self> {
        self.shared.running.store(false, Ordering::SeqCst);
        let conns: Vec<Arc<Conn>> = lock(&self.shared.conns)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for conn in conns {
            conn.framer
                .end("the connection poller was stopped".to_owned());
        }
        Ok(self)
    }

    fn register(&self, conn: &Arc<Conn>) {
        let mut conns = lock(&self.shared.conns);
        conns.retain(|_, c| c.strong_count() > 0);
        conns.insert(conn.id, Arc::downgrade(conn));
        drop(conns);
        self.shared.running.store(true, Ordering::SeqCst);
    }

    fn unregister(&self, conn: &Conn) {
        lock(&self.shared.conns).remove(&conn.id);
    }
}

pub(crate) struct StdioTransport {
    server: Arc<str>,
    conn: Arc<Conn>,
    poller: ConnectionPoller,
    child: Arc<Mutex<Child>>,
    job: Job,
    closed: AtomicBool,
    /// Set once we gave up on a request or on the connection: closing waits only briefly.
    gave_up: AtomicBool,
    /// What a best-effort sandbox reported (nothing applied on Windows).
    sandbox: Option<crate::config::SandboxReport>,
}

impl StdioTransport {
    /// What the sandbox applied, for a server that asked for one.
    pub(crate) fn sandbox_report(&self) -> Option<crate::config::SandboxReport> {
        self.sandbox.clone()
    }
}

/// Spawns the server in a Job Object of its own and starts the threads serving its pipes; the
/// lines it writes to stderr are kept in `tail`.
pub(crate) fn open(
    server: &str,
    cfg: &StdioConfig,
    sandbox: Option<&crate::config::Sandbox>,
    limits: &Limits,
    poller: &ConnectionPoller,
    sink: Arc<dyn Sink>,
    tail: StderrTail,
) -> Result<Arc<StdioTransport>, Error> {
    // Nothing confines a process here: `prepare` refuses, or (best effort) reports it all.
    let sandbox = match sandbox {
        Some(s) => Some(super::sandbox::prepare(server, cfg, s)?.report),
        None => None,
    };
    let spawn_error = |source: io::Error| Error::Spawn {
        server: server.to_owned(),
        command: command_line(cfg),
        source,
    };
    let mut cmd = command(server, cfg)?;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    {
        use std::os::windows::process::CommandExt;
        use windows_sys::Win32::System::Threading::{CREATE_NO_WINDOW, CREATE_SUSPENDED};
        // Suspended until it is in its job; no console window of its own (a server is not
        // an interactive program, and a GUI host has no console to share).
        cmd.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
    }
    let job = Job::new().map_err(spawn_error)?;
    let mut child = cmd.spawn().map_err(spawn_error)?;
    if let Err(e) = job.assign(&child).and_then(|()| job::resume(child.id())) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(spawn_error(io::Error::new(
            e.kind(),
            format!("could not start the server in a Job Object of its own: {e}"),
        )));
    }
    let (stdin, stdout, stderr) =
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => unreachable!("all three pipes were requested"),
        };
    let child = Arc::new(Mutex::new(child));
    let probe_child = Arc::clone(&child);
    let exit_probe = Box::new(move || describe_exit(&probe_child));
    let server: Arc<str> = server.into();
    let id = poller.shared.next_id.fetch_add(1, Ordering::Relaxed);
    let framer = Framer::new(Arc::clone(&server), sink, limits, tail);
    let conn = match Conn::start(
        id,
        framer,
        limits,
        exit_probe,
        (stdin, stdout, stderr),
        &job,
    ) {
        Ok(conn) => conn,
        Err(e) => {
            // The job was terminated: the process is gone or going.
            let _ = job::wait_exit(&lock(&child), REAP);
            return Err(spawn_error(e));
        }
    };
    poller.register(&conn);
    Ok(Arc::new(StdioTransport {
        server,
        conn,
        poller: poller.clone(),
        child,
        job,
        closed: AtomicBool::new(false),
        gave_up: AtomicBool::new(false),
        sandbox,
    }))
}

/// The command to run, as Windows users write it: `npx` found as `npx.cmd` through `PATHEXT`
/// (in the `PATH` the server gets), a batch file's arguments checked against what `cmd.exe`
/// would reinterpret (std quotes them), the allow-listed environment.
fn command(server: &str, cfg: &StdioConfig) -> Result<Command, Error> {
    let line = command_line(cfg);
    let path = launch::child_var("PATH", &cfg.env, std::env::var_os("PATH"));
    let pathext = launch::child_var("PATHEXT", &cfg.env, std::env::var_os("PATHEXT"));
    let resolved = launch::resolve_command(
        &cfg.command,
        cfg.cwd.as_deref(),
        path.as_deref(),
        pathext.as_deref(),
        &|p: &std::path::Path| p.is_file(),
    )
    .map_err(|e| e.into_spawn_error(server, line.clone()))?;
    if resolved.kind == launch::Kind::Batch {
        // std quotes a batch file's arguments for cmd.exe itself (and refuses what it cannot
        // quote); this names the argument and the server first.
        launch::check_batch_args(&cfg.args).map_err(|e| e.into_spawn_error(server, line))?;
    }
    let mut cmd = Command::new(&resolved.path);
    cmd.args(&cfg.args);
    if !cfg.inherit_env {
        cmd.env_clear();
        for name in launch::inherited_env() {
            if let Some(v) = std::env::var_os(name) {
                cmd.env(name, v);
            }
        }
    }
    cmd.envs(&cfg.env);
    if let Some(cwd) = &cfg.cwd {
        cmd.current_dir(cwd);
    }
    Ok(cmd)
}

/// Describes how the child ended, waiting briefly for it: stdout closes as the process exits.
fn describe_exit(child: &Mutex<Child>) -> String {
    let Ok(mut c) = child.try_lock() else {
        return "the server process is being closed".to_owned();
    };
    if job::wait_exit(&c, Duration::from_millis(50)) {
        if let Ok(Some(status)) = c.try_wait() {
            return format!("the server process {}", status_text(status));
        }
    }
    "the server closed its stdout".to_owned()
}

/// How a process ended, in words: its exit code, in hex when it is an NTSTATUS (a crash such as
/// `0xC0000005`, or `0xC000013A` for Ctrl-C).
fn status_text(status: ExitStatus) -> String {
    match status.code() {
        Some(code) if code < 0 => format!("exited with status {:#010X}", code as u32),
        Some(code) => format!("exited with status {code}"),
        None => "exited".to_owned(),
    }
}

impl StdioTransport {
    /// Closes stdin, waits the grace for the server to exit, then terminates its job (which also
    /// ends whatever it started that is still running), reaps it and joins the pipe threads.
    fn end_process(&self, busy: bool) -> Option<ExitStatus> {
        self.conn.close_stdin();
        let mut child = lock(&self.child);
        let grace = if busy { BUSY_GRACE } else { GRACE };
        if !job::wait_exit(&child, grace) {
            log::debug!(
                "server `{}`: still running {grace:?} after stdin closed; terminating its job",
                self.server
            );
        }
        // Always: a server that exited may have left processes behind (the real server behind
        // a launcher).
        if let Err(e) = self.job.terminate() {
            log::warn!("server `{}`: could not terminate its job: {e}", self.server);
            let _ = child.kill();
        }
        if !self.job.wait_empty(REAP) {
            log::warn!(
                "server `{}`: processes of its job still run {REAP:?} after it was terminated",
                self.server
            );
        }
        let status = if job::wait_exit(&child, REAP) {
            child.try_wait().ok().flatten()
        } else {
            None
        };
        drop(child);
        self.conn.join(&self.server, REAP);
        status
    }
}

impl Transport for StdioTransport {
    fn send(&self, msg: Outgoing) -> Result<(), Error> {
        if msg.kind == Kind::Notification && msg.method() == "notifications/cancelled" {
            self.gave_up.store(true, Ordering::Relaxed);
        }
        let outcome = self.conn.write(msg.frame, msg.deadline);
        write_failed(
            &self.server,
            outcome,
            || self.conn.framer.wait_end(Duration::from_millis(500)),
            || self.conn.framer.tail.text(),
        )
    }

    fn wait<'a>(
        &'a self,
        caller: &Caller<'a>,
        deadline: Instant,
    ) -> Result<Event, RecvTimeoutError> {
        caller.rx.recv_deadline(deadline)
    }

    fn close(&self, how: Closing) -> Result<(), Error> {
        if how == Closing::Abort {
            self.gave_up.store(true, Ordering::Relaxed);
        }
        if self.closed.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let status = self.end_process(self.gave_up.load(Ordering::Relaxed));
        self.poller.unregister(&self.conn);
        let detail = closed_by_client(status.map(status_text));
        self.conn.framer.end(detail);
        Ok(())
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        let _ = self.close(Closing::Graceful);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ntstatus_exit_code_is_shown_in_hex() {
        use std::os::windows::process::ExitStatusExt;
        assert_eq!(
            status_text(ExitStatus::from_raw(0xC000_013A)),
            "exited with status 0xC000013A"
        );
        assert_eq!(status_text(ExitStatus::from_raw(3)), "exited with status 3");
    }
}
