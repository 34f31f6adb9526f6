//! The legacy HTTP+SSE fallback: when `initialize` is refused and detection is on, a legacy
//! transport is opened at the same URL and every later call is forwarded to it.

use std::sync::Arc;
use std::time::Instant;

use super::HttpTransport;
use crate::error::Error;
use crate::transport::Outgoing;

impl HttpTransport {
    /// Opens the legacy transport (once) and sends `frame` on it.
    pub(super) fn fall_back(&self, out: Outgoing) -> Result<(), Error> {
        let deadline = out.deadline.unwrap_or_else(Instant::now);
        let inner = &self.inner;
        let left = deadline.saturating_duration_since(Instant::now());
        log::info!(
            "server `{}`: Streamable HTTP refused; trying legacy HTTP+SSE at {}",
            inner.server,
            inner.shown_url()
        );
        let legacy = crate::transport::sse::open_with(
            &inner.url(),
            inner.req.clone(),
            left.min(inner.timeout),
            inner.max_message,
            Arc::clone(&inner.sink),
        )?;
        let legacy = self.fallback.get_or_init(|| legacy);
        legacy.send(out)
    }
}
