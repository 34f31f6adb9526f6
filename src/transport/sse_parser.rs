//! A Server-Sent Events parser (the WHATWG `text/event-stream` format), shared by the Streamable
//! HTTP and legacy HTTP+SSE transports.
//!
//! ```text
//!   bytes ──> lines (ended by CRLF, LF or CR) ──> field (event | data | id | retry) ──> buffered
//!   ":..." ──> comment, ignored (keep-alive)
//!   ""     ──> dispatch: data non-empty -> Some(SseEvent); empty data -> nothing (priming event)
//!   data beyond the cap ──> Err(EventTooLarge) at once; the rest of that event is skipped
//! ```
//!
//! The parser is fed bytes as they arrive and never holds a whole line: a `data:` value goes
//! straight into the event's data, which is capped at `max_event` bytes (all its `data:` lines
//! with the `\n` joining them, so one long line and many short ones meet the same cap). Going
//! over the cap is reported as soon as it happens, with the data read so far dropped; a caller
//! that keeps reading gets the next event (the rest of the oversized one is skipped, its `id:`
//! and `retry:` still apply). `event:`, `id:` and `retry:` values longer than [`MAX_FIELD`] are
//! ignored, as are comments and unknown fields of any length, without being buffered.
//!
//! `id` and `retry` are remembered across events even when the event carrying them has no data,
//! so a stream that ends after a priming event can still be resumed with `Last-Event-ID`.
//!
//! Departures from the WHATWG algorithm, none of which an MCP server relies on: an event whose
//! data is empty is not dispatched (a priming event), a leading byte-order mark is not stripped,
//! an empty `id:` forgets the last id (no `Last-Event-ID` is sent), and bytes are decoded as
//! UTF-8 per field value (invalid sequences become U+FFFD).

use std::fmt;
use std::io::{self, BufRead};
use std::time::Duration;

/// The longest `event:`, `id:` or `retry:` value kept; a longer one is ignored.
pub(crate) const MAX_FIELD: usize = 8 * 1024;

