//! The pipes of one stdio server as the [`ConnectionPoller`](super::poller::ConnectionPoller)
//! serves them: stdout framed into messages and routed (by the poller thread, or by a caller
//! reading its own answer), stderr kept as a tail and forwarded to `log`, stdin drained.
//!
//! ```text
//!   stdout ──read──> buffer ──lines──> peek id / parse ──> Sink (responses to their callers)
//!     read by: the poller thread | a caller leading (lead) | a waiting caller asked to take over
//!     a line past `max_message_bytes`: its caller fails at once, the rest streams past unkept
//!   stderr ──read──> last lines, each cut to `max_echo_bytes` (errors quote them) + `log`
//!   stdin  <──queue── what a caller's write left over, written as the pipe drains
//!                     (at most `max_queued_write_bytes`; a writer waits, up to its deadline)
//! ```
//!
//! What a server can make this hold: see `frame.rs` for what is read, plus
//! `max_queued_write_bytes` of our own output it does not read.

use std::io::{self, Read};
use std::process::{ChildStderr, ChildStdout};
use std::sync::Arc;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use polling::Poller;

use super::frame::{size_large_read, Framer, Lines, StderrLine, SCRATCH};
use super::lead::Lead;
use super::stdin::WriteSide;
use crate::config::Limits;
use crate::sync::lock;
use crate::transport::{Sink, StderrTail};

/// What a round of reading stdout found.
pub(super) enum ReadStatus {
    /// Nothing more to read right now.
    Drained,
    /// End of file or a read error: the pipe has been removed.
    Ended,
    /// The pipe was already gone.
    Gone,
}

/// The pipes of one child, as the poller sees them.
pub(crate) struct Conn {
    pub(super) id: usize,
    /// Where the child's lines go, within its limits (lock order: `stderr` before its tail).
    pub(super) framer: Framer,
    pub(super) max_queued_write: usize,
    pub(super) reader: Mutex<ReadSide>,
    pub(super) writer: Mutex<WriteSide>,
    pub(super) drained: Condvar,
    pub(super) stderr: Mutex<StderrSide>,
    /// Called once when stdout ends, to describe the exit (its status).
    pub(super) exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    /// Who reads stdout: the poller thread, a calling thread, or a waiting caller asked to take
    /// over (see `lead.rs`). Lock order: `reader` before `lead`.
    pub(super) lead: Mutex<Lead>,
    /// Wakes a caller reading stdout when a request was given up from another thread (see
    /// `lead.rs`); made by the first caller that reads, so a connection read only by the
    /// poller thread holds no extra descriptors.
    pub(super) waker: std::sync::OnceLock<Option<Waker>>,
}

/// A non-blocking pipe: a byte written to it wakes the caller polling its read end.
pub(super) struct Waker {
    read: std::os::fd::OwnedFd,
    write: std::os::fd::OwnedFd,
}

impl Waker {
    /// A new pipe; `None` when the process is out of descriptors (the reader then looks at its
    /// slot in slices instead).
    pub(super) fn new() -> Option<Waker> {
        use rustix::pipe::{pipe_with, PipeFlags};
        match pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK) {
            Ok((read, write)) => Some(Waker { read, write }),
            Err(e) => {
                log::debug!("no waker pipe for a stdio reader: {e}");
                None
            }
        }
    }

    /// Wakes the reader (a full pipe has a wake pending already).
    pub(super) fn wake(&self) {
        let _ = rustix::io::write(&self.write, &[1]);
    }

    /// Empties the pipe after a wake.
    pub(super) fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(&self.read, &mut buf), Ok(n) if n > 0) {}
    }

    pub(super) fn read_end(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.read.as_fd()
    }
}

#[derive(Default)]
pub(super) struct ReadSide {
    pub(super) stdout: Option<ChildStdout>,
    /// What was read and not yet framed.
    pub(super) lines: Lines,
    /// Whether stdout's pipe was enlarged (to `PIPE_SIZE`, at the first large line).
    pipe_grown: bool,
}

/// The size asked for a child's stdout pipe when its first large line arrives, and for its
/// stdin pipe the first time that fills up (Linux's default is 64 KiB): larger pipes mean fewer
/// wake-ups per large message, and a connection that never moves one does not pay for the
/// larger pipe. The kernel may refuse (a per-user limit), which only costs speed.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) const PIPE_SIZE: usize = 1024 * 1024;

#[derive(Default)]
pub(super) struct StderrSide {
    pub(super) pipe: Option<ChildStderr>,
    /// The line being read.
    line: StderrLine,
}

