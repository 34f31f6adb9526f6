//! Server configuration: [`ServerConfig`] and its transport settings.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod error;
pub use error::ConfigError;

/// The transport types a configuration may name (RobotLab's `VALID_TRANSPORT_TYPES`).
pub const VALID_TRANSPORT_TYPES: [&str; 6] =
    ["stdio", "sse", "ws", "websocket", "streamable-http", "http"];

/// The request timeout used when a configuration gives none: 15 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// A callback that returns the value of the `Authorization` header, called before each request.
#[derive(Clone)]
pub struct AuthProvider(pub(crate) Arc<dyn Fn() -> Result<String, String> + Send + Sync>);

impl AuthProvider {
    /// Wraps a closure that returns the full header value (e.g. `"Bearer abc"`).
    pub fn new(f: impl Fn() -> Result<String, String> + Send + Sync + 'static) -> Self {
        AuthProvider(Arc::new(f))
    }
}

impl fmt::Debug for AuthProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthProvider(<redacted>)")
    }
}

/// Settings of a server started as a child process and spoken to over its stdin and stdout.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The program to run (looked up on `PATH`; never through a shell).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables, on top of the safe allow-list.
    pub env: BTreeMap<String, String>,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// Inherit the parent's whole environment instead of the allow-list.
    pub inherit_env: bool,
}

/// Settings of a Streamable HTTP server.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// The MCP endpoint.
    pub url: String,
    /// A session id to resume, if any.
    pub session_id: Option<String>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Called before each request for the `Authorization` header.
    pub auth: Option<AuthProvider>,
}

/// How to reach a server.
#[derive(Clone)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process over stdin/stdout.
    Stdio(StdioConfig),
    /// Legacy HTTP+SSE (2024-11-05).
    Sse {
        /// The SSE stream URL.
        url: String,
    },
    /// WebSocket, subprotocol `mcp`.
    WebSocket {
        /// The `ws://` or `wss://` URL.
        url: String,
    },
    /// Streamable HTTP.
    StreamableHttp(HttpConfig),
}

/// A validated description of one MCP server and how to reach it.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) transport: TransportConfig,
    pub(crate) timeout: Duration,
}

impl ServerConfig {
    /// A server started as `command` and spoken to over stdio.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        ServerConfig {
            name: name.into(),
            description: String::new(),
            transport: TransportConfig::Stdio(StdioConfig {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
                inherit_env: false,
            }),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Sets the arguments of a stdio server (ignored for other transports).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        if let TransportConfig::Stdio(s) = &mut self.transport {
            s.args = args.into_iter().map(Into::into).collect();
        }
        self
    }

    /// Adds an environment variable for a stdio server.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::Stdio(s) = &mut self.transport {
            s.env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the timeout in seconds, normalised as RobotLab does.
    pub fn timeout_secs(mut self, secs: f64) -> Self {
        self.timeout = normalize_timeout(Some(secs));
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The per-request timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How to reach the server.
    pub fn transport(&self) -> &TransportConfig {
        &self.transport
    }

    /// Checks the configuration.
    ///
    /// # Errors
    /// [`ConfigError`] when a stdio server has no command or a network server no url.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Ok(())
    }
}

/// RobotLab's timeout normalisation: none -> 15 s; >= 1000 is milliseconds; floor 1 s.
pub fn normalize_timeout(secs: Option<f64>) -> Duration {
    match secs {
        None => DEFAULT_TIMEOUT,
        Some(v) if !v.is_finite() => DEFAULT_TIMEOUT,
        Some(v) => {
            let v = if v >= 1000.0 { v / 1000.0 } else { v };
            Duration::from_secs_f64(v.max(1.0))
        }
    }
}
