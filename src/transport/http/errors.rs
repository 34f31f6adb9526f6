//! Failures into the crate's error: ureq and body-read errors (a passed deadline becomes
//! [`Error::Timeout`]) and non-success statuses with a bounded snippet of the body.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::error::Error;

/// How much of an error body is quoted in an error.
const SNIPPET: usize = 300;

/// Turns a ureq failure into the crate's error; a passed deadline becomes [`Error::Timeout`].
pub(crate) fn map_ureq(
    server: &str,
    what: &str,
    method: &str,
    started: Instant,
    deadline: Option<Instant>,
    e: ureq::Error,
) -> Error {
    let timed_out = matches!(e, ureq::Error::Timeout(_))
        || deadline.is_some_and(|d| Instant::now() + Duration::from_millis(5) >= d);
    if timed_out {
        return Error::Timeout {
            server: server.to_owned(),
            method: method.to_owned(),
            after: started.elapsed(),
        };
    }
    let detail = match &e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            format!("{what}: connection refused")
        }
        ureq::Error::HostNotFound => format!("{what}: host not found (DNS)"),
        _ => format!("{what}: {e}"),
    };
    Error::Transport {
        server: server.to_owned(),
        status: None,
        detail,
    }
}

/// Maps an I/O error met while reading a body.
pub(super) fn map_io(
    server: &str,
    what: &str,
    method: &str,
    started: Instant,
    deadline: Option<Instant>,
    e: std::io::Error,
) -> Error {
    if deadline.is_some_and(|d| Instant::now() + Duration::from_millis(5) >= d)
        || e.kind() == std::io::ErrorKind::TimedOut
    {
        return Error::Timeout {
            server: server.to_owned(),
            method: method.to_owned(),
            after: started.elapsed(),
        };
    }
    Error::Closed {
        server: server.to_owned(),
        detail: format!("{what}: {e}"),
        stderr_tail: String::new(),
    }
}

/// An error for a non-success status, quoting a bounded, single-line snippet of the body.
pub(crate) fn status_error(
    server: &str,
    what: &str,
    resp: ureq::http::Response<ureq::Body>,
) -> Error {
    let status = resp.status();
    let mut buf = Vec::new();
    let _ = resp
        .into_body()
        .into_reader()
        .take(SNIPPET as u64 * 4)
        .read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let mut snippet: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if snippet.chars().count() > SNIPPET {
        snippet = snippet.chars().take(SNIPPET).collect::<String>() + "…";
    }
    let detail = if snippet.is_empty() {
        format!("{what}: HTTP {status}")
    } else {
        format!("{what}: HTTP {status}: {snippet}")
    };
    Error::Transport {
        server: server.to_owned(),
        status: Some(status.as_u16()),
        detail,
    }
}
