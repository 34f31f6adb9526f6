//! One server's pipes on Windows, each served by a thread of its own.
//!
//! ```text
//!   mcp-stdout: blocking reads ──> Framer (lines ─> Sink) ── at its end: the exit is reported
//!   mcp-stderr: blocking reads ──> Framer (last lines kept, logged)
//!   mcp-stdin:  queue ──> blocking writes; closing the queue closes the pipe ("please exit")
//! ```
//!
//! What a server can make this hold: what `frame.rs` caps for stdout and stderr, plus at most
//! `max_queued_write_bytes` of our own output it does not read (one frame is always taken when
//! the queue is empty; a writer that would go past the cap waits, up to its deadline).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::super::frame::{Framer, Lines, StderrLine};
use super::super::WriteOutcome;
use crate::config::Limits;
use crate::protocol::slot::HeldWakes;
use crate::sync::lock;
use crate::transport::{Sink, StderrTail};

/// The stdout reader's buffer: one pipe read at most (Windows gives a read what the pipe holds).
const STDOUT_CHUNK: usize = 64 * 1024;
/// The stderr reader's buffer.
const STDERR_CHUNK: usize = 4 * 1024;
/// How long the stdout reader, at the end of stdout, waits for stderr's end before it reports
/// the exit: the server's last words are on stderr, and usually end with it.
const STDERR_SETTLE: Duration = Duration::from_millis(100);

pub(crate) struct Conn {
    pub(super) id: usize,
    pub(super) framer: Framer,
    max_queued_write: usize,
    stdin: Mutex<Outbox>,
    /// Signalled when the queue changes: a frame queued, written, or the queue closed.
    changed: Condvar,
    /// Set when stderr has ended (for the stdout reader's report).
    stderr_done: Mutex<bool>,
    stderr_cv: Condvar,
    /// The client is closing the connection: the end is reported by `close` (as "closed by the
    /// client"), not by the stdout reader that sees the pipe close.
    closing: AtomicBool,
    /// Describes the exit, once stdout ended.
    exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// What callers queued for stdin.
#[derive(Default)]
struct Outbox {
    frames: VecDeque<Vec<u8>>,
    /// Bytes in `frames` plus the frame being written.
    held: usize,
    /// No more writes: the connection is closing, or a write failed (the server is gone).
    closed: bool,
}

impl Conn {
    /// Starts the three threads serving a child's pipes.
    pub(super) fn start(
        id: usize,
        server: Arc<str>,
        sink: Arc<dyn Sink>,
        limits: &Limits,
        tail: StderrTail,
        exit_probe: Box<dyn Fn() -> String + Send + Sync>,
        pipes: (ChildStdin, ChildStdout, ChildStderr),
    ) -> io::Result<Arc<Conn>> {
        let (stdin, stdout, stderr) = pipes;
        let conn = Arc::new(Conn {
            id,
            framer: Framer::new(server, sink, limits, tail),
            max_queued_write: limits.max_queued_write_bytes,
            stdin: Mutex::new(Outbox::default()),
            changed: Condvar::new(),
            stderr_done: Mutex::new(false),
            stderr_cv: Condvar::new(),
            closing: AtomicBool::new(false),
            exit_probe,
            threads: Mutex::new(Vec::with_capacity(3)),
        });
        let spawn = |name: &str, run: Box<dyn FnOnce() + Send>| -> io::Result<()> {
            let handle = std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(run)?;
            lock(&conn.threads).push(handle);
            Ok(())
        };
        let c = Arc::clone(&conn);
        let started = spawn("mcp-stderr", Box::new(move || c.read_stderr(stderr)))
            .and_then(|()| {
                let c = Arc::clone(&conn);
                spawn("mcp-stdout", Box::new(move || c.read_stdout(stdout)))
            })
            .and_then(|()| {
                let c = Arc::clone(&conn);
                spawn("mcp-stdin", Box::new(move || c.write_stdin(stdin)))
            });
        // A thread that could not start: the caller terminates the process, which ends the
        // threads that did start (their pipes close); they are joined here.
        if let Err(e) = started {
            conn.close_stdin();
            return Err(e);
        }
        Ok(conn)
    }

