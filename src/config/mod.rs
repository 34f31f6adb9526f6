//! Server configuration: [`ServerConfig`] and its transport settings, and loading them from the
//! files MCP hosts read ([`ConfigLoader`]; where each host keeps its file: [`locations`]; every
//! file that applies to a folder, with project files held until approved: [`discover`],
//! [`TrustStore`]),
//! templates ([`Template`]) and hosted-MCP tool lists ([`HostedMcpServer`]).

// `ConfigError` is large (it carries a location and a suggestion), but it is returned only on the
// cold configuration path and is boxed inside `crate::Error`.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use remote::RedactedHeaders;

mod claude_json;
mod claude_settings;
pub mod discover;
mod documents;
mod entry;
mod error;
mod fields;
mod header_helper;
mod host_keys;
mod hosted;
mod input;
mod interpolate;
mod json;
mod jsonc;
mod limits;
mod load;
pub mod locations;
mod mcp_options;
pub(crate) mod oauth;
mod oauth_entry;
mod policy;
mod policy_entry;
#[cfg(test)]
mod property_tests;
mod protocol;
pub(crate) mod proxy_url;
mod redact;
mod remote;
mod renamed;
mod sandbox;
mod suggest;
mod template;
mod toml_doc;
mod trust;
pub(crate) mod yaml;

pub use error::{ConfigError, ConfigErrorKind};
pub use hosted::{HostedMcpServer, HostedReport, RequireApproval};
pub use input::InputLimits;
pub use limits::Limits;
pub(crate) use limits::{char_floor, cut_mark, echo, CUT};
pub use load::{ConfigLoader, IgnoredKey, LoadReport};
pub use policy::{
    Approval, RuleSource, SandboxSettings, ServerPolicy, ToolPattern, ToolRefusal, ToolRule,
};
pub use protocol::{ProtocolEra, ProtocolMode, AUTO_PROBE_TIMEOUT, MODERN_PROTOCOL_VERSION};
pub(crate) use redact::Secrets;
pub(crate) use remote::header_pair;
pub use remote::{ProxyConfig, SseConfig, WebSocketConfig};
pub(crate) use sandbox::absolute as sandbox_absolute;
#[cfg(target_os = "linux")]
pub(crate) use sandbox::cpu_seconds as cpu_seconds_of;
pub use sandbox::{
    DomainRule, Network, Sandbox, SandboxLimits, SandboxReport, DEVICE_PATHS, MAX_SANDBOX_RULES,
    SYSTEM_READ_PATHS,
};
pub use template::Template;
pub use trust::{FileDigest, TrustStore};

/// The transport type names a configuration may use (`ws` and `http` are aliases).
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
/// assert_eq!(mcp_blocking::config::MAX_TIMEOUT, Duration::from_secs(24 * 60 * 60));
/// ```
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// What messages, logs and `Debug` output show in place of a secret (see `redact.rs`).
pub(crate) const REDACTED: &str = "<redacted>";

/// A callback that returns the value of the `Authorization` header, called before each request
/// (Streamable HTTP and legacy SSE: every request; WebSocket: the handshake). Its value replaces
/// any `Authorization` header set with [`ServerConfig::with_header`] or [`ServerConfig::with_bearer_token`].
/// An `Err` fails that request (or the connect) with [`Error::Transport`](crate::Error::Transport)
/// naming the server. An empty value sends no `Authorization` header (nor a configured one).
#[derive(Clone)]
pub struct AuthProvider(
    pub(crate) Arc<dyn Fn() -> Result<String, String> + Send + Sync>,
    /// Credentials that depend on the request (OAuth with DPoP-bound tokens): when set, it
    /// gives each request's headers instead of the closure.
    pub(crate) Option<Arc<dyn RequestAuth>>,
);

/// The credentials of one request when they depend on its method and URL: a DPoP proof
/// (RFC 9449) is signed for exactly one request.
pub(crate) trait RequestAuth: Send + Sync {
    /// The `Authorization` value (`""`: none) and, for a DPoP-bound token, the `DPoP` proof of
    /// a `method` request to `url`.
    fn headers(&self, method: &str, url: &str) -> Result<(String, Option<String>), String>;

    /// Keeps the `DPoP-Nonce` a response to a request with a proof carried, for later proofs;
    /// `true` when it is usable (a request refused with `use_dpop_nonce` may then be sent
    /// once more).
    fn nonce(&self, nonce: &str) -> bool;
}

impl AuthProvider {
    /// Wraps a closure that returns the full header value (e.g. `"Bearer abc"`).
    ///
    /// ```
    /// use mcp_blocking::config::AuthProvider;
    /// let auth = AuthProvider::new(|| Ok("Bearer abc".to_string()));
    /// assert_eq!(format!("{auth:?}"), "AuthProvider(<redacted>)");
    /// ```
    pub fn new(f: impl Fn() -> Result<String, String> + Send + Sync + 'static) -> Self {
        AuthProvider(Arc::new(f), None)
    }

