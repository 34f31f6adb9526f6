//! The crate's one public error type.
//!
//! Variants answer the question a caller asks ("did it time out?", "did the server say no?",
//! "is the process gone?"). Every variant that concerns a server names it, so a message read in a
//! log of many servers is never ambiguous. A failure that has an underlying cause (an I/O,
//! HTTP, TLS or WebSocket error) keeps it behind [`std::error::Error::source`]. No error a
//! [`Client`](crate::Client) returns holds a secret of its server, in its message, its `Debug`
//! or its sources': see [`ServerConfig::redact`](crate::ServerConfig::redact) for the rule
//! (URLs without password or query; header, env and `${VAR}` values hidden).
//!
//! ```text
//!  Error::Connect(ConnectError)   kind(): Unreachable | Auth | TimedOut | Closed | Rejected | Protocol
//!    └ source() ─┬─ Error::Transport ── source() ── io::Error | ureq::Error | tungstenite::Error
//!                ├─ Error::Unauthorized   (HTTP 401/403: status and WWW-Authenticate challenge)
//!                ├─ Error::SignInRequired (an OAuth sign-in needs a person; none may be asked)
//!                ├─ Error::Timeout | Error::Closed | Error::Protocol   (met during the handshake)
//!                ├─ Error::Rpc      (the answer to `initialize`; see ConnectError::rpc)
//!                ├─ io::Error | tungstenite::Error   (opening a WebSocket, watching pipes)
//!                └─ serde_json::Error   (a malformed `initialize` result)
//! ```

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::config::{ConfigError, Secrets};

/// The HTTP statuses that refuse a request's credentials rather than the request: 401 (none
/// or not valid) and 403 (not enough) from the server, which become [`Error::Unauthorized`],
/// and 407 from a proxy that wants its own. The transports and [`ConnectErrorKind::Auth`] use
/// this one list.
pub(crate) const AUTH_STATUSES: [u16; 3] = [401, 403, 407];

/// Whether `status` is one of [`AUTH_STATUSES`].
pub(crate) fn is_auth_status(status: u16) -> bool {
    AUTH_STATUSES.contains(&status)
}

/// Whether `status` is the server's refusal of the credentials (an [`AUTH_STATUSES`] entry
/// other than a proxy's 407): what [`Error::Unauthorized`] holds.
pub(crate) fn is_server_auth_status(status: u16) -> bool {
    is_auth_status(status) && status != 407
}

/// An underlying cause, kept for [`std::error::Error::source`].
type Cause = Box<dyn std::error::Error + Send + Sync>;

pub use crate::protocol::jsonrpc::ErrorCode;
pub use kinds::{InvalidArgumentKind, ProtocolErrorKind, SkillErrorKind};

mod kinds;