impl Conn {
    /// A connection whose pipes the poller attaches as it registers them.
    pub(super) fn new(
        id: usize,
        server: Arc<str>,
        sink: Arc<dyn Sink>,
        limits: &Limits,
        exit_probe: Box<dyn Fn() -> String + Send + Sync>,
        tail: StderrTail,
    ) -> Self {
        Conn {
            id,
            framer: Framer::new(server, sink, limits, tail),
            max_queued_write: limits.max_queued_write_bytes,
            reader: Mutex::new(ReadSide::default()),
            writer: Mutex::new(WriteSide::default()),
            drained: Condvar::new(),
            stderr: Mutex::new(StderrSide::default()),
            exit_probe,
            lead: Mutex::new(Lead::default()),
            waker: std::sync::OnceLock::new(),
        }
    }

    /// Takes the child's stdout and stderr (already registered with the poller).
    pub(super) fn attach_output(&self, stdout: ChildStdout, stderr: ChildStderr) {
        lock(&self.reader).stdout = Some(stdout);
        lock(&self.stderr).pipe = Some(stderr);
    }

    /// Removes every pipe from the poller and closes it.
    pub(super) fn detach(&self, poller: &Poller) {
        self.close_stdin(poller);
        self.drop_stdout(&mut lock(&self.reader), poller);
        if let Some(stderr) = lock(&self.stderr).pipe.take() {
            let _ = poller.delete(&stderr);
        }
    }

    /// Takes stderr out of the poller for the closing thread, which reads it from now on (see
    /// [`read_stderr`](Self::read_stderr)); `None` when it is closed already.
    pub(super) fn take_stderr(&self, poller: &Poller) -> Option<ChildStderr> {
        let pipe = lock(&self.stderr).pipe.take()?;
        let _ = poller.delete(&pipe);
        Some(pipe)
    }

    /// The last lines the child wrote to stderr.
    pub(super) fn stderr_tail(&self) -> String {
        self.framer.tail.text()
    }

    pub(super) fn on_stdout(&self, poller: &Poller, chunk: &mut [u8]) {
        // A caller reading its own answer (see `lead`) holds the reader; it re-arms the poller
        // when it is done, so there is nothing to do here meanwhile.
        let Ok(mut r) = self.reader.try_lock() else {
            return;
        };
        let held = crate::protocol::slot::HeldWakes::hold();
        let status = self.read_available(&mut r, poller);
        drop(held);
        if let ReadStatus::Ended = status {
            drop(r);
            self.end_after_stdout(poller, chunk);
        }
    }

