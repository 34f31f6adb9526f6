//! `ConnectionPoller`: one thread serving the pipes of any number of child processes.
//!
//! ```text
//!        new() ──start()──> running ──stop(timeout)──> stopped ──start()──> running ...
//!                               │
//!   register(child pipes) ──────┤ every child: stdout (framed, parsed, routed to its Sink),
//!   unregister (on close) ──────┤ stderr (drained into a ring buffer and `log`),
//!                               │ stdin (written when a caller's write would have blocked)
//! ```
//!
//! Callers write to a child's stdin themselves when the pipe has room; only what does not fit is
//! queued for the poller thread, which writes it as the pipe drains. So a server that stops reading
//! never blocks a caller: the caller's request simply times out. The queue holds at most
//! [`Limits::max_queued_write_bytes`](crate::config::Limits::max_queued_write_bytes) (one frame
//! is always taken when it is empty); a writer that would go past it waits, up to its deadline,
//! for the server to read.

use crate::sync::lock;
use std::collections::HashMap;
use std::io;
use std::os::fd::AsFd;
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use polling::{Event, Events, PollMode, Poller};

use super::pipes::Conn;
pub(crate) use super::stdin::WriteOutcome;
use crate::config::Limits;
use crate::transport::{Sink, StderrTail};

/// The poller thread's buffer for draining stderr.
const READ_CHUNK: usize = 16 * 1024;

/// One thread that reads and writes the pipes of many stdio servers.
///
/// A [`Client`](crate::Client) given no poller uses a process-wide one, whose thread starts with
/// the first stdio server and ends half a second after the last one closed. Give clients a
/// poller of your own (a [`Hub`](crate::Hub) does) to control its thread with
/// [`start`](Self::start) and [`stop`](Self::stop).
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
#[derive(Clone)]
pub struct ConnectionPoller {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ConnectionPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionPoller")
            .field("running", &self.is_running())
            .field("connections", &self.connection_count())
            .finish()
    }
}

/// The poller thread, and a channel that disconnects when it ends.
struct Running {
    handle: JoinHandle<()>,
    ended: crossbeam_channel::Receiver<()>,
}

/// Owned by every handle of one poller; dropping the last handle stops and joins the thread.
struct Shared {
    core: Arc<Core>,
    thread: Mutex<Option<Running>>,
}

/// What the thread needs.
struct Core {
    poller: Poller,
    conns: Mutex<Conns>,
    stopping: AtomicBool,
    next_id: AtomicUsize,
    /// For the process-wide poller: how long the thread stays once no server is registered.
    linger: Option<Duration>,
    /// The thread ended (or is ending) because it had nothing to serve for `linger`; set under
    /// the `conns` lock, so a `register` either finds it set or is seen by the thread.
    retired: AtomicBool,
}

/// The registered connections, and what the lingering thread needs to know of them.
#[derive(Default)]
struct Conns {
    map: HashMap<usize, Arc<Conn>>,
    /// When the last connection went (or the thread found none).
    emptied_at: Option<Instant>,
    /// The thread waits without a timeout: the last connection going must wake it to start
    /// its linger (a thread already waiting with one checks `emptied_at` when it wakes).
    untimed_wait: bool,
}

impl Conns {
    /// Removes connection `id`; `true` when the thread must be woken to start its linger.
    fn remove(&mut self, id: usize, linger: Option<Duration>) -> bool {
        self.map.remove(&id);
        if linger.is_none() || !self.map.is_empty() {
            return false;
        }
        self.emptied_at = Some(Instant::now());
        std::mem::take(&mut self.untimed_wait)
    }
}

/// How long the process-wide poller's thread waits for the next server after the last one
/// closed, before it ends (the next connection starts it again).
const DEFAULT_LINGER: Duration = Duration::from_millis(500);

pub(super) const STDOUT: usize = 0;
pub(super) const STDERR: usize = 1;
pub(super) const STDIN: usize = 2;

