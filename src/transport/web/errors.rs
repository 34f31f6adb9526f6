//! Failures into the crate's error: ureq and body-read errors (a passed deadline becomes
//! [`Error::Timeout`]) and non-success statuses with a bounded snippet of the body. The ureq or
//! I/O error is kept as the source; `what` names the URL already redacted, and ureq errors that
//! would quote the URL itself are described without it.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::error::Error;

/// How much of an error body is quoted in an error.
const SNIPPET: usize = 300;

/// The most of a `WWW-Authenticate` challenge kept (a longer one is cut at a character
/// boundary).
const MAX_CHALLENGE: usize = 4096;

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
    // A proxy that wants credentials (HTTP 407) is an authentication failure, as it is for the
    // WebSocket transport's own CONNECT.
    let status = match &e {
        ureq::Error::ConnectProxyFailed(why) if why.contains("407") => Some(407),
        _ => None,
    };
    let (detail, source): (String, Option<Box<dyn std::error::Error + Send + Sync>>) = match e {
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            (format!("{what}: connection refused"), Some(Box::new(io)))
        }
        ureq::Error::Io(io) => (format!("{what}: {io}"), Some(Box::new(io))),
        ureq::Error::HostNotFound => (format!("{what}: host not found (DNS)"), Some(Box::new(e))),
        // These quote the URL, query and password included: neither shown nor kept.
        ureq::Error::BadUri(_) | ureq::Error::RequireHttpsOnly(_) => {
            (format!("{what}: the URL is not usable"), None)
        }
        e => (format!("{what}: {e}"), Some(Box::new(e))),
    };
    Error::Transport {
        server: server.to_owned(),
        status,
        detail,
        source,
    }
}

/// Whether an I/O error met while reading a body is a timeout: the socket's own (`TimedOut`),
/// or ureq's timeout error, which its body reader hands on inside an error of kind `Other`
/// (a request's time limit, or the deadline of `buffered::within`).
pub(crate) fn is_io_timeout(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::TimedOut
        || e.get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
            .is_some_and(|u| matches!(u, ureq::Error::Timeout(_)))
}

/// Maps an I/O error met while reading a body.
pub(crate) fn map_io(
    server: &str,
    what: &str,
    method: &str,
    started: Instant,
    deadline: Option<Instant>,
    e: std::io::Error,
) -> Error {
    if deadline.is_some_and(|d| Instant::now() + Duration::from_millis(5) >= d) || is_io_timeout(&e)
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

/// The `WWW-Authenticate` challenge of a reply (several headers joined with `, `), at most
/// [`MAX_CHALLENGE`] bytes; bytes that are not UTF-8 become U+FFFD.
fn challenge(resp: &ureq::http::Response<ureq::Body>) -> Option<String> {
    let mut out = String::new();
    for v in resp.headers().get_all("www-authenticate") {
        if !out.is_empty() {
            out.push_str(", ");
        }
        out.push_str(&String::from_utf8_lossy(v.as_bytes()));
        if out.len() > MAX_CHALLENGE {
            out.truncate(crate::config::char_floor(&out, MAX_CHALLENGE));
            break;
        }
    }
    (!out.is_empty()).then_some(out)
}

/// An error for a non-success status, quoting a bounded, single-line snippet of the body:
/// [`Error::Unauthorized`] (with the challenge) for 401 and 403, else [`Error::Transport`].
pub(crate) fn status_error(
    server: &str,
    what: &str,
    resp: ureq::http::Response<ureq::Body>,
) -> Error {
    let status = resp.status();
    let www_authenticate = challenge(&resp);
    let mut buf = Vec::new();
    let read_cap = SNIPPET * 4;
    let _ = resp
        .into_body()
        .into_reader()
        .take(read_cap as u64 + 1)
        .read_to_end(&mut buf);
    let body_cut = buf.len() > read_cap;
    buf.truncate(read_cap);
    let text = String::from_utf8_lossy(&buf);
    let mut snippet: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Every cut ends in the cut mark, so that the redaction of the error (done where the
    // secrets are known) hides what a cut left of a secret.
    if snippet.chars().count() > SNIPPET {
        snippet = snippet.chars().take(SNIPPET).collect::<String>();
        snippet.push(crate::config::CUT);
    } else if body_cut {
        snippet.push(crate::config::CUT);
    }
    let detail = if snippet.is_empty() {
        format!("{what}: HTTP {status}")
    } else {
        format!("{what}: HTTP {status}: {snippet}")
    };
    if crate::error::is_server_auth_status(status.as_u16()) {
        return Error::Unauthorized {
            server: server.to_owned(),
            status: status.as_u16(),
            detail,
            www_authenticate,
        };
    }
    Error::Transport {
        server: server.to_owned(),
        status: Some(status.as_u16()),
        detail,
        source: None,
    }
}

#[cfg(test)]
mod tests {
    //! What a ureq failure keeps and shows.

    use std::error::Error as _;
    use std::time::Instant;

    use super::*;

    fn mapped(e: ureq::Error) -> Error {
        map_ureq(
            "api",
            "POST http://h/mcp",
            "tools/call",
            Instant::now(),
            None,
            e,
        )
    }

    #[test]
    fn a_socket_failure_keeps_the_os_error_as_its_source() {
        let e = mapped(ureq::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert_eq!(
            e.to_string(),
            "server `api`: transport error: POST http://h/mcp: connection refused"
        );
        let io = e
            .source()
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("the io error");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
    }

    #[test]
    fn an_error_quoting_the_url_is_neither_shown_nor_kept() {
        let e = mapped(ureq::Error::BadUri("http://u:SECRET@h/mcp?k=SECRET".into()));
        assert!(!e.to_string().contains("SECRET"), "{e}");
        assert!(!format!("{e:?}").contains("SECRET"), "{e:?}");
        assert!(e.source().is_none());
    }

    #[test]
    fn a_body_read_that_ureq_timed_out_is_a_timeout_whatever_the_deadline() {
        // What ureq's body reader gives when a request's time limit passes mid-body.
        let limit = ureq::Error::Timeout(ureq::Timeout::Global).into_io();
        assert_eq!(limit.kind(), std::io::ErrorKind::Other);
        let socket = std::io::Error::from(std::io::ErrorKind::TimedOut);
        for e in [limit, socket] {
            let mapped = map_io(
                "api",
                "POST http://h/mcp",
                "tools/list",
                Instant::now(),
                None,
                e,
            );
            assert!(matches!(mapped, Error::Timeout { .. }), "{mapped:?}");
        }
        let cut = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert!(!is_io_timeout(&cut));
        let other = ureq::Error::HostNotFound.into_io();
        assert!(!is_io_timeout(&other));
    }

    #[test]
    fn other_ureq_errors_are_kept_as_they_are() {
        let e = mapped(ureq::Error::HostNotFound);
        assert!(e.to_string().ends_with("host not found (DNS)"), "{e}");
        assert!(matches!(
            e.source().and_then(|s| s.downcast_ref::<ureq::Error>()),
            Some(ureq::Error::HostNotFound)
        ));
    }
}