    /// A provider whose headers depend on the request; the closure serves where no request is
    /// at hand.
    pub(crate) fn per_request(
        f: impl Fn() -> Result<String, String> + Send + Sync + 'static,
        request: Arc<dyn RequestAuth>,
    ) -> Self {
        AuthProvider(Arc::new(f), Some(request))
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
    /// Follow redirects to another origin (without the configured headers and auth provider);
    /// by default such a redirect fails the request. See
    /// [`ServerConfig::with_follow_cross_origin_redirects`].
    pub follow_cross_origin_redirects: bool,
    /// Whether requests go through a proxy (default: as the environment says).
    pub proxy: ProxyConfig,
}

impl HttpConfig {
    /// Settings for the endpoint at `url`, with no session, extra headers, auth provider or roots,
    /// and no legacy SSE detection.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::{HttpConfig, TransportConfig};
    /// let mut http = HttpConfig::new("https://example.com/mcp");
    /// http.detect_legacy_sse = true;
    /// let s = ServerConfig::new("api", TransportConfig::StreamableHttp(http))?;
    /// assert_eq!(s.transport_type(), "streamable-http");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig {
            url: url.into(),
            session_id: None,
            headers: Vec::new(),
            auth: None,
            detect_legacy_sse: false,
            root_certificates: Vec::new(),
            follow_cross_origin_redirects: false,
            proxy: ProxyConfig::FromEnv,
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
            && self.follow_cross_origin_redirects == other.follow_cross_origin_redirects
            && self.proxy == other.proxy
    }
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &RedactedUrl(&self.url))
            .field("session_id", &self.session_id.as_ref().map(|_| REDACTED))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("auth", &self.auth)
            .field("detect_legacy_sse", &self.detect_legacy_sse)
            .field("root_certificates", &self.root_certificates.len())
            .field(
                "follow_cross_origin_redirects",
                &self.follow_cross_origin_redirects,
            )
            .field("proxy", &self.proxy)
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
    Sse(SseConfig),
    /// WebSocket, subprotocol `mcp`.
    WebSocket(WebSocketConfig),
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
            TransportConfig::Sse(_) => "sse",
            TransportConfig::WebSocket(_) => "websocket",
            TransportConfig::StreamableHttp(_) => "streamable-http",
        }
    }

    /// The url of a network transport.
    pub fn url(&self) -> Option<&str> {
        match self {
            TransportConfig::Stdio(_) => None,
            TransportConfig::Sse(s) => Some(&s.url),
            TransportConfig::WebSocket(w) => Some(&w.url),
            TransportConfig::StreamableHttp(h) => Some(&h.url),
        }
    }

    /// The settings every remote transport shares, `None` for stdio.
    fn remote_mut(&mut self) -> Option<Remote<'_>> {
        let (headers, auth, root_certificates, proxy) = match self {
            TransportConfig::Stdio(_) => return None,
            TransportConfig::Sse(s) => (
                &mut s.headers,
                &mut s.auth,
                &mut s.root_certificates,
                &mut s.proxy,
            ),
            TransportConfig::WebSocket(w) => (
                &mut w.headers,
                &mut w.auth,
                &mut w.root_certificates,
                &mut w.proxy,
            ),
            TransportConfig::StreamableHttp(h) => (
                &mut h.headers,
                &mut h.auth,
                &mut h.root_certificates,
                &mut h.proxy,
            ),
        };
        Some(Remote {
            headers,
            auth,
            root_certificates,
            proxy,
        })
    }

    /// The proxy setting of a remote transport (`None` for stdio).
    fn proxy(&self) -> Option<&ProxyConfig> {
        match self {
            TransportConfig::Stdio(_) => None,
            TransportConfig::Sse(s) => Some(&s.proxy),
            TransportConfig::WebSocket(w) => Some(&w.proxy),
            TransportConfig::StreamableHttp(h) => Some(&h.proxy),
        }
    }

    /// The extra headers of a remote transport (empty for stdio).
    fn headers(&self) -> &[(String, String)] {
        match self {
            TransportConfig::Stdio(_) => &[],
            TransportConfig::Sse(s) => &s.headers,
            TransportConfig::WebSocket(w) => &w.headers,
            TransportConfig::StreamableHttp(h) => &h.headers,
        }
    }
}

/// The settings of a remote transport that every remote transport takes.
struct Remote<'a> {
    headers: &'a mut Vec<(String, String)>,
    auth: &'a mut Option<AuthProvider>,
    root_certificates: &'a mut Vec<Vec<u8>>,
    proxy: &'a mut ProxyConfig,
}

/// A setter used on a server whose transport cannot take it, reported by
/// [`ServerConfig::validate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Misapplied {
    /// The setter, e.g. `args`.
    setter: &'static str,
    /// The transports it applies to, e.g. `stdio servers`.
    applies_to: &'static str,
}

const STDIO_SERVERS: &str = "stdio servers";
const REMOTE_SERVERS: &str = "remote (streamable-http, sse and websocket) servers";
const HTTP_SERVERS: &str = "streamable-http servers";
const HTTP_AND_SSE_SERVERS: &str = "streamable-http and sse servers";

