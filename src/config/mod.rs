//! Server configuration: [`ServerConfig`] and its transport settings, and loading them from the
//! files MCP hosts read ([`ConfigLoader`]), templates ([`Template`]) and hosted-MCP tool lists
//! ([`HostedMcpServer`]).

// `ConfigError` is large (it carries a location and a suggestion), but it is returned only on the
// cold configuration path and is boxed inside `crate::Error`.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

mod entry;
mod error;
mod hosted;
mod interpolate;
mod json;
mod load;
mod suggest;
mod template;
mod yaml;

pub use error::{ConfigError, ConfigErrorKind};
pub use hosted::{HostedMcpServer, HostedReport, RequireApproval};
pub use load::{ConfigLoader, LoadReport};
pub use template::Template;

/// The transport types a configuration may name (RobotLab's `VALID_TRANSPORT_TYPES`).
pub const VALID_TRANSPORT_TYPES: [&str; 6] =
    ["stdio", "sse", "ws", "websocket", "streamable-http", "http"];

/// The request timeout used when a configuration gives none: 15 seconds.
///
/// See [`ServerConfig`'s timeouts](ServerConfig#timeouts).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);

/// The longest timeout accepted anywhere: 24 hours.
///
/// A request that has had no answer for a day is not coming back; work that really runs longer
/// reports progress, and
/// [`CallOptions::reset_timeout_on_progress`](crate::CallOptions::reset_timeout_on_progress)
/// restarts the timeout on each report. A day is also far from every limit the timeout meets on
/// its way to the operating system (a deadline `Instant`, a `poll` timeout of `i32`
/// milliseconds, about 24.8 days), so no accepted value can overflow. A longer one, or a zero
/// one, is a [`ConfigErrorKind::InvalidValue`] (see
/// [`ServerConfig`'s timeouts](ServerConfig#timeouts)).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(mcp_blocking::MAX_TIMEOUT, Duration::from_secs(24 * 60 * 60));
/// ```
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// What `Debug` output shows in place of a secret.
pub(crate) const REDACTED: &str = "<redacted>";

/// A callback that returns the value of the `Authorization` header, called before each request.
#[derive(Clone)]
pub struct AuthProvider(pub(crate) Arc<dyn Fn() -> Result<String, String> + Send + Sync>);

impl AuthProvider {
    /// Wraps a closure that returns the full header value (e.g. `"Bearer abc"`).
    ///
    /// ```
    /// use mcp_blocking::AuthProvider;
    /// let auth = AuthProvider::new(|| Ok("Bearer abc".to_string()));
    /// assert_eq!(format!("{auth:?}"), "AuthProvider(<redacted>)");
    /// ```
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
///
/// `Debug` shows the environment's keys but not its values.
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
    /// The largest stdout line (one message) accepted, in bytes; `None` is the library default.
    pub max_message_bytes: Option<usize>,
}

impl fmt::Debug for StdioConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: BTreeMap<&str, &str> = self.env.keys().map(|k| (k.as_str(), REDACTED)).collect();
        f.debug_struct("StdioConfig")
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &env)
            .field("cwd", &self.cwd)
            .field("inherit_env", &self.inherit_env)
            .field("max_message_bytes", &self.max_message_bytes)
            .finish()
    }
}

/// Settings of a Streamable HTTP server.
///
/// `Debug` shows header names but not their values, and no session id or url query.
/// Equality compares whether an auth provider is set, not which.
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
    /// Fall back to legacy HTTP+SSE when the server answers the first POST with 400, 404 or 405.
    /// Set when a host file gave a `url` with no `type`.
    pub detect_legacy_sse: bool,
    /// Extra trusted root certificates (DER) for `https://`, on top of the webpki (Mozilla) roots.
    pub root_certificates: Vec<Vec<u8>>,
}

impl HttpConfig {
    fn new(url: String) -> Self {
        HttpConfig {
            url,
            session_id: None,
            headers: Vec::new(),
            auth: None,
            detect_legacy_sse: false,
            root_certificates: Vec::new(),
        }
    }
}