/// How much of an oversized event's data is kept, to tell which request it answered.
const HEAD: usize = 256;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` name; `None` means the default, `message`.
    pub(crate) event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
    /// The `id:` in effect when the event was dispatched.
    pub(crate) id: Option<String>,
}

impl SseEvent {
    /// Whether this event carries a JSON-RPC message (`event: message` or no name).
    pub(crate) fn is_message(&self) -> bool {
        matches!(self.event.as_deref(), None | Some("message"))
    }
}

/// An event whose data went over the cap: the error [`SseReader::next_event`] returns (inside an
/// [`io::Error`] of kind `InvalidData`; see [`EventTooLarge::find`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EventTooLarge {
    /// The cap, in bytes.
    pub(crate) limit: usize,
    /// The first bytes of the event's data (up to 256), to tell which request it answered.
    pub(crate) head: Vec<u8>,
}

impl EventTooLarge {
    /// The oversized-event error inside `e`, if that is what `e` is.
    pub(crate) fn find(e: &io::Error) -> Option<&EventTooLarge> {
        e.get_ref()?.downcast_ref::<EventTooLarge>()
    }
}

impl fmt::Display for EventTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "an event exceeds the {} byte limit (`max_message_bytes`)",
            self.limit
        )
    }
}

impl std::error::Error for EventTooLarge {}

/// What feeding bytes produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// An event was dispatched.
    Event(SseEvent),
    /// The current event's data went over the cap; the rest of it will be skipped.
    TooLarge(EventTooLarge),
}

/// The field a line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Data,
    Event,
    Id,
    Retry,
    /// Unknown fields and comments: skipped.
    Other,
}

/// Where the parser is within the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Nothing of the line read yet.
    Start,
    /// Reading the field name (kept in `name`, at most 5 bytes: the longest known name).
    Name,
    /// After the colon; `first` until the first value byte (a single leading space is dropped).
    Value { field: Field, first: bool },
}

/// The longest field name the parser knows (`event`, `retry`).
const MAX_NAME: usize = 5;

/// Event-stream parser state: the event being built, the last id and retry delay, and where
/// it is within the current line.
#[derive(Debug)]
pub(crate) struct SseParser {
    max_event: usize,
    line: Line,
    /// The previous byte was a CR: a LF right after it ends nothing more.
    after_cr: bool,
    name: Vec<u8>,
    /// The `event:`, `id:` or `retry:` value being read.
    value: Vec<u8>,
    /// The value being read went over [`MAX_FIELD`] and will be ignored.
    value_too_long: bool,
    event: Option<String>,
    data: Vec<u8>,
    has_data: bool,
    /// The current event went over the cap: its data is skipped until it ends.
    oversized: bool,
    last_id: Option<String>,
    retry: Option<Duration>,
}

impl SseParser {
    /// A parser with no event id and no retry delay yet, whose events hold at most `max_event`
    /// bytes of data.
    pub(crate) fn new(max_event: usize) -> Self {
        SseParser {
            max_event,
            line: Line::Start,
            after_cr: false,
            name: Vec::new(),
            value: Vec::new(),
            value_too_long: false,
            event: None,
            data: Vec::new(),
            has_data: false,
            oversized: false,
            last_id: None,
            retry: None,
        }
    }

    /// The last event id seen (for `Last-Event-ID`).
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry:` delay the server asked for.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Forgets the partial line and event of an earlier stream, keeping the id and retry delay
    /// (a new stream continues an old one).
    fn new_stream(&mut self) {
        let (last_id, retry) = (self.last_id.take(), self.retry);
        *self = SseParser {
            last_id,
            retry,
            ..SseParser::new(self.max_event)
        };
    }

    /// Feeds bytes until an event is dispatched or the cap is exceeded. Returns how many bytes
    /// of `buf` were used (all of them when the step is `None`) and the step, if any.
    pub(crate) fn feed(&mut self, buf: &[u8]) -> (usize, Option<Step>) {
        let mut i = 0;
        while i < buf.len() {
            if std::mem::take(&mut self.after_cr) && buf[i] == b'\n' {
                i += 1;
                continue;
            }
            let rest = &buf[i..];
            let (content, eol) = match memchr::memchr2(b'\r', b'\n', rest) {
                Some(n) => (&rest[..n], Some(rest[n])),
                None => (rest, None),
            };
            let over = self.take_content(content);
            i += content.len();
            if let Some(t) = over {
                // The rest of the line is part of the oversized event: used up here.
                if eol.is_none() {
                    i = buf.len();
                }
                return (i, Some(Step::TooLarge(t)));
            }
            let Some(terminator) = eol else { break };
            i += 1;
            self.after_cr = terminator == b'\r';
            if let Some(step) = self.end_line() {
                return (i, Some(step));
            }
        }
        (i, None)
    }

    /// Takes bytes of the current line (no line terminator among them).
    fn take_content(&mut self, mut seg: &[u8]) -> Option<EventTooLarge> {
        while !seg.is_empty() {
            match self.line {
                Line::Start => {
                    if seg[0] == b':' {
                        self.line = Line::Value {
                            field: Field::Other,
                            first: false,
                        };
                        return None;
                    }
                    self.line = Line::Name;
                }
                Line::Name => {
                    let colon = memchr::memchr(b':', seg);
                    let part = &seg[..colon.unwrap_or(seg.len())];
                    if self.name.len() + part.len() > MAX_NAME {
                        // No field has so long a name: skip the line.
                        self.name.clear();
                        self.line = Line::Value {
                            field: Field::Other,
                            first: false,
                        };
                        return None;
                    }
                    self.name.extend_from_slice(part);
                    let colon = colon?;
                    let field = self.field();
                    if let Some(t) = self.start_value(field) {
                        return Some(t);
                    }
                    seg = &seg[colon + 1..];
                }
                Line::Value { field, first } => {
                    if first {
                        self.line = Line::Value {
                            field,
                            first: false,
                        };
                        if seg[0] == b' ' {
                            seg = &seg[1..];
                            continue;
                        }
                    }
                    return match field {
                        Field::Data => self.push_data(seg),
                        Field::Event | Field::Id | Field::Retry => {
                            if self.value.len() + seg.len() > MAX_FIELD {
                                self.value = Vec::new();
                                self.value_too_long = true;
                            } else if !self.value_too_long {
                                self.value.extend_from_slice(seg);
                            }
                            None
                        }
                        Field::Other => None,
                    };
                }
            }
        }
        None
    }

    /// The field named by `name` (then cleared).
    fn field(&mut self) -> Field {
        let field = match self.name.as_slice() {
            b"data" => Field::Data,
            b"event" => Field::Event,
            b"id" => Field::Id,
            b"retry" => Field::Retry,
            _ => Field::Other,
        };
        self.name.clear();
        field
    }

    /// Starts the value of `field`; a `data` line after another adds the joining `\n`.
    fn start_value(&mut self, field: Field) -> Option<EventTooLarge> {
        self.line = Line::Value { field, first: true };
        if field == Field::Data {
            let joined = std::mem::replace(&mut self.has_data, true);
            if joined {
                return self.push_data(b"\n");
            }
        }
        None
    }

    /// Appends to the event's data, checking the cap before anything is stored.
    fn push_data(&mut self, seg: &[u8]) -> Option<EventTooLarge> {
        if self.oversized {
            return None;
        }
        let needed = self.data.len() + seg.len();
        if needed > self.max_event {
            let mut head = std::mem::take(&mut self.data);
            head.truncate(HEAD);
            let more = HEAD.saturating_sub(head.len()).min(seg.len());
            head.extend_from_slice(&seg[..more]);
            self.oversized = true;
            return Some(EventTooLarge {
                limit: self.max_event,
                head,
            });
        }
        if needed > self.data.capacity() {
            // Grow by doubling, but never past the cap.
            let target = needed
                .max(self.data.capacity().saturating_mul(2))
                .min(self.max_event);
            self.data.reserve_exact(target - self.data.len());
        }
        self.data.extend_from_slice(seg);
        None
    }

    /// The end of a line: applies its field, or dispatches on a blank line.
    fn end_line(&mut self) -> Option<Step> {
        let line = std::mem::replace(&mut self.line, Line::Start);
        let field = match line {
            Line::Start => return self.dispatch().map(Step::Event),
            Line::Name => {
                // A line without a colon: the whole line is the name, the value is empty.
                let field = self.field();
                if let Some(t) = self.start_value(field) {
                    self.line = Line::Start;
                    return Some(Step::TooLarge(t));
                }
                self.line = Line::Start;
                field
            }
            Line::Value { field, .. } => field,
        };
        let value = std::mem::take(&mut self.value);
        if std::mem::take(&mut self.value_too_long) {
            return None;
        }
        match field {
            Field::Event => self.event = Some(String::from_utf8_lossy(&value).into_owned()),
            Field::Id if !value.contains(&0) => {
                self.last_id = if value.is_empty() {
                    None
                } else {
                    Some(String::from_utf8_lossy(&value).into_owned())
                };
            }
            Field::Retry => {
                if !value.is_empty() && value.iter().all(u8::is_ascii_digit) {
                    // Only digits, so UTF-8; too many of them (an overflow) is ignored.
                    if let Ok(ms) = String::from_utf8_lossy(&value).parse::<u64>() {
                        self.retry = Some(Duration::from_millis(ms));
                    }
                }
            }
            Field::Data | Field::Id | Field::Other => {}
        }
        None
    }

    /// The blank line that ends an event: the event, unless its data is empty or was too large.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let data = std::mem::take(&mut self.data);
        let has_data = std::mem::take(&mut self.has_data);
        if std::mem::take(&mut self.oversized) || !has_data || data.is_empty() {
            return None;
        }
        let data = match String::from_utf8(data) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Some(SseEvent {
            event: event.filter(|e| !e.is_empty()),
            data,
            id: self.last_id.clone(),
        })
    }

    /// The bytes the parser holds now (its buffers' capacity), for the bound tests.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.data.capacity() + self.value.capacity() + self.name.capacity()
    }
}