    /// Queues one frame for stdin (see the module's header for the cap).
    pub(super) fn write(&self, mut frame: Vec<u8>, deadline: Option<Instant>) -> WriteOutcome {
        frame.push(b'\n');
        let mut out = lock(&self.stdin);
        loop {
            if out.closed {
                return WriteOutcome::Closed;
            }
            if out.held == 0 || out.held.saturating_add(frame.len()) <= self.max_queued_write {
                break;
            }
            let now = Instant::now();
            out = match deadline {
                Some(d) if now >= d => {
                    return WriteOutcome::TimedOut {
                        queued: out.held,
                        cap: self.max_queued_write,
                    }
                }
                Some(d) => {
                    self.changed
                        .wait_timeout(out, d - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(out).unwrap_or_else(|p| p.into_inner()),
            };
        }
        out.held += frame.len();
        out.frames.push_back(frame);
        drop(out);
        self.changed.notify_all();
        WriteOutcome::Written
    }

    /// Closes stdin (the polite "please exit") as the client closes the connection; queued
    /// frames are dropped. The pipe itself is
    /// closed by `mcp-stdin` as soon as it is not in the middle of a write.
    pub(super) fn close_stdin(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let mut out = lock(&self.stdin);
        out.closed = true;
        out.frames.clear();
        drop(out);
        self.changed.notify_all();
    }

    /// Joins the pipe threads, once the server's processes are gone (their pipes closed). A
    /// thread still blocked after `limit` (a pipe kept open by a process outside the job) has
    /// its read or write cancelled first.
    pub(super) fn join(&self, server: &str, limit: Duration) {
        self.close_stdin();
        let threads = std::mem::take(&mut *lock(&self.threads));
        let deadline = crate::deadline::add(Instant::now(), limit);
        for t in threads {
            let mut pause = Duration::from_micros(200);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            }
            if !t.is_finished() {
                log::warn!(
                    "server `{server}`: a pipe of the server is still open after its processes \
                     ended; cancelling the thread's I/O"
                );
                super::job::cancel_io(&t);
            }
            let _ = t.join();
        }
    }

    /// `mcp-stdout`: frames stdout until it ends, then reports the end of the connection.
    fn read_stdout(&self, mut pipe: ChildStdout) {
        let mut lines = Lines::default();
        let mut chunk = vec![0u8; STDOUT_CHUNK];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let held = HeldWakes::hold();
                    self.framer.absorb(&mut lines, &chunk[..n]);
                    drop(held);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // A closed pipe is how Windows reports the end of a child's output.
                    if e.kind() != io::ErrorKind::BrokenPipe {
                        log::warn!(
                            "server `{}`: reading stdout failed: {e}",
                            self.framer.server
                        );
                    }
                    break;
                }
            }
        }
        drop(pipe);
        // The server's last stderr lines explain its end: give stderr a moment to end too.
        let done = lock(&self.stderr_done);
        drop(
            self.stderr_cv
                .wait_timeout_while(done, STDERR_SETTLE, |d| !*d)
                .unwrap_or_else(|p| p.into_inner()),
        );
        if !self.closing.load(Ordering::SeqCst) {
            let detail = (self.exit_probe)();
            self.framer.end(detail);
        }
    }

    /// `mcp-stderr`: keeps and logs stderr's lines until it ends.
    fn read_stderr(&self, mut pipe: ChildStderr) {
        let mut line = StderrLine::default();
        let mut chunk = vec![0u8; STDERR_CHUNK];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => self.framer.stderr_data(&mut line, &chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.framer.stderr_ended(&mut line);
        *lock(&self.stderr_done) = true;
        self.stderr_cv.notify_all();
    }

    /// `mcp-stdin`: writes queued frames in order until the queue is closed or a write fails.
    fn write_stdin(&self, mut pipe: ChildStdin) {
        loop {
            let mut out = lock(&self.stdin);
            while out.frames.is_empty() && !out.closed {
                out = self.changed.wait(out).unwrap_or_else(|p| p.into_inner());
            }
            if out.closed {
                break;
            }
            let Some(frame) = out.frames.pop_front() else {
                continue;
            };
            drop(out);
            let written = pipe.write_all(&frame).and_then(|()| pipe.flush());
            let mut out = lock(&self.stdin);
            out.held = out.held.saturating_sub(frame.len());
            if let Err(e) = written {
                log::debug!("server `{}`: writing stdin failed: {e}", self.framer.server);
                out.closed = true;
                out.frames.clear();
                out.held = 0;
            }
            drop(out);
            self.changed.notify_all();
        }
        // Dropping the pipe closes it: the server reads the end of its input.
    }
}