/// What went wrong with a task: the kind of an [`Error::Task`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskErrorKind {
    /// The server does not declare the part of the `tasks` capability the call needs
    /// (`tasks.requests.tools.call`, `tasks.list` or `tasks.cancel`); nothing was sent.
    Unsupported,
    /// The task was cancelled (by this client, another one, or the server): it has no result.
    Cancelled,
    /// The server answered a task request with something this client cannot use as a task
    /// (for example a plain result where a `CreateTaskResult` was due).
    Invalid,
}

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

    /// The connection could not be opened or the `initialize` handshake failed: see
    /// [`ConnectError::kind`] for how, and `source()` for the underlying cause.
    #[error(transparent)]
    Connect(Box<ConnectError>),

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

    /// A transport-level failure on an open connection: HTTP status, TLS, DNS, WebSocket,
    /// broken pipe, a server that stopped reading its stdin.
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

    /// The server refused the request's credentials: HTTP 401 (none or not valid) or 403 (not
    /// enough) on an open connection. Retrying with the same credentials will not help; new ones
    /// might (see [`www_authenticate`](Error::www_authenticate) for what the server asks for).
    /// On the first request the same refusal is an [`Error::Connect`] of kind
    /// [`ConnectErrorKind::Auth`] (see [`ConnectError::www_authenticate`]).
    #[error("server `{server}`: not authorized: {detail}")]
    Unauthorized {
        /// The server's configured name.
        server: String,
        /// The HTTP status: 401 or 403.
        status: u16,
        /// Which request was refused (its URL redacted) and a bounded snippet of the body.
        detail: String,
        /// The `WWW-Authenticate` challenge as the server sent it (several headers joined with
        /// `, `), at most 4 KiB; `None` when the server sent none.
        www_authenticate: Option<String>,
    },

    /// The server asks for an OAuth sign-in that needs a person (the authorization-code grant:
    /// no token is stored for it, the stored one can no longer be refreshed, or it asks for a
    /// scope not granted), and the config's redirect handler is
    /// [`RedirectHandler::none`](crate::auth::RedirectHandler::none): nobody is asked and the
    /// request fails at once, without waiting. Sign in first (for example with
    /// [`OAuthConfig::login`](crate::auth::OAuthConfig::login) and a handler that reaches a
    /// person, sharing the token store), then try again. On the first request it is the source
    /// of an [`Error::Connect`] of kind [`ConnectErrorKind::Auth`];
    /// [`is_sign_in_required`](Error::is_sign_in_required) sees it either way.
    #[error("server `{server}`: sign-in required: {detail}")]
    SignInRequired {
        /// The server's configured name.
        server: String,
        /// Which server URL asked (redacted) and why no sign-in was started.
        detail: String,
    },

    /// The server broke the protocol: an unsupported protocol version, a malformed result, a
    /// message larger than [`Limits::max_message_bytes`](crate::config::Limits::max_message_bytes).
    #[error("server `{server}`: protocol error: {detail}")]
    Protocol {
        /// The server's configured name.
        server: String,
        /// What was wrong, for a program.
        kind: ProtocolErrorKind,
        /// What was wrong, in words.
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
        /// What was wrong, for a program.
        kind: InvalidArgumentKind,
        /// What was wrong, in words.
        detail: String,
    },

    /// A task could not be run or ended without a result: the server does not offer tasks (or
    /// the part of them asked for), the task was cancelled, or the server's answer was not a
    /// task; see [`TaskErrorKind`].
    #[error("server `{server}`: {detail}")]
    Task {
        /// The server's configured name.
        server: String,
        /// What went wrong.
        kind: TaskErrorKind,
        /// The task, when there was one.
        task_id: Option<String>,
        /// What went wrong, in words.
        detail: String,
    },

    /// What was asked does not exist in the protocol era this connection speaks (see
    /// [`ProtocolMode`](crate::config::ProtocolMode)): e.g. [`Client::ping`](crate::Client::ping),
    /// [`Client::set_logging_level`](crate::Client::set_logging_level) (the level then goes with
    /// every request instead) or [`Client::unsubscribe`](crate::Client::unsubscribe) on a modern
    /// (2026-07-28) server. Nothing was sent.
    #[error("server `{server}`: `{feature}` does not exist in the {era} protocol era")]
    Unsupported {
        /// The server's configured name.
        server: String,
        /// What was asked: a method name, bare (`ping`, not `` `ping` ``; the message quotes it).
        feature: String,
        /// The era the connection speaks.
        era: crate::config::ProtocolEra,
    },

    /// The server's policy (its config file's `excludeTools`, `includeTools`,
    /// `disabled_tools`, ...; see [`ServerPolicy`](crate::config::ServerPolicy)) does not allow
    /// this tool. Nothing was sent.
    #[error("server `{server}`: {refusal}")]
    ToolNotAllowed {
        /// The server's configured name.
        server: String,
        /// The tool, the rule that refuses it and where it was written.
        refusal: Box<crate::config::ToolRefusal>,
    },

    /// A skill, or a file of one, was refused: not listed, not as listed (size, digest,
    /// frontmatter), or over a cap; see [`SkillErrorKind`]. None of its content is returned.
    #[error("server `{server}`: skill `{uri}`: {detail}")]
    Skill {
        /// The server's configured name.
        server: String,
        /// Why it was refused.
        kind: SkillErrorKind,
        /// The URI of the skill or file.
        uri: String,
        /// What was wrong, in words.
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
            Error::Connect(c) => Some(&c.server),
            Error::Spawn { server, .. }
            | Error::Timeout { server, .. }
            | Error::Rpc { server, .. }
            | Error::Closed { server, .. }
            | Error::Transport { server, .. }
            | Error::Unauthorized { server, .. }
            | Error::SignInRequired { server, .. }
            | Error::Protocol { server, .. }
            | Error::NotConnected { server }
            | Error::InvalidArgument { server, .. }
            | Error::Task { server, .. }
            | Error::Unsupported { server, .. }
            | Error::ToolNotAllowed { server, .. }
            | Error::Skill { server, .. } => Some(server),
        }
    }

    /// Whether retrying the same call later may succeed: timeouts, closed connections and
    /// transport failures are retryable; a server's JSON-RPC error, a refusal of the credentials
    /// ([`Error::Unauthorized`]) or a bad config is not.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::Timeout { .. }
                | Error::Closed { .. }
                | Error::Transport { .. }
                | Error::NotConnected { .. }
        )
    }

    /// The `WWW-Authenticate` challenge of a refusal of the credentials: an
    /// [`Error::Unauthorized`], or an [`Error::Connect`] of kind [`ConnectErrorKind::Auth`]
    /// that came from an HTTP 401 or 403 carrying one.
    ///
    /// ```
    /// use mcp_blocking::Error;
    /// let e = Error::Unauthorized {
    ///     server: "api".into(),
    ///     status: 401,
    ///     detail: "POST https://example.com/mcp: HTTP 401".into(),
    ///     www_authenticate: Some(r#"Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource""#.into()),
    /// };
    /// assert!(e.www_authenticate().unwrap().starts_with("Bearer "));
    /// assert!(!e.is_retryable());
    /// ```
    pub fn www_authenticate(&self) -> Option<&str> {
        match self {
            Error::Unauthorized {
                www_authenticate, ..
            } => www_authenticate.as_deref(),
            Error::Connect(c) => c.www_authenticate(),
            _ => None,
        }
    }

    /// Whether the server said the resource does not exist: error `-32002` (the legacy
    /// revisions) or `-32602` with the `uri` in its data (2026-07-28).
    ///
    /// ```
    /// use mcp_blocking::Error;
    /// use mcp_blocking::error::ErrorCode;
    /// let e = Error::Rpc { server: "s".into(), code: ErrorCode(-32002), message: "nope".into(), data: None };
    /// assert!(e.is_resource_not_found());
    /// ```
    pub fn is_resource_not_found(&self) -> bool {
        match self {
            Error::Rpc { code, data, .. } => {
                *code == ErrorCode::RESOURCE_NOT_FOUND
                    || (*code == ErrorCode::INVALID_PARAMS
                        && data.as_deref().is_some_and(|d| d.get("uri").is_some()))
            }
            _ => false,
        }
    }

    /// Whether the server did not answer in time: a request's [`Error::Timeout`], or a
    /// connection attempt that timed out ([`ConnectErrorKind::TimedOut`]).
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Timeout { .. } => true,
            Error::Connect(c) => c.kind == ConnectErrorKind::TimedOut,
            _ => false,
        }
    }

    /// Whether the server needs a person to sign in and the client may not ask one: an
    /// [`Error::SignInRequired`], or an [`Error::Connect`] that holds one.
    ///
    /// ```
    /// use mcp_blocking::Error;
    /// let e = Error::SignInRequired { server: "api".into(), detail: "no token".into() };
    /// assert!(e.is_sign_in_required() && !e.is_retryable());
    /// ```
    pub fn is_sign_in_required(&self) -> bool {
        match self {
            Error::SignInRequired { .. } => true,
            Error::Connect(c) => matches!(c.source_error(), Some(Error::SignInRequired { .. })),
            _ => false,
        }
    }

    /// This error as met while connecting to `target`: a timeout, a closed connection, the
    /// server's JSON-RPC error, a transport or protocol failure becomes an [`Error::Connect`]
    /// of the matching kind, keeping the original as its source. Any other error (config,
    /// spawn, an [`Error::Connect`] already) is returned as it is. `stderr_tail` is asked for
    /// only when the error does not carry its own.
    pub(crate) fn into_connect(self, target: &str, stderr_tail: impl FnOnce() -> String) -> Error {
        let naming = |detail: &str| {
            if detail.contains(target) {
                detail.to_owned()
            } else {
                format!("{target}: {detail}")
            }
        };
        let (kind, detail, tail) = match &self {
            Error::Timeout { method, after, .. } => {
                let secs = after.as_secs_f64();
                let detail = if method == "initialize" {
                    format!("{target} did not answer `initialize` within {secs:.1} s")
                } else {
                    format!("{target}: {method} timed out after {secs:.1} s")
                };
                (ConnectErrorKind::TimedOut, detail, stderr_tail())
            }
            Error::Closed {
                detail,
                stderr_tail,
                ..
            } => (
                ConnectErrorKind::Closed,
                format!("{target} ended during the handshake: {detail}"),
                stderr_tail.clone(),
            ),
            Error::Rpc { code, message, .. } => (
                ConnectErrorKind::Rejected,
                format!("{target} refused `initialize`: error {code}: {message}"),
                stderr_tail(),
            ),
            Error::Transport {
                status: Some(status),
                detail,
                ..
            } if is_auth_status(*status) => (ConnectErrorKind::Auth, naming(detail), stderr_tail()),
            Error::Unauthorized { detail, .. } | Error::SignInRequired { detail, .. } => {
                (ConnectErrorKind::Auth, naming(detail), stderr_tail())
            }
            Error::Transport {
                detail,
                source: Some(cause),
                ..
            } if cause.is::<crate::transport::web::AuthProviderFailed>() => {
                (ConnectErrorKind::Auth, naming(detail), stderr_tail())
            }
            Error::Transport { detail, .. } => {
                (ConnectErrorKind::Unreachable, naming(detail), stderr_tail())
            }
            Error::Protocol { detail, .. } => {
                (ConnectErrorKind::Protocol, naming(detail), stderr_tail())
            }
            _ => return self,
        };
        let server = self.server().unwrap_or_default().to_owned();
        ConnectError::new(&server, target, kind, detail)
            .with_stderr_tail(tail)
            .with_source(self)
            .into()
    }
}

