//! What a stdio server writes, made into messages, whatever reads its pipes (the poller
//! thread or a waiting caller on Unix, a reader thread per pipe on Windows): stdout framed into
//! lines, each routed to the connection's [`Sink`]; stderr cut into lines kept as a tail and
//! forwarded to `log`; the end of the connection reported once.
//!
//! What a server can make this hold: about `max_message_bytes` for the line being read (a longer
//! line streams past, only its last bytes kept to find its id), and `stderr_tail_lines` lines of
//! at most `max_echo_bytes` (plus the one being read, cut as it arrives).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::config::{cut_mark, Limits};
use crate::protocol::jsonrpc::{
    peek_id_prefix, peek_response_id, InResponse, Inbound, Payload, RequestId,
};
use crate::sync::lock;
use crate::throttle::{more, Throttle};
use crate::transport::{Sink, StderrTail};

/// Bytes kept from the end of an oversized line, to find its id there.
pub(super) const SUFFIX: usize = 128;
/// Size of the scratch buffer small reads land in (on the stack of the thread reading, for the
/// time of its reading: an idle connection holds none).
#[cfg_attr(
    windows,
    allow(
        dead_code,
        reason = "the Unix pipes read large lines into the buffer itself"
    )
)]
pub(super) const SCRATCH: usize = 16 * 1024;
/// Lines at least this long are handed over without copying.
pub(super) const BIG_LINE: usize = 64 * 1024;
/// Read buffer capacity a connection always keeps between messages. A larger buffer is given
/// back once the message that needed it is handed over, unless the message before it was as
/// large too (a connection moving large messages keeps its buffer, see `Conn::settle_buffer`).
pub(super) const KEEP_SMALL: usize = 4 * 1024;
/// Rounds in a row without a large line after which the size hint of large lines is forgotten.
pub(super) const SHRINK_AFTER: u32 = 16;
/// Most bytes read from one stdout per round.
#[cfg_attr(
    windows,
    allow(
        dead_code,
        reason = "the Unix pipes read large lines into the buffer itself"
    )
)]
pub(super) const READ_LIMIT: u64 = 4 * 1024 * 1024;

/// The position of the first `\n` (memchr: large results are mostly scanning).
pub(super) fn find_newline(hay: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', hay)
}

/// One server's output as messages: where its lines go, and the caps they are read within.
pub(crate) struct Framer {
    pub(super) server: Arc<str>,
    pub(super) sink: Arc<dyn Sink>,
    pub(super) max_message: usize,
    pub(super) max_echo: usize,
    pub(super) tail_lines: usize,
    /// Log lines a server can cause at will: stdout lines that are not JSON-RPC, oversized lines.
    not_json: Throttle,
    too_large: Throttle,
    /// The last lines of stderr, shared with the client.
    pub(super) tail: StderrTail,
    /// What `end` reported (set once), for a writer that finds stdin closed (see `wait_end`).
    end_report: Mutex<EndReport>,
    ended_cv: Condvar,
}

/// stdout's bytes not yet framed, and what framing remembers between reads.
#[derive(Default)]
pub(super) struct Lines {
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
    pub(super) big_hint: usize,
    /// Rounds in a row that ended with an empty buffer and no large line (see `SHRINK_AFTER`).
    small_rounds: u32,
    /// Whether the last round that handed over a message handed over one longer than
    /// `KEEP_SMALL` (see `Framer::settle_buffer`).
    last_large: bool,
}

/// The stderr line being read.
#[derive(Default)]
pub(super) struct StderrLine {
    /// The start of the line, at most `max_echo` bytes.
    partial: Vec<u8>,
    /// Bytes of the line that were not kept.
    cut: usize,
}

impl Framer {
    pub(super) fn new(
        server: Arc<str>,
        sink: Arc<dyn Sink>,
        limits: &Limits,
        tail: StderrTail,
    ) -> Self {
        Framer {
            server,
            sink,
            max_message: limits.max_message_bytes,
            max_echo: limits.max_echo_bytes,
            tail_lines: limits.stderr_tail_lines,
            not_json: Throttle::default(),
            too_large: Throttle::default(),
            tail,
            end_report: Mutex::new(EndReport::default()),
            ended_cv: Condvar::new(),
        }
    }

    /// Takes `data`, just read from stdout, and delivers the lines it completes (Windows'
    /// reader thread; on Unix, `pipes.rs` reads into the buffer itself).
    #[cfg_attr(not(windows), allow(dead_code))]
    pub(super) fn absorb(&self, r: &mut Lines, data: &[u8]) {
        if r.skipping {
            self.skip(r, data);
        } else {
            r.buf.extend_from_slice(data);
        }
        self.frame(r);
    }

