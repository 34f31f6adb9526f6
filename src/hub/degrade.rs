//! The degradation policy: extra retries with exponential
//! backoff for retryable failures, then the server is dropped from the tool set and reported.
//!
//! ```text
//!   call ──ok──> result
//!     └─ retryable error ──(extra_retries times: wait base·2^i, at most max)──> call again
//!           └─ still failing ──graceful──> server degraded: tools removed, reported,
//!                                          reconnected on a later run
//! ```

use std::time::Duration;

use crate::config::{show_duration, ConfigError, ConfigErrorKind, MAX_TIMEOUT};

/// How the [`Hub`](crate::Hub) treats a call that fails with a retryable error
/// ([`Error::is_retryable`](crate::Error::is_retryable): timeout, closed, transport).
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::hub::Degradation;
/// let d = Degradation::default();
/// assert!(d.graceful);
/// assert_eq!(d.extra_retries, 1);
/// assert_eq!(d.delay(0), Duration::from_millis(500));
/// assert_eq!(d.delay(1), Duration::from_secs(1));
/// assert_eq!(d.delay(5), Duration::from_secs(2)); // capped
/// let quick = Degradation::default().extra_retries(3).base_delay(Duration::from_millis(5));
/// assert_eq!(quick.delay(2), Duration::from_millis(20));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Degradation {
    /// Drop a server that still fails after the retries (default `true`). When `false`, the
    /// error is returned and the server stays in the tool set.
    pub graceful: bool,
    /// Retries after the first failure (default 1).
    pub extra_retries: u32,
    /// The wait before the first retry; doubled for each further one (default 500 ms; at most
    /// [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT), see [`validate`](Self::validate)).
    pub base_delay: Duration,
    /// The longest wait between retries (default 2 s; at most
    /// [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT), see [`validate`](Self::validate)).
    pub max_delay: Duration,
}