impl Default for ConnectionPoller {
    fn default() -> Self {
        Self::new()
    }
}

impl ConnectionPoller {
    /// A poller, not yet running (see [`start`](Self::start); registering a server starts it).
    ///
    /// # Panics
    /// If the operating system refuses to create an epoll/kqueue instance (out of descriptors).
    pub fn new() -> Self {
        Self::try_new().expect("the OS could not create a poller (out of file descriptors?)")
    }

    /// Like [`new`](Self::new), returning the OS error instead of panicking.
    ///
    /// # Errors
    /// The OS error when no poller can be created.
    pub fn try_new() -> io::Result<Self> {
        Self::with_linger(None)
    }

    fn with_linger(linger: Option<Duration>) -> io::Result<Self> {
        Ok(ConnectionPoller {
            shared: Arc::new(Shared {
                core: Arc::new(Core {
                    poller: Poller::new()?,
                    conns: Mutex::new(Conns::default()),
                    stopping: AtomicBool::new(false),
                    next_id: AtomicUsize::new(1),
                    linger,
                    retired: AtomicBool::new(false),
                }),
                thread: Mutex::new(None),
            }),
        })
    }

    /// The poller of every client given none: created once per process, its thread started by
    /// the first server registered and ended [`DEFAULT_LINGER`] after the last one closed (so a
    /// client that connects, closes and connects again reuses the thread instead of starting
    /// one each time). A thread that ended so is joined when the poller starts again.
    pub(crate) fn process_default() -> io::Result<Self> {
        static DEFAULT: Mutex<Option<ConnectionPoller>> = Mutex::new(None);
        let mut slot = lock(&DEFAULT);
        if let Some(p) = slot.as_ref() {
            return Ok(p.clone());
        }
        let p = Self::with_linger(Some(DEFAULT_LINGER))?;
        *slot = Some(p.clone());
        Ok(p)
    }

    /// Starts the poller thread (named `mcp-poller`). Idempotent.
    ///
    /// # Errors
    /// The OS error when the thread cannot be spawned.
    pub fn start(&self) -> io::Result<&Self> {
        let mut thread = lock(&self.shared.thread);
        let retired = self.shared.core.retired.load(Ordering::SeqCst);
        if !retired && thread.as_ref().is_some_and(|t| !t.handle.is_finished()) {
            return Ok(self);
        }
        if let Some(old) = thread.take() {
            let _ = old.handle.join();
        }
        self.shared.core.stopping.store(false, Ordering::SeqCst);
        self.shared.core.retired.store(false, Ordering::SeqCst);
        // A new thread with nothing to serve counts its linger from its start.
        lock(&self.shared.core.conns).emptied_at = None;
        let core = Arc::clone(&self.shared.core);
        let (alive, ended) = crossbeam_channel::bounded::<()>(0);
        let handle = std::thread::Builder::new()
            .name("mcp-poller".into())
            .spawn(move || {
                let _alive = alive;
                run(&core);
            })?;
        *thread = Some(Running { handle, ended });
        Ok(self)
    }

    /// Whether the poller thread is running.
    pub fn is_running(&self) -> bool {
        !self.shared.core.retired.load(Ordering::SeqCst)
            && lock(&self.shared.thread)
                .as_ref()
                .is_some_and(|t| !t.handle.is_finished())
    }

    /// How many servers are registered.
    pub fn connection_count(&self) -> usize {
        lock(&self.shared.core.conns).map.len()
    }