impl Error {
    /// This error with every secret of its server hidden (see `config/redact.rs`): in each of
    /// its strings, the JSON-RPC `data`, a [`ConnectError`]'s, and its source's. A source that
    /// is not one of this crate's errors and whose text shows a secret is replaced by its
    /// redacted text (the chain below it is dropped). Server names are kept as they are.
    pub(crate) fn redact(self, secrets: &Secrets) -> Error {
        let r = |s: String| secrets.redact_string(s);
        match self {
            Error::Config(c) => Error::Config(Box::new(secrets.redact_config_error(*c))),
            Error::Spawn {
                server,
                command,
                source,
            } => Error::Spawn {
                server,
                command: r(command),
                source: redact_io(source, secrets),
            },
            Error::Connect(c) => Error::Connect(Box::new(c.redact(secrets))),
            Error::Timeout {
                server,
                method,
                after,
            } => Error::Timeout {
                server,
                method: r(method),
                after,
            },
            Error::Rpc {
                server,
                code,
                message,
                mut data,
            } => {
                if let Some(d) = data.as_deref_mut() {
                    secrets.redact_value(d);
                }
                Error::Rpc {
                    server,
                    code,
                    message: r(message),
                    data,
                }
            }
            Error::Closed {
                server,
                detail,
                stderr_tail,
            } => Error::Closed {
                server,
                detail: r(detail),
                stderr_tail: r(stderr_tail),
            },
            Error::Transport {
                server,
                status,
                detail,
                source,
            } => Error::Transport {
                server,
                status,
                detail: r(detail),
                source: source.map(|s| redact_cause(s, secrets)),
            },
            Error::Unauthorized {
                server,
                status,
                detail,
                www_authenticate,
            } => Error::Unauthorized {
                server,
                status,
                detail: r(detail),
                www_authenticate: www_authenticate.map(r),
            },
            Error::SignInRequired { server, detail } => Error::SignInRequired {
                server,
                detail: r(detail),
            },
            Error::Protocol {
                server,
                kind,
                detail,
            } => Error::Protocol {
                server,
                kind,
                detail: r(detail),
            },
            Error::NotConnected { server } => Error::NotConnected { server },
            Error::InvalidArgument {
                server,
                kind,
                detail,
            } => Error::InvalidArgument {
                server,
                kind,
                detail: r(detail),
            },
            Error::Task {
                server,
                kind,
                task_id,
                detail,
            } => Error::Task {
                server,
                kind,
                task_id: task_id.map(r),
                detail: r(detail),
            },
            Error::Unsupported {
                server,
                feature,
                era,
            } => Error::Unsupported {
                server,
                feature: r(feature),
                era,
            },
            refused @ Error::ToolNotAllowed { .. } => refused,
            Error::Skill {
                server,
                kind,
                uri,
                detail,
            } => Error::Skill {
                server,
                kind,
                uri: r(uri),
                detail: r(detail),
            },
        }
    }
}

