//! The pipes of one stdio server as the [`ConnectionPoller`](super::poller::ConnectionPoller)
//! serves them: stdout framed into messages and routed (by the poller thread, or by a caller
//! reading its own answer), stderr kept as a tail and forwarded to `log`, stdin drained.
//!
//! ```text
//!   stdout ──read──> buffer ──lines──> peek id / parse ──> Sink (responses to their callers)
//!     read by: the poller thread | a caller leading (lead) | a waiting caller asked to take over
//!   stderr ──read──> last lines (errors quote them) + `log`
//!   stdin  <──queue── what a caller's write left over, written as the pipe drains
//! ```

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use polling::{Event, PollMode, Poller};

use super::poller::{key, ConnectionPoller, MAX_QUEUED, STDIN, STDOUT};
use super::Sink;
use crate::protocol::jsonrpc::{peek_id_prefix, peek_response_id, InResponse, Inbound, Payload};
use crate::sync::lock;

/// Lines of stderr kept per server, quoted in errors.
const STDERR_LINES: usize = 20;
/// Longest stderr line kept (longer ones are cut).
const STDERR_LINE_MAX: usize = 1000;
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
    pub(super) reader: Mutex<ReadSide>,
    pub(super) writer: Mutex<WriteSide>,
    pub(super) drained: Condvar,
    pub(super) stderr: Mutex<StderrSide>,
    /// Called once when stdout ends, to describe the exit (its status).
    pub(super) exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    /// What `end` reported (set once), for a writer that finds stdin closed (see `wait_end`).
    pub(super) end_report: Mutex<Option<(String, String)>>,
    pub(super) ended_cv: Condvar,
    /// Who reads stdout: the poller thread (neither flag), a calling thread (`active`), or a
    /// waiting caller that has been asked to take over (`delegated`). The poller watches stdout
    /// only in the first case. Lock order: `reader` before `lead`.
    pub(super) lead: Mutex<Lead>,
}

#[derive(Default)]
pub(super) struct Lead {
    pub(super) active: bool,
    pub(super) delegated: bool,
}

pub(super) struct ReadSide {
    pub(super) stdout: Option<ChildStdout>,
    /// Unframed bytes.
    pub(super) buf: Vec<u8>,
    /// `buf[..scanned]` has no newline.
    pub(super) scanned: usize,
    /// Discarding the rest of an oversized line.
    pub(super) skipping: bool,
    /// Small reads land here first (one read, no empty-pipe probe); large lines are read
    /// straight into `buf`.
    pub(super) scratch: Box<[u8]>,
}

pub(super) struct WriteSide {
    pub(super) stdin: Option<ChildStdin>,
    pub(super) queue: VecDeque<u8>,
    pub(super) want_write: bool,
}

pub(super) struct StderrSide {
    pub(super) pipe: Option<ChildStderr>,
    pub(super) partial: Vec<u8>,
    pub(super) lines: VecDeque<String>,
}

impl Conn {
    /// A connection whose pipes the poller attaches as it registers them.
    pub(super) fn new(
        id: usize,
        server: Arc<str>,
        sink: Arc<dyn Sink>,
        max_message: usize,
        exit_probe: Box<dyn Fn() -> String + Send + Sync>,
    ) -> Self {
        Conn {
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
            end_report: Mutex::new(None),
            ended_cv: Condvar::new(),
            lead: Mutex::new(Lead::default()),
        }
    }

    /// The last lines the child wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> String {
        let s = lock(&self.stderr);
        s.lines
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(super) fn on_stdout(&self, poller: &Poller, chunk: &mut [u8]) {
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
        let poller = poller.os_poller();
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
            self.watch_stdout(&r, poller.os_poller());
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
                let shown = self
                    .sink
                    .redact(&String::from_utf8_lossy(&line[..line.len().min(200)]));
                log::warn!(
                    "server `{}`: skipping a stdout line that is {e}: {shown}",
                    self.server
                );
            }
        }
    }

    pub(super) fn on_stderr(&self, poller: &Poller, chunk: &mut [u8]) {
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
                        push_stderr_line(&self.server, &*self.sink, &mut s.lines, &rest);
                    }
                    return;
                }
                Ok(n) => {
                    let StderrSide { partial, lines, .. } = &mut *s;
                    let mut data = &chunk[..n];
                    while let Some(pos) = find_newline(data) {
                        if partial.is_empty() {
                            push_stderr_line(&self.server, &*self.sink, lines, &data[..pos]);
                        } else {
                            partial.extend_from_slice(&data[..pos]);
                            push_stderr_line(&self.server, &*self.sink, lines, partial);
                            partial.clear();
                        }
                        data = &data[pos + 1..];
                    }
                    partial.extend_from_slice(data);
                    if partial.len() > STDERR_LINE_MAX * 4 {
                        push_stderr_line(&self.server, &*self.sink, lines, partial);
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

    pub(super) fn on_stdin(&self, poller: &Poller) {
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
        let tail = {
            let mut report = lock(&self.end_report);
            if report.is_some() {
                return;
            }
            let tail = self.stderr_tail();
            *report = Some((detail.clone(), tail.clone()));
            tail
        };
        self.ended_cv.notify_all();
        self.sink.closed(detail, tail);
    }

    /// How the connection ended (the exit and the last stderr lines), waiting up to `limit` for
    /// the report: a write that finds stdin closed comes just before it.
    pub(crate) fn wait_end(&self, limit: Duration) -> Option<(String, String)> {
        let report = lock(&self.end_report);
        let (report, _) = self
            .ended_cv
            .wait_timeout_while(report, limit, |r| r.is_none())
            .unwrap_or_else(|p| p.into_inner());
        report.clone()
    }
}

/// Keeps a line of stderr (with the server's secrets hidden) and forwards it to `log`.
fn push_stderr_line(server: &str, sink: &dyn Sink, lines: &mut VecDeque<String>, raw: &[u8]) {
    let mut raw = raw;
    if let [rest @ .., b'\r'] = raw {
        raw = rest;
    }
    // Hidden before it is cut, so no part of a secret is left at the cut.
    let mut line = sink.redact(&String::from_utf8_lossy(raw));
    if line.len() > STDERR_LINE_MAX {
        let mut end = STDERR_LINE_MAX;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
    }
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
