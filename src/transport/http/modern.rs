//! The modern era (2026-07-28) on Streamable HTTP: a request is modern when it carries the
//! `Mcp-Method` header the protocol era gave it (see `Outgoing::headers`), and a modern
//! request's refusal may carry a JSON-RPC error in its body
//! (400 with `-32022`, `-32602` or `-32020`; 404 with `-32601`), which answers the request like
//! any error response.

use super::post::Exchange;
use super::Inner;
use crate::error::Error;
use crate::transport::web::{deliver_frame, read_capped, status_error};
use crate::transport::Outgoing;

/// The most of a refusal's body read to look for a JSON-RPC error in it.
const MAX_REFUSAL_BYTES: usize = 64 * 1024;

impl Inner {
    /// A non-2xx reply to a modern request: a JSON-RPC error in its body is delivered as the
    /// request's answer; anything else (and 401/403/407) is the usual status error.
    pub(super) fn modern_refusal(
        &self,
        resp: ureq::http::Response<ureq::Body>,
        out: &Outgoing,
    ) -> Result<(), Exchange> {
        let status = resp.status().as_u16();
        let what = format!("POST {}", self.shown_url());
        if crate::error::is_auth_status(status) || out.id.is_none() {
            return Err(status_error(&self.server, &what, resp).into());
        }
        let body = read_capped(resp.into_body().into_reader(), MAX_REFUSAL_BYTES, None)
            .ok()
            .flatten()
            .unwrap_or_default();
        let is_error = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .is_some_and(|v| v.get("error").is_some_and(serde_json::Value::is_object));
        if is_error && deliver_frame(&self.server, &*self.sink, &body, out.id.as_ref()) {
            return Ok(());
        }
        let text = String::from_utf8_lossy(&body);
        let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut snippet: String = one_line.chars().take(200).collect();
        if snippet.len() < one_line.len() {
            // Marked, so that the redaction of the error hides what the cut left of a secret.
            snippet.push(crate::config::CUT);
        }
        Err(Error::Transport {
            server: self.server.clone(),
            status: Some(status),
            detail: if snippet.is_empty() {
                format!("{what}: HTTP {status}")
            } else {
                format!("{what}: HTTP {status}: {snippet}")
            },
            source: None,
        }
        .into())
    }
}