/// A cause whose text showed a secret, kept as its redacted text.
#[derive(Debug)]
struct RedactedCause(String);

impl fmt::Display for RedactedCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedactedCause {}

/// Whether the text of `e` (its `Display` or `Debug`, which shows its sources) shows a secret.
fn shows_a_secret(e: &dyn std::error::Error, secrets: &Secrets) -> bool {
    secrets.hides_something_in(&e.to_string()) || secrets.hides_something_in(&format!("{e:?}"))
}

/// `cause` redacted: one of this crate's errors is redacted field by field; any other that
/// shows a secret becomes its redacted text.
fn redact_cause(cause: Cause, secrets: &Secrets) -> Cause {
    match cause.downcast::<Error>() {
        Ok(e) => Box::new(e.redact(secrets)),
        Err(other) if shows_a_secret(&*other, secrets) => {
            Box::new(RedactedCause(secrets.redact_string(other.to_string())))
        }
        Err(other) => other,
    }
}

/// An I/O error redacted: its kind is kept, its text hidden where it shows a secret.
fn redact_io(e: std::io::Error, secrets: &Secrets) -> std::io::Error {
    if shows_a_secret(&e, secrets) {
        std::io::Error::new(
            e.kind(),
            RedactedCause(secrets.redact_string(e.to_string())),
        )
    } else {
        e
    }
}

