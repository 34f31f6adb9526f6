//! The crate's one public error type.
//!
//! Variants answer the question a caller asks ("did it time out?", "did the server say no?",
//! "is the process gone?"). Every variant that concerns a server names it, so a message read in a
//! log of many servers is never ambiguous. A failure that has an underlying cause (an I/O,
//! HTTP, TLS or WebSocket error) keeps it behind [`std::error::Error::source`]; the message
//! text never holds a secret (URLs are shown without password or query).

use std::time::Duration;

use serde_json::Value;

use crate::config::ConfigError;
use crate::protocol::jsonrpc::ErrorCode;

/// An underlying cause, kept for [`std::error::Error::source`].
type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong in `mcp-blocking`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A server configuration is invalid: unknown key, bad transport type, missing command or url.
    #[error("{0}")]
    Config(Box<ConfigError>),

    /// The server process could not be started (command not found, permission denied, ...).
    #[error("server `{server}`: could not start `{command}`: {source}")]
    Spawn {
        /// The server's configured name.
        server: String,
        /// The command line that was run.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The connection or the `initialize` handshake failed.
    #[error("server `{server}`: could not connect: {detail}{}", tail(stderr_tail))]
    Connect {
        /// The server's configured name.
        server: String,
        /// What went wrong, including the command or url.
        detail: String,
        /// The last lines the server wrote to stderr (empty when none or not a process).
        stderr_tail: String,
    },

    /// No answer arrived within the request's timeout. `notifications/cancelled` was sent.
    #[error("server `{server}`: `{method}` timed out after {:.1} s", after.as_secs_f64())]
    Timeout {
        /// The server's configured name.
        server: String,
        /// The JSON-RPC method that timed out.
        method: String,
        /// How long the caller waited.
        after: Duration,
    },

    /// The server answered with a JSON-RPC error object.
    #[error("server `{server}`: error {code}: {message}")]
    Rpc {
        /// The server's configured name.
        server: String,
        /// The JSON-RPC error code.
        code: ErrorCode,
        /// The server's message.
        message: String,
        /// The optional `data` member (boxed, to keep `Error` small).
        data: Option<Box<Value>>,
    },

    /// The connection ended (process exited, stream closed, client closed) while a request was
    /// pending, or a request was made on a closed client.
    #[error("server `{server}`: connection closed: {detail}{}", tail(stderr_tail))]
    Closed {
        /// The server's configured name.
        server: String,
        /// Why: exit status, stream end, `close()` called, poller stopped.
        detail: String,
        /// The last lines the server wrote to stderr (empty when none).
        stderr_tail: String,
    },

    /// A transport-level failure: HTTP status, TLS, DNS, WebSocket, broken pipe, a server that
    /// stopped reading its stdin.
    #[error("server `{server}`: transport error: {detail}")]
    Transport {
        /// The server's configured name.
        server: String,
        /// HTTP status, when the failure was an HTTP answer.
        status: Option<u16>,
        /// What went wrong (for HTTP, a bounded snippet of the body).
        detail: String,
        /// The underlying error, when there is one: a [`std::io::Error`] for socket failures,
        /// otherwise the [`ureq::Error`] or [`tungstenite::Error`] (or, for a Streamable HTTP
        /// server whose legacy SSE fallback failed too, that [`Error`]).
        #[source]
        source: Option<Cause>,
    },

    /// The server broke the protocol: an unsupported protocol version, a malformed result.
    #[error("server `{server}`: protocol error: {detail}")]
    Protocol {
        /// The server's configured name.
        server: String,
        /// What was wrong.
        detail: String,
    },

    /// The client is not connected (never connected, or disconnected).
    #[error("server `{server}`: not connected")]
    NotConnected {
        /// The server's configured name.
        server: String,
    },

    /// An argument given by the caller is invalid (e.g. tool arguments that are not an object).
    #[error("server `{server}`: invalid argument: {detail}")]
    InvalidArgument {
        /// The server's configured name.
        server: String,
        /// What was wrong.
        detail: String,
    },
}

fn tail(stderr_tail: &str) -> String {
    if stderr_tail.is_empty() {
        String::new()
    } else {
        format!("\n--- stderr (last lines) ---\n{stderr_tail}")
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(Box::new(e))
    }
}

impl Error {
    /// The name of the server this error concerns, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Error::Config(c) => c.server.as_deref(),
            Error::Spawn { server, .. }
            | Error::Connect { server, .. }
            | Error::Timeout { server, .. }
            | Error::Rpc { server, .. }
            | Error::Closed { server, .. }
            | Error::Transport { server, .. }
            | Error::Protocol { server, .. }
            | Error::NotConnected { server }
            | Error::InvalidArgument { server, .. } => Some(server),
        }
    }

    /// Whether retrying the same call later may succeed: timeouts, closed connections and
    /// transport failures are retryable; a server's JSON-RPC error or a bad config is not.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Timeout { .. }
                | Error::Closed { .. }
                | Error::Transport { .. }
                | Error::NotConnected { .. }
        )
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_stays_small() {
        // Under clippy's `result_large_err` threshold (128 bytes), so callers' own functions
        // returning `Result<_, Error>` pass `-D warnings`.
        assert!(
            std::mem::size_of::<Error>() <= 96,
            "{}",
            std::mem::size_of::<Error>()
        );
    }

    #[test]
    fn messages_name_the_server() {
        let e = Error::Timeout {
            server: "fs".into(),
            method: "tools/call".into(),
            after: Duration::from_millis(1500),
        };
        assert_eq!(
            e.to_string(),
            "server `fs`: `tools/call` timed out after 1.5 s"
        );
        let e = Error::Closed {
            server: "fs".into(),
            detail: "exited with status 3".into(),
            stderr_tail: "boom".into(),
        };
        assert!(e.to_string().contains("boom"));
        assert_eq!(e.server(), Some("fs"));
    }
}
