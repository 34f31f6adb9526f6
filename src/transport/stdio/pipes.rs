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
//! What a server can make this hold: about `max_message_bytes` for the line being read,
//! `stderr_tail_lines` lines of at most `max_echo_bytes` (plus the one being read, cut as it
//! arrives), and `max_queued_write_bytes` of our own output it does not read.

use std::io::{self, Read};
use std::process::{ChildStderr, ChildStdout};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use polling::Poller;

use super::lead::Lead;
use super::stdin::WriteSide;
use crate::config::{cut_mark, Limits};
use crate::protocol::jsonrpc::{
    peek_id_prefix, peek_response_id, InResponse, Inbound, Payload, RequestId,
};
use crate::sync::lock;
use crate::throttle::{more, Throttle};
use crate::transport::{Sink, StderrTail};

/// Bytes kept from the end of an oversized line, to find its id there.
const SUFFIX: usize = 128;
/// Size of the scratch buffer small reads land in (on the stack of the thread reading, for the
/// time of its reading: an idle connection holds none).
const SCRATCH: usize = 16 * 1024;
/// Lines at least this long are handed over without copying.
const BIG_LINE: usize = 64 * 1024;
/// Read buffer capacity a connection always keeps between messages. A larger buffer is given
/// back once the message that needed it is handed over, unless the message before it was as
/// large too (a connection moving large messages keeps its buffer, see `Conn::settle_buffer`).
const KEEP_SMALL: usize = 4 * 1024;
/// Rounds in a row without a large line after which the size hint of large lines is forgotten.
const SHRINK_AFTER: u32 = 16;
/// Most bytes read from one stdout per round.
const READ_LIMIT: u64 = 4 * 1024 * 1024;

/// What a round of reading stdout found.
pub(super) enum ReadStatus {
    /// Nothing more to read right now.
    Drained,
    /// End of file or a read error: the pipe has been removed.
    Ended,
    /// The pipe was already gone.
    Gone,
}

/// The position of the first `\n` (memchr: large results are mostly scanning).
fn find_newline(hay: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', hay)
}

/// The pipes of one child, as the poller sees them.
pub(crate) struct Conn {
    pub(super) id: usize,
    pub(super) server: Arc<str>,
    pub(super) sink: Arc<dyn Sink>,
    pub(super) max_message: usize,
    pub(super) max_echo: usize,
    pub(super) tail_lines: usize,
    pub(super) max_queued_write: usize,
    /// Log lines a server can cause at will: stdout lines that are not JSON-RPC, oversized lines.
    not_json: Throttle,
    too_large: Throttle,
    pub(super) reader: Mutex<ReadSide>,
    pub(super) writer: Mutex<WriteSide>,
    pub(super) drained: Condvar,
    pub(super) stderr: Mutex<StderrSide>,
    /// The last lines of stderr, shared with the client (lock order: `stderr` before it).
    pub(super) tail: StderrTail,
    /// Called once when stdout ends, to describe the exit (its status).
    pub(super) exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    /// What `end` reported (set once), for a writer that finds stdin closed (see `wait_end`).
    pub(super) end_report: Mutex<EndReport>,
    pub(super) ended_cv: Condvar,
    /// Who reads stdout: the poller thread, a calling thread, or a waiting caller asked to take
    /// over (see `lead.rs`). Lock order: `reader` before `lead`.
    pub(super) lead: Mutex<Lead>,
}

pub(super) struct ReadSide {
    pub(super) stdout: Option<ChildStdout>,
    /// Unframed bytes.
    pub(super) buf: Vec<u8>,
    /// `buf[..scanned]` has no newline.
    pub(super) scanned: usize,
    /// Discarding the rest of an oversized line as it arrives (nothing of it enters `buf`).
    pub(super) skipping: bool,
    /// The last bytes of the line being discarded (its id may come last).
    skip_tail: Vec<u8>,
    /// Whether the line being discarded has failed its caller already (its id came first).
    skip_rejected: bool,
    /// The length of the last large line: the next one is read into a buffer of that size from
    /// the start, instead of one grown (and copied) step by step.
    big_hint: usize,
    /// Rounds in a row that ended with an empty buffer and no large line (see `SHRINK_AFTER`).
    small_rounds: u32,
    /// Whether the last round that handed over a message handed over one longer than
    /// `KEEP_SMALL` (see `Conn::settle_buffer`).
    last_large: bool,
    /// Whether stdout's pipe was enlarged (to `PIPE_SIZE`, at the first large line).
    pipe_grown: bool,
}

