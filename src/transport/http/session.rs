//! Session state: the `Mcp-Session-Id` and protocol version every request carries, the
//! remembered handshake replayed when the server forgets the session (HTTP 404), and the DELETE
//! that ends it.

use crate::sync::lock;
use std::time::{Duration, Instant};

use super::post::Call;
use super::Inner;
use crate::error::Error;
use crate::transport::web::{drain, map_ureq, status_error};
use crate::transport::web::{Limit, Verb};
use crate::transport::Outgoing;

/// What the server told us about the session, and the handshake to replay.
#[derive(Default)]
pub(super) struct State {
    /// The `Mcp-Session-Id`, once the server assigned one (or the configured one).
    pub(super) session_id: Option<String>,
    /// The negotiated protocol version, sent as `MCP-Protocol-Version` with every message that
    /// carries none of its own: the handshake's last message (`notifications/initialized`)
    /// names it.
    pub(super) protocol_version: Option<String>,
    /// The initialize request and initialized notification, replayed on a 404.
    pub(super) init_frame: Option<Outgoing>,
    pub(super) initialized_frame: Option<Vec<u8>>,
}

impl Inner {
    /// The session id and protocol version headers every request carries (once known).
    pub(super) fn session_headers(&self) -> Vec<(&'static str, String)> {
        let state = lock(&self.state);
        let mut out = Vec::with_capacity(2);
        if let Some(sid) = &state.session_id {
            out.push(("Mcp-Session-Id", sid.clone()));
        }
        if let Some(v) = &state.protocol_version {
            out.push((super::VERSION_HEADER, v.clone()));
        }
        out
    }

    /// Remembers the session id the server assigned, if it sent one.
    pub(super) fn take_session_id(&self, resp: &ureq::http::Response<ureq::Body>) {
        let sid = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        if let Some(sid) = sid {
            log::debug!("server `{}`: session established", self.server);
            lock(&self.state).session_id = Some(sid);
        }
    }

    /// Replays the remembered initialize request and initialized notification without a session
    /// id. The initialize response is consumed here, not delivered: nobody is waiting for it.
    pub(super) fn reinitialize(&self, deadline: Instant) -> Result<(), Error> {
        let (init, initialized) = {
            let mut st = lock(&self.state);
            st.session_id = None;
            (st.init_frame.clone(), st.initialized_frame.clone())
        };
        let Some(init) = init else {
            return Ok(());
        };
        let started = Instant::now();
        let resp = self.post(&init.frame, &init.headers, "initialize", deadline)?;
        if !resp.status().is_success() {
            return Err(status_error(
                &self.server,
                &format!("re-initialize POST {}", self.shown_url()),
                resp,
            ));
        }
        self.take_session_id(&resp);
        let call = Call {
            want: init.id.as_ref(),
            method: "initialize",
            started,
            deadline,
            limit: deadline,
            read_in_wait: false,
            deliver: false,
            resumable: true,
        };
        self.read_reply(resp, &call)?;
        if let Some(note) = initialized {
            let resp = self.post(&note, &[], "notifications/initialized", deadline)?;
            if !resp.status().is_success() {
                return Err(status_error(
                    &self.server,
                    &format!("re-initialize POST {}", self.shown_url()),
                    resp,
                ));
            }
            drain(resp);
        }
        Ok(())
    }

    /// Sends DELETE with the session id; 405 means the server does not support it.
    pub(super) fn delete_session(&self) {
        if lock(&self.state).session_id.is_none() {
            return;
        }
        let limit = Limit::Until(Instant::now() + self.timeout.min(Duration::from_secs(5)));
        let started = Instant::now();
        let fail = |what: &str, e| map_ureq(&self.server, what, "DELETE", started, None, e);
        match self.request(Verb::Delete, &[], limit, fail) {
            Ok(resp) => {
                log::debug!(
                    "server `{}`: DELETE session: HTTP {}",
                    self.server,
                    resp.status()
                );
                drain(resp);
            }
            Err(e) => log::debug!("server `{}`: DELETE session failed: {e}", self.server),
        }
    }
}