    /// Reads what stdout has now, framing and delivering complete lines.
    pub(super) fn read_available(&self, r: &mut ReadSide, poller: &Poller) -> ReadStatus {
        let mut scratch = [0u8; SCRATCH];
        loop {
            if r.stdout.is_none() {
                return ReadStatus::Gone;
            }
            let small = r.lines.buf.len() < SCRATCH || r.lines.skipping;
            let (res, more) = if small {
                self.read_small(r, &mut scratch)
            } else {
                let ReadSide {
                    stdout,
                    lines,
                    pipe_grown,
                } = &mut *r;
                let big_hint = lines.big_hint;
                let buf = &mut lines.buf;
                let Some(pipe) = stdout.as_mut() else {
                    return ReadStatus::Gone;
                };
                if !*pipe_grown {
                    *pipe_grown = true;
                    #[cfg(any(target_os = "linux", target_os = "android"))]
                    let _ = rustix::pipe::fcntl_setpipe_size(&*pipe, PIPE_SIZE);
                }
                let limit = size_large_read(buf, big_hint, self.framer.max_message);
                let before = buf.len();
                let res = (&mut *pipe).take(limit).read_to_end(buf);
                let got = buf.len() - before;
                match res {
                    Ok(_) if got as u64 == limit => (Ok(got), true),
                    Ok(_) => (Ok(0), false),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock && got > 0 => (Ok(got), false),
                    Err(e) => (Err(e), false),
                }
            };
            match res {
                Ok(0) if small || !more => {
                    // End of file (a large read that stopped short of its limit without an
                    // error reached the end too).
                    if !small && !r.lines.buf.is_empty() {
                        self.framer.frame(&mut r.lines);
                    }
                    if let Some(stdout) = r.stdout.take() {
                        let _ = poller.delete(&stdout);
                    }
                    return ReadStatus::Ended;
                }
                Ok(_) => {
                    self.framer.frame(&mut r.lines);
                    if !more {
                        return ReadStatus::Drained;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return ReadStatus::Drained,
                Err(e) => {
                    log::warn!(
                        "server `{}`: reading stdout failed: {e}",
                        self.framer.server
                    );
                    if let Some(stdout) = r.stdout.take() {
                        let _ = poller.delete(&stdout);
                    }
                    return ReadStatus::Ended;
                }
            }
        }
    }

    /// One read into `scratch`; a short read means the pipe is empty for now, so no second
    /// read is needed to hear it say so. Returns what the read gave and whether `scratch` was
    /// filled (there may be more).
    fn read_small(&self, r: &mut ReadSide, scratch: &mut [u8]) -> (io::Result<usize>, bool) {
        let Some(pipe) = r.stdout.as_mut() else {
            return (Ok(0), false);
        };
        match pipe.read(scratch) {
            Ok(n) => {
                if r.lines.skipping {
                    self.framer.skip(&mut r.lines, &scratch[..n]);
                } else {
                    r.lines.buf.extend_from_slice(&scratch[..n]);
                }
                (Ok(n), n == scratch.len())
            }
            Err(e) => (Err(e), false),
        }
    }

    pub(super) fn on_stderr(&self, poller: &Poller, chunk: &mut [u8]) {
        let mut s = lock(&self.stderr);
        let Some(mut pipe) = s.pipe.take() else {
            return;
        };
        if self.drain_stderr(&mut s, &mut pipe, chunk) {
            s.pipe = Some(pipe);
        } else {
            let _ = poller.delete(&pipe);
        }
    }

    /// Reads what stderr (taken out of the poller, see [`take_stderr`](Self::take_stderr)) has
    /// now, line by line as the poller thread does; `false` at its end (or on a read error).
    pub(super) fn read_stderr(&self, pipe: &mut ChildStderr, chunk: &mut [u8]) -> bool {
        self.drain_stderr(&mut lock(&self.stderr), pipe, chunk)
    }

    /// stderr (taken out of the poller) has ended with nothing left in it: the line being read,
    /// if any, is complete.
    pub(super) fn stderr_ended(&self) {
        self.framer.stderr_ended(&mut lock(&self.stderr).line);
    }

    /// Reads stderr until it is empty, forwarding and keeping its lines; `false` when it has
    /// ended (or failed).
    fn drain_stderr(&self, s: &mut StderrSide, pipe: &mut ChildStderr, chunk: &mut [u8]) -> bool {
        loop {
            match pipe.read(chunk) {
                Ok(0) => {
                    self.framer.stderr_ended(&mut s.line);
                    return false;
                }
                Ok(n) => self.framer.stderr_data(&mut s.line, &chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
    }

    /// stdout ended: collect the last stderr, describe the exit, and tell the sink.
    pub(super) fn end_after_stdout(&self, poller: &Poller, chunk: &mut [u8]) {
        // Whatever the child wrote to stderr before exiting is already in the pipe.
        self.on_stderr(poller, chunk);
        let detail = (self.exit_probe)();
        self.end(detail);
    }

    /// Reports the end of the connection to the sink, once.
    pub(crate) fn end(&self, detail: String) {
        self.framer.end(detail);
    }

    /// How the connection ended (see [`Framer::wait_end`]).
    pub(crate) fn wait_end(&self, limit: Duration) -> Option<(String, String)> {
        self.framer.wait_end(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc::{InResponse, Inbound, Payload};

    /// Keeps the response lines it is handed.
    #[derive(Default)]
    struct Count(Mutex<Vec<Vec<u8>>>);

    impl Sink for Count {
        fn deliver(&self, msg: Inbound) {
            let Inbound::Response(InResponse {
                outcome: Ok(Payload::Line(line)),
                ..
            }) = msg
            else {
                panic!("not a response line");
            };
            lock(&self.0).push(line);
        }
        fn closed(&self, _detail: String, _stderr_tail: String) {}
    }

    fn conn(sink: Arc<Count>) -> Conn {
        Conn::new(
            0,
            Arc::from("t"),
            sink,
            &Limits::default(),
            Box::new(String::new),
            StderrTail::default(),
        )
    }

    /// A response line of about `len` bytes.
    fn message(id: u32, len: usize) -> Vec<u8> {
        let pad = "x".repeat(len.saturating_sub(40));
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":\"{pad}\"}}\n").into_bytes()
    }

    /// stdout's pipe keeps the kernel's size until a large line arrives.
    #[cfg(target_os = "linux")]
    #[test]
    fn stdout_s_pipe_is_enlarged_at_the_first_large_line_only() {
        use std::io::Write;
        let sink = Arc::new(Count::default());
        let c = conn(Arc::clone(&sink));
        let (read_end, write_end) = rustix::pipe::pipe().unwrap();
        rustix::io::ioctl_fionbio(&read_end, true).unwrap();
        let size = || rustix::pipe::fcntl_getpipe_size(&write_end).unwrap();
        let before = size();
        let mut writer = std::fs::File::from(write_end.try_clone().unwrap());
        let poller = Poller::new().unwrap();
        let mut r = lock(&c.reader);
        r.stdout = Some(ChildStdout::from(read_end));
        for id in 0..3 {
            writer.write_all(&message(id, 2_000)).unwrap();
            assert!(matches!(
                c.read_available(&mut r, &poller),
                ReadStatus::Drained
            ));
        }
        assert_eq!(size(), before);
        // A line longer than a small read: the pipe is enlarged as it is read.
        writer.write_all(&message(3, 40_000)).unwrap();
        assert!(matches!(
            c.read_available(&mut r, &poller),
            ReadStatus::Drained
        ));
        assert_eq!(size(), PIPE_SIZE.max(before));
        drop(r);
        assert_eq!(lock(&sink.0).len(), 4);
    }
}