/// A validated description of one MCP server and how to reach it.
///
/// Build one in code with [`ServerConfig::stdio`], [`ServerConfig::http`], [`ServerConfig::sse`] or
/// [`ServerConfig::websocket`] and the chainable setters, from a JSON value with
/// [`ServerConfig::from_value`], or from host config files with [`ConfigLoader`].
///
/// ```
/// use mcp_blocking::ServerConfig;
/// let fs = ServerConfig::stdio("fs", "npx")
///     .with_args(["-y", "@modelcontextprotocol/server-filesystem", "/data"])
///     .with_env("DEBUG", "1")
///     .with_timeout_secs(30.0);
/// fs.validate()?;
/// assert_eq!(fs.transport_type(), "stdio");
/// assert_eq!(fs.timeout().as_secs(), 30);
/// // Debug shows env keys, never values.
/// assert!(format!("{fs:?}").contains("\"DEBUG\": \"<redacted>\""));
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
///
/// # Timeouts
///
/// A server has one timeout: how long each request waits for its answer, and how long
/// connecting takes at most (opening the transport, the protocol probe and the handshake
/// together), [`DEFAULT_TIMEOUT`] (15 s) unless set. A call can override it with
/// [`CallOptions::timeout`](crate::CallOptions::timeout).
///
/// **In code the value is exact.** [`with_timeout_secs(1800.0)`](ServerConfig::with_timeout_secs) is 30
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
/// - in code: a chainable setter cannot fail, so [`with_timeout_secs`](ServerConfig::with_timeout_secs) and
///   [`with_timeout`](ServerConfig::with_timeout) record the bad value, leave
///   [`timeout`](ServerConfig::timeout) as it was, and [`validate`](ServerConfig::validate) (which
///   [`Client::connect`](crate::Client::connect) calls) returns the error. A later valid setting
///   replaces the bad one.
///
/// ```
/// use std::time::Duration;
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::ConfigErrorKind;
/// let code = ServerConfig::stdio("fs", "mcp-fs").with_timeout_secs(1800.0);
/// assert_eq!(code.timeout(), Duration::from_secs(30 * 60));
/// let file = ServerConfig::from_value(&serde_json::json!({
///     "name": "fs", "transport": {"type": "stdio", "command": "mcp-fs"}, "timeout": 5000
/// }))?;
/// assert_eq!(file.timeout(), Duration::from_secs(5));
///
/// let bad = ServerConfig::stdio("fs", "mcp-fs").with_timeout_secs(f64::NAN);
/// let err = bad.validate().unwrap_err();
/// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
/// assert_eq!(err.path, "timeout");
/// assert_eq!(err.to_string(), "server `fs`: timeout: the timeout must be more than 0 s and at \
///     most 86400 s (24 h), found NaN s");
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
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
    /// Setters used that the transport cannot take, in call order; `validate` reports the first.
    misapplied: Vec<Misapplied>,
    /// What this server can make the client hold.
    pub(crate) limits: Limits,
    /// OAuth authorization (Streamable HTTP and legacy SSE), see [`ServerConfig::with_oauth`].
    pub(crate) oauth: Option<oauth::OAuthConfig>,
    /// Which protocol era to speak.
    pub(crate) protocol: ProtocolMode,
    /// What the server may do (tool filter, approvals, sandbox), see [`ServerConfig::with_policy`].
    pub(crate) policy: ServerPolicy,
    /// The sandbox set in code (a stdio server), see [`ServerConfig::with_sandbox`]. Boxed: most
    /// servers have none.
    sandbox: Option<Box<Sandbox>>,
}

impl PartialEq for ServerConfig {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.description == other.description
            && self.transport == other.transport
            && self.timeout == other.timeout
            && self.misapplied == other.misapplied
            && self.invalid_timeout == other.invalid_timeout
            && self.limits == other.limits
            && self.oauth.is_some() == other.oauth.is_some()
            && self.protocol == other.protocol
            && self.policy == other.policy
            && self.sandbox == other.sandbox
    }
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let transport = self
            .secret_values()
            .redact_string(format!("{:?}", self.transport));
        let mut d = f.debug_struct("ServerConfig");
        d.field("name", &self.name)
            .field("description", &self.description)
            .field("transport", &format_args!("{transport}"))
            .field("timeout", &self.timeout);
        if !self.misapplied.is_empty() {
            let setters: Vec<&str> = self.misapplied.iter().map(|m| m.setter).collect();
            d.field("misapplied", &setters);
        }
        if let Some(found) = &self.invalid_timeout {
            d.field("invalid_timeout", found);
        }
        if self.limits != Limits::default() {
            d.field("limits", &self.limits);
        }
        if let Some(oauth) = &self.oauth {
            d.field("oauth", oauth);
        }
        if self.protocol != ProtocolMode::default() {
            d.field("protocol", &self.protocol);
        }
        if let Some(sandbox) = &self.sandbox {
            d.field("sandbox", sandbox);
        }
        if !self.policy.is_unrestricted() {
            d.field("policy", &self.policy);
        }
        d.finish()
    }
}

impl ServerConfig {
    pub(crate) fn with_transport(name: impl Into<String>, transport: TransportConfig) -> Self {
        ServerConfig {
            name: name.into(),
            description: String::new(),
            transport,
            timeout: DEFAULT_TIMEOUT,
            invalid_timeout: None,
            secrets: Vec::new(),
            misapplied: Vec::new(),
            limits: Limits::default(),
            oauth: None,
            protocol: ProtocolMode::default(),
            policy: ServerPolicy::default(),
            sandbox: None,
        }
    }

    /// Records that `setter`, which applies only to `applies_to`, was used on this server.
    fn misapplied(mut self, setter: &'static str, applies_to: &'static str) -> Self {
        let m = Misapplied { setter, applies_to };
        if !self.misapplied.contains(&m) {
            self.misapplied.push(m);
        }
        self
    }

