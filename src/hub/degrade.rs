//! The degradation policy: extra retries with exponential backoff for failures a retry cannot
//! make worse, then the server is dropped from the tool set and reported.
//!
//! ```text
//!   (not connected: reconnect first) ──> call ──ok──> result
//!     ├─ failed before the request was sent (not connected, reconnecting failed)
//!     │  or sent, retryable, and the tool may run twice (idempotentHint, retry_tool)
//!     │     ──(extra_retries times: wait base·2^i, at most max; reconnect if closed)──> call again
//!     │        └─ still failing ──graceful──> server degraded: tools removed, reported,
//!     │                                       reconnected on a later run
//!     └─ sent, retryable (timeout, closed, transport), and the tool may not run twice
//!           ──> not sent again; the error is returned. The server is checked instead: closed ──>
//!               reconnected; timeout or transport ──> `ping`. Check failed ──graceful──> degraded
//! ```

use std::time::Duration;

#[cfg(test)]
use super::registry::HubTool;
use crate::config::{show_duration, ConfigError, ConfigErrorKind, MAX_TIMEOUT};
use crate::error::Error;

/// How the [`Hub`](crate::Hub) treats a call that fails with a retryable error
/// ([`Error::is_retryable`](crate::Error::is_retryable): timeout, closed, transport), or that
/// could not be sent because the server could not be reached.
///
/// A `tools/call` whose request may have reached the server (it timed out, the connection
/// closed or broke after it was written) may have run: the Hub sends it again only when the
/// tool declares `annotations.idempotentHint: true` or is named with
/// [`retry_tool`](Self::retry_tool), so a tool that charges a card or sends a mail never runs
/// twice by the Hub's doing. Otherwise the error is returned at once, and the Hub checks the
/// server instead: a closed connection is reconnected (so the next call works), a timed-out
/// or broken one is sent a `ping`; when that check fails too the server is degraded
/// ([`graceful`](Self::graceful)). A failure before anything was sent (the client was not
/// connected, reconnecting failed) is always retried. A closed connection is reconnected
/// before a retry, so the retry reaches a new connection (for stdio, a new process).
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
/// assert!(d.retry_tools.is_empty());
/// let lookup = Degradation::default().retry_tool("search").retry_tool("github__get_issue");
/// assert_eq!(lookup.retry_tools, ["search", "github__get_issue"]);
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
    /// Tools that may be sent again after a failure that may have reached the server, on top of
    /// those whose definition says `annotations.idempotentHint: true`: each entry is a tool's
    /// offered name (`server__tool` after a collision) or the server's own name for it
    /// (default: none).
    pub retry_tools: Vec<String>,
}

impl Default for Degradation {
    fn default() -> Self {
        Degradation {
            graceful: true,
            extra_retries: 1,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(2),
            retry_tools: Vec::new(),
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

    /// Adds `name` to [`retry_tools`](Self::retry_tools): a call of that tool that timed out
    /// or whose connection ended may be sent again, as if the tool declared
    /// `idempotentHint: true`. Use it for tools you know are safe to run twice (lookups,
    /// searches) whose server does not say so.
    #[must_use]
    pub fn retry_tool(mut self, name: impl Into<String>) -> Self {
        self.retry_tools.push(name.into());
        self
    }

    #[cfg(test)]
    pub(crate) fn may_resend(&self, tool: &HubTool) -> bool {
        let t = &tool.tool;
        let declared = t.annotations.as_ref().and_then(|a| a.idempotent_hint) == Some(true);
        self.may_resend_named(&tool.name, &t.name, declared)
    }

    /// Whether a call of the tool the server calls `name`, offered as `offered`, may be sent
    /// again after it may have reached the server: the tool declares `idempotentHint: true`
    /// (`declared`), or [`retry_tools`](Self::retry_tools) names it (by either name).
    pub(crate) fn may_resend_named(&self, offered: &str, name: &str, declared: bool) -> bool {
        declared || self.retry_tools.iter().any(|n| n == offered || n == name)
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

/// A failed attempt at a call, as the retry policy sees it.
pub(crate) struct Failed {
    pub(crate) error: Error,
    /// Whether the request may have reached the server (it was handed to the connection).
    pub(crate) sent: bool,
}

/// What to do after a failed attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Return the error; the server is fine as far as this failure tells.
    GiveUp,
    /// Wait, then try again (reconnecting first if the connection is gone).
    Retry,
    /// Retries are used up: return the error and degrade the server (when graceful).
    Degrade,
    /// It may have run: do not send it again; return the error after checking the server.
    CheckServer,
}

impl Degradation {
    /// The policy's answer to `failed`, after `retries` retries, for a tool that may (or may
    /// not) be sent again.
    pub(crate) fn next(&self, failed: &Failed, retries: u32, may_resend: bool) -> Next {
        let retryable = if failed.sent {
            failed.error.is_retryable()
        } else {
            !matches!(
                failed.error,
                Error::Config(_) | Error::InvalidArgument { .. }
            )
        };
        if !retryable {
            Next::GiveUp
        } else if failed.sent && !may_resend {
            Next::CheckServer
        } else if retries < self.extra_retries {
            Next::Retry
        } else {
            Next::Degrade
        }
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

    fn failed(error: Error, sent: bool) -> Failed {
        Failed { error, sent }
    }

    fn timeout() -> Error {
        Error::Timeout {
            server: "s".into(),
            method: "tools/call".into(),
            after: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_call_that_may_have_run_is_sent_again_only_when_harmless() {
        let d = Degradation::default();
        let maybe_ran = failed(timeout(), true);
        assert_eq!(d.next(&maybe_ran, 0, false), Next::CheckServer);
        assert_eq!(d.next(&maybe_ran, 0, true), Next::Retry);
        assert_eq!(d.next(&maybe_ran, 1, true), Next::Degrade);
        let never_sent = failed(Error::NotConnected { server: "s".into() }, false);
        assert_eq!(d.next(&never_sent, 0, false), Next::Retry);
        assert_eq!(d.next(&never_sent, 1, false), Next::Degrade);
        let refused = failed(
            Error::Rpc {
                server: "s".into(),
                code: crate::error::ErrorCode(-32000),
                message: "no".into(),
                data: None,
            },
            true,
        );
        assert_eq!(d.next(&refused, 0, true), Next::GiveUp);
    }

    #[test]
    fn idempotent_tools_and_named_ones_may_be_sent_again() {
        use crate::model::{Tool, ToolAnnotations};
        let hub_tool = |name: &str, idempotent: Option<bool>| {
            let mut tool = Tool::new(name, serde_json::json!({"type": "object"}));
            if let Some(i) = idempotent {
                tool = tool.with_annotations(ToolAnnotations::default().with_idempotent_hint(i));
            }
            HubTool {
                name: format!("srv__{name}"),
                server: "srv".into(),
                tool,
            }
        };
        let d = Degradation::default().retry_tool("lookup");
        assert!(d.may_resend(&hub_tool("get", Some(true))));
        assert!(!d.may_resend(&hub_tool("pay", Some(false))));
        assert!(!d.may_resend(&hub_tool("send", None)));
        assert!(d.may_resend(&hub_tool("lookup", None)));
        assert!(Degradation::default()
            .retry_tool("srv__send")
            .may_resend(&hub_tool("send", None)));
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