impl PartialEq for HttpConfig {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.session_id == other.session_id
            && self.headers == other.headers
            && self.auth.is_some() == other.auth.is_some()
            && self.detect_legacy_sse == other.detect_legacy_sse
            && self.root_certificates == other.root_certificates
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(k, _)| (k.as_str(), REDACTED))
            .collect();
        f.debug_struct("HttpConfig")
            .field("url", &RedactedUrl(&self.url))
            .field("session_id", &self.session_id.as_ref().map(|_| REDACTED))
            .field("headers", &headers)
            .field("auth", &self.auth)
            .field("detect_legacy_sse", &self.detect_legacy_sse)
            .field("root_certificates", &self.root_certificates.len())
            .finish()
    }
}

/// A url whose `Debug` hides its query string and any password.
struct RedactedUrl<'a>(&'a str);

impl fmt::Debug for RedactedUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&redact_url(self.0), f)
    }
}

/// `url` without its query string and password, for messages and `Debug`.
pub(crate) fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, _)) => (b, true),
        None => (url, false),
    };
    let mut out = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    let user = userinfo.split(':').next().unwrap_or_default();
                    format!("{scheme}://{user}:{REDACTED}@{host}{path}")
                }
                None => base.to_owned(),
            }
        }
        None => base.to_owned(),
    };
    if query {
        out.push('?');
        out.push_str(REDACTED);
    }
    out
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq)]
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
        /// Extra trusted root certificates (DER) for `wss://`, on top of the webpki (Mozilla)
        /// roots.
        root_certificates: Vec<Vec<u8>>,
    },
    /// Streamable HTTP.
    StreamableHttp(HttpConfig),
}

impl TransportConfig {
    /// The canonical type name: `"stdio"`, `"sse"`, `"websocket"` or `"streamable-http"`.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// assert_eq!(ServerConfig::websocket("w", "ws://localhost:1").transport().type_name(), "websocket");
    /// ```
    pub fn type_name(&self) -> &'static str {
        match self {
            TransportConfig::Stdio(_) => "stdio",
            TransportConfig::Sse { .. } => "sse",
            TransportConfig::WebSocket { .. } => "websocket",
            TransportConfig::StreamableHttp(_) => "streamable-http",
        }
    }

    /// The url of a network transport.
    pub fn url(&self) -> Option<&str> {
        match self {
            TransportConfig::Stdio(_) => None,
            TransportConfig::Sse { url } | TransportConfig::WebSocket { url, .. } => Some(url),
            TransportConfig::StreamableHttp(h) => Some(&h.url),
        }
    }
}