    /// Applies `set` to the stdio settings, or records that `setter` was misapplied.
    fn stdio_setting(mut self, setter: &'static str, set: impl FnOnce(&mut StdioConfig)) -> Self {
        match &mut self.transport {
            TransportConfig::Stdio(s) => {
                set(s);
                self
            }
            _ => self.misapplied(setter, STDIO_SERVERS),
        }
    }

    /// Applies `set` to the remote settings, or records that `setter` was misapplied.
    fn remote_setting(mut self, setter: &'static str, set: impl FnOnce(Remote<'_>)) -> Self {
        match self.transport.remote_mut() {
            Some(r) => {
                set(r);
                self
            }
            None => self.misapplied(setter, REMOTE_SERVERS),
        }
    }

    /// A server started as `command` and spoken to over stdio.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::stdio("fs", "mcp-server-filesystem").with_args(["--root", "/data"]);
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
            }),
        )
    }

    /// A Streamable HTTP server at `url`.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::http("api", "https://example.com/mcp").with_bearer_token("t0ken");
    /// assert_eq!(s.transport_type(), "streamable-http");
    /// assert_eq!(s.url(), Some("https://example.com/mcp"));
    /// assert!(!format!("{s:?}").contains("t0ken"));
    /// ```
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(name, TransportConfig::StreamableHttp(HttpConfig::new(url)))
    }

    /// A legacy HTTP+SSE server whose event stream is at `url`.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// assert_eq!(ServerConfig::sse("old", "http://localhost:8080/sse").transport_type(), "sse");
    /// ```
    pub fn sse(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(name, TransportConfig::Sse(SseConfig::new(url)))
    }

    /// A WebSocket server at `url` (`ws://` or `wss://`).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// assert_eq!(ServerConfig::websocket("w", "ws://localhost:9090").transport_type(), "websocket");
    /// ```
    pub fn websocket(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(name, TransportConfig::WebSocket(WebSocketConfig::new(url)))
    }

    /// A validated server from a name and a transport.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::{TransportConfig, WebSocketConfig};
    /// let ws = TransportConfig::WebSocket(WebSocketConfig::new("http://x"));
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

    /// Sets the arguments of a stdio server.
    ///
    /// On another transport the arguments cannot apply: [`ServerConfig::validate`] (and so
    /// connecting) fails with a [`ConfigErrorKind::NotApplicable`] error, as
    /// [`with_args`](ServerConfig::with_args) does; the same holds for [`with_env`](ServerConfig::with_env),
    /// [`with_cwd`](ServerConfig::with_cwd), and [`with_inherit_env`](ServerConfig::with_inherit_env).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// let err = ServerConfig::http("fs", "https://example.com/mcp").with_args(["--root", "/data"])
    ///     .validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::NotApplicable);
    /// assert_eq!(err.to_string(), "server `fs`: transport.args: `args` applies only to stdio \
    ///     servers; `fs` is a streamable-http server");
    /// ```
    pub fn with_args<I, S>(self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stdio_setting("args", |s| {
            s.args = args.into_iter().map(Into::into).collect();
        })
    }

    /// Adds an environment variable for a stdio server; on another transport, an error at
    /// [`validate`](ServerConfig::validate) (see [`with_args`](ServerConfig::with_args)).
    pub fn with_env(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.stdio_setting("env", |s| {
            s.env.insert(key.into(), value.into());
        })
    }

    /// Sets the working directory of a stdio server; on another transport, an error at
    /// [`validate`](ServerConfig::validate) (see [`with_args`](ServerConfig::with_args)).
    pub fn with_cwd(self, cwd: impl Into<PathBuf>) -> Self {
        self.stdio_setting("cwd", |s| s.cwd = Some(cwd.into()))
    }

    /// Lets a stdio server inherit the whole environment instead of the safe allow-list; on
    /// another transport, an error at [`validate`](ServerConfig::validate) (see
    /// [`with_args`](ServerConfig::with_args)).
    pub fn with_inherit_env(self, inherit: bool) -> Self {
        self.stdio_setting("inherit_env", |s| s.inherit_env = inherit)
    }

    /// Spawns a stdio server confined by `sandbox` (Linux; see [`Sandbox`]), in place of any
    /// sandbox its file asked for; on another transport, an error at
    /// [`validate`](ServerConfig::validate).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        match self.transport {
            TransportConfig::Stdio(_) => {
                self.sandbox = Some(Box::new(sandbox));
                self
            }
            _ => self.misapplied("sandbox", STDIO_SERVERS),
        }
    }

    /// The sandbox a stdio server is spawned in: the one set with
    /// [`with_sandbox`](Self::with_sandbox), else the one its file asked for
    /// ([`ServerPolicy::sandbox`], made a [`Sandbox`] by [`Sandbox::from_settings`]).
    pub fn sandbox(&self) -> Option<Sandbox> {
        match &self.transport {
            TransportConfig::Stdio(_) => self
                .sandbox
                .as_deref()
                .cloned()
                .or_else(|| self.policy.sandbox().map(Sandbox::from_settings)),
            _ => None,
        }
    }

    /// Caps one message from the server at `bytes`, on any transport (see
    /// [`Limits::max_message_bytes`]).
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_message_bytes = bytes;
        self
    }

    /// Sets every cap on what this server can make the client hold (see [`Limits`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The caps on what this server can make the client hold.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Adds a header sent with every request of a remote server: each Streamable HTTP request,
    /// the legacy SSE stream and each of its POSTs, the WebSocket handshake.
    ///
    /// A name or value that is not valid HTTP header syntax fails
    /// [`validate`](ServerConfig::validate) with [`ConfigErrorKind::InvalidValue`] (naming the
    /// header, never showing the value). On a stdio server the header cannot apply: `validate`
    /// fails with [`ConfigErrorKind::NotApplicable`]; the same holds for
    /// [`with_bearer_token`](ServerConfig::with_bearer_token) and
    /// [`with_auth_provider`](ServerConfig::with_auth_provider).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// let ws = ServerConfig::websocket("w", "wss://example.com/mcp").with_header("X-Api-Key", "k-1");
    /// ws.validate()?;
    /// assert!(!format!("{ws:?}").contains("k-1"));
    ///
    /// let err = ServerConfig::sse("old", "https://example.com/sse")
    ///     .with_header("X-Api-Key", "k-1\r\nX-Injected: 1")
    ///     .validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    /// assert!(err.to_string().contains("`X-Api-Key`") && !err.to_string().contains("k-1"));
    ///
    /// let err = ServerConfig::stdio("fs", "mcp-fs").with_header("X-Api-Key", "k-1")
    ///     .validate().unwrap_err();
    /// assert_eq!(err.to_string(), "server `fs`: transport.headers: `header` applies only to \
    ///     remote (streamable-http, sse and websocket) servers; `fs` is a stdio server");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_header(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.remote_setting("header", |r| r.headers.push((key.into(), value.into())))
    }

    /// Sets the `Authorization: Bearer <token>` header of a remote server, replacing any earlier
    /// `Authorization` header; on a stdio server, an error at [`validate`](ServerConfig::validate)
    /// (see [`with_header`](ServerConfig::with_header)).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::sse("old", "https://example.com/sse").with_bearer_token("t0ken");
    /// s.validate()?;
    /// assert!(!format!("{s:?}").contains("t0ken"));
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_bearer_token(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.remote_setting("bearer_token", |r| {
            r.headers
                .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            r.headers.push(("Authorization".to_owned(), value));
        })
    }

    /// Sets a callback for the `Authorization` header of a remote server (see [`AuthProvider`]);
    /// on a stdio server, an error at [`validate`](ServerConfig::validate) (see
    /// [`with_header`](ServerConfig::with_header)).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::AuthProvider;
    /// let s = ServerConfig::websocket("w", "wss://example.com/mcp")
    ///     .with_auth_provider(AuthProvider::new(|| Ok("Bearer fresh".to_string())));
    /// s.validate()?;
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_auth_provider(self, auth: AuthProvider) -> Self {
        self.remote_setting("auth_provider", |r| *r.auth = Some(auth))
    }

    /// Authorizes with OAuth 2.1 (see [`auth`](crate::auth)): a Streamable HTTP or legacy SSE
    /// server that answers 401 (or 403 `insufficient_scope`) is authorized and the request sent
    /// again; every request then carries the access token, refreshed as needed. Replaces an
    /// [`with_auth_provider`](ServerConfig::with_auth_provider). On other transports, an error at
    /// [`validate`](ServerConfig::validate) (the specification keeps stdio and WebSocket
    /// outside OAuth).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::auth::{OAuthConfig, RedirectHandler};
    /// use mcp_blocking::config::ConfigErrorKind;
    /// let oauth = OAuthConfig::authorization_code(RedirectHandler::loopback(|url| eprintln!("{url}")));
    /// ServerConfig::http("api", "https://example.com/mcp").with_oauth(oauth.clone()).validate()?;
    /// let err = ServerConfig::websocket("w", "wss://example.com/mcp").with_oauth(oauth).validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::NotApplicable);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_oauth(mut self, oauth: oauth::OAuthConfig) -> Self {
        // The OAuth access token replaces the auth provider; a client puts it in at work.
        match &mut self.transport {
            TransportConfig::StreamableHttp(h) => h.auth = None,
            TransportConfig::Sse(s) => s.auth = None,
            _ => return self.misapplied("oauth", HTTP_AND_SSE_SERVERS),
        }
        self.oauth = Some(oauth);
        self
    }

    /// Sets the auth provider of a Streamable HTTP or legacy SSE server that has none: how a
    /// client puts its OAuth access token in.
    pub(crate) fn default_auth_provider(&mut self, provider: AuthProvider) {
        match &mut self.transport {
            TransportConfig::StreamableHttp(h) if h.auth.is_none() => h.auth = Some(provider),
            TransportConfig::Sse(s) if s.auth.is_none() => s.auth = Some(provider),
            _ => {}
        }
    }

    /// The OAuth settings, when set with [`with_oauth`](ServerConfig::with_oauth).
    pub fn oauth(&self) -> Option<&oauth::OAuthConfig> {
        self.oauth.as_ref()
    }

    /// Lets a Streamable HTTP or legacy SSE server redirect requests to another origin (scheme,
    /// host and port). By default such a redirect is refused: the request fails with
    /// [`Error::Transport`](crate::Error::Transport) naming the target (without its query),
    /// and the other origin receives nothing. With this set, the redirect is followed, but
    /// without the configured headers, bearer token or auth provider's `Authorization`: those go
    /// only to the configured URL's origin. Redirects within the origin are always followed
    /// (at most 5 per request). On other transports, an error at
    /// [`validate`](ServerConfig::validate).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// ServerConfig::http("api", "https://example.com/mcp")
    ///     .with_follow_cross_origin_redirects(true)
    ///     .validate()?;
    /// let err = ServerConfig::websocket("w", "wss://example.com/mcp")
    ///     .with_follow_cross_origin_redirects(true)
    ///     .validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::NotApplicable);
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_follow_cross_origin_redirects(mut self, follow: bool) -> Self {
        match &mut self.transport {
            TransportConfig::StreamableHttp(h) => h.follow_cross_origin_redirects = follow,
            TransportConfig::Sse(s) => s.follow_cross_origin_redirects = follow,
            _ => return self.misapplied("follow_cross_origin_redirects", HTTP_AND_SSE_SERVERS),
        }
        self
    }

    /// Connects to this remote server through the HTTP proxy at `url`
    /// (`http://[user:password@]host[:port]`, percent-encoded credentials, port 80 by default),
    /// whatever the environment says and whatever the host, loopback included (see
    /// [`ProxyConfig`]). Streamable HTTP, legacy SSE and WebSocket connections all go through an
    /// HTTP `CONNECT` tunnel, so TLS stays end to end; credentials are sent as
    /// `Proxy-Authorization: Basic` and never shown in messages or `Debug`.
    ///
    /// A URL that is not an `http://` proxy fails [`validate`](ServerConfig::validate) with
    /// [`ConfigErrorKind::InvalidValue`]; on a stdio server, with
    /// [`ConfigErrorKind::NotApplicable`].
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// ServerConfig::websocket("w", "wss://example.com/mcp").with_proxy("http://proxy:3128").validate()?;
    /// let err = ServerConfig::http("api", "https://example.com/mcp")
    ///     .with_proxy("socks5://u:s3cret@proxy:1080")
    ///     .validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    /// assert_eq!(err.to_string(), "server `api`: transport.proxy: the proxy \
    ///     `socks5://u:<redacted>@proxy:1080` (from the server's proxy setting) is not usable: \
    ///     `socks5://` proxies are not supported (only `http://`)");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_proxy(self, url: impl Into<String>) -> Self {
        let url = url.into();
        self.remote_setting("proxy", |r| *r.proxy = ProxyConfig::Url(url))
    }

    /// Connects to this remote server directly, ignoring the proxy environment variables (see
    /// [`ProxyConfig::Direct`]); on a stdio server, an error at
    /// [`validate`](ServerConfig::validate).
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::{ProxyConfig, TransportConfig};
    /// let s = ServerConfig::sse("old", "https://intranet.example/sse").with_no_proxy();
    /// let TransportConfig::Sse(sse) = s.transport() else { unreachable!() };
    /// assert_eq!(sse.proxy, ProxyConfig::Direct);
    /// ```
    pub fn with_no_proxy(self) -> Self {
        self.remote_setting("no_proxy", |r| *r.proxy = ProxyConfig::Direct)
    }

    /// Sets the session id to resume on a Streamable HTTP server. Other transports have no
    /// session to resume: [`validate`](ServerConfig::validate) fails with
    /// [`ConfigErrorKind::NotApplicable`].
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// ServerConfig::http("api", "https://example.com/mcp").with_session_id("s-1").validate()?;
    /// let err = ServerConfig::websocket("w", "wss://example.com/mcp").with_session_id("s-1")
    ///     .validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::NotApplicable);
    /// assert_eq!(err.to_string(), "server `w`: transport.session_id: `session_id` applies only \
    ///     to streamable-http servers; `w` is a websocket server");
    /// # Ok::<(), mcp_blocking::config::ConfigError>(())
    /// ```
    pub fn with_session_id(mut self, id: impl Into<String>) -> Self {
        match &mut self.transport {
            TransportConfig::StreamableHttp(h) => {
                h.session_id = Some(id.into());
                self
            }
            _ => self.misapplied("session_id", HTTP_SERVERS),
        }
    }

    /// Trusts the certificates of a PEM bundle (one or more `CERTIFICATE` blocks) as extra roots
    /// for the `https://` requests of Streamable HTTP and legacy SSE servers and for `wss://`
    /// (e.g. a private CA); the webpki (Mozilla) roots stay trusted.
    ///
    /// ```
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// let err = ServerConfig::http("api", "https://10.0.0.5/mcp")
    ///     .with_tls_root_certificates_pem("not a certificate")
    ///     .unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::InvalidValue);
    /// ```
    ///
    /// # Errors
    /// [`ConfigError`] of kind [`ConfigErrorKind::InvalidValue`] when `pem` is not PEM or holds no
    /// certificate, and of kind [`ConfigErrorKind::NotApplicable`] for a stdio server (which has
    /// no TLS).
    pub fn with_tls_root_certificates_pem(
        mut self,
        pem: impl AsRef<[u8]>,
    ) -> Result<Self, ConfigError> {
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
        match self.transport.remote_mut() {
            Some(r) => r.root_certificates.extend(certs),
            None => {
                let m = Misapplied {
                    setter: "tls_root_certificates_pem",
                    applies_to: REMOTE_SERVERS,
                };
                return Err(self.not_applicable(m));
            }
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
    /// let s = ServerConfig::stdio("x", "x").with_timeout_secs(1800.0);
    /// assert_eq!(s.timeout(), Duration::from_secs(30 * 60));
    /// assert!(ServerConfig::stdio("x", "x").with_timeout_secs(-1.0).validate().is_err());
    /// ```
    pub fn with_timeout_secs(mut self, secs: f64) -> Self {
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

    /// Which protocol era to speak: [`ProtocolMode::Auto`] (the default) probes with
    /// `server/discover` and falls back to `initialize`; see [`ProtocolMode`].
    ///
    /// Legacy HTTP+SSE speaks only the legacy era: [`ProtocolMode::Modern`] on an SSE server is
    /// a [`ConfigErrorKind::NotApplicable`] error from [`validate`](Self::validate).
    pub fn with_protocol(mut self, mode: ProtocolMode) -> Self {
        self.protocol = mode;
        self
    }

    /// The protocol mode (see [`with_protocol`](Self::with_protocol)).
    pub fn protocol(&self) -> ProtocolMode {
        self.protocol
    }

    /// Limits what the server may do: which tools are offered and callable, which need the
    /// user's approval, the sandbox it asked for (see [`ServerPolicy`]). A host file's policy
    /// keys set it when the file is loaded.
    ///
    /// ```
    /// use mcp_blocking::config::ServerPolicy;
    /// use mcp_blocking::ServerConfig;
    /// let s = ServerConfig::stdio("gh", "github-mcp").with_policy(ServerPolicy::new().exclude_tools(["delete_*"]));
    /// assert!(!s.policy().allows_tool("delete_repo"));
    /// ```
    pub fn with_policy(mut self, policy: ServerPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// What the server may do (see [`with_policy`](Self::with_policy)).
    pub fn policy(&self) -> &ServerPolicy {
        &self.policy
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
    /// use mcp_blocking::ServerConfig;
    /// use mcp_blocking::config::ConfigErrorKind;
    /// let err = ServerConfig::stdio("fs", "").validate().unwrap_err();
    /// assert_eq!(err.kind, ConfigErrorKind::MissingField);
    /// assert_eq!(err.to_string(), "server `fs`: transport.command: stdio transport needs a `command`");
    /// ```
    ///
    /// # Errors
    /// [`ConfigError`] of kind [`ConfigErrorKind::MissingField`] when the name is empty, a stdio
    /// server has no command or a network server no url; of kind
    /// [`ConfigErrorKind::NotApplicable`] when a setter was used that the transport cannot take
    /// (e.g. [`with_args`](ServerConfig::with_args) on a remote server,
    /// [`with_session_id`](ServerConfig::with_session_id) on a WebSocket); of kind
    /// [`ConfigErrorKind::InvalidUrl`] when a url has the wrong scheme for its transport, does
    /// not parse as a URL, or has no host or an invalid port (`http://[::1` is an error here,
    /// not at connect); and of kind [`ConfigErrorKind::InvalidValue`] when a header name or
    /// value or the session id is not valid HTTP, when the command, an argument, the working
    /// directory or an environment variable holds a NUL byte, when an environment variable name
    /// is empty or holds `=`, or (at `timeout`) when a timeout out of range was set (see
    /// [timeouts](ServerConfig#timeouts)). Config files are checked by the same rules as they
    /// are read.
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
        if let Some(m) = self.misapplied.first() {
            return Err(self.not_applicable(*m));
        }
        match (&self.transport, self.policy.sandbox()) {
            (TransportConfig::Stdio(s), _) => {
                if let Some(sandbox) = self.sandbox() {
                    sandbox
                        .check(s.cwd.as_deref())
                        .map_err(|e| e.for_server(server))?;
                }
            }
            (_, Some(sandbox)) => return fail(sandbox_unavailable(sandbox)),
            (_, None) => {}
        }
        if self.protocol == ProtocolMode::Modern
            && matches!(self.transport, TransportConfig::Sse(_))
        {
            return fail(
                ConfigError::new(
                    ConfigErrorKind::NotApplicable,
                    "legacy HTTP+SSE speaks only the legacy protocol era; `protocol: modern` needs stdio, streamable-http or websocket",
                )
                .at("protocol"),
            );
        }
        for (name, value) in self.transport.headers() {
            remote::header_pair(name, value).map_err(|e| e.for_server(server))?;
        }
        if let Some(ProxyConfig::Url(url)) = self.transport.proxy() {
            if let Err(message) = proxy_url::parse_proxy_url(url, "the server's proxy setting") {
                return fail(
                    ConfigError::new(ConfigErrorKind::InvalidValue, message).at("transport.proxy"),
                );
            }
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
                return check_stdio(s).or_else(|e| fail(under("transport", e)));
            }
            TransportConfig::Sse(s) => ("sse", &s.url),
            TransportConfig::WebSocket(w) => ("websocket", &w.url),
            TransportConfig::StreamableHttp(h) => {
                if let Some(id) = &h.session_id {
                    check_session_id(id).or_else(|e| fail(under("transport", e)))?;
                }
                ("streamable-http", &h.url)
            }
        };
        check_url(kind, url).or_else(|e| fail(e.at("transport.url")))
    }

    /// The error for a setter this server's transport cannot take, located at its key.
    fn not_applicable(&self, m: Misapplied) -> ConfigError {
        let kind = self.transport_type();
        let key = match m.setter {
            "header" | "bearer_token" => "headers",
            "auth_provider" => "auth",
            "tls_root_certificates_pem" => "root_certificates",
            "no_proxy" => "proxy",
            other => other,
        };
        ConfigError::new(
            ConfigErrorKind::NotApplicable,
            format!(
                "`{}` applies only to {}; `{}` is {} {kind} server",
                m.setter,
                m.applies_to,
                self.name,
                if kind == "sse" { "an" } else { "a" },
            ),
        )
        .at(format!("transport.{key}"))
        .for_server(Some(self.name.as_str()).filter(|n| !n.is_empty()))
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
    let found = redact_url(url);
    if !schemes.iter().any(|s| lower.starts_with(s)) {
        let expected = format!("{} or {}", schemes[0], schemes[1]);
        return Err(ConfigError::new(
            ConfigErrorKind::InvalidUrl,
            format!("{kind} url must start with {expected}, found `{found}`"),
        )
        .found_expected(found, expected));
    }
    let invalid = |why: String| {
        Err(ConfigError::new(
            ConfigErrorKind::InvalidUrl,
            format!("{kind} url `{found}` {why}"),
        )
        .found_expected(found.clone(), "a URL with a host"))
    };
    // The transports parse it the same way (`http::Uri`), so what passes here connects.
    let uri = match url.parse::<ureq::http::Uri>() {
        Ok(uri) => uri,
        Err(e) => return invalid(format!("is not a valid URL: {e}")),
    };
    let Some(authority) = uri.authority().map(|a| a.as_str()) else {
        return invalid("has no host".into());
    };
    if uri.host().is_none_or(str::is_empty) {
        return invalid("has no host".into());
    }
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
    let port = match host_port.rsplit_once(']') {
        Some((_, rest)) => rest.strip_prefix(':'),
        None => host_port.rsplit_once(':').map(|(_, p)| p),
    };
    if let Some(port) = port.filter(|p| !p.is_empty()) {
        if port.parse::<u16>().is_err() {
            return invalid(format!("has an invalid port `{port}`"));
        }
    }
    Ok(())
}

/// `e` with its key path put under `prefix` (`args[1]` under `transport` is `transport.args[1]`).
pub(crate) fn under(prefix: &str, e: ConfigError) -> ConfigError {
    let path = match (prefix.is_empty(), e.path.is_empty()) {
        (_, true) => prefix.to_owned(),
        (true, false) => e.path.clone(),
        (false, false) => format!("{prefix}.{}", e.path),
    };
    e.at(path)
}

/// Checks what a stdio server hands the operating system: no NUL byte in the command, an
/// argument, the working directory or the environment. The error's key path is relative to the
/// transport (`args[1]`, `env.KEY`); it never shows a value.
pub(crate) fn check_stdio(s: &StdioConfig) -> Result<(), ConfigError> {
    let nul = |what: &str, at: String| {
        Err(ConfigError::new(
            ConfigErrorKind::InvalidValue,
            format!("{what} contains a NUL byte"),
        )
        .at(at))
    };
    if s.command.contains('\0') {
        return nul("the command", "command".into());
    }
    if let Some(i) = s.args.iter().position(|a| a.contains('\0')) {
        return nul("an argument", format!("args[{i}]"));
    }
    if let Some(cwd) = &s.cwd {
        if cwd.as_os_str().as_encoded_bytes().contains(&0) {
            return nul("the working directory", "cwd".into());
        }
    }
    for (name, value) in &s.env {
        check_env(name, value)?;
    }
    Ok(())
}

/// Checks one environment variable: a name that is not empty and holds no `=` or NUL byte, a
/// value without a NUL byte. The error is at `env.NAME` (`env` for an empty name) and never
/// shows the value.
pub(crate) fn check_env(name: &str, value: &str) -> Result<(), ConfigError> {
    let shown = name.escape_debug().to_string();
    let problem = if name.is_empty() {
        "an environment variable name is empty".to_owned()
    } else if name.contains('=') {
        format!("environment variable name `{shown}` contains `=`")
    } else if name.contains('\0') {
        format!("environment variable name `{shown}` contains a NUL byte")
    } else if value.contains('\0') {
        format!("the value of environment variable `{shown}` contains a NUL byte")
    } else {
        return Ok(());
    };
    let at = if name.is_empty() {
        "env".to_owned()
    } else {
        format!("env.{shown}")
    };
    Err(ConfigError::new(ConfigErrorKind::InvalidValue, problem).at(at))
}

/// Checks that a session id can be sent as the `Mcp-Session-Id` header; the error is at
/// `session_id` and never shows the id.
pub(crate) fn check_session_id(id: &str) -> Result<(), ConfigError> {
    match ureq::http::HeaderValue::from_str(id) {
        Ok(_) => Ok(()),
        Err(_) => Err(ConfigError::new(
            ConfigErrorKind::InvalidValue,
            "the session id is not a valid HTTP header value (line breaks and control characters \
             are not allowed)",
        )
        .at("session_id")),
    }
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

/// The error for a remote server whose file asked for a sandbox: no process of ours runs it, so
/// it is not reached.
fn sandbox_unavailable(sandbox: &SandboxSettings) -> ConfigError {
    let key = if sandbox.source.key.is_empty() {
        "sandbox".to_owned()
    } else {
        sandbox.source.key.clone()
    };
    let mut e = ConfigError::new(
        ConfigErrorKind::Unenforceable,
        format!(
            "`{}` asks for a sandbox, and a remote server runs in no process of this client's \
             to confine: it is not reached unconfined",
            key.rsplit('.').next().unwrap_or(&key)
        ),
    )
    .at(key);
    e.file = sandbox.source.file.clone();
    e
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
