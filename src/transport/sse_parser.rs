//! A Server-Sent Events parser (the WHATWG `text/event-stream` format), shared by the Streamable
//! HTTP and legacy HTTP+SSE transports.
//!
//! ```text
//!   line ──> field (event | data | id | retry) ──> buffered
//!   ":..." ──> comment, ignored (keep-alive)
//!   ""     ──> dispatch: data non-empty -> Some(SseEvent); empty data -> nothing (priming event)
//! ```
//!
//! `id` and `retry` are remembered across events even when the event carrying them has no data,
//! so a stream that ends after a priming event can still be resumed with `Last-Event-ID`.

use std::io::{self, BufRead, Read};
use std::time::Duration;

/// The longest line accepted: one JSON-RPC message per `data:` line, generously bounded.
const MAX_LINE: usize = 16 * 1024 * 1024;

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

/// Line-level state of an event stream.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    event: Option<String>,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    retry: Option<Duration>,
}

impl SseParser {
    /// A parser with no event id and no retry delay yet.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The last event id seen (for `Last-Event-ID`).
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry:` delay the server asked for.
    pub(crate) fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Feeds one line (without its line terminator). Returns an event when the line was the blank
    /// line that ends an event with data.
    pub(crate) fn feed_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.trim().parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        let has_data = std::mem::take(&mut self.has_data);
        let data = std::mem::take(&mut self.data);
        if !has_data || data.is_empty() {
            return None;
        }
        Some(SseEvent {
            event: event.filter(|e| !e.is_empty()),
            data,
            id: self.last_id.clone(),
        })
    }
}

/// Reads events from a byte stream.
pub(crate) struct SseReader<R> {
    inner: R,
    parser: SseParser,
    line: Vec<u8>,
}

impl<R: BufRead> SseReader<R> {
    /// Wraps a buffered reader positioned at the start of an event stream.
    pub(crate) fn new(inner: R) -> Self {
        Self::with_parser(inner, SseParser::new())
    }

    /// Wraps a reader, continuing with the id and retry state of an earlier stream.
    pub(crate) fn with_parser(inner: R, parser: SseParser) -> Self {
        SseReader {
            inner,
            parser,
            line: Vec::new(),
        }
    }

    /// The parser state (last id, retry).
    pub(crate) fn parser(&self) -> &SseParser {
        &self.parser
    }

    /// Gives back the parser state, for resuming on a new stream.
    pub(crate) fn into_parser(self) -> SseParser {
        self.parser
    }

    /// The next event with data; `Ok(None)` at the end of the stream.
    pub(crate) fn next_event(&mut self) -> io::Result<Option<SseEvent>> {
        loop {
            self.line.clear();
            let n = <&mut R as Read>::take(&mut self.inner, MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut self.line)?;
            if n == 0 {
                return Ok(None);
            }
            if self.line.len() > MAX_LINE {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "event-stream line too long",
                ));
            }
            let mut bytes: &[u8] = &self.line;
            if let [rest @ .., b'\n'] = bytes {
                bytes = rest;
            }
            if let [rest @ .., b'\r'] = bytes {
                bytes = rest;
            }
            let text = String::from_utf8_lossy(bytes);
            if let Some(ev) = self.parser.feed_line(&text) {
                return Ok(Some(ev));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(input: &str) -> (Vec<SseEvent>, SseParser) {
        let mut r = SseReader::new(input.as_bytes());
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
        let (evs, p) = events("retry: soon\ndata: x");
        assert!(evs.is_empty());
        assert_eq!(p.retry(), None);
    }
}