impl Default for Degradation {
    fn default() -> Self {
        Degradation {
            graceful: true,
            extra_retries: 1,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl Degradation {
    /// Sets [`graceful`](Self::graceful).
    #[must_use]
    pub fn graceful(mut self, graceful: bool) -> Self {
        self.graceful = graceful;
        self
    }

    /// Sets [`extra_retries`](Self::extra_retries).
    #[must_use]
    pub fn extra_retries(mut self, n: u32) -> Self {
        self.extra_retries = n;
        self
    }

    /// Sets [`base_delay`](Self::base_delay).
    #[must_use]
    pub fn base_delay(mut self, d: Duration) -> Self {
        self.base_delay = d;
        self
    }

    /// Sets [`max_delay`](Self::max_delay).
    #[must_use]
    pub fn max_delay(mut self, d: Duration) -> Self {
        self.max_delay = d;
        self
    }

    /// The wait before retry number `retry` (0 for the first): `base_delay · 2^retry`, at most
    /// `max_delay`.
    pub fn delay(&self, retry: u32) -> Duration {
        backoff(retry, self.base_delay, self.max_delay)
    }

    /// Checks the delays: each at most [`MAX_TIMEOUT`](crate::config::MAX_TIMEOUT) (24 h); zero is
    /// allowed (retry at once). [`HubBuilder::try_build`](crate::hub::HubBuilder::try_build) calls
    /// this, and so does every [`Hub::call_tool`](crate::Hub::call_tool), which returns the error
    /// before calling anything.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// use mcp_blocking::hub::Degradation;
    /// let err = Degradation::default().max_delay(Duration::MAX).validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    /// assert_eq!(err.path, "degradation.max_delay");
    /// ```
    ///
    /// # Errors
    /// [`ConfigError`] of kind [`ConfigErrorKind::InvalidValue`] at `degradation.base_delay` or
    /// `degradation.max_delay`, for the server `hub`.
    #[allow(clippy::result_large_err, reason = "a cold path; `Error` boxes it")]
    pub fn validate(&self) -> Result<(), ConfigError> {
        check_delay("degradation.base_delay", self.base_delay)?;
        check_delay("degradation.max_delay", self.max_delay)
    }
}

/// Refuses a Hub delay longer than [`MAX_TIMEOUT`] (the error names the key and the server `hub`).
#[allow(clippy::result_large_err, reason = "a cold path; `Error` boxes it")]
pub(crate) fn check_delay(path: &str, delay: Duration) -> Result<(), ConfigError> {
    if delay <= MAX_TIMEOUT {
        return Ok(());
    }
    let found = show_duration(delay);
    let expected = "at most 86400 s (24 h)";
    Err(ConfigError::new(
        ConfigErrorKind::InvalidValue,
        format!("the delay must be {expected}, found {found}"),
    )
    .at(path)
    .for_server(Some("hub"))
    .found_expected(found, expected))
}

/// `base · 2^n`, at most `max` (no overflow for any `n`).
pub(crate) fn backoff(n: u32, base: Duration, max: Duration) -> Duration {
    let factor = 1u32.checked_shl(n.min(31)).unwrap_or(u32::MAX);
    base.checked_mul(factor).unwrap_or(max).min(max)
}

/// A server left out of the tool set after its calls kept failing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DegradedServer {
    /// The server's name.
    pub server: String,
    /// The last error, as text.
    pub reason: String,
    /// The offered names of the tools that were removed.
    pub tools: Vec<String>,
}

/// A server that could not be connected.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerFailure {
    /// The server's name.
    pub server: String,
    /// The error, as text (it names the server and, for stdio, quotes its last stderr lines).
    pub reason: String,
    /// How many connection attempts have failed in a row.
    pub attempts: u32,
}

/// One paragraph for a system prompt naming the external tools that are unavailable, or `None`
/// when every server is fine.
pub(crate) fn status_note(degraded: &[DegradedServer], failed: &[ServerFailure]) -> Option<String> {
    if degraded.is_empty() && failed.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    for d in degraded {
        if d.tools.is_empty() {
            parts.push(format!("`{}` (its calls kept failing)", d.server));
        } else {
            parts.push(format!(
                "`{}` (its calls kept failing; tools {})",
                d.server,
                quoted(&d.tools)
            ));
        }
    }
    for f in failed {
        parts.push(format!("`{}` (could not be reached)", f.server));
    }
    let plural = parts.len() > 1;
    Some(format!(
        "Note: {} external tool server{} {} unavailable for this request: {}. {} tools are not \
         offered; if the request needs them, say so instead of guessing their results.",
        if plural { "these" } else { "this" },
        if plural { "s" } else { "" },
        if plural { "are" } else { "is" },
        parts.join("; "),
        if plural { "Their" } else { "Its" },
    ))
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let base = Duration::from_millis(500);
        let max = Duration::from_secs(2);
        let got: Vec<u128> = (0..5).map(|n| backoff(n, base, max).as_millis()).collect();
        assert_eq!(got, [500, 1000, 2000, 2000, 2000]);
        assert_eq!(backoff(u32::MAX, base, max), max);
        assert_eq!(backoff(40, Duration::from_secs(u64::MAX / 2), max), max);
    }

    #[test]
    fn no_note_when_all_is_well() {
        assert_eq!(status_note(&[], &[]), None);
    }

    #[test]
    fn note_names_servers_and_tools() {
        let d = DegradedServer {
            server: "github".into(),
            reason: "closed".into(),
            tools: vec!["search_repos".into()],
        };
        let note = status_note(std::slice::from_ref(&d), &[]).unwrap_or_default();
        assert!(note.starts_with("Note: this external tool server is unavailable"));
        assert!(note.contains("`github`") && note.contains("`search_repos`"));
        let f = ServerFailure {
            server: "fs".into(),
            reason: "spawn".into(),
            attempts: 2,
        };
        let note = status_note(&[d], &[f]).unwrap_or_default();
        assert!(note.contains("these external tool servers are unavailable"));
        assert!(note.contains("`fs` (could not be reached)"));
        assert!(!note.contains('\n'));
    }
}
