//! The legacy HTTP+SSE fallback is decided where connections are made (`client/connect.rs`):
//! when `initialize` is refused (400, 404 or 405) and detection is on, this transport's `send`
//! fails, and the connect code opens a legacy HTTP+SSE transport at the endpoint given here.

use super::HttpTransport;

/// Why and where to try legacy HTTP+SSE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LegacyRefusal {
    /// The status that refused `initialize`.
    pub(crate) status: u16,
    /// The endpoint now (the configured URL, or where a permanent redirect moved it).
    pub(crate) url: String,
    /// What the refusal reads like in a message (the URL without its secrets).
    pub(crate) shown: String,
}

impl HttpTransport {
    /// Set when auto-detection is on and the server refused `initialize` as a legacy HTTP+SSE
    /// server does.
    pub(crate) fn legacy_refusal(&self) -> Option<LegacyRefusal> {
        let status = *self.legacy_refused.get()?;
        Some(LegacyRefusal {
            status,
            url: self.inner.url(),
            shown: format!("POST {}: HTTP {status}", self.inner.shown_url()),
        })
    }
}