    /// Takes `data`, just read from stderr: each line it completes is logged and kept.
    pub(super) fn stderr_data(&self, s: &mut StderrLine, mut data: &[u8]) {
        while let Some(pos) = find_newline(data) {
            self.keep_stderr(s, &data[..pos]);
            self.end_stderr_line(s);
            data = &data[pos + 1..];
        }
        self.keep_stderr(s, data);
    }

    /// stderr has ended: the line being read, if any, is complete.
    pub(super) fn stderr_ended(&self, s: &mut StderrLine) {
        if !s.partial.is_empty() || s.cut > 0 {
            self.end_stderr_line(s);
        }
    }

    /// Splits complete lines out of the read buffer and delivers them.
    pub(super) fn frame(&self, r: &mut Lines) {
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
    fn settle_buffer(r: &mut Lines, longest: usize) {
        let large = longest > KEEP_SMALL;
        if r.buf.is_empty() && r.buf.capacity() > KEEP_SMALL && !(large && r.last_large) {
            r.buf = Vec::new();
        }
        r.last_large = large;
    }

    /// Discards `data`, part of an oversized line. At the line's end, fails the caller whose
    /// answer it was (when its id comes last and the start did not name it), and keeps what
    /// follows the line.
    pub(super) fn skip(&self, r: &mut Lines, data: &[u8]) {
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

    /// Adds `data` to the stderr line being read: the first `max_echo` bytes are kept, the rest
    /// only counted.
    fn keep_stderr(&self, s: &mut StderrLine, data: &[u8]) {
        let room = self.max_echo.saturating_sub(s.partial.len());
        let kept = data.len().min(room);
        s.partial.extend_from_slice(&data[..kept]);
        s.cut += data.len() - kept;
    }

    /// The stderr line being read is complete: forwarded to `log` and kept in the tail, marked
    /// when it was cut. Blank lines are skipped.
    fn end_stderr_line(&self, s: &mut StderrLine) {
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

    /// Reports the end of the connection to the sink, once.
    pub(super) fn end(&self, detail: String) {
        let (tail, wake) = {
            let mut end = lock(&self.end_report);
            if end.report.is_some() {
                return;
            }
            let tail = self.tail.text();
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
    pub(super) fn wait_end(&self, limit: Duration) -> Option<(String, String)> {
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

/// How a connection ended, once it has (see [`Framer::end`]), and how many threads wait for it:
/// `ended_cv` is only signalled when one does (a signal costs a system call even with no
/// waiter).
#[derive(Default)]
struct EndReport {
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
#[cfg_attr(
    windows,
    allow(
        dead_code,
        reason = "the Unix pipes read large lines into the buffer itself"
    )
)]
pub(super) fn size_large_read(buf: &mut Vec<u8>, big_hint: usize, max_message: usize) -> u64 {
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
#[cfg_attr(
    windows,
    allow(
        dead_code,
        reason = "the Unix pipes read large lines into the buffer itself"
    )
)]
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

    fn framer(sink: Arc<Count>) -> Framer {
        Framer::new(
            Arc::from("t"),
            sink,
            &Limits::default(),
            StderrTail::default(),
        )
    }

    /// A response line of about `len` bytes.
    fn message(id: u32, len: usize) -> Vec<u8> {
        let pad = "x".repeat(len.saturating_sub(40));
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":\"{pad}\"}}\n").into_bytes()
    }

    /// Feeds `line` the way `read_small` does (in scratch-sized pieces) and frames it.
    fn feed(c: &Framer, r: &mut Lines, line: &[u8]) {
        for piece in line.chunks(SCRATCH) {
            r.buf.extend_from_slice(piece);
            c.frame(r);
        }
    }

    #[test]
    fn a_large_message_then_small_ones_leave_the_buffer_small() {
        let sink = Arc::new(Count::default());
        let c = framer(Arc::clone(&sink));
        let mut r = Lines::default();
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
        // Every line delivered whole, copied or handed over.
        let got = lock(&sink.0).clone();
        let want: Vec<Vec<u8>> = sent.iter().map(|m| m[..m.len() - 1].to_vec()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn repeated_large_messages_reuse_the_buffer() {
        let c = framer(Arc::new(Count::default()));
        let mut r = Lines::default();
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
