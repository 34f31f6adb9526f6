//! The standalone GET stream: one named thread, started after `notifications/initialized`
//! (waited for briefly, so requests sent next find it open) and again after a re-initialization
//! (not waited for: that happens inside a caller's request), carrying server requests and
//! notifications outside any POST. It reconnects with
//! `Last-Event-ID` whenever the stream ends or breaks, gives up on a non-200 answer (405: the
//! server has no such stream; 401/403/407 logged as a warning), and ends when the transport closes.
//!
//! ```text
//!  reconnect delay = clamp(server's `retry:` or 1 s, 250 ms, 30 s) × 2^(attempts without events − 1),
//!                    at most 30 s; a stream that delivered an event resets the count
//! ```
//!
//! The wait is on the transport's stop channel, which `close()` disconnects: closing never
//! waits for a reconnection delay. An event over `max_message_bytes` is skipped (logged as an
//! error; a response in it fails its request at once) and the stream goes on.

use crate::sync::lock;
use std::io::BufReader;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{RecvTimeoutError, Sender};

use super::{HttpTransport, Inner};
use crate::protocol::jsonrpc::Inbound;
use crate::transport::sse_parser::{EventTooLarge, SseParser, SseReader};
use crate::transport::web::{
    deliver_frame, drain, is_event_stream, map_ureq, skip_oversized, status_error,
};
use crate::transport::web::{Limit, Verb};

/// Delay before reconnecting a stream when the server named none.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// The shortest delay before reconnecting, whatever the server's `retry:` says.
pub(super) const MIN_RECONNECT: Duration = Duration::from_millis(250);
/// The longest delay before reconnecting (the backoff's cap, and the most of a `retry:` honoured).
pub(super) const MAX_RECONNECT: Duration = Duration::from_secs(30);

/// How long to wait before reconnection attempt `attempt` (1 for the first in a row): the
/// server's `retry:` (default 1 s) held within 250 ms … 30 s, doubled for each attempt after
/// the first, at most 30 s.
pub(super) fn reconnect_delay(server_retry: Option<Duration>, attempt: u32) -> Duration {
    let base = server_retry
        .unwrap_or(DEFAULT_RETRY)
        .clamp(MIN_RECONNECT, MAX_RECONNECT);
    let factor = 1u32 << attempt.saturating_sub(1).min(16);
    base.saturating_mul(factor).min(MAX_RECONNECT)
}

/// Whether starting the GET stream waits for the server to answer the GET.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Opening {
    /// Wait (at most the request timeout, at most 2 s): after `notifications/initialized`, so
    /// that requests sent next find the stream open.
    Awaited,
    /// Do not wait: after a re-initialization inside a caller's request, whose deadline a GET
    /// the server holds must not spend.
    InBackground,
}

impl HttpTransport {
    /// Starts the GET stream thread unless one runs or the transport is closed; with
    /// [`Opening::Awaited`], waits briefly for the server to answer the GET.
    pub(super) fn start_stream(&self, opening: Opening) {
        let mut slot = lock(&self.stream);
        // Checked under the lock that close() takes to join: no thread starts after close.
        if self.inner.closed.load(Ordering::SeqCst)
            || slot.as_ref().is_some_and(|h| !h.is_finished())
        {
            return;
        }
        if let Some(old) = slot.take() {
            let _ = old.join();
        }
        let inner = Arc::clone(&self.inner);
        // The thread says when the server has answered the GET (stream or not), so that
        // requests sent after `initialized` find the stream already open.
        let (opened_tx, opened_rx) = crossbeam_channel::bounded(1);
        match std::thread::Builder::new()
            .name(format!("mcp-get:{}", inner.server))
            .spawn(move || inner.standalone_stream(opened_tx))
        {
            Ok(h) => {
                *slot = Some(h);
                if opening == Opening::Awaited {
                    let _ = opened_rx.recv_timeout(self.inner.timeout.min(Duration::from_secs(2)));
                }
            }
            Err(e) => log::warn!(
                "server `{}`: could not start the GET stream thread: {e}",
                self.inner.server
            ),
        }
    }
}