    /// Stops the thread and fails every pending request of every registered server with
    /// [`Error::Closed`](crate::Error::Closed) ("the connection poller was stopped"). Waits up to
    /// `timeout` for the thread to end.
    ///
    /// # Errors
    /// `TimedOut` when the thread did not end within `timeout` (it still ends, and is joined by
    /// the next `start` or when the poller is dropped).
    pub fn stop(&self, timeout: Duration) -> io::Result<&Self> {
        self.shared.core.stopping.store(true, Ordering::SeqCst);
        self.shared.core.poller.notify()?;
        let running = lock(&self.shared.thread).take();
        if let Some(running) = running {
            if let Err(crossbeam_channel::RecvTimeoutError::Timeout) =
                running.ended.recv_timeout(timeout)
            {
                *lock(&self.shared.thread) = Some(running);
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the poller thread did not stop in time",
                ));
            }
            let _ = running.handle.join();
        }
        let conns: Vec<Arc<Conn>> = lock(&self.shared.core.conns)
            .map
            .values()
            .cloned()
            .collect();
        for conn in conns {
            conn.end("the connection poller was stopped".to_owned());
        }
        Ok(self)
    }

    /// The OS poller (for the pipes' own interest changes).
    pub(super) fn os_poller(&self) -> &Poller {
        &self.shared.core.poller
    }

    /// Registers a child's pipes. Starts the poller when it is not running.
    pub(crate) fn register(
        &self,
        server: Arc<str>,
        pipes: (ChildStdin, ChildStdout, ChildStderr),
        limits: &Limits,
        sink: Arc<dyn Sink>,
        exit_probe: Box<dyn Fn() -> String + Send + Sync>,
        tail: StderrTail,
    ) -> io::Result<Arc<Conn>> {
        let (stdin, stdout, stderr) = pipes;
        for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
            rustix::io::ioctl_fionbio(fd, true)?;
        }
        let id = self.shared.core.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn::new(id, server, sink, limits, exit_probe, tail));
        lock(&self.shared.core.conns)
            .map
            .insert(id, Arc::clone(&conn));
        let p = &self.shared.core.poller;
        // stdout is not registered yet: the first request claims it (see `lead.rs`); stdin
        // neither: only when it first fills up (see `stdin.rs`).
        if let Err(e) = add(p, &stderr, Event::readable(key(id, STDERR))) {
            self.forget(id);
            return Err(e);
        }
        conn.attach_output(stdout, stderr);
        conn.attach_stdin(stdin);
        self.start()?;
        Ok(conn)
    }

    /// Closes the child's stdin (the polite "please exit"). Queued bytes are dropped.
    pub(crate) fn close_stdin(&self, conn: &Conn) {
        conn.close_stdin(&self.shared.core.poller);
    }

    /// Removes a child's pipes from the poller and closes them.
    pub(crate) fn unregister(&self, conn: &Conn) {
        conn.detach(&self.shared.core.poller);
        self.forget(conn.id);
    }

    /// Removes connection `id` from the table.
    fn forget(&self, id: usize) {
        let core = &self.shared.core;
        let wake = lock(&core.conns).remove(id, core.linger);
        if wake {
            // A thread waiting without a timeout starts counting its linger.
            let _ = core.poller.notify();
        }
    }

    /// Writes one frame to a child's stdin (see `stdin.rs`).
    pub(crate) fn write(
        &self,
        conn: &Conn,
        frame: Vec<u8>,
        deadline: Option<Instant>,
        claimed: Option<i64>,
    ) -> WriteOutcome {
        conn.write(&self.shared.core.poller, frame, deadline, claimed)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.core.stopping.store(true, Ordering::SeqCst);
        let _ = self.core.poller.notify();
        if let Some(running) = self
            .thread
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = running.handle.join();
        }
    }
}

pub(super) fn key(id: usize, which: usize) -> usize {
    id * 4 + which
}

