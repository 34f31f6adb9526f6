//! The request path: one POST per outbound frame, bounded by the caller's deadline, and what
//! its status means (404 with a session: re-initialize once; `initialize` refused with legacy
//! detection on: fall back; other failures: an error quoting the body). Reading the reply is
//! [`reply`](super::reply)'s job.

use crate::sync::lock;
use std::time::{Duration, Instant};

use super::Inner;
use crate::error::Error;
use crate::protocol::jsonrpc::RequestId;
use crate::transport::web::{drain, map_io, map_ureq, status_error, Limit, Verb};
use crate::transport::Outgoing;

/// The Accept header every POST carries (the spec requires both types).
const ACCEPT_POST: &str = "application/json, text/event-stream";

/// How an exchange that did not simply succeed ended.
pub(super) enum Exchange {
    /// The session expired and was re-established; the request was repeated and succeeded.
    Reinitialized,
    /// `initialize` was refused with this status and legacy detection is on.
    Legacy(u16),
    /// Anything else that went wrong.
    Failed(Box<Error>),
}

impl From<Error> for Exchange {
    fn from(e: Error) -> Self {
        Exchange::Failed(Box::new(e))
    }
}

/// What a caller's exchange is about: the request it waits for and its deadline.
pub(super) struct Call<'a> {
    /// The id of the response waited for (none for a notification).
    pub(super) want: Option<&'a RequestId>,
    /// The method, for errors.
    pub(super) method: &'a str,
    /// When the exchange began, for `Error::Timeout::after`.
    pub(super) started: Instant,
    /// The caller's deadline (for this wait: progress may move it on).
    pub(super) deadline: Instant,
    /// The latest the reply may be read by (the deadline unless progress may move it on): the
    /// bound ureq is given for the whole exchange.
    pub(super) limit: Instant,
    /// The caller reads an event-stream reply in `wait` (see `Outgoing::caller_waits`).
    pub(super) read_in_wait: bool,
    /// Deliver what arrives to the sink (false while replaying `initialize`).
    pub(super) deliver: bool,
    /// Whether a broken SSE reply is resumed with `Last-Event-ID` (legacy era); a modern
    /// request is re-issued by the client instead.
    pub(super) resumable: bool,
}

impl Call<'_> {
    /// The timeout error for this call, measured from its start.
    pub(super) fn timeout(&self, server: &str) -> Error {
        Error::Timeout {
            server: server.to_owned(),
            method: self.method.to_owned(),
            after: self.started.elapsed(),
        }
    }

    /// Maps an I/O error met while reading this call's reply.
    pub(super) fn io_error(&self, server: &str, what: &str, e: std::io::Error) -> Error {
        map_io(
            server,
            what,
            self.method,
            self.started,
            Some(self.deadline),
            e,
        )
    }

    /// Maps a ureq failure met while making this call.
    pub(super) fn ureq_error(&self, server: &str, what: &str, e: ureq::Error) -> Error {
        map_ureq(
            server,
            what,
            self.method,
            self.started,
            Some(self.deadline),
            e,
        )
    }
}