impl Inner {
    /// Remembers the ids of responses met on the standalone stream (bounded list).
    fn note_responses(&self, data: &[u8]) {
        if let Ok(msgs) = Inbound::parse(data) {
            let mut seen = lock(&self.answered_elsewhere);
            for m in msgs {
                if let Inbound::Response(r) = m {
                    if let Some(id) = r.id {
                        if seen.len() >= 64 {
                            seen.remove(0);
                        }
                        seen.push(id);
                    }
                }
            }
        }
    }

    /// The standalone GET stream: server requests and notifications outside any POST.
    fn standalone_stream(self: Arc<Self>, opened: Sender<()>) {
        let mut opened = Some(opened);
        let mut parser = SseParser::new(self.max_message);
        // Reconnections in a row without an event.
        let mut attempts: u32 = 0;
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let started = std::time::Instant::now();
            let last_id = parser.last_event_id().map(str::to_owned);
            let mut headers = vec![("Accept", "text/event-stream")];
            if let Some(id) = &last_id {
                headers.push(("Last-Event-ID", id.as_str()));
            }
            let answer = self.request(Verb::Get, &headers, Limit::Open(self.timeout), |what, e| {
                map_ureq(&self.server, what, "GET", started, None, e)
            });
            drop(opened.take());
            let what = format!("GET {}", self.shown_url());
            match answer {
                Ok(resp) if resp.status() == 200 && is_event_stream(&resp) => {
                    log::debug!("server `{}`: standalone GET stream open", self.server);
                    let mut reader = SseReader::with_parser(
                        BufReader::new(resp.into_body().into_reader()),
                        std::mem::replace(&mut parser, SseParser::new(self.max_message)),
                    );
                    loop {
                        match reader.next_event() {
                            Ok(Some(ev)) => {
                                attempts = 0;
                                if ev.is_message() {
                                    self.note_responses(ev.data.as_bytes());
                                    deliver_frame(
                                        &self.server,
                                        &*self.sink,
                                        ev.data.as_bytes(),
                                        None,
                                    );
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                if let Some(t) = EventTooLarge::find(&e) {
                                    skip_oversized(&self.server, &what, &*self.sink, t);
                                    continue;
                                }
                                if !self.closed.load(Ordering::SeqCst) {
                                    log::debug!("server `{}`: GET stream broke: {e}", self.server);
                                }
                                break;
                            }
                        }
                    }
                    parser = reader.into_parser();
                }
                Ok(resp) if crate::error::is_auth_status(resp.status().as_u16()) => {
                    // The error names the server; the next request meets the same refusal and
                    // reports it with the challenge.
                    let e = status_error(&self.server, &what, resp);
                    log::warn!("{e}; no standalone GET stream");
                    return;
                }
                Ok(resp) => {
                    log::debug!(
                        "server `{}`: no standalone GET stream (HTTP {})",
                        self.server,
                        resp.status()
                    );
                    drain(resp);
                    return;
                }
                Err(e) => {
                    if self.closed.load(Ordering::SeqCst) {
                        return;
                    }
                    log::debug!("server `{}`: GET stream failed: {e}", self.server);
                }
            }
            attempts = attempts.saturating_add(1);
            let delay = reconnect_delay(parser.retry(), attempts);
            log::debug!(
                "server `{}`: reconnecting the GET stream in {} ms",
                self.server,
                delay.as_millis()
            );
            if self.stop_rx.recv_timeout(delay) != Err(RecvTimeoutError::Timeout) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reconnect_delay_has_a_floor_grows_and_has_a_cap() {
        let ms = Duration::from_millis;
        assert_eq!(reconnect_delay(Some(ms(0)), 1), ms(250));
        assert_eq!(reconnect_delay(Some(ms(0)), 2), ms(500));
        assert_eq!(reconnect_delay(Some(ms(0)), 3), ms(1000));
        assert_eq!(reconnect_delay(None, 1), ms(1000));
        assert_eq!(reconnect_delay(Some(ms(5000)), 1), ms(5000));
        assert_eq!(reconnect_delay(Some(ms(0)), 40), MAX_RECONNECT);
        assert_eq!(reconnect_delay(Some(Duration::MAX), 1), MAX_RECONNECT);
        assert_eq!(reconnect_delay(Some(ms(100)), u32::MAX), MAX_RECONNECT);
    }
}