/// A validated description of one MCP server and how to reach it.
///
/// Build one in code with [`ServerConfig::stdio`], [`ServerConfig::http`], [`ServerConfig::sse`] or
/// [`ServerConfig::websocket`] and the chainable setters, from a JSON value with
/// [`ServerConfig::from_value`], or from host config files with [`ConfigLoader`].
///
/// ```
/// use mcp_blocking::ServerConfig;
/// let fs = ServerConfig::stdio("fs", "npx")
///     .args(["-y", "@modelcontextprotocol/server-filesystem", "/data"])
///     .env("DEBUG", "1")
///     .timeout_secs(30.0);
/// fs.validate()?;
/// assert_eq!(fs.transport_type(), "stdio");
/// assert_eq!(fs.timeout().as_secs(), 30);
/// // Debug shows env keys, never values.
/// assert!(format!("{fs:?}").contains("\"DEBUG\": \"<redacted>\""));
/// # Ok::<(), mcp_blocking::ConfigError>(())
/// ```
///
/// # Timeouts
///
/// A server has one timeout: how long each request waits for its answer (the `initialize`
/// handshake included), [`DEFAULT_TIMEOUT`] (15 s) unless set. A call can override it with
/// [`CallOptions::timeout`](crate::CallOptions::timeout).
///
/// **In code the value is exact.** [`timeout_secs(1800.0)`](ServerConfig::timeout_secs) is 30
/// minutes, `timeout_secs(0.25)` is 250 ms, and [`with_timeout`](ServerConfig::with_timeout) takes
/// a [`Duration`] as it is.
///
/// **In host config files** ([`ConfigLoader`], [`ServerConfig::load_all`], template front matter)
/// **and [`ServerConfig::from_value`]**, the `timeout` key follows the rule those files are
/// written for:
///
/// | `timeout` | means |
/// |---|---|
/// | absent or `null` | [`DEFAULT_TIMEOUT`] (15 s) |
/// | under 1000 | seconds, at least 1 s (`0.5` is 1 s) |
/// | 1000 or more | milliseconds (`5000` is 5 s, `1800000` is 30 minutes) |
///
/// **Valid range, everywhere:** more than zero and at most [`MAX_TIMEOUT`] (24 h). A timeout that
/// is zero, negative, not a number, infinite or longer than that is a [`ConfigError`] of kind
/// [`ConfigErrorKind::InvalidValue`] at the key `timeout`, naming the server, the value found and
/// the valid range:
///
/// - in a file or [`from_value`](ServerConfig::from_value): when it is read (`timeout: 0`,
///   `timeout: -5`, `timeout: .nan`, `timeout: 1e300`);
/// - in code: a chainable setter cannot fail, so [`timeout_secs`](ServerConfig::timeout_secs) and
///   [`with_timeout`](ServerConfig::with_timeout) record the bad value, leave
///   [`timeout`](ServerConfig::timeout) as it was, and [`validate`](ServerConfig::validate) (which
///   [`Client::connect`](crate::Client::connect) calls) returns the error. A later valid setting
///   replaces the bad one.
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::{ConfigErrorKind, ServerConfig};
/// let code = ServerConfig::stdio("fs", "mcp-fs").timeout_secs(1800.0);
/// assert_eq!(code.timeout(), Duration::from_secs(30 * 60));
/// let file = ServerConfig::from_value(&serde_json::json!({
///     "name": "fs", "transport": {"type": "stdio", "command": "mcp-fs"}, "timeout": 5000
/// }))?;
/// assert_eq!(file.timeout(), Duration::from_secs(5));
///
/// let bad = ServerConfig::stdio("fs", "mcp-fs").timeout_secs(f64::NAN);
/// let err = bad.validate().unwrap_err();
/// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
/// assert_eq!(err.path, "timeout");
/// assert_eq!(err.to_string(), "server `fs`: timeout: the timeout must be more than 0 s and at \
///     most 86400 s (24 h), found NaN s");
/// # Ok::<(), mcp_blocking::ConfigError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) transport: TransportConfig,
    pub(crate) timeout: Duration,
    /// The last timeout given in code when it was out of range, as shown in messages; reported
    /// by [`ServerConfig::validate`].
    pub(crate) invalid_timeout: Option<String>,
    /// Values substituted from variables; `Debug` hides them wherever they appear.
    pub(crate) secrets: Vec<String>,
}

impl PartialEq for ServerConfig {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.transport == other.transport
            && self.timeout == other.timeout
            && self.invalid_timeout == other.invalid_timeout
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = format!("{:?}", self.transport);
        let mut transport = transport;
        for s in &self.secrets {
            transport = transport.replace(s.as_str(), REDACTED);
        }
        let mut d = f.debug_struct("ServerConfig");
        d.field("name", &self.name)
            .field("description", &self.description)
            .field("transport", &format_args!("{transport}"))
            .field("timeout", &self.timeout);
        if let Some(found) = &self.invalid_timeout {
            d.field("invalid_timeout", found);
        }
        d.finish()
    }
}

impl ServerConfig {
    fn with_transport(name: impl Into<String>, transport: TransportConfig) -> Self {
        ServerConfig {
            name: name.into(),
            description: String::new(),
            transport,
            timeout: DEFAULT_TIMEOUT,
            invalid_timeout: None,
            secrets: Vec::new(),
        }
    }