impl Inner {
    /// POSTs one frame with the headers its message carries and the session headers, bounded
    /// by `deadline` (body reading included; a caller's own deadline, see `buffered::within`,
    /// may bound it sooner).
    pub(super) fn post(
        &self,
        frame: &[u8],
        carried: &[(String, String)],
        method: &str,
        deadline: Instant,
    ) -> Result<ureq::http::Response<ureq::Body>, Error> {
        let started = Instant::now();
        let left = deadline.saturating_duration_since(started);
        if left.is_zero() {
            return Err(Error::Timeout {
                server: self.server.clone(),
                method: method.to_owned(),
                after: Duration::ZERO,
            });
        }
        let fail = |what: &str, e| map_ureq(&self.server, what, method, started, Some(deadline), e);
        let mut headers = vec![
            ("Accept", ACCEPT_POST),
            ("Content-Type", "application/json"),
        ];
        headers.extend(carried.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        self.request(Verb::Post(frame), &headers, Limit::Until(deadline), fail)
    }

    /// Sends one frame and reads its reply; on a 404 with a session, re-initializes once and
    /// sends the frame again.
    pub(super) fn exchange(
        &self,
        out: &Outgoing,
        deadline: Instant,
        may_reinit: bool,
    ) -> Result<(), Exchange> {
        let started = Instant::now();
        let method = out.label();
        let had_session = lock(&self.state).session_id.is_some();
        let limit = out.limit.map_or(deadline, |l| l.max(deadline));
        let resp = self.post(&out.frame, &out.headers, method, limit)?;
        let status = resp.status().as_u16();
        if status == 404 && had_session && may_reinit && method != "initialize" {
            drain(resp);
            let has_init = lock(&self.state).init_frame.is_some();
            if has_init {
                log::info!(
                    "server `{}`: session expired (HTTP 404); re-initializing",
                    self.server
                );
                self.reinitialize(deadline)?;
                self.exchange(out, deadline, false)?;
                return Err(Exchange::Reinitialized);
            }
            return Err(Exchange::Failed(Box::new(Error::Transport {
                server: self.server.clone(),
                status: Some(404),
                detail: format!("POST {}: HTTP 404: session expired", self.shown_url()),
                source: None,
            })));
        }
        if method == "initialize" && had_session && may_reinit && matches!(status, 400 | 404) {
            // A configured session id the server no longer knows: start a fresh session.
            drain(resp);
            log::info!(
                "server `{}`: the configured session was refused (HTTP {status}); starting a new one",
                self.server
            );
            lock(&self.state).session_id = None;
            return self.exchange(out, deadline, false);
        }
        if method == "initialize" && self.detect_legacy_sse && matches!(status, 400 | 404 | 405) {
            drain(resp);
            return Err(Exchange::Legacy(status));
        }
        let modern = is_modern(out);
        if !(200..300).contains(&status) && modern {
            // A modern server refuses with a JSON-RPC error in the body (400 -32022, 404 -32601).
            return self.modern_refusal(resp, out);
        }
        if !(200..300).contains(&status) {
            return Err(
                status_error(&self.server, &format!("POST {}", self.shown_url()), resp).into(),
            );
        }
        if method == "initialize" {
            self.take_session_id(&resp);
        }
        if !out.is_request() {
            drain(resp);
            return Ok(());
        }
        let call = Call {
            want: out.id.as_ref(),
            method,
            started,
            deadline,
            limit,
            read_in_wait: out.caller_waits,
            deliver: true,
            resumable: !modern,
        };
        self.read_reply(resp, &call)?;
        Ok(())
    }

    /// Tells the server a timed-out request is abandoned (best effort, briefly bounded).
    pub(super) fn cancel(&self, id: &RequestId) {
        let note = Outgoing::cancellation(id, "timed out", self.timeout);
        let deadline = note.deadline.unwrap_or_else(Instant::now);
        match self.post(&note.frame, &[], "notifications/cancelled", deadline) {
            Ok(resp) => drain(resp),
            Err(e) => log::debug!(
                "server `{}`: could not send the cancellation: {e}",
                self.server
            ),
        }
    }
}

/// Whether `out` is a modern request (2026-07-28): only those carry `Mcp-Method`.
fn is_modern(out: &Outgoing) -> bool {
    out.header("Mcp-Method").is_some()
}

#[cfg(test)]
mod tests {
    //! What a POST's status and kind decide.

    use std::sync::Arc;

    use crate::transport::Closing;

    use serde_json::json;

    use crate::transport::http::test_support::HttpServer;
    use crate::transport::http::tests::{transport, Recorder};

    #[test]
    fn a_notification_accepts_any_2xx_and_delivers_nothing() {
        // Some servers answer notifications with `200 {"jsonrpc":"2.0","result":{}}`.
        let srv = HttpServer::start(|_req, conn| {
            conn.json(200, &[], &json!({"jsonrpc": "2.0", "result": {}}))
        });
        let sink = Arc::new(Recorder::default());
        let t = transport(&srv.url("/mcp"), sink.clone());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        t.send(crate::transport::Outgoing::parse(
            note.to_string().into_bytes(),
        ))
        .expect("send");
        t.close(Closing::Graceful).expect("close");
        assert!(sink.seen.lock().unwrap().is_empty());
    }
}