/// How a connection attempt failed: the kind of an [`Error::Connect`].
///
/// The kinds answer "should I retry, fix my config, or call someone?": an unreachable server or
/// a timeout may be worth retrying later; a refusal (auth, `initialize` rejected, a protocol
/// version this client does not speak) will not go away by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectErrorKind {
    /// The connection could not be opened: DNS, connection refused, TLS, an HTTP error status
    /// on the first request, a WebSocket upgrade refused, an unusable URL, or a local failure to
    /// set the connection up (pipes that cannot be watched, no thread).
    Unreachable,
    /// The server refused our credentials (HTTP 401 or 403 on the first request or the
    /// WebSocket upgrade; see [`ConnectError::http_status`] and
    /// [`ConnectError::www_authenticate`]), or the configured auth provider could not give any.
    Auth,
    /// The server did not answer in time: the TCP connect, the WebSocket upgrade, the legacy
    /// SSE `endpoint` event, or the `initialize` request.
    TimedOut,
    /// The process exited or the stream ended during the handshake (see
    /// [`ConnectError::stderr_tail`]).
    Closed,
    /// The server answered `initialize` with a JSON-RPC error; see [`ConnectError::rpc`].
    Rejected,
    /// The server broke the protocol: a malformed `initialize` result, a protocol version this
    /// client does not speak, a legacy SSE `endpoint` on another origin.
    Protocol,
}

impl fmt::Display for ConnectErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConnectErrorKind::Unreachable => "unreachable",
            ConnectErrorKind::Auth => "authentication refused",
            ConnectErrorKind::TimedOut => "timed out",
            ConnectErrorKind::Closed => "closed during the handshake",
            ConnectErrorKind::Rejected => "`initialize` rejected",
            ConnectErrorKind::Protocol => "protocol violation",
        })
    }
}

/// A failed connection attempt: which server, what was reached for, how it failed, and why.
///
/// Its `Display` is `server `NAME`: could not connect: WHAT` (naming the command or URL),
/// followed by the server's last stderr lines when there are any. The underlying cause is its
/// [`source`](std::error::Error::source): an [`Error::Transport`] (itself holding the
/// [`std::io::Error`], [`ureq::Error`] or [`tungstenite::Error`]), the [`Error::Timeout`],
/// [`Error::Closed`], [`Error::Rpc`] or [`Error::Protocol`] met during the handshake, a
/// [`std::io::Error`] or [`tungstenite::Error`] met opening a WebSocket, or a
/// [`serde_json::Error`] for a malformed `initialize` result.
///
/// ```no_run
/// use mcp_blocking::{Client, Error, ServerConfig};
/// use mcp_blocking::error::ConnectErrorKind;
///
/// match Client::connect(ServerConfig::http("api", "http://127.0.0.1:8080/mcp")) {
///     Ok(client) => { /* use it */ }
///     Err(Error::Connect(e)) if e.kind() == ConnectErrorKind::TimedOut => {
///         eprintln!("{} is slow; trying again later", e.target());
///     }
///     Err(Error::Connect(e)) => {
///         eprintln!("{e}");
///         if let Some((code, message)) = e.rpc() {
///             eprintln!("the server said {code}: {message}");
///         }
///     }
///     Err(other) => eprintln!("{other}"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ConnectError {
    server: String,
    target: String,
    kind: ConnectErrorKind,
    detail: String,
    stderr_tail: String,
    source: Option<Cause>,
}