    /// A server started as `command` and spoken to over stdio.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::stdio("fs", "mcp-server-filesystem").args(["--root", "/data"]);
    /// assert_eq!(s.command(), Some("mcp-server-filesystem"));
    /// ```
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            TransportConfig::Stdio(StdioConfig {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
                inherit_env: false,
                max_message_bytes: None,
            }),
        )
    }

    /// A Streamable HTTP server at `url`.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::http("api", "https://example.com/mcp").bearer_token("t0ken");
    /// assert_eq!(s.transport_type(), "streamable-http");
    /// assert_eq!(s.url(), Some("https://example.com/mcp"));
    /// assert!(!format!("{s:?}").contains("t0ken"));
    /// ```
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            TransportConfig::StreamableHttp(HttpConfig::new(url.into())),
        )
    }

    /// A legacy HTTP+SSE server whose event stream is at `url`.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// assert_eq!(ServerConfig::sse("old", "http://localhost:8080/sse").transport_type(), "sse");
    /// ```
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(name, TransportConfig::Sse { url: url.into() })
    }

    /// A WebSocket server at `url` (`ws://` or `wss://`).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// assert_eq!(ServerConfig::websocket("w", "ws://localhost:9090").transport_type(), "websocket");
    /// ```
    pub fn websocket(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            TransportConfig::WebSocket {
                url: url.into(),
                root_certificates: Vec::new(),
            },
        )
    }

    /// A validated server from a name and a transport.
    ///
    /// ```
    /// use mcp_blocking::{ServerConfig, TransportConfig};
    /// let ws = TransportConfig::WebSocket { url: "http://x".into(), root_certificates: Vec::new() };
    /// let err = ServerConfig::new("w", ws).unwrap_err();
    /// assert_eq!(err.to_string(), "server `w`: transport.url: websocket url must start with ws:// or wss://, found `http://x`");
    /// ```
    ///
    /// # Errors
    /// The [`ConfigError`] of [`ServerConfig::validate`].
    pub fn new(name: impl Into<String>, transport: TransportConfig) -> Result<Self, ConfigError> {
        let s = Self::with_transport(name, transport);
        s.validate()?;
        Ok(s)
    }

    /// Sets the human-readable description (used for server discovery).
    ///
    /// (Named `with_` because [`ServerConfig::description`] is the getter.)
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::stdio("fs", "mcp-fs").with_description("Local files");
    /// assert_eq!(s.description(), "Local files");
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
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

    /// Adds an environment variable for a stdio server (ignored for other transports).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::Stdio(s) = &mut self.transport {
            s.env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored for other transports).
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        if let TransportConfig::Stdio(s) = &mut self.transport {
            s.cwd = Some(cwd.into());
        }
        self
    }

    /// Lets a stdio server inherit the whole environment instead of the safe allow-list
    /// (ignored for other transports).
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        if let TransportConfig::Stdio(s) = &mut self.transport {
            s.inherit_env = inherit;
        }
        self
    }

    /// Caps one stdout message of a stdio server at `bytes` (ignored for other transports).
    pub fn max_message_bytes(mut self, bytes: usize) -> Self {
        if let TransportConfig::Stdio(s) = &mut self.transport {
            s.max_message_bytes = Some(bytes);
        }
        self
    }

    /// Adds a header sent with every request of a Streamable HTTP server (ignored for other
    /// transports).
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let TransportConfig::StreamableHttp(h) = &mut self.transport {
            h.headers.push((key.into(), value.into()));
        }
        self
    }

    /// Sets the `Authorization: Bearer <token>` header of a Streamable HTTP server, replacing any
    /// earlier `Authorization` header (ignored for other transports).
    pub fn bearer_token(mut self, token: impl AsRef<str>) -> Self {
        if let TransportConfig::StreamableHttp(h) = &mut self.transport {
            h.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            h.headers.push((
                "Authorization".to_owned(),
                format!("Bearer {}", token.as_ref()),
            ));
        }
        self
    }

    /// Sets a callback for the `Authorization` header of a Streamable HTTP server (ignored for
    /// other transports).
    pub fn auth_provider(mut self, auth: AuthProvider) -> Self {
        if let TransportConfig::StreamableHttp(h) = &mut self.transport {
            h.auth = Some(auth);
        }
        self
    }

    /// Sets the session id to resume on a Streamable HTTP server (ignored for other transports).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        if let TransportConfig::StreamableHttp(h) = &mut self.transport {
            h.session_id = Some(id.into());
        }
        self
    }

    /// Trusts the certificates of a PEM bundle (one or more `CERTIFICATE` blocks) as extra roots
    /// for `https://` and `wss://` (e.g. a private CA); the webpki (Mozilla) roots stay trusted.
    /// Ignored for stdio servers; refused for legacy SSE servers (see Errors).
    ///
    /// ```
    /// use mcp_blocking::{ConfigErrorKind, ServerConfig};
    /// let err = ServerConfig::http("api", "https://10.0.0.5/mcp")
    ///     .tls_root_certificates_pem("not a certificate")
    ///     .unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    /// ```
    ///
    /// # Errors
    /// [`ConfigError`] of kind [`ConfigErrorKind::InvalidValue`] when `pem` is not PEM or holds no
    /// certificate, or when the server is a legacy SSE server (whose stream cannot take them;
    /// configure it as Streamable HTTP, whose fallback to legacy SSE uses them).
    pub fn tls_root_certificates_pem(mut self, pem: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        let fail = |message: String| {
            ConfigError::new(ConfigErrorKind::InvalidValue, message)
                .at("transport.root_certificates")
                .for_server(Some(self.name.as_str()))
        };
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(pem.as_ref()) {
            match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c.der().to_vec()),
                Ok(_) => {}
                Err(e) => return Err(fail(format!("not a PEM certificate bundle: {e}"))),
            }
        }
        if certs.is_empty() {
            return Err(fail("no PEM `CERTIFICATE` block found".into()));
        }
        match &mut self.transport {
            TransportConfig::StreamableHttp(h) => h.root_certificates.extend(certs),
            TransportConfig::WebSocket {
                root_certificates, ..
            } => root_certificates.extend(certs),
            TransportConfig::Sse { .. } => {
                return Err(fail(
                    "legacy SSE servers cannot take extra root certificates; use the \
                     Streamable HTTP transport (which falls back to legacy SSE with them)"
                        .into(),
                ))
            }
            TransportConfig::Stdio(_) => {}
        }
        Ok(self)
    }

    /// Sets the per-request timeout to exactly `secs` seconds (`1800.0` is 30 minutes, `0.25` is
    /// 250 ms). The host-config rule for `timeout` keys in files does not apply here: see
    /// [timeouts](ServerConfig#timeouts).
    ///
    /// A value out of range (NaN, infinite, negative, zero, or more than [`MAX_TIMEOUT`]) leaves
    /// the timeout as it was and makes [`validate`](Self::validate), and so
    /// [`Client::connect`](crate::Client::connect), fail.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::stdio("x", "x").timeout_secs(1800.0);
    /// assert_eq!(s.timeout(), Duration::from_secs(30 * 60));
    /// assert!(ServerConfig::stdio("x", "x").timeout_secs(-1.0).validate().is_err());
    /// ```
    pub fn timeout_secs(mut self, secs: f64) -> Self {
        match timeout_from_secs(secs) {
            Some(t) => {
                self.timeout = t;
                self.invalid_timeout = None;
            }
            None => self.invalid_timeout = Some(format!("{} s", show_number(secs))),
        }
        self
    }

    /// Sets the per-request timeout exactly (see [timeouts](ServerConfig#timeouts)).
    ///
    /// [`Duration::ZERO`] or more than [`MAX_TIMEOUT`] leaves the timeout as it was and makes
    /// [`validate`](Self::validate), and so [`Client::connect`](crate::Client::connect), fail.
    ///
    /// (Named `with_` because [`ServerConfig::timeout`] is the getter.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::stdio("x", "x").with_timeout(Duration::from_millis(200));
    /// assert_eq!(s.timeout(), Duration::from_millis(200));
    /// assert!(ServerConfig::stdio("x", "x").with_timeout(Duration::MAX).validate().is_err());
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if timeout_in_range(timeout) {
            self.timeout = timeout;
            self.invalid_timeout = None;
        } else {
            self.invalid_timeout = Some(show_duration(timeout));
        }
        self
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description, `""` when none was set.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The per-request timeout (see [timeouts](ServerConfig#timeouts)): [`DEFAULT_TIMEOUT`]
    /// unless set. An out-of-range value given to a setter is not taken: this stays the last
    /// valid one, and [`validate`](Self::validate) reports the bad one.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// How to reach the server.
    pub fn transport(&self) -> &TransportConfig {
        &self.transport
    }

    /// The canonical transport type: `"stdio"`, `"sse"`, `"websocket"` or `"streamable-http"`.
    pub fn transport_type(&self) -> &'static str {
        self.transport.type_name()
    }

    /// The url of a network server, `None` for stdio.
    pub fn url(&self) -> Option<&str> {
        self.transport.url()
    }

    /// The command of a stdio server, `None` for network servers.
    pub fn command(&self) -> Option<&str> {
        match &self.transport {
            TransportConfig::Stdio(s) => Some(&s.command),
            _ => None,
        }
    }

    /// Checks the configuration.
    ///
    /// ```
    /// use mcp_blocking::{ConfigErrorKind, ServerConfig};
    /// let err = ServerConfig::stdio("fs", "").validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::MissingField);
    /// assert_eq!(err.to_string(), "server `fs`: transport.command: stdio transport needs a `command`");
    /// ```
    ///
    /// # Errors
    /// [`ConfigError`] of kind [`ConfigErrorKind::MissingField`] when the name is empty, a stdio
    /// server has no command or a network server no url, of kind
    /// [`ConfigErrorKind::InvalidUrl`] when a url has the wrong scheme for its transport, and of
    /// kind [`ConfigErrorKind::InvalidValue`] (at `timeout`) when a timeout out of range was set
    /// (see [timeouts](ServerConfig#timeouts)).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let server = Some(self.name.as_str()).filter(|n| !n.is_empty());
        let fail = |e: ConfigError| Err(e.for_server(server));
        if self.name.trim().is_empty() {
            return fail(
                ConfigError::new(ConfigErrorKind::MissingField, "server name is empty").at("name"),
            );
        }
        if let Some(found) = &self.invalid_timeout {
            return fail(timeout_error(found, TIMEOUT_RANGE).at("timeout"));
        }
        let (kind, url) = match &self.transport {
            TransportConfig::Stdio(s) => {
                if s.command.trim().is_empty() {
                    return fail(
                        ConfigError::new(
                            ConfigErrorKind::MissingField,
                            "stdio transport needs a `command`",
                        )
                        .at("transport.command"),
                    );
                }
                return Ok(());
            }
            TransportConfig::Sse { url } => ("sse", url),
            TransportConfig::WebSocket { url, .. } => ("websocket", url),
            TransportConfig::StreamableHttp(h) => ("streamable-http", &h.url),
        };
        check_url(kind, url).or_else(|e| fail(e.at("transport.url")))
    }
}

