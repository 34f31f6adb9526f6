//! Frames in: inbound messages handed to the sink, and the small reply-body helpers (content
//! type, draining).

use std::io::Read;

use crate::protocol::jsonrpc::{peek_id_prefix, Fault, Inbound, RequestId};
use crate::transport::sse_parser::EventTooLarge;
use crate::transport::Sink;

/// The most of an unwanted body read so its connection can be reused; a longer body is
/// dropped unread, which closes its connection.
const MAX_DRAIN: u64 = 64 * 1024;

/// Reads and drops a small body so the connection can be reused.
pub(crate) fn drain(resp: ureq::http::Response<ureq::Body>) {
    let mut sink = std::io::sink();
    let _ = std::io::copy(
        &mut resp.into_body().into_reader().take(MAX_DRAIN),
        &mut sink,
    );
}

/// The reply's `Content-Length`, when it has a usable one.
pub(crate) fn content_length(resp: &ureq::http::Response<ureq::Body>) -> Option<u64> {
    resp.headers()
        .get("content-length")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Reads a body of at most `max` bytes; `Ok(None)` when it is longer (then read no further
/// than `max` plus one read). The buffer grows with what arrives and never past `max` (plus the
/// one byte that tells a longer body). `hint` is the body's announced length: a body that keeps
/// to it is read into one buffer of that size, with no copy.
pub(crate) fn read_capped(
    mut body: impl Read,
    max: usize,
    hint: Option<u64>,
) -> std::io::Result<Option<Vec<u8>>> {
    /// The first buffer when the length is not announced.
    const FIRST: usize = 8 * 1024;
    let limit = max.saturating_add(1);
    let first = hint
        .and_then(|n| usize::try_from(n).ok())
        .map_or(FIRST, |n| n.saturating_add(1))
        .clamp(1, limit);
    let mut buf: Vec<u8> = Vec::with_capacity(first);
    loop {
        if buf.len() == buf.capacity() {
            // Grow by doubling, but never past the cap (and the one byte beyond it).
            let target = buf.capacity().saturating_mul(2).max(FIRST).min(limit);
            buf.reserve_exact(target - buf.len());
        }
        let len = buf.len();
        buf.resize(buf.capacity(), 0);
        let n = match body.read(&mut buf[len..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                buf.truncate(len);
                continue;
            }
            Err(e) => return Err(e),
        };
        buf.truncate(len + n);
        if n == 0 {
            return Ok(Some(buf));
        }
        if buf.len() > max {
            return Ok(None);
        }
    }
}

/// The reply's `Content-Type`, lowercased (empty when absent).
fn content_type(resp: &ureq::http::Response<ureq::Body>) -> String {
    resp.headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Whether the reply is an SSE stream.
pub(crate) fn is_event_stream(resp: &ureq::http::Response<ureq::Body>) -> bool {
    content_type(resp).starts_with("text/event-stream")
}

/// Parses one frame and hands every message to the sink; returns whether the response to
/// `want` was among them.
pub(crate) fn deliver_frame(
    server: &str,
    sink: &dyn Sink,
    data: &[u8],
    want: Option<&RequestId>,
) -> bool {
    match Inbound::parse(data) {
        Ok(msgs) => {
            let mut found = false;
            for mut msg in msgs {
                if let (Some(want), Inbound::Response(r)) = (want, &mut msg) {
                    // A POST carries one request: an error without an id in its reply (a server
                    // that could not read the request) answers that request.
                    if r.id.is_none() && matches!(r.outcome, Err(Fault::Rpc(_))) {
                        r.id = Some(want.clone());
                    }
                    if r.id.as_ref() == Some(want) {
                        found = true;
                    }
                }
                sink.deliver(msg);
            }
            found
        }
        Err(e) => {
            log::warn!("server `{server}`: ignoring a malformed message: {e}");
            false
        }
    }
}

/// Whether the frame holds a response to `want` (to any request when `want` is `None`).
pub(crate) fn is_response_to(data: &[u8], want: Option<&RequestId>) -> bool {
    match Inbound::parse(data) {
        Ok(msgs) => msgs.iter().any(|m| match m {
            Inbound::Response(r) => want.is_none() || r.id.as_ref() == want,
            _ => false,
        }),
        Err(_) => false,
    }
}

/// Logs an event over the cap met on a stream and, when it is a response (its id comes first),
/// fails the request waiting for it at once.
pub(crate) fn skip_oversized(server: &str, what: &str, sink: &dyn Sink, t: &EventTooLarge) {
    let detail = format!(
        "{what}: an event exceeds the {} byte limit (`max_message_bytes`) and was discarded",
        t.limit
    );
    log::error!("server `{server}`: {detail}");
    if let Some(id) = peek_id_prefix(&t.head) {
        sink.reject(id, detail);
    }
}

#[cfg(test)]
mod tests {
    //! Capped body reads, with and without an announced length.

    use super::read_capped;

    /// Reads in pieces of at most 3 bytes, like a socket might.
    struct Trickle<'a>(&'a [u8]);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_body_is_read_whole_whatever_its_announced_length() {
        let body = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
        for hint in [None, Some(body.len() as u64), Some(2), Some(10_000)] {
            let got = read_capped(Trickle(body), 1000, hint).expect("read");
            assert_eq!(got.as_deref(), Some(&body[..]), "hint {hint:?}");
        }
        let exact = read_capped(Trickle(body), 1000, Some(body.len() as u64))
            .expect("read")
            .expect("within the cap");
        assert!(exact.capacity() <= body.len() + 1, "{}", exact.capacity());
    }

    #[test]
    fn a_body_over_the_cap_is_none_and_the_buffer_stays_within_it() {
        let body = vec![b'x'; 100];
        assert_eq!(read_capped(Trickle(&body), 99, None).expect("read"), None);
        assert_eq!(
            read_capped(Trickle(&body), 99, Some(100)).expect("read"),
            None
        );
        let at_cap = read_capped(Trickle(&body), 100, None).expect("read");
        assert_eq!(at_cap.map(|b| b.len()), Some(100));
        assert_eq!(
            read_capped(Trickle(b""), 0, None).expect("read"),
            Some(Vec::new())
        );
    }
}