impl ConnectError {
    /// A connect error for `server` reaching for `target` (already redacted), with `detail`
    /// naming the target.
    pub(crate) fn new(
        server: &str,
        target: &str,
        kind: ConnectErrorKind,
        detail: impl Into<String>,
    ) -> Self {
        ConnectError {
            server: server.to_owned(),
            target: target.to_owned(),
            kind,
            detail: detail.into(),
            stderr_tail: String::new(),
            source: None,
        }
    }

    /// Keeps the underlying cause.
    pub(crate) fn with_source(mut self, source: impl Into<Cause>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// Adds the server's last stderr lines.
    pub(crate) fn with_stderr_tail(mut self, stderr_tail: String) -> Self {
        self.stderr_tail = stderr_tail;
        self
    }

    /// This error with every secret hidden (see [`Error::redact`]).
    fn redact(self, secrets: &Secrets) -> Self {
        ConnectError {
            server: self.server,
            target: secrets.redact_string(self.target),
            kind: self.kind,
            detail: secrets.redact_string(self.detail),
            stderr_tail: secrets.redact_string(self.stderr_tail),
            source: self.source.map(|s| redact_cause(s, secrets)),
        }
    }

    /// The server's configured name.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What was reached for: the command line (in backquotes) of a stdio server, or the URL
    /// without its password and query; in either, what came from a variable is hidden.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// How the attempt failed.
    pub fn kind(&self) -> ConnectErrorKind {
        self.kind
    }

    /// The last lines the server wrote to stderr (empty when none or not a process).
    pub fn stderr_tail(&self) -> &str {
        &self.stderr_tail
    }

    /// The code and message of the JSON-RPC error the server answered `initialize` with
    /// ([`ConnectErrorKind::Rejected`]).
    pub fn rpc(&self) -> Option<(ErrorCode, &str)> {
        match self.source_error()? {
            Error::Rpc { code, message, .. } => Some((*code, message)),
            _ => None,
        }
    }

    /// The HTTP status the server answered with, when the attempt failed on one (the first
    /// request, the legacy SSE stream, or the WebSocket upgrade).
    pub fn http_status(&self) -> Option<u16> {
        match self.source_error()? {
            Error::Transport { status, .. } => *status,
            Error::Unauthorized { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The `WWW-Authenticate` challenge of an HTTP 401 or 403 that refused the connection
    /// ([`ConnectErrorKind::Auth`]), as the server sent it (several headers joined with `, `),
    /// at most 4 KiB; `None` when it sent none or the attempt failed otherwise.
    ///
    /// ```no_run
    /// use mcp_blocking::{Client, Error, ServerConfig};
    /// use mcp_blocking::error::ConnectErrorKind;
    ///
    /// match Client::connect(ServerConfig::http("api", "https://example.com/mcp")) {
    ///     Err(Error::Connect(e)) if e.kind() == ConnectErrorKind::Auth => {
    ///         if let Some(challenge) = e.www_authenticate() {
    ///             eprintln!("the server asks for: {challenge}");
    ///         }
    ///     }
    ///     _ => {}
    /// }
    /// ```
    pub fn www_authenticate(&self) -> Option<&str> {
        match self.source_error()? {
            Error::Unauthorized {
                www_authenticate, ..
            } => www_authenticate.as_deref(),
            _ => None,
        }
    }

    /// The source, when it is one of this crate's errors.
    fn source_error(&self) -> Option<&Error> {
        self.source.as_deref()?.downcast_ref::<Error>()
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "server `{}`: could not connect: {}{}",
            self.server,
            self.detail,
            tail(&self.stderr_tail)
        )
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

impl From<ConnectError> for Error {
    fn from(e: ConnectError) -> Self {
        Error::Connect(Box::new(e))
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

    const TARGET: &str = "http://127.0.0.1:9/mcp";

    fn connect_error(e: &Error) -> &ConnectError {
        match e {
            Error::Connect(c) => c,
            other => panic!("not a connect error: {other:?}"),
        }
    }

    /// The first error of type `T` in the `source()` chain of `e`.
    fn find_cause<T: std::error::Error + 'static>(e: &dyn std::error::Error) -> Option<&T> {
        let mut next = e.source();
        while let Some(cause) = next {
            if let Some(found) = cause.downcast_ref::<T>() {
                return Some(found);
            }
            next = cause.source();
        }
        None
    }

    #[test]
    fn every_connect_error_kind_has_a_short_name() {
        let names: Vec<String> = [
            ConnectErrorKind::Unreachable,
            ConnectErrorKind::Auth,
            ConnectErrorKind::TimedOut,
            ConnectErrorKind::Closed,
            ConnectErrorKind::Rejected,
            ConnectErrorKind::Protocol,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            names,
            [
                "unreachable",
                "authentication refused",
                "timed out",
                "closed during the handshake",
                "`initialize` rejected",
                "protocol violation",
            ]
        );
    }

    #[test]
    fn a_connect_error_reads_like_before_with_the_stderr_tail_after() {
        let e: Error = ConnectError::new(
            "fs",
            "`mcp-fs --root /`",
            ConnectErrorKind::Closed,
            "`mcp-fs --root /` ended during the handshake: exited with status 2",
        )
        .with_stderr_tail("no such root".into())
        .into();
        assert_eq!(
            e.to_string(),
            "server `fs`: could not connect: `mcp-fs --root /` ended during the handshake: \
             exited with status 2\n--- stderr (last lines) ---\nno such root"
        );
        let c = connect_error(&e);
        assert_eq!(c.server(), "fs");
        assert_eq!(c.target(), "`mcp-fs --root /`");
        assert_eq!(c.kind(), ConnectErrorKind::Closed);
        assert_eq!(c.stderr_tail(), "no such root");
        assert_eq!(e.server(), Some("fs"));
        assert!(
            std::error::Error::source(&e).is_none(),
            "no cause was given"
        );
    }

    #[test]
    fn a_handshake_timeout_becomes_a_timed_out_connect_error() {
        let e = Error::Timeout {
            server: "fs".into(),
            method: "initialize".into(),
            after: Duration::from_millis(1000),
        }
        .into_connect("`mcp-fs`", || "starting...".into());
        assert_eq!(
            e.to_string(),
            "server `fs`: could not connect: `mcp-fs` did not answer `initialize` within 1.0 s\n\
             --- stderr (last lines) ---\nstarting..."
        );
        assert_eq!(connect_error(&e).kind(), ConnectErrorKind::TimedOut);
        assert!(e.is_timeout());
        assert!(matches!(
            std::error::Error::source(&e).and_then(|s| s.downcast_ref::<Error>()),
            Some(Error::Timeout { .. })
        ));
    }

    #[test]
    fn a_refusal_of_initialize_keeps_its_code_and_message() {
        let e = Error::Rpc {
            server: "fs".into(),
            code: ErrorCode::INVALID_PARAMS,
            message: "unknown client".into(),
            data: None,
        }
        .into_connect(TARGET, String::new);
        let c = connect_error(&e);
        assert_eq!(c.kind(), ConnectErrorKind::Rejected);
        assert_eq!(c.rpc(), Some((ErrorCode::INVALID_PARAMS, "unknown client")));
        assert_eq!(
            e.to_string(),
            format!("server `fs`: could not connect: {TARGET} refused `initialize`: error -32602: unknown client")
        );
        assert!(!e.is_timeout());
    }

    #[test]
    fn a_closed_connection_keeps_its_own_stderr_tail() {
        let e = Error::Closed {
            server: "fs".into(),
            detail: "the server process exited with status 2".into(),
            stderr_tail: "bad flag".into(),
        }
        .into_connect("`mcp-fs`", || unreachable!("the error has its own tail"));
        let c = connect_error(&e);
        assert_eq!(c.kind(), ConnectErrorKind::Closed);
        assert_eq!(c.stderr_tail(), "bad flag");
        assert!(e.to_string().contains("ended during the handshake"), "{e}");
    }

    #[test]
    fn every_authentication_status_is_an_auth_failure_and_only_those() {
        assert_eq!(AUTH_STATUSES, [401, 403, 407]);
        for status in [400, 401, 402, 403, 404, 405, 407, 500] {
            let e = Error::Transport {
                server: "api".into(),
                status: Some(status),
                detail: format!("POST {TARGET}: HTTP {status}"),
                source: None,
            }
            .into_connect(TARGET, String::new);
            let auth = connect_error(&e).kind() == ConnectErrorKind::Auth;
            assert_eq!(auth, is_auth_status(status), "HTTP {status}");
        }
        assert!(is_server_auth_status(401) && is_server_auth_status(403));
        assert!(!is_server_auth_status(407) && !is_server_auth_status(404));
    }

    #[test]
    fn transport_failures_are_unreachable_or_auth_and_keep_the_os_error() {
        let refused = Error::Transport {
            server: "api".into(),
            status: None,
            detail: format!("POST {TARGET}: connection refused"),
            source: Some(Box::new(std::io::Error::from(
                std::io::ErrorKind::ConnectionRefused,
            ))),
        }
        .into_connect(TARGET, String::new);
        let c = connect_error(&refused);
        assert_eq!(c.kind(), ConnectErrorKind::Unreachable);
        assert_eq!(c.http_status(), None);
        // The detail already names the URL: it is not repeated.
        assert_eq!(
            refused.to_string(),
            format!("server `api`: could not connect: POST {TARGET}: connection refused")
        );
        let io = find_cause::<std::io::Error>(&refused).expect("the OS error in the chain");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);

        let denied = Error::Transport {
            server: "api".into(),
            status: Some(401),
            detail: "HTTP 401".into(),
            source: None,
        }
        .into_connect(TARGET, String::new);
        let c = connect_error(&denied);
        assert_eq!(c.kind(), ConnectErrorKind::Auth);
        assert_eq!(c.http_status(), Some(401));
        assert_eq!(c.rpc(), None);
        assert!(
            denied.to_string().contains(&format!("{TARGET}: HTTP 401")),
            "{denied}"
        );
    }

    #[test]
    fn a_refusal_of_credentials_keeps_its_challenge_through_connect() {
        let e = Error::Unauthorized {
            server: "api".into(),
            status: 401,
            detail: format!("POST {TARGET}: HTTP 401 Unauthorized"),
            www_authenticate: Some("Bearer realm=\"x\"".into()),
        };
        assert!(!e.is_retryable());
        assert_eq!(e.server(), Some("api"));
        assert_eq!(
            e.to_string(),
            format!("server `api`: not authorized: POST {TARGET}: HTTP 401 Unauthorized")
        );
        let c = e.into_connect(TARGET, String::new);
        assert_eq!(c.www_authenticate(), Some("Bearer realm=\"x\""));
        let ce = connect_error(&c);
        assert_eq!(ce.kind(), ConnectErrorKind::Auth);
        assert_eq!(ce.http_status(), Some(401));
        assert_eq!(ce.www_authenticate(), Some("Bearer realm=\"x\""));
        assert_eq!(
            c.to_string(),
            format!("server `api`: could not connect: POST {TARGET}: HTTP 401 Unauthorized")
        );
    }

    #[test]
    fn a_protocol_failure_is_a_protocol_connect_error() {
        let e = Error::Protocol {
            server: "api".into(),
            kind: ProtocolErrorKind::Unexpected,
            detail: "the reply did not contain the response".into(),
        }
        .into_connect(TARGET, String::new);
        assert_eq!(connect_error(&e).kind(), ConnectErrorKind::Protocol);
    }

    #[test]
    fn errors_that_are_not_about_the_handshake_pass_through() {
        let spawn = Error::Spawn {
            server: "fs".into(),
            command: "mcp-fs".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        }
        .into_connect("`mcp-fs`", String::new);
        assert!(matches!(spawn, Error::Spawn { .. }), "{spawn:?}");
        let once: Error =
            ConnectError::new("fs", "`x`", ConnectErrorKind::Unreachable, "no pipes").into();
        let twice = once.into_connect("`y`", String::new);
        assert_eq!(connect_error(&twice).target(), "`x`", "not wrapped twice");
    }
}