/// Checks that `url` is present and has a scheme that `kind` can use.
pub(crate) fn check_url(kind: &str, url: &str) -> Result<(), ConfigError> {
    if url.trim().is_empty() {
        return Err(ConfigError::new(
            ConfigErrorKind::MissingField,
            format!("{kind} transport needs a `url`"),
        ));
    }
    let schemes: &[&str] = if kind == "websocket" {
        &["ws://", "wss://"]
    } else {
        &["http://", "https://"]
    };
    let lower = url.to_ascii_lowercase();
    if schemes.iter().any(|s| lower.starts_with(s)) {
        return Ok(());
    }
    let expected = format!("{} or {}", schemes[0], schemes[1]);
    let found = redact_url(url);
    Err(ConfigError::new(
        ConfigErrorKind::InvalidUrl,
        format!("{kind} url must start with {expected}, found `{found}`"),
    )
    .found_expected(found, expected))
}

/// The valid range of a timeout set in code, for messages.
pub(crate) const TIMEOUT_RANGE: &str = "more than 0 s and at most 86400 s (24 h)";

/// The valid range of a `timeout` key in a host config file, for messages.
const FILE_TIMEOUT_RANGE: &str =
    "more than 0 and at most 24 h (seconds below 1000, milliseconds from 1000: at most 86400000)";

