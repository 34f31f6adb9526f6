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
//! never blocks a caller: the caller's request simply times out.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use polling::{Event, Events, PollMode, Poller};

use super::Sink;
use crate::protocol::jsonrpc::{peek_id_prefix, peek_response_id, InResponse, Inbound, Payload};

/// Lines of stderr kept per server, quoted in errors.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept (longer ones are cut).
const STDERR_LINE_MAX: usize = 1000;
/// Default cap on one stdout message.
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 256 * 1024 * 1024;
/// Queued-but-unwritten stdin bytes above which a writer waits (bounded by its deadline).
const MAX_QUEUED: usize = 64 * 1024 * 1024;
const READ_CHUNK: usize = 16 * 1024;
/// The pipe size asked for a child's stdin and stdout (Linux's default is 64 KiB).
#[cfg(any(target_os = "linux", target_os = "android"))]
const PIPE_SIZE: usize = 1024 * 1024;
/// Size of each connection's scratch buffer for small reads.
const SCRATCH: usize = 16 * 1024;
/// Lines at least this long are handed over without copying.
const BIG_LINE: usize = 64 * 1024;
/// Read buffer capacity kept between messages.
const KEEP_CAPACITY: usize = 1024 * 1024;
/// Most bytes read from one stdout per round.
const READ_LIMIT: u64 = 4 * 1024 * 1024;

/// What a round of reading stdout found.
enum ReadStatus {
    /// Nothing more to read right now.
    Drained,
    /// End of file or a read error: the pipe has been removed.
    Ended,
    /// The pipe was already gone.
    Gone,
}

/// The position of the first `\n`, eight bytes at a time (large results are mostly scanning).
fn find_newline(hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    const NL: u64 = LO * b'\n' as u64;
    let mut chunks = hay.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ NL;
        if (x.wrapping_sub(LO) & !x & HI) != 0 {
            return chunk.iter().position(|&b| b == b'\n').map(|p| offset + p);
        }
        offset += 8;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|p| offset + p)
}

/// One thread that reads and writes the pipes of many stdio servers.
///
/// A [`Client`](crate::Client) given no poller owns a private one; share one across clients (a
/// [`Hub`](crate::Client) does) to serve any number of servers with one I/O thread.
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
    conns: Mutex<HashMap<usize, Arc<Conn>>>,
    stopping: AtomicBool,
    next_id: AtomicUsize,
}

/// The pipes of one child, as the poller sees them.
pub(crate) struct Conn {
    id: usize,
    server: Arc<str>,
    sink: Arc<dyn Sink>,
    max_message: usize,
    reader: Mutex<ReadSide>,
    writer: Mutex<WriteSide>,
    drained: Condvar,
    stderr: Mutex<StderrSide>,
    /// Called once when stdout ends, to describe the exit (status); see `Conn::set_exit_probe`.
    exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    ended: AtomicBool,
    /// Who reads stdout: the poller thread (neither flag), a calling thread (`active`), or a
    /// waiting caller that has been asked to take over (`delegated`). The poller watches stdout
    /// only in the first case. Lock order: `reader` before `lead`.
    lead: Mutex<Lead>,
}

#[derive(Default)]
struct Lead {
    active: bool,
    delegated: bool,
}

struct ReadSide {
    stdout: Option<ChildStdout>,
    /// Unframed bytes.
    buf: Vec<u8>,
    /// `buf[..scanned]` has no newline.
    scanned: usize,
    /// Discarding the rest of an oversized line.
    skipping: bool,
    /// Small reads land here first (one read, no empty-pipe probe); large lines are read
    /// straight into `buf`.
    scratch: Box<[u8]>,
}

struct WriteSide {
    stdin: Option<ChildStdin>,
    queue: VecDeque<u8>,
    want_write: bool,
}

struct StderrSide {
    pipe: Option<ChildStderr>,
    partial: Vec<u8>,
    lines: VecDeque<String>,
}

