//! The standalone GET stream: one named thread, started after `notifications/initialized`,
//! carrying server requests and notifications outside any POST. It reconnects with
//! `Last-Event-ID` a couple of times, gives up on a non-200, and ends when the transport closes.

use crate::sync::lock;
use std::io::BufReader;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{RecvTimeoutError, Sender};

use super::frames::{deliver_frame, drain, is_event_stream};
use super::{HttpTransport, Inner, DEFAULT_RETRY};
use crate::protocol::jsonrpc::Inbound;
use crate::transport::sse_parser::{SseParser, SseReader};

impl HttpTransport {
    /// Starts the GET stream thread unless one runs or the transport is closed, and waits
    /// briefly for the server to answer the GET.
    pub(super) fn start_stream(&self) {
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
                let _ = opened_rx.recv_timeout(self.inner.timeout.min(Duration::from_secs(2)));
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
        let mut parser = SseParser::new();
        let mut failures: u32 = 0;
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return;
            }
            let req = self
                .agent
                .get(&self.url)
                .config()
                .timeout_connect(Some(self.timeout))
                .timeout_recv_response(Some(self.timeout))
                .build()
                .header("Accept", "text/event-stream");
            let req = match parser.last_event_id() {
                Some(id) => req.header("Last-Event-ID", id),
                None => req,
            };
            let Ok(req) = self.prepare(req) else { return };
            let answer = req.call();
            drop(opened.take());
            match answer {
                Ok(resp) if resp.status() == 200 && is_event_stream(&resp) => {
                    log::debug!("server `{}`: standalone GET stream open", self.server);
                    let mut reader = SseReader::with_parser(
                        BufReader::new(resp.into_body().into_reader()),
                        std::mem::take(&mut parser),
                    );
                    loop {
                        match reader.next_event() {
                            Ok(Some(ev)) => {
                                failures = 0;
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
                                if !self.closed.load(Ordering::SeqCst) {
                                    log::debug!("server `{}`: GET stream broke: {e}", self.server);
                                }
                                break;
                            }
                        }
                    }
                    parser = reader.into_parser();
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
            failures += 1;
            if failures > 2 {
                log::debug!("server `{}`: giving up on the GET stream", self.server);
                return;
            }
            let backoff = DEFAULT_RETRY.mul_f64(1.5f64.powi(failures as i32 - 1));
            let delay = parser.retry().unwrap_or(backoff);
            if self.stop_rx.recv_timeout(delay) != Err(RecvTimeoutError::Timeout) {
                return;
            }
        }
    }
}