/// Whether `timeout` is in the valid range: more than zero, at most [`MAX_TIMEOUT`].
pub(crate) fn timeout_in_range(timeout: Duration) -> bool {
    !timeout.is_zero() && timeout <= MAX_TIMEOUT
}

/// `secs` seconds as a timeout, `None` when out of range (see [`timeout_in_range`]).
pub(crate) fn timeout_from_secs(secs: f64) -> Option<Duration> {
    if !(secs > 0.0 && secs <= MAX_TIMEOUT.as_secs_f64()) {
        return None; // NaN, infinite, negative, zero or too long.
    }
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|t| timeout_in_range(*t))
}

/// A number as messages show it: plain for ordinary values, in exponent form for huge or tiny
/// ones (`1e300` rather than three hundred digits).
pub(crate) fn show_number(v: f64) -> String {
    let a = v.abs();
    if a != 0.0 && a.is_finite() && !(1e-6..1e15).contains(&a) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A duration as messages show it, in seconds (`Duration::MAX` is `1.8446744073709552e19 s`).
pub(crate) fn show_duration(d: Duration) -> String {
    format!("{} s", show_number(d.as_secs_f64()))
}

/// The error for a timeout out of range; the caller sets the key path and server.
pub(crate) fn timeout_error(found: &str, range: &str) -> ConfigError {
    ConfigError::new(
        ConfigErrorKind::InvalidValue,
        format!("the timeout must be {range}, found {found}"),
    )
    .found_expected(found, range)
}

/// A `timeout` key of host-config-shaped input read by the rule documented under
/// [timeouts](ServerConfig#timeouts) (the one place that states it). Out of range is an error of
/// kind [`ConfigErrorKind::InvalidValue`] without a key path.
pub(crate) fn normalize_timeout(value: Option<f64>) -> Result<Duration, ConfigError> {
    let Some(v) = value else {
        return Ok(DEFAULT_TIMEOUT);
    };
    let secs = if v >= 1000.0 { v / 1000.0 } else { v.max(1.0) };
    match timeout_from_secs(secs) {
        Some(t) if v > 0.0 => Ok(t),
        _ => Err(timeout_error(&show_number(v), FILE_TIMEOUT_RANGE)),
    }
}

/// The error for a `timeout` key written as a string that names no finite number (`.nan`,
/// `.inf`, `-Infinity`, a YAML `1e400`), `None` for any other string (a plain type error).
pub(crate) fn non_finite_timeout(raw: &str) -> Option<ConfigError> {
    let t = raw.trim();
    let (sign, rest) = match t.strip_prefix(['+', '-']) {
        Some(rest) => (&t[..1], rest),
        None => ("", t),
    };
    let rest = rest.strip_prefix('.').unwrap_or(rest);
    let v: f64 = format!("{sign}{rest}").parse().ok()?;
    (!v.is_finite()).then(|| timeout_error(&format!("`{raw}`"), FILE_TIMEOUT_RANGE))
}

#[cfg(test)]
mod timeout_tests {
    use super::*;

    #[test]
    fn the_host_rule_reads_milliseconds_and_floors_at_one_second() {
        let n = |v| normalize_timeout(v).ok();
        assert_eq!(n(None), Some(DEFAULT_TIMEOUT));
        assert_eq!(n(Some(0.5)), Some(Duration::from_secs(1)));
        assert_eq!(n(Some(30.0)), Some(Duration::from_secs(30)));
        assert_eq!(n(Some(999.0)), Some(Duration::from_secs(999)));
        assert_eq!(n(Some(5000.0)), Some(Duration::from_secs(5)));
        assert_eq!(n(Some(86_400_000.0)), Some(MAX_TIMEOUT));
        for bad in [
            0.0,
            -0.0,
            -5.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            86_400_001.0,
            1e300,
        ] {
            assert!(n(Some(bad)).is_none(), "{bad} accepted");
        }
    }

    #[test]
    fn code_timeouts_are_exact_and_bounded() {
        assert_eq!(timeout_from_secs(0.25), Some(Duration::from_millis(250)));
        assert_eq!(timeout_from_secs(86_400.0), Some(MAX_TIMEOUT));
        for bad in [0.0, 1e-12, -1.0, f64::NAN, f64::INFINITY, 86_400.5, 1e21] {
            assert_eq!(timeout_from_secs(bad), None, "{bad} accepted");
        }
    }

    #[test]
    fn non_finite_words_are_recognised() {
        for w in [
            ".nan", ".NaN", "NaN", ".inf", "-.inf", "+.Inf", "Infinity", "1e400",
        ] {
            assert!(non_finite_timeout(w).is_some(), "{w}");
        }
        for w in ["30", "abc", "", ".5", "-"] {
            assert!(non_finite_timeout(w).is_none(), "{w}");
        }
    }

    #[test]
    fn huge_numbers_are_shown_in_exponent_form() {
        assert_eq!(show_number(1e300), "1e300");
        assert_eq!(show_number(30.0), "30");
        assert_eq!(show_number(f64::NAN), "NaN");
        assert_eq!(show_duration(Duration::MAX), "1.8446744073709552e19 s");
    }
}