/// Registers a pipe with the poller (level-triggered).
pub(super) fn add(poller: &Poller, fd: &impl std::os::fd::AsRawFd, ev: Event) -> io::Result<()> {
    // SAFETY: `Poller::add` requires that the descriptor be deleted from the poller before it is
    // closed. Every pipe registered here is owned by a `Conn` (transport/stdio/) and is only ever
    // dropped after `Poller::delete` on it. Where a pipe is registered only at some point
    // (stdin, stdout), a flag set with the registration, under the lock that guards the pipe,
    // says so: `WriteSide::in_poller` (stdin, set by `Conn::write_outbox` in stdin.rs) and
    // `Lead::in_poller` (stdout, set by `Conn::hand_over` in lead.rs). The places that take a
    // pipe out of its `Conn` are: for stdin, `Conn::close_stdin` (stdin.rs; a caller writing at
    // that moment holds a clone of the handle, so the descriptor closes later still); for
    // stdout, `Conn::drop_stdout` and `Conn::lead_to_close` (lead.rs; the latter before the
    // closing thread reads and closes it), and `Conn::read_available` at end of stream or on a
    // read error; for stderr, `Conn::detach` (pipes.rs), `Conn::on_stderr` at its end, and
    // `Conn::take_stderr` (before the closing thread reads and closes it). Each deletes the pipe
    // (when its flag says it is registered) before dropping it.
    #[allow(unsafe_code)] // The crate's one audited unsafe call; see the SAFETY note.
    unsafe {
        poller.add_with_mode(fd, ev, PollMode::Level)
    }
}

fn run(shared: &Core) {
    let mut events = Events::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        events.clear();
        // With no server to serve, the thread waits until `linger` after the last one went.
        let idle_until = {
            let mut conns = lock(&shared.conns);
            let until = match shared.linger {
                Some(linger) if conns.map.is_empty() => {
                    let since = *conns.emptied_at.get_or_insert_with(Instant::now);
                    Some(crate::deadline::add(since, linger))
                }
                _ => None,
            };
            conns.untimed_wait = until.is_none();
            until
        };
        let timeout = idle_until.map(|t| t.saturating_duration_since(Instant::now()));
        if let Err(e) = shared.poller.wait(&mut events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            log::error!("connection poller: wait failed: {e}; stopping");
            break;
        }
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        // Woken with nothing to do: a timeout, or a `notify` (which only starts the count).
        if idle_until.is_some() && events.is_empty() {
            let conns = lock(&shared.conns);
            let linger = shared.linger.unwrap_or_default();
            let over = conns
                .emptied_at
                .is_some_and(|t| Instant::now() >= crate::deadline::add(t, linger));
            if conns.map.is_empty() && over {
                // Decided under the lock `register` takes before it starts the thread.
                shared.retired.store(true, Ordering::SeqCst);
                break;
            }
        }
        for ev in events.iter() {
            let conn = lock(&shared.conns).map.get(&(ev.key / 4)).cloned();
            let Some(conn) = conn else { continue };
            match ev.key % 4 {
                STDOUT => conn.on_stdout(&shared.poller, &mut chunk),
                STDERR => conn.on_stderr(&shared.poller, &mut chunk),
                STDIN => conn.on_stdin(&shared.poller),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Re-reads `is_running` until it is `want`, for up to two seconds.
    fn running_becomes(p: &ConnectionPoller, want: bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(2);
        while p.is_running() != want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        p.is_running() == want
    }

    #[test]
    fn a_lingering_poller_ends_its_idle_thread_and_starts_it_again() {
        let p = ConnectionPoller::with_linger(Some(Duration::from_millis(20))).unwrap();
        p.start().unwrap();
        assert!(
            running_becomes(&p, false),
            "the idle thread ends after its linger"
        );
        p.start().unwrap();
        assert!(
            p.is_running(),
            "starting again joins the old thread and starts a new one"
        );
        p.stop(Duration::from_secs(5)).unwrap();
        assert!(!p.is_running());
    }

    #[test]
    fn a_poller_without_linger_keeps_its_idle_thread() {
        let p = ConnectionPoller::try_new().unwrap();
        p.start().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        assert!(p.is_running());
        p.stop(Duration::from_secs(5)).unwrap();
    }
}