/// Reads events from a byte stream.
pub(crate) struct SseReader<R> {
    inner: R,
    parser: SseParser,
}

impl<R: BufRead> SseReader<R> {
    /// Wraps a buffered reader positioned at the start of an event stream; events hold at most
    /// `max_event` bytes of data.
    pub(crate) fn new(inner: R, max_event: usize) -> Self {
        Self::with_parser(inner, SseParser::new(max_event))
    }

    /// Wraps a reader, continuing with the id and retry state (and cap) of an earlier stream.
    pub(crate) fn with_parser(inner: R, mut parser: SseParser) -> Self {
        parser.new_stream();
        SseReader { inner, parser }
    }

    /// The parser state (last id, retry).
    pub(crate) fn parser(&self) -> &SseParser {
        &self.parser
    }

    /// Gives back the parser state, for resuming on a new stream.
    pub(crate) fn into_parser(self) -> SseParser {
        self.parser
    }

    /// The next event with data; `Ok(None)` at the end of the stream (an unfinished event is
    /// dropped). An event over the cap is an error of kind `InvalidData` holding an
    /// [`EventTooLarge`]; reading on skips the rest of that event.
    pub(crate) fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        loop {
            let buf = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                return Ok(None);
            }
            let (used, step) = self.parser.feed(buf);
            self.inner.consume(used);
            match step {
                Some(Step::Event(ev)) => return Ok(Some(ev)),
                Some(Step::TooLarge(t)) => {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, t))
                }
                None => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &str) -> (Vec<SseEvent>, SseParser) {
        let mut r = SseReader::new(input.as_bytes(), 1 << 20);
        let mut out = Vec::new();
        while let Some(ev) = r.next_event().expect("in-memory read") {
            out.push(ev);
        }
        (out, r.into_parser())
    }

    #[test]
    fn a_message_event_with_data() {
        let (evs, _) = events("event: message\ndata: {\"a\":1}\n\n");
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data, "{\"a\":1}");
        assert!(evs[0].is_message());
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        let (evs, _) = events("data: one\ndata:two\r\ndata:  three\n\n");
        assert_eq!(evs[0].data, "one\ntwo\n three");
    }

    #[test]
    fn cr_lf_and_crlf_all_end_lines() {
        let (evs, _) = events("data: a\rdata: b\r\ndata: c\n\r\ndata: d\r\r");
        let data: Vec<&str> = evs.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["a\nb\nc", "d"]);
    }

    #[test]
    fn an_id_ended_by_a_lone_cr_does_not_swallow_the_next_line() {
        // Found by the property tests against the parser this one replaced: it split on LF
        // only, so the id became `7\rdata: x` (not a valid Last-Event-ID header) and the event
        // was lost.
        let (evs, p) = events("id: 7\rdata: x\r\r");
        assert_eq!(p.last_event_id(), Some("7"));
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data, "x");
    }

    #[test]
    fn an_empty_id_forgets_the_last_id_and_an_unterminated_line_is_not_applied() {
        let (_, p) = events("id: 7\n\nid\n\nretry: 5");
        assert_eq!(p.last_event_id(), None);
        assert_eq!(p.retry(), None);
    }

    #[test]
    fn comments_are_ignored() {
        let (evs, _) = events(": keep-alive\n\n:\ndata: x\n\n");
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0].data, "x");
    }

    #[test]
    fn empty_data_is_not_dispatched_but_id_and_retry_are_kept() {
        let (evs, p) = events("id: e1\nretry: 500\ndata: \n\n");
        assert!(evs.is_empty());
        assert_eq!(p.last_event_id(), Some("e1"));
        assert_eq!(p.retry(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn id_applies_to_the_event_and_later_ones() {
        let (evs, p) = events("id: 7\ndata: a\n\ndata: b\n\n");
        assert_eq!(evs[0].id.as_deref(), Some("7"));
        assert_eq!(evs[1].id.as_deref(), Some("7"));
        assert_eq!(p.last_event_id(), Some("7"));
    }

    #[test]
    fn named_events_are_not_messages() {
        let (evs, _) = events("event: endpoint\ndata: /messages?s=1\n\n");
        assert_eq!(evs[0].event.as_deref(), Some("endpoint"));
        assert!(!evs[0].is_message());
    }

    #[test]
    fn a_bad_retry_is_ignored_and_an_unterminated_event_is_dropped() {
        let (evs, p) = events("retry: soon\nretry: +5\nretry: 99999999999999999999999\ndata: x");
        assert!(evs.is_empty());
        assert_eq!(p.retry(), None);
    }

    #[test]
    fn an_event_over_the_cap_is_an_error_and_the_next_one_is_read() {
        let big = format!(
            "id: 1\ndata: {}\ndata: {}\n\nid: 2\ndata: small\n\n",
            "x".repeat(60),
            "y".repeat(60)
        );
        let mut r = SseReader::new(big.as_bytes(), 100);
        let err = r.next_event().expect_err("over the cap");
        let t = EventTooLarge::find(&err).expect("typed");
        assert_eq!(t.limit, 100);
        assert!(t.head.starts_with(b"xxx"), "{:?}", t.head);
        assert_eq!(
            err.to_string(),
            "an event exceeds the 100 byte limit (`max_message_bytes`)"
        );
        let ev = r.next_event().expect("read on").expect("the next event");
        assert_eq!((ev.data.as_str(), ev.id.as_deref()), ("small", Some("2")));
        assert_eq!(r.next_event().expect("end"), None);
    }

    #[test]
    fn data_exactly_at_the_cap_is_accepted() {
        // 4 + 1 + 5 = 10 bytes: two lines and the joining newline.
        let mut r = SseReader::new(&b"data: abcd\ndata: efghi\n\n"[..], 10);
        assert_eq!(
            r.next_event().expect("ok").expect("event").data,
            "abcd\nefghi"
        );
        let mut r = SseReader::new(&b"data: abcd\ndata: efghij\n\n"[..], 10);
        assert!(r.next_event().is_err());
    }

    #[test]
    fn a_resumed_stream_keeps_the_id_and_retry_but_not_a_partial_event() {
        let mut r = SseReader::new(&b"id: a\nretry: 10\ndata: cut"[..], 100);
        assert_eq!(r.next_event().expect("end"), None);
        let mut r = SseReader::with_parser(&b"\ndata: next\n\n"[..], r.into_parser());
        let ev = r.next_event().expect("ok").expect("event");
        assert_eq!((ev.data.as_str(), ev.id.as_deref()), ("next", Some("a")));
        assert_eq!(r.parser().retry(), Some(Duration::from_millis(10)));
    }
}

#[cfg(test)]
mod prop {
    //! Property tests: a fixed budget of seeded random cases (raise it with `MCP_FUZZ_CASES`).
    //! Random and structured input, cut into random pieces and fed to the parser, must never
    //! panic, must keep the parser's buffers bounded, and must give exactly what a simple
    //! whole-input reference parser gives.

    use super::*;

    use crate::test_rng::Rng;

    fn cases() -> u64 {
        crate::test_rng::cases(2_000)
    }

    /// What the reference parser saw: events and over-the-cap markers, in order.
    #[derive(Debug, PartialEq, Eq)]
    enum Seen {
        Event(SseEvent),
        TooLarge,
    }

    #[derive(Debug, PartialEq, Eq)]
    struct Outcome {
        seen: Vec<Seen>,
        last_id: Option<String>,
        retry: Option<Duration>,
    }

    /// The WHATWG algorithm on the whole input at once, with this module's documented
    /// departures and cap; written for clarity, not speed.
    fn reference(input: &[u8], cap: usize) -> Outcome {
        // Split into lines; the final piece, if not terminated, is a partial line.
        let mut lines: Vec<&[u8]> = Vec::new();
        let (mut start, mut i) = (0, 0);
        while i < input.len() {
            match input[i] {
                b'\r' => {
                    lines.push(&input[start..i]);
                    i += if input.get(i + 1) == Some(&b'\n') {
                        2
                    } else {
                        1
                    };
                    start = i;
                }
                b'\n' => {
                    lines.push(&input[start..i]);
                    i += 1;
                    start = i;
                }
                _ => i += 1,
            }
        }
        let partial = &input[start..];
        let mut out = Outcome {
            seen: Vec::new(),
            last_id: None,
            retry: None,
        };
        let (mut event, mut data, mut has_data, mut oversized) =
            (None::<String>, Vec::<u8>::new(), false, false);
        let split = |line: &[u8]| -> (Vec<u8>, Vec<u8>) {
            match line.iter().position(|&b| b == b':') {
                Some(c) => {
                    let v = &line[c + 1..];
                    (
                        line[..c].to_vec(),
                        v.strip_prefix(b" ").unwrap_or(v).to_vec(),
                    )
                }
                None => (line.to_vec(), Vec::new()),
            }
        };
        let add_data = |value: &[u8],
                        data: &mut Vec<u8>,
                        has_data: &mut bool,
                        oversized: &mut bool,
                        seen: &mut Vec<Seen>| {
            if !*oversized {
                let join = usize::from(*has_data);
                if data.len() + join + value.len() > cap {
                    *oversized = true;
                    data.clear();
                    seen.push(Seen::TooLarge);
                } else {
                    if *has_data {
                        data.push(b'\n');
                    }
                    data.extend_from_slice(value);
                }
            }
            *has_data = true;
        };
        for line in lines {
            if line.is_empty() {
                if !oversized && has_data && !data.is_empty() {
                    out.seen.push(Seen::Event(SseEvent {
                        event: event.take().filter(|e| !e.is_empty()),
                        data: String::from_utf8_lossy(&data).into_owned(),
                        id: out.last_id.clone(),
                    }));
                }
                event = None;
                data.clear();
                has_data = false;
                oversized = false;
                continue;
            }
            if line[0] == b':' {
                continue;
            }
            let (name, value) = split(line);
            let fits = value.len() <= MAX_FIELD;
            match name.as_slice() {
                b"data" => add_data(
                    &value,
                    &mut data,
                    &mut has_data,
                    &mut oversized,
                    &mut out.seen,
                ),
                b"event" if fits => event = Some(String::from_utf8_lossy(&value).into_owned()),
                b"id" if fits && !value.contains(&0) => {
                    out.last_id =
                        (!value.is_empty()).then(|| String::from_utf8_lossy(&value).into_owned());
                }
                b"retry" if fits && !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    if let Ok(ms) = String::from_utf8_lossy(&value).parse::<u64>() {
                        out.retry = Some(Duration::from_millis(ms));
                    }
                }
                _ => {}
            }
        }
        // A partial `data:` line already counts towards the cap (the parser streams it).
        if partial.first() != Some(&b':') && partial.contains(&b':') {
            let (name, value) = split(partial);
            if name == b"data" {
                add_data(
                    &value,
                    &mut data,
                    &mut has_data,
                    &mut oversized,
                    &mut out.seen,
                );
            }
        }
        out
    }

    /// Feeds `input` in random pieces; checks the bound on held bytes after every piece.
    fn streamed(input: &[u8], cap: usize, rng: &mut Rng, max_piece: usize) -> Outcome {
        let mut p = SseParser::new(cap);
        let mut seen = Vec::new();
        let mut rest = input;
        while !rest.is_empty() {
            let n = 1 + rng.below(max_piece.min(rest.len()));
            let (mut piece, tail) = rest.split_at(n);
            rest = tail;
            while !piece.is_empty() {
                let (used, step) = p.feed(piece);
                assert!(used <= piece.len());
                assert!(
                    used > 0 || step.is_some(),
                    "no progress without a step: {piece:?}"
                );
                piece = &piece[used..];
                match step {
                    Some(Step::Event(ev)) => seen.push(Seen::Event(ev)),
                    Some(Step::TooLarge(t)) => {
                        assert_eq!(t.limit, cap);
                        assert!(t.head.len() <= HEAD);
                        seen.push(Seen::TooLarge);
                    }
                    None => assert!(piece.is_empty()),
                }
                assert!(
                    p.held() <= cap + 2 * MAX_FIELD + 64,
                    "held {} bytes with a cap of {cap}",
                    p.held()
                );
            }
        }
        Outcome {
            seen,
            last_id: p.last_id.clone(),
            retry: p.retry,
        }
    }

    /// A reader that hands out its input in random small reads.
    struct Chunky<'a> {
        data: &'a [u8],
        rng: Rng,
    }

    impl io::Read for Chunky<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.data.is_empty() || buf.is_empty() {
                return Ok(0);
            }
            let n = (1 + self.rng.below(17)).min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// The same through [`SseReader`] over a small-buffered, chunky reader.
    fn through_reader(input: &[u8], cap: usize, seed: u64) -> Outcome {
        let mut rng = Rng::new(seed ^ 0x55);
        let capacity = 1 + rng.below(64);
        let inner = io::BufReader::with_capacity(capacity, Chunky { data: input, rng });
        let mut r = SseReader::new(inner, cap);
        let mut seen = Vec::new();
        loop {
            match r.next_event() {
                Ok(Some(ev)) => seen.push(Seen::Event(ev)),
                Ok(None) => break,
                Err(e) => {
                    assert!(EventTooLarge::find(&e).is_some(), "{e}");
                    seen.push(Seen::TooLarge);
                }
            }
        }
        let p = r.into_parser();
        Outcome {
            seen,
            last_id: p.last_id.clone(),
            retry: p.retry,
        }
    }

    /// A field value: printable ASCII, colons, spaces, multi-byte UTF-8, sometimes long.
    fn value(rng: &mut Rng, out: &mut Vec<u8>) {
        const PIECES: [&str; 10] = [
            "a",
            "Z",
            " ",
            ":",
            "{\"id\":1}",
            "é",
            "日本",
            "🦀",
            "0",
            "\t",
        ];
        let len = if rng.chance(3) {
            rng.below(MAX_FIELD + 40)
        } else {
            rng.below(12)
        };
        for _ in 0..len {
            out.extend_from_slice(rng.pick(&PIECES).as_bytes());
        }
    }

    /// A stream built from SSE lines: every field kind, comments, odd names, blank lines, and
    /// a random terminator after each line.
    fn structured(rng: &mut Rng) -> Vec<u8> {
        const NAMES: [&str; 12] = [
            "data", "data", "data", "event", "id", "retry", "", "dat", "datum", "Data", "retryy",
            "x",
        ];
        const ENDS: [&str; 3] = ["\n", "\r", "\r\n"];
        let mut out = Vec::new();
        for _ in 0..rng.below(40) {
            match rng.below(10) {
                0 | 1 => {}
                2 => {
                    out.push(b':');
                    value(rng, &mut out);
                }
                3 => {
                    out.extend_from_slice(b"retry:");
                    if rng.chance(50) {
                        out.push(b' ');
                    }
                    let digits = ["0", "10", "250", "007", "18446744073709551616", "1x", ""];
                    out.extend_from_slice(rng.pick(&digits).as_bytes());
                }
                4 => {
                    out.extend_from_slice(b"id:");
                    value(rng, &mut out);
                    if rng.chance(20) {
                        out.push(0);
                    }
                }
                _ => {
                    out.extend_from_slice(rng.pick(&NAMES).as_bytes());
                    if rng.chance(85) {
                        out.push(b':');
                        if rng.chance(60) {
                            out.push(b' ');
                        }
                        value(rng, &mut out);
                    }
                }
            }
            out.extend_from_slice(rng.pick(&ENDS).as_bytes());
        }
        if rng.chance(30) {
            // An unterminated tail.
            out.extend_from_slice(b"data: tail");
        }
        out
    }

    /// Bytes from an alphabet weighted towards what the parser looks at, invalid UTF-8 included.
    fn noise(rng: &mut Rng) -> Vec<u8> {
        const TOKENS: [&[u8]; 14] = [
            b"data:",
            b"data",
            b"id:",
            b"event:",
            b"retry:",
            b"\r",
            b"\n",
            b"\r\n",
            b":",
            b" ",
            b"7",
            b"\0",
            b"\xff\xfe",
            b"\xe6\x97",
        ];
        let mut out = Vec::new();
        for _ in 0..rng.below(200) {
            if rng.chance(20) {
                out.push(rng.next() as u8);
            } else {
                let token: &&[u8] = rng.pick(&TOKENS);
                out.extend_from_slice(token);
            }
        }
        out
    }

    fn check(input: &[u8], cap: usize, seed: u64, max_piece: usize) {
        let want = reference(input, cap);
        let mut rng = Rng::new(seed);
        let got = streamed(input, cap, &mut rng, max_piece);
        assert_eq!(
            got,
            want,
            "seed {seed}, cap {cap}, input {:?}",
            String::from_utf8_lossy(input)
        );
        let got = through_reader(input, cap, seed);
        assert_eq!(got, want, "reader, seed {seed}, cap {cap}");
    }

    #[test]
    fn structured_streams_match_the_reference_in_any_pieces() {
        for seed in 0..cases() {
            let mut rng = Rng::new(seed);
            let input = structured(&mut rng);
            let cap = if rng.chance(50) {
                1 + rng.below(64)
            } else {
                1 << 20
            };
            check(&input, cap, seed, 1 + rng.below(32));
        }
    }

    #[test]
    fn random_bytes_never_panic_and_match_the_reference() {
        for seed in 0..cases() {
            let mut rng = Rng::new(seed ^ 0xDEAD_BEEF);
            let input = noise(&mut rng);
            let cap = 1 + rng.below(100);
            check(&input, cap, seed, 1 + rng.below(16));
        }
    }

    #[test]
    fn huge_lines_stay_within_the_cap() {
        // Few cases: each feeds megabytes.
        for seed in 0..(cases() / 100).max(4) {
            let mut rng = Rng::new(seed ^ 0xB16);
            let cap = 1 << 20;
            let line = cap - 16 + rng.below(32);
            let mut input = b"id: big\r\ndata: ".to_vec();
            input.extend(std::iter::repeat_n(b'x', line));
            input.extend_from_slice(if rng.chance(50) { b"\r\n" } else { b"\n" });
            // A second line of the same event, then a small event after it.
            input.extend_from_slice(b"data: y\n\nid: next\ndata: small\r\r");
            let want = reference(&input, cap);
            let piece = 1 + rng.below(65_536);
            let got = streamed(&input, cap, &mut rng, piece);
            assert_eq!(got, want, "seed {seed}");
            assert!(matches!(got.seen.last(), Some(Seen::Event(e)) if e.data == "small"));
            assert_eq!(got.last_id.as_deref(), Some("next"));
        }
    }
}