/// The size asked for a child's stdout pipe when its first large line arrives, and for its
/// stdin pipe the first time that fills up (Linux's default is 64 KiB): larger pipes mean fewer
/// wake-ups per large message, and a connection that never moves one does not pay for the
/// larger pipe. The kernel may refuse (a per-user limit), which only costs speed.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) const PIPE_SIZE: usize = 1024 * 1024;

pub(super) struct StderrSide {
    pub(super) pipe: Option<ChildStderr>,
    /// The start of the line being read, at most `max_echo` bytes.
    pub(super) partial: Vec<u8>,
    /// Bytes of the line being read that were not kept.
    pub(super) cut: usize,
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
            server,
            sink,
            max_message: limits.max_message_bytes,
            max_echo: limits.max_echo_bytes,
            tail_lines: limits.stderr_tail_lines,
            max_queued_write: limits.max_queued_write_bytes,
            not_json: Throttle::default(),
            too_large: Throttle::default(),
            reader: Mutex::new(ReadSide {
                stdout: None,
                buf: Vec::new(),
                scanned: 0,
                skipping: false,
                skip_tail: Vec::new(),
                skip_rejected: false,
                big_hint: 0,
                small_rounds: 0,
                last_large: false,
                pipe_grown: false,
            }),
            writer: Mutex::new(WriteSide::default()),
            drained: Condvar::new(),
            stderr: Mutex::new(StderrSide {
                pipe: None,
                partial: Vec::new(),
                cut: 0,
            }),
            tail,
            exit_probe,
            end_report: Mutex::new(EndReport::default()),
            ended_cv: Condvar::new(),
            lead: Mutex::new(Lead::default()),
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
        self.tail.text()
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
            let small = r.buf.len() < SCRATCH || r.skipping;
            let (res, more) = if small {
                self.read_small(r, &mut scratch)
            } else {
                let ReadSide {
                    stdout,
                    buf,
                    big_hint,
                    pipe_grown,
                    ..
                } = &mut *r;
                let Some(pipe) = stdout.as_mut() else {
                    return ReadStatus::Gone;
                };
                if !*pipe_grown {
                    *pipe_grown = true;
                    #[cfg(any(target_os = "linux", target_os = "android"))]
                    let _ = rustix::pipe::fcntl_setpipe_size(&*pipe, PIPE_SIZE);
                }
                let limit = size_large_read(buf, *big_hint, self.max_message);
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

    /// One read into `scratch`; a short read means the pipe is empty for now, so no second
    /// read is needed to hear it say so. Returns what the read gave and whether `scratch` was
    /// filled (there may be more).
    fn read_small(&self, r: &mut ReadSide, scratch: &mut [u8]) -> (io::Result<usize>, bool) {
        let Some(pipe) = r.stdout.as_mut() else {
            return (Ok(0), false);
        };
        match pipe.read(scratch) {
            Ok(n) => {
                if r.skipping {
                    self.skip(r, &scratch[..n]);
                } else {
                    r.buf.extend_from_slice(&scratch[..n]);
                }
                (Ok(n), n == scratch.len())
            }
            Err(e) => (Err(e), false),
        }
    }

    /// Splits complete lines out of the read buffer and delivers them.
    fn frame(&self, r: &mut ReadSide) {
        let mut start = 0;
        let mut from = r.scanned;
        // The longest line handed over this round, if any.
        let mut longest: Option<usize> = None;
        while let Some(pos) = find_newline(&r.buf[from..]) {
            let end = from + pos;
            if end - start <= self.max_message {
                longest = longest.max(Some(end - start));
            }
            if end - start > self.max_message {
                let line = &r.buf[start..end];
                if !self.too_large(line) {
                    self.reject_by_suffix(&line[line.len().saturating_sub(SUFFIX)..]);
                }
            } else if start == 0 && end >= BIG_LINE {
                // A large line that starts the buffer is handed over without a copy: the buffer
                // becomes the line and what follows it moves to a fresh buffer.
                let rest = r.buf.split_off(end + 1);
                let mut line = std::mem::replace(&mut r.buf, rest);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                r.big_hint = line.len() + 1;
                r.small_rounds = 0;
                self.deliver_line(line);
                r.scanned = 0;
                from = 0;
                continue;
            } else if start == 0 && end + 1 == r.buf.len() && end > KEEP_SMALL && !r.last_large {
                // The buffer holds just this line and would be given back after it (see
                // `settle_buffer`): it is handed over as the line instead of copied.
                let mut line = std::mem::take(&mut r.buf);
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
        if let Some(longest) = longest {
            Self::settle_buffer(r, longest);
        }
        if r.buf.is_empty() && r.big_hint > 0 {
            // The size of the last large line is a good guess for the next one only while large
            // lines keep coming.
            r.small_rounds += 1;
            if r.small_rounds >= SHRINK_AFTER {
                r.small_rounds = 0;
                r.big_hint = 0;
            }
        }
        r.scanned = r.buf.len();
        if r.buf.len() > self.max_message {
            // The rest of this line streams past (see `skip`): only its last bytes are kept.
            r.skip_rejected = self.too_large(&r.buf);
            r.skip_tail.clear();
            r.skip_tail
                .extend_from_slice(&r.buf[r.buf.len().saturating_sub(SUFFIX)..]);
            r.buf = Vec::new();
            r.scanned = 0;
            r.skipping = true;
        }
    }

    /// After a round that handed over messages (the longest `longest` bytes): an emptied buffer
    /// larger than `KEEP_SMALL` is given back, so an idle connection holds little, unless this
    /// round's message and the one before were both large: a connection moving large messages
    /// keeps its buffer rather than growing a new one for each.
    fn settle_buffer(r: &mut ReadSide, longest: usize) {
        let large = longest > KEEP_SMALL;
        if r.buf.is_empty() && r.buf.capacity() > KEEP_SMALL && !(large && r.last_large) {
            r.buf = Vec::new();
        }
        r.last_large = large;
    }

    /// Discards `data`, part of an oversized line. At the line's end, fails the caller whose
    /// answer it was (when its id comes last and the start did not name it), and keeps what
    /// follows the line.
    fn skip(&self, r: &mut ReadSide, data: &[u8]) {
        let Some(pos) = find_newline(data) else {
            keep_last(&mut r.skip_tail, data);
            return;
        };
        keep_last(&mut r.skip_tail, &data[..pos]);
        if !r.skip_rejected {
            self.reject_by_suffix(&r.skip_tail);
        }
        r.skip_tail.clear();
        r.skip_rejected = false;
        r.skipping = false;
        r.buf.extend_from_slice(&data[pos + 1..]);
        r.scanned = 0;
    }

    fn too_large_detail(&self) -> String {
        format!(
            "a message from the server exceeds the {} byte limit (`max_message_bytes`) and was \
             discarded",
            self.max_message
        )
    }

    /// An oversized line is dropped; if it is a response whose id comes first, its caller
    /// fails now rather than at its timeout (returns whether one was named).
    fn too_large(&self, head: &[u8]) -> bool {
        if let Some(unlogged) = self.too_large.hit() {
            log::error!(
                "server `{}`: {}{}",
                self.server,
                self.too_large_detail(),
                more(unlogged)
            );
        }
        match peek_id_prefix(&head[..head.len().min(256)]) {
            Some(id) => {
                self.sink.reject(id, self.too_large_detail());
                true
            }
            None => false,
        }
    }

    /// Fails the caller of an oversized answer whose id comes last (`tail`: its last bytes).
    fn reject_by_suffix(&self, tail: &[u8]) {
        if let Some(id) = peek_id_suffix(tail) {
            self.sink.reject(id, self.too_large_detail());
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
                if let Some(unlogged) = self.not_json.hit() {
                    let shown = String::from_utf8_lossy(&line[..line.len().min(self.max_echo)]);
                    let cut = line.len().saturating_sub(self.max_echo);
                    // Marked before it is redacted, so a secret the cut fell in is hidden too.
                    let shown = if cut > 0 {
                        cut_mark(&shown, cut)
                    } else {
                        shown.into_owned()
                    };
                    let shown = self.sink.redact(&shown);
                    log::warn!(
                        "server `{}`: skipping a stdout line that is {e}: {shown}{}",
                        self.server,
                        more(unlogged)
                    );
                }
            }
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
        let mut s = lock(&self.stderr);
        if !s.partial.is_empty() || s.cut > 0 {
            self.end_stderr_line(&mut s);
        }
    }

    /// Reads stderr until it is empty, forwarding and keeping its lines; `false` when it has
    /// ended (or failed).
    fn drain_stderr(&self, s: &mut StderrSide, pipe: &mut ChildStderr, chunk: &mut [u8]) -> bool {
        loop {
            match pipe.read(chunk) {
                Ok(0) => {
                    if !s.partial.is_empty() || s.cut > 0 {
                        self.end_stderr_line(s);
                    }
                    return false;
                }
                Ok(n) => {
                    let mut data = &chunk[..n];
                    while let Some(pos) = find_newline(data) {
                        self.keep_stderr(s, &data[..pos]);
                        self.end_stderr_line(s);
                        data = &data[pos + 1..];
                    }
                    self.keep_stderr(s, data);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
    }

    /// Adds `data` to the stderr line being read: the first `max_echo` bytes are kept, the rest
    /// only counted.
    fn keep_stderr(&self, s: &mut StderrSide, data: &[u8]) {
        let room = self.max_echo.saturating_sub(s.partial.len());
        let kept = data.len().min(room);
        s.partial.extend_from_slice(&data[..kept]);
        s.cut += data.len() - kept;
    }

    /// The stderr line being read is complete: forwarded to `log` and kept in the tail, marked
    /// when it was cut. Blank lines are skipped.
    fn end_stderr_line(&self, s: &mut StderrSide) {
        let mut raw: &[u8] = &s.partial;
        let mut cut = s.cut;
        if cut == 0 {
            if let [rest @ .., b'\r'] = raw {
                raw = rest;
            }
        } else if let Err(e) = std::str::from_utf8(raw) {
            // Cut inside a character: leave the whole character out.
            if e.error_len().is_none() {
                cut += raw.len() - e.valid_up_to();
                raw = &raw[..e.valid_up_to()];
            }
        }
        if cut > 0 || !raw.iter().all(u8::is_ascii_whitespace) {
            // The server's secrets are hidden before the line is logged or kept.
            // Marked before it is redacted, so a secret the cut fell in is hidden too.
            let text = String::from_utf8_lossy(raw);
            let line = if cut > 0 {
                self.sink.redact(&cut_mark(&text, cut))
            } else {
                self.sink.redact(&text)
            };
            let server = &self.server;
            log::info!(target: "mcp_blocking::stderr", "[{server}] {line}");
            self.tail.push(line, self.tail_lines);
        }
        s.partial.clear();
        s.cut = 0;
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
        let (tail, wake) = {
            let mut end = lock(&self.end_report);
            if end.report.is_some() {
                return;
            }
            let tail = self.stderr_tail();
            end.report = Some((detail.clone(), tail.clone()));
            (tail, end.waiting > 0)
        };
        if wake {
            self.ended_cv.notify_all();
        }
        self.sink.closed(detail, tail);
    }

    /// How the connection ended (the exit and the last stderr lines), waiting up to `limit` for
    /// the report: a write that finds stdin closed comes just before it.
    pub(crate) fn wait_end(&self, limit: Duration) -> Option<(String, String)> {
        let mut end = lock(&self.end_report);
        end.waiting += 1;
        let (mut end, _) = self
            .ended_cv
            .wait_timeout_while(end, limit, |e| e.report.is_none())
            .unwrap_or_else(|p| p.into_inner());
        end.waiting -= 1;
        end.report.clone()
    }
}

/// How a connection ended, once it has (see [`Conn::end`]), and how many threads wait for it:
/// `ended_cv` is only signalled when one does (a signal costs a system call even with no
/// waiter).
#[derive(Default)]
pub(super) struct EndReport {
    report: Option<(String, String)>,
    waiting: usize,
}

/// Keeps the last `SUFFIX` bytes of what `tail` and `data` hold together.
fn keep_last(tail: &mut Vec<u8>, data: &[u8]) {
    if data.len() >= SUFFIX {
        tail.clear();
        tail.extend_from_slice(&data[data.len() - SUFFIX..]);
        return;
    }
    let over = (tail.len() + data.len()).saturating_sub(SUFFIX);
    tail.drain(..over);
    tail.extend_from_slice(data);
}

/// Makes room in `buf` for the next read of a large line and returns how much to read: at most
/// `READ_LIMIT` per round and never past one byte over `max_message`, so the cap is checked as
/// the line arrives and the buffer never grows past it. A line like the last large one
/// (`big_hint` bytes) gets its whole size at once, and room left is filled before the buffer
/// grows, so a line of the size foreseen ends in the buffer made for it (not one grown to twice
/// its size, which the allocator would map afresh for every message).
fn size_large_read(buf: &mut Vec<u8>, big_hint: usize, max_message: usize) -> u64 {
    let cap = max_message.saturating_add(1);
    let room = cap.saturating_sub(buf.len()).max(1);
    let limit = READ_LIMIT.min(room as u64);
    let want = big_hint.min(cap);
    if buf.capacity() < want {
        buf.reserve_exact(want - buf.len());
    }
    let spare = buf.capacity() - buf.len();
    if spare > 0 {
        limit.min(spare as u64)
    } else {
        reserve_within(buf, limit as usize, cap);
        limit
    }
}

/// Makes room in `buf` for `n` more bytes, growing it geometrically (as `Vec` does) but never
/// past `cap` bytes unless `n` needs it: a line that turns out too large costs about the cap,
/// not twice it.
fn reserve_within(buf: &mut Vec<u8>, n: usize, cap: usize) {
    let need = buf.len().saturating_add(n);
    if buf.capacity() >= need {
        return;
    }
    let target = buf.capacity().saturating_mul(2).min(cap).max(need);
    buf.reserve_exact(target - buf.len());
}

fn trim_end_ws(b: &[u8]) -> &[u8] {
    let end = b
        .iter()
        .rposition(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        .map_or(0, |p| p + 1);
    &b[..end]
}

/// The id of a response from the last bytes of its line, for writers that put it last
/// (`{"result":...,"jsonrpc":"2.0","id":7}`, as the TypeScript SDK does): `"id"`, a number or
/// a string without escapes, and the message's closing brace.
fn peek_id_suffix(tail: &[u8]) -> Option<RequestId> {
    let t = trim_end_ws(tail).strip_suffix(b"}")?;
    let t = trim_end_ws(t);
    let (id, rest) = if let Some(t) = t.strip_suffix(b"\"") {
        let open = t.iter().rposition(|&c| c == b'"')?;
        if t[..open].last() == Some(&b'\\') || t[open + 1..].contains(&b'\\') {
            return None;
        }
        let s = std::str::from_utf8(&t[open + 1..]).ok()?;
        (RequestId::String(s.to_owned()), &t[..open])
    } else {
        let start = t
            .iter()
            .rposition(|c| !(c.is_ascii_digit() || *c == b'-'))
            .map_or(0, |p| p + 1);
        let n: i64 = std::str::from_utf8(&t[start..]).ok()?.parse().ok()?;
        (RequestId::Number(n), &t[..start])
    };
    let rest = trim_end_ws(rest).strip_suffix(b":")?;
    let rest = trim_end_ws(rest).strip_suffix(b"\"id\"")?;
    matches!(trim_end_ws(rest).last(), Some(b',' | b'{')).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Feeds `line` the way `read_small` does (in scratch-sized pieces) and frames it.
    fn feed(c: &Conn, r: &mut ReadSide, line: &[u8]) {
        for piece in line.chunks(SCRATCH) {
            r.buf.extend_from_slice(piece);
            c.frame(r);
        }
    }

    #[test]
    fn a_large_message_then_small_ones_leave_the_buffer_small() {
        let sink = Arc::new(Count::default());
        let c = conn(Arc::clone(&sink));
        let mut r = lock(&c.reader);
        let mut sent = Vec::new();
        for (i, len) in [40_000, 40_000, 200, 5_000, 300, 100]
            .into_iter()
            .enumerate()
        {
            let m = message(i as u32, len);
            feed(&c, &mut r, &m);
            sent.push(m);
            if len < KEEP_SMALL {
                assert!(r.buf.capacity() <= KEEP_SMALL, "{}", r.buf.capacity());
            }
        }
        // One large message alone (then idle) is not kept either.
        let m = message(9, 30_000);
        feed(&c, &mut r, &m);
        sent.push(m);
        assert_eq!(r.buf.capacity(), 0);
        assert!(r.buf.is_empty());
        // Two messages in one read, the large one second.
        let two = [message(10, 100), message(11, 20_000)].concat();
        feed(&c, &mut r, &two);
        sent.push(message(10, 100));
        sent.push(message(11, 20_000));
        drop(r);
        // Every line delivered whole, copied or handed over.
        let got = lock(&sink.0).clone();
        let want: Vec<Vec<u8>> = sent.iter().map(|m| m[..m.len() - 1].to_vec()).collect();
        assert_eq!(got, want);
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

    #[test]
    fn repeated_large_messages_reuse_the_buffer() {
        let c = conn(Arc::new(Count::default()));
        let mut r = lock(&c.reader);
        feed(&c, &mut r, &message(0, 30_000));
        feed(&c, &mut r, &message(1, 30_000));
        let kept = (r.buf.as_ptr(), r.buf.capacity());
        assert!(kept.1 >= 30_000, "{kept:?}");
        for id in 2..20 {
            feed(&c, &mut r, &message(id, 20_000 + 500 * id as usize));
            assert_eq!((r.buf.as_ptr(), r.buf.capacity()), kept, "message {id}");
        }
        // Small messages after them: the buffer is given back.
        feed(&c, &mut r, &message(30, 100));
        assert!(r.buf.capacity() <= KEEP_SMALL);
    }

    #[test]
    fn an_id_at_the_end_of_a_line_is_found() {
        let id = |s: &str| peek_id_suffix(s.as_bytes());
        assert_eq!(
            id(r#"..."}]},"jsonrpc":"2.0","id":7}"#),
            Some(RequestId::Number(7))
        );
        assert_eq!(id(r#"xx,"id" : -3 } "#), Some(RequestId::Number(-3)));
        assert_eq!(
            id(r#"..."},"id":"s-1"}"#),
            Some(RequestId::String("s-1".into()))
        );
        // Not the message's own id: a nested object, or no key before it.
        assert_eq!(id(r#""a":{"id":7}}"#), None);
        assert_eq!(id(r#"xid":7}"#), None);
        assert_eq!(id(r#"..."id":"a\"b"}"#), None);
        assert_eq!(id("no brace"), None);
    }

    #[test]
    fn keep_last_keeps_the_last_bytes() {
        let mut tail = Vec::new();
        keep_last(&mut tail, &[1; 100]);
        keep_last(&mut tail, &[2; 50]);
        assert_eq!(tail.len(), SUFFIX);
        assert_eq!(&tail[SUFFIX - 50..], &[2; 50]);
        keep_last(&mut tail, &[3; 300]);
        assert_eq!(tail, vec![3; SUFFIX]);
    }

    #[test]
    fn a_large_line_of_the_size_foreseen_stays_in_its_buffer() {
        let line = 10 * 1024 * 1024 + 1;
        let mut buf = vec![b'x'; SCRATCH];
        // The first read sizes the buffer for the whole line at once.
        let n = size_large_read(&mut buf, line, 64 * 1024 * 1024) as usize;
        let capacity = buf.capacity();
        assert!(capacity >= line && capacity < line + SCRATCH, "{capacity}");
        assert_eq!(n, READ_LIMIT as usize);
        // Read after read, up to the end of the line, the buffer neither grows nor moves.
        while buf.len() < line {
            let n = size_large_read(&mut buf, line, 64 * 1024 * 1024) as usize;
            assert!(n > 0);
            let ptr = buf.as_ptr();
            let take = n.min(line - buf.len());
            buf.resize(buf.len() + take, b'x');
            assert_eq!((buf.as_ptr(), buf.capacity()), (ptr, capacity));
        }
        // A line longer than foreseen: the full buffer grows, geometrically, within the cap.
        buf.resize(buf.capacity(), b'x');
        let n = size_large_read(&mut buf, line, 16 * 1024 * 1024);
        assert!(n > 0 && buf.capacity() > capacity && buf.capacity() <= 16 * 1024 * 1024 + 1);
        // Never past one byte over the cap.
        let mut near = vec![0u8; 100];
        assert_eq!(size_large_read(&mut near, 0, 100), 1);
    }

    #[test]
    fn reserve_within_grows_geometrically_up_to_the_cap() {
        let mut buf: Vec<u8> = vec![0; 16];
        buf.shrink_to_fit();
        reserve_within(&mut buf, 4, 100);
        assert!(buf.capacity() >= 32 && buf.capacity() < 100);
        buf.resize(90, 0);
        reserve_within(&mut buf, 11, 101);
        assert_eq!(buf.capacity(), 101);
    }

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