const STDOUT: usize = 0;
const STDERR: usize = 1;
const STDIN: usize = 2;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each guarded value stays consistent across a panic (plain buffers), so poisoning is ignored.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

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
        Ok(ConnectionPoller {
            shared: Arc::new(Shared {
                core: Arc::new(Core {
                    poller: Poller::new()?,
                    conns: Mutex::new(HashMap::new()),
                    stopping: AtomicBool::new(false),
                    next_id: AtomicUsize::new(1),
                }),
                thread: Mutex::new(None),
            }),
        })
    }

    /// Starts the poller thread (named `mcp-poller`). Idempotent.
    ///
    /// # Errors
    /// The OS error when the thread cannot be spawned.
    pub fn start(&self) -> io::Result<&Self> {
        let mut thread = lock(&self.shared.thread);
        if thread.as_ref().is_some_and(|t| !t.handle.is_finished()) {
            return Ok(self);
        }
        if let Some(old) = thread.take() {
            let _ = old.handle.join();
        }
        self.shared.core.stopping.store(false, Ordering::SeqCst);
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
        lock(&self.shared.thread)
            .as_ref()
            .is_some_and(|t| !t.handle.is_finished())
    }

    /// How many servers are registered.
    pub fn connection_count(&self) -> usize {
        lock(&self.shared.core.conns).len()
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
        let conns: Vec<Arc<Conn>> = lock(&self.shared.core.conns).values().cloned().collect();
        for conn in conns {
            conn.end("the connection poller was stopped".to_owned());
        }
        Ok(self)
    }

    /// Registers a child's pipes. Starts the poller when it is not running.
    pub(crate) fn register(
        &self,
        server: Arc<str>,
        pipes: (ChildStdin, ChildStdout, ChildStderr),
        max_message: usize,
        sink: Arc<dyn Sink>,
        exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    ) -> io::Result<Arc<Conn>> {
        let (stdin, stdout, stderr) = pipes;
        for fd in [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()] {
            rustix::io::ioctl_fionbio(fd, true)?;
        }
        // Larger pipes mean fewer wake-ups per large message; the kernel may refuse (a
        // per-user limit), which only costs speed.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        for fd in [stdin.as_fd(), stdout.as_fd()] {
            let _ = rustix::pipe::fcntl_setpipe_size(fd, PIPE_SIZE);
        }
        let id = self.shared.core.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Arc::new(Conn {
            id,
            server,
            sink,
            max_message,
            reader: Mutex::new(ReadSide {
                stdout: None,
                buf: Vec::new(),
                scanned: 0,
                scratch: vec![0; SCRATCH].into_boxed_slice(),
                skipping: false,
            }),
            writer: Mutex::new(WriteSide {
                stdin: None,
                queue: VecDeque::new(),
                want_write: false,
            }),
            drained: Condvar::new(),
            stderr: Mutex::new(StderrSide {
                pipe: None,
                partial: Vec::new(),
                lines: VecDeque::new(),
            }),
            exit_probe,
            ended: AtomicBool::new(false),
            lead: Mutex::new(Lead::default()),
        });
        lock(&self.shared.core.conns).insert(id, Arc::clone(&conn));
        let p = &self.shared.core.poller;
        add(p, &stdout, Event::readable(key(id, STDOUT)))?;
        lock(&conn.reader).stdout = Some(stdout);
        add(p, &stderr, Event::readable(key(id, STDERR)))?;
        lock(&conn.stderr).pipe = Some(stderr);
        add(p, &stdin, Event::none(key(id, STDIN)))?;
        lock(&conn.writer).stdin = Some(stdin);
        self.start()?;
        Ok(conn)
    }

    /// Closes the child's stdin (the polite "please exit"). Queued bytes are dropped.
    pub(crate) fn close_stdin(&self, conn: &Conn) {
        let mut w = lock(&conn.writer);
        if let Some(stdin) = w.stdin.take() {
            let _ = self.shared.core.poller.delete(&stdin);
        }
        w.queue.clear();
        conn.drained.notify_all();
    }

    /// Removes a child's pipes from the poller and closes them.
    pub(crate) fn unregister(&self, conn: &Conn) {
        self.close_stdin(conn);
        if let Some(stdout) = lock(&conn.reader).stdout.take() {
            let _ = self.shared.core.poller.delete(&stdout);
        }
        if let Some(stderr) = lock(&conn.stderr).pipe.take() {
            let _ = self.shared.core.poller.delete(&stderr);
        }
        lock(&self.shared.core.conns).remove(&conn.id);
    }

    /// Writes one frame (a newline is appended) to a child's stdin, queueing what does not fit.
    pub(crate) fn write(
        &self,
        conn: &Conn,
        mut frame: Vec<u8>,
        deadline: Option<Instant>,
    ) -> WriteOutcome {
        frame.push(b'\n');
        let mut w = lock(&conn.writer);
        while w.queue.len() > MAX_QUEUED {
            let Some(deadline) = deadline else {
                w = conn.drained.wait(w).unwrap_or_else(|p| p.into_inner());
                continue;
            };
            let now = Instant::now();
            if now >= deadline {
                return WriteOutcome::TimedOut;
            }
            w = conn
                .drained
                .wait_timeout(w, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        let WriteSide {
            stdin,
            queue,
            want_write,
        } = &mut *w;
        let Some(pipe) = stdin.as_mut() else {
            return WriteOutcome::Closed;
        };
        let mut written = 0;
        if queue.is_empty() {
            while written < frame.len() {
                match pipe.write(&frame[written..]) {
                    Ok(0) => break,
                    Ok(n) => written += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => return WriteOutcome::Closed,
                }
            }
        }
        if written < frame.len() {
            queue.extend(&frame[written..]);
            if !*want_write {
                *want_write = true;
                if self
                    .shared
                    .core
                    .poller
                    .modify_with_mode(
                        &*pipe,
                        Event::writable(key(conn.id, STDIN)),
                        PollMode::Level,
                    )
                    .is_err()
                {
                    return WriteOutcome::Closed;
                }
            }
        }
        WriteOutcome::Written
    }
}

/// What became of a write.
pub(crate) enum WriteOutcome {
    /// Written, or queued for the poller to finish.
    Written,
    /// stdin is closed (the child exited or the connection was closed).
    Closed,
    /// Too much was already queued and the deadline passed.
    TimedOut,
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

fn key(id: usize, which: usize) -> usize {
    id * 4 + which
}

/// Registers a pipe with the poller (level-triggered).
fn add(poller: &Poller, fd: &impl std::os::fd::AsRawFd, ev: Event) -> io::Result<()> {
    // SAFETY: `Poller::add` requires that the descriptor be deleted from the poller before it is
    // closed. Every pipe registered here is owned by a `Conn` and is only ever dropped after
    // `Poller::delete` on it: see `ConnectionPoller::close_stdin`, `ConnectionPoller::unregister`
    // and `Conn::end_stdout` / `Conn::end_stderr`, the only places that take the pipes out.
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
        if let Err(e) = shared.poller.wait(&mut events, None) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            log::error!("connection poller: wait failed: {e}; stopping");
            break;
        }
        if shared.stopping.load(Ordering::SeqCst) {
            break;
        }
        for ev in events.iter() {
            let conn = lock(&shared.conns).get(&(ev.key / 4)).cloned();
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

impl Conn {
    /// The last lines the child wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let s = lock(&self.stderr);
        s.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn on_stdout(&self, poller: &Poller, chunk: &mut [u8]) {
        // A caller reading its own answer (see `lead`) holds the reader; it re-arms the poller
        // when it is done, so there is nothing to do here meanwhile.
        let Ok(mut r) = self.reader.try_lock() else {
            return;
        };
        if let ReadStatus::Ended = self.read_available(&mut r, poller) {
            drop(r);
            self.end_after_stdout(poller, chunk);
        }
    }

    /// Reads what stdout has now, framing and delivering complete lines.
    fn read_available(&self, r: &mut ReadSide, poller: &Poller) -> ReadStatus {
        loop {
            let ReadSide {
                stdout,
                buf,
                scratch,
                ..
            } = &mut *r;
            let Some(pipe) = stdout.as_mut() else {
                return ReadStatus::Gone;
            };
            let small = buf.len() < SCRATCH;
            let (res, more) = if small {
                // One read into the scratch buffer; a short read means the pipe is empty for
                // now, so no second read is needed to hear it say so.
                match pipe.read(scratch) {
                    Ok(n) => {
                        buf.extend_from_slice(&scratch[..n]);
                        (Ok(n), n == scratch.len())
                    }
                    Err(e) => (Err(e), false),
                }
            } else {
                // A large line: read straight into the frame buffer, at most READ_LIMIT per
                // round so the size cap is checked as it arrives.
                let before = buf.len();
                let res = (&mut *pipe).take(READ_LIMIT).read_to_end(buf);
                let got = buf.len() - before;
                match res {
                    Ok(_) if got as u64 == READ_LIMIT => (Ok(got), true),
                    Ok(_) => (Ok(0), false),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 => (Ok(got), false),
                    Err(e) => (Err(e), false),
                }
            };
            match res {
                Ok(0) if small || !more => {
                    // End of file (a large read that stopped short of its limit without an
                    // error reached the end too).
                    if !small && !r.buf.is_empty() {
                        self.frame(r);
                    }
                    if let Some(stdout) = r.stdout.take() {
                        let _ = poller.delete(&stdout);
                    }
                    return ReadStatus::Ended;
                }
                Ok(_) => {
                    self.frame(r);
                    if !more {
                        return ReadStatus::Drained;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadStatus::Drained,
                Err(e) => {
                    log::warn!("server `{}`: reading stdout failed: {e}", self.server);
                    if let Some(stdout) = r.stdout.take() {
                        let _ = poller.delete(&stdout);
                    }
                    return ReadStatus::Ended;
                }
            }
        }
    }

    /// Leader/follower: the calling thread reads this child's stdout itself until `done()` says
    /// its answer has arrived or `deadline` passes, instead of waiting for the poller thread to
    /// hand the answer over. Everything read is routed as usual, so other callers' answers still
    /// reach them. On leaving, `handoff()` may ask another waiting caller to take over (it returns
    /// whether one was asked); otherwise the poller thread watches stdout again. Returns `false`
    /// (and does nothing) when another thread is reading.
    pub(crate) fn lead(
        &self,
        poller: &ConnectionPoller,
        deadline: Instant,
        done: &dyn Fn() -> bool,
        handoff: &dyn Fn() -> bool,
    ) -> bool {
        let was_delegated = {
            let mut l = lock(&self.lead);
            if l.active {
                return false;
            }
            l.active = true;
            std::mem::take(&mut l.delegated)
        };
        let mut r = lock(&self.reader);
        let poller = &poller.shared.core.poller;
        let Some(stdout) = r.stdout.as_ref() else {
            lock(&self.lead).active = false;
            return false;
        };
        if !was_delegated {
            let _ =
                poller.modify_with_mode(stdout, Event::none(key(self.id, STDOUT)), PollMode::Level);
        }
        let mut ended = false;
        while !done() {
            // Wait first: the answer is rarely there already, and when it is, poll says so at
            // once. This saves a read that would only report an empty pipe.
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let Some(stdout) = r.stdout.as_ref() else {
                break;
            };
            let wait = rustix::event::Timespec::try_from(deadline - now).ok();
            let mut fds = [rustix::event::PollFd::new(
                stdout,
                rustix::event::PollFlags::IN,
            )];
            match rustix::event::poll(&mut fds, wait.as_ref()) {
                Ok(0) => break,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => break,
            }
            match self.read_available(&mut r, poller) {
                ReadStatus::Ended | ReadStatus::Gone => {
                    ended = true;
                    break;
                }
                ReadStatus::Drained => {}
            }
        }
        {
            let mut l = lock(&self.lead);
            l.active = false;
            l.delegated = !ended && handoff();
            if !l.delegated {
                self.watch_stdout(&r, poller);
            }
        }
        drop(r);
        if ended {
            let mut chunk = vec![0u8; 16 * 1024];
            self.end_after_stdout(poller, &mut chunk);
        }
        true
    }

    /// A caller asked to take over reading is leaving without doing so (its answer came, or it
    /// gave up): `handoff()` may ask another; otherwise the poller thread watches stdout again.
    pub(crate) fn decline_lead(&self, poller: &ConnectionPoller, handoff: &dyn Fn() -> bool) {
        let r = lock(&self.reader);
        let mut l = lock(&self.lead);
        if l.active || !l.delegated {
            return;
        }
        l.delegated = handoff();
        if !l.delegated {
            self.watch_stdout(&r, &poller.shared.core.poller);
        }
    }

    fn watch_stdout(&self, r: &ReadSide, poller: &Poller) {
        if let Some(stdout) = r.stdout.as_ref() {
            let _ = poller.modify_with_mode(
                stdout,
                Event::readable(key(self.id, STDOUT)),
                PollMode::Level,
            );
        }
    }

    /// Splits complete lines out of the read buffer and delivers them.
    fn frame(&self, r: &mut ReadSide) {
        let mut start = 0;
        let mut from = r.scanned;
        while let Some(pos) = find_newline(&r.buf[from..]) {
            let end = from + pos;
            if r.skipping {
                r.skipping = false;
            } else if end - start > self.max_message {
                self.too_large(&r.buf[start..end]);
            } else if start == 0 && end >= BIG_LINE {
                // A large line that starts the buffer is handed over without a copy: the buffer
                // becomes the line and what follows it moves to a fresh buffer.
                let rest = r.buf.split_off(end + 1);
                let mut line = std::mem::replace(&mut r.buf, rest);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                self.deliver_line(line);
                r.scanned = 0;
                from = 0;
                continue;
            } else {
                let mut line = &r.buf[start..end];
                if let [rest @ .., b'\r'] = line {
                    line = rest;
                }
                self.deliver_line(line.to_vec());
            }
            start = end + 1;
            from = start;
        }
        if start > 0 {
            r.buf.drain(..start);
        }
        if r.buf.is_empty() && r.buf.capacity() > KEEP_CAPACITY {
            // Do not hold on to the memory of one huge message.
            r.buf = Vec::new();
        }
        r.scanned = r.buf.len();
        if r.buf.len() > self.max_message {
            self.too_large(&r.buf);
            r.buf = Vec::new();
            r.scanned = 0;
            r.skipping = true;
        }
    }

    /// An oversized line is dropped; if it is a response whose id comes first, its caller
    /// fails now rather than at its timeout.
    fn too_large(&self, head: &[u8]) {
        let detail = format!(
            "a message from the server exceeds the {} byte limit (`max_message_bytes`) and was discarded",
            self.max_message
        );
        log::error!("server `{}`: {detail}", self.server);
        if let Some(id) = peek_id_prefix(&head[..head.len().min(256)]) {
            self.sink.reject(id, detail);
        }
    }

    fn deliver_line(&self, line: Vec<u8>) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if let Some(id) = peek_response_id(&line) {
            self.sink.deliver(Inbound::Response(InResponse {
                id: Some(id),
                outcome: Ok(Payload::Line(line)),
            }));
            return;
        }
        match Inbound::parse(&line) {
            Ok(msgs) => {
                for m in msgs {
                    self.sink.deliver(m);
                }
            }
            Err(e) => {
                let shown = String::from_utf8_lossy(&line[..line.len().min(200)]);
                log::warn!(
                    "server `{}`: skipping a stdout line that is {e}: {shown}",
                    self.server
                );
            }
        }
    }

    fn on_stderr(&self, poller: &Poller, chunk: &mut [u8]) {
        let mut s = lock(&self.stderr);
        loop {
            let Some(pipe) = s.pipe.as_mut() else { return };
            match pipe.read(chunk) {
                Ok(0) => {
                    if let Some(pipe) = s.pipe.take() {
                        let _ = poller.delete(&pipe);
                    }
                    if !s.partial.is_empty() {
                        let rest = std::mem::take(&mut s.partial);
                        push_stderr_line(&self.server, &mut s.lines, &rest);
                    }
                    return;
                }
                Ok(n) => {
                    let StderrSide { partial, lines, .. } = &mut *s;
                    let mut data = &chunk[..n];
                    while let Some(pos) = data.iter().position(|&b| b == b'\n') {
                        if partial.is_empty() {
                            push_stderr_line(&self.server, lines, &data[..pos]);
                        } else {
                            partial.extend_from_slice(&data[..pos]);
                            push_stderr_line(&self.server, lines, partial);
                            partial.clear();
                        }
                        data = &data[pos + 1..];
                    }
                    partial.extend_from_slice(data);
                    if partial.len() > STDERR_LINE_MAX * 4 {
                        push_stderr_line(&self.server, lines, partial);
                        partial.clear();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    if let Some(pipe) = s.pipe.take() {
                        let _ = poller.delete(&pipe);
                    }
                    return;
                }
            }
        }
    }

    fn on_stdin(&self, poller: &Poller) {
        let mut w = lock(&self.writer);
        let WriteSide {
            stdin,
            queue,
            want_write,
        } = &mut *w;
        let Some(pipe) = stdin.as_mut() else { return };
        while !queue.is_empty() {
            let (front, _) = queue.as_slices();
            match pipe.write(front) {
                Ok(0) => break,
                Ok(n) => {
                    queue.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    // The child closed its stdin (it is exiting); stdout's end reports it.
                    queue.clear();
                    break;
                }
            }
        }
        if queue.is_empty() && *want_write {
            *want_write = false;
            let _ =
                poller.modify_with_mode(&*pipe, Event::none(key(self.id, STDIN)), PollMode::Level);
        }
        if queue.len() <= MAX_QUEUED {
            self.drained.notify_all();
        }
    }

    /// stdout ended: collect the last stderr, describe the exit, and tell the sink.
    fn end_after_stdout(&self, poller: &Poller, chunk: &mut [u8]) {
        // Whatever the child wrote to stderr before exiting is already in the pipe.
        self.on_stderr(poller, chunk);
        let detail = (self.exit_probe)();
        self.end(detail);
    }

    /// Reports the end of the connection to the sink, once.
    pub(crate) fn end(&self, detail: String) {
        if !self.ended.swap(true, Ordering::SeqCst) {
            self.sink.closed(detail, self.stderr_tail());
        }
    }
}

fn push_stderr_line(server: &str, lines: &mut VecDeque<String>, raw: &[u8]) {
    let mut raw = raw;
    if let [rest @ .., b'\r'] = raw {
        raw = rest;
    }
    let cut = &raw[..raw.len().min(STDERR_LINE_MAX)];
    let line = String::from_utf8_lossy(cut).into_owned();
    log::info!(target: "mcp_blocking::stderr", "[{server}] {line}");
    if lines.len() == STDERR_LINES {
        lines.pop_front();
    }
    lines.push_back(line);
}

#[cfg(test)]
mod tests {
    use super::find_newline;

    #[test]
    fn find_newline_agrees_with_a_plain_search() {
        let mut data = vec![b'a'; 100];
        assert_eq!(find_newline(&data), None);
        for pos in [0, 1, 7, 8, 9, 63, 64, 95, 99] {
            data.fill(b'a');
            data[pos] = b'\n';
            assert_eq!(find_newline(&data), Some(pos), "at {pos}");
            data[99] = b'\n';
            assert_eq!(find_newline(&data), Some(pos));
        }
        assert_eq!(find_newline(b"\x8a\x0a"), Some(1));
        assert_eq!(find_newline(&[0x8a; 20]), None);
    }
}
