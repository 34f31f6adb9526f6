//! Settings of the legacy HTTP+SSE and WebSocket transports, and what every remote transport
//! shares with Streamable HTTP ([`HttpConfig`](super::HttpConfig)): extra headers, an auth
//! provider, extra root certificates, and their redaction in `Debug`.

use std::fmt;

use ureq::http::{HeaderName, HeaderValue};

use super::{AuthProvider, ConfigError, ConfigErrorKind, RedactedUrl, REDACTED};

/// Whether a remote server is reached through an HTTP proxy.
///
/// The default, [`FromEnv`](ProxyConfig::FromEnv), follows the environment as curl and most
/// tools do; set another with [`ServerConfig::with_proxy`](crate::ServerConfig::with_proxy) or
/// [`ServerConfig::with_no_proxy`](crate::ServerConfig::with_no_proxy). Streamable HTTP, legacy SSE and
/// WebSocket all open an HTTP `CONNECT` tunnel through the proxy, so `https://` and `wss://`
/// stay encrypted end to end. Only `http://` proxies are supported.
///
/// `Debug` hides the proxy URL's password.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::{ProxyConfig, TransportConfig};
/// let s = ServerConfig::http("api", "https://example.com/mcp").with_proxy("http://u:s3cret@proxy:3128");
/// let TransportConfig::StreamableHttp(http) = s.transport() else { unreachable!() };
/// assert_eq!(http.proxy, ProxyConfig::Url("http://u:s3cret@proxy:3128".into()));
/// assert!(!format!("{s:?}").contains("s3cret"));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyConfig {
    /// Use the proxy the environment names for the server's URL:
    ///
    /// - `https://` and `wss://`: `https_proxy`, `HTTPS_PROXY`, then `all_proxy`, `ALL_PROXY`;
    /// - `http://` and `ws://`: `http_proxy`, `HTTP_PROXY` (ignored when `REQUEST_METHOD` is set,
    ///   as under CGI), then `all_proxy`, `ALL_PROXY`;
    ///
    /// the first one set and not blank wins (values are trimmed; `host:port` without a scheme
    /// means `http://host:port`; the port defaults to 80). No proxy is used when the server's
    /// host is loopback (`localhost`, `*.localhost`, 127.0.0.0/8, `::1`) or matches `no_proxy` /
    /// `NO_PROXY`: comma-separated, trimmed, case-insensitive entries where `*` matches every
    /// host, `example.com`, `.example.com` and `*.example.com` all match `example.com` and its
    /// subdomains, an IP address or CIDR network (`10.0.0.0/8`) matches addresses, and a
    /// `:port` suffix restricts an entry to that port. A proxy variable holding anything but an
    /// `http://` proxy makes connecting fail rather than go direct.
    #[default]
    FromEnv,
    /// Always use this proxy, `http://[user:password@]host[:port]` (percent-encoded
    /// credentials are sent as `Proxy-Authorization: Basic`), whatever the environment says
    /// and whatever the host (loopback included).
    Url(String),
    /// Never use a proxy, whatever the environment says.
    Direct,
}

impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProxyConfig::FromEnv => f.write_str("FromEnv"),
            ProxyConfig::Url(url) => f.debug_tuple("Url").field(&RedactedUrl(url)).finish(),
            ProxyConfig::Direct => f.write_str("Direct"),
        }
    }
}

/// Settings of a legacy HTTP+SSE (2024-11-05) server.
///
/// The headers and the auth provider go on the event-stream GET and on every POST.
/// `Debug` shows header names but not their values, and no url query or password.
/// Equality compares whether an auth provider is set, not which.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::{SseConfig, TransportConfig};
/// let mut sse = SseConfig::new("https://example.com/sse?key=s3cret");
/// sse.headers.push(("X-Api-Key".into(), "k-123".into()));
/// let s = ServerConfig::new("old", TransportConfig::Sse(sse))?;
/// let shown = format!("{s:?}");
/// assert!(shown.contains("X-Api-Key") && !shown.contains("k-123") && !shown.contains("s3cret"));
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct SseConfig {
    /// The event-stream URL (`http://` or `https://`).
    pub url: String,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Called before each request for the `Authorization` header.
    pub auth: Option<AuthProvider>,
    /// Extra trusted root certificates (DER) for `https://`, on top of the webpki (Mozilla) roots.
    pub root_certificates: Vec<Vec<u8>>,
    /// Follow redirects to another origin (without the configured headers and auth provider);
    /// by default such a redirect fails the request. See
    /// [`ServerConfig::with_follow_cross_origin_redirects`](crate::ServerConfig::with_follow_cross_origin_redirects).
    pub follow_cross_origin_redirects: bool,
    /// Whether the stream and the POSTs go through a proxy (default: as the environment says).
    pub proxy: ProxyConfig,
}

impl SseConfig {
    /// Settings for the stream at `url`, with no extra headers, auth provider or roots.
    pub fn new(url: impl Into<String>) -> Self {
        SseConfig {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            root_certificates: Vec::new(),
            follow_cross_origin_redirects: false,
            proxy: ProxyConfig::FromEnv,
        }
    }
}

impl PartialEq for SseConfig {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.headers == other.headers
            && self.auth.is_some() == other.auth.is_some()
            && self.root_certificates == other.root_certificates
            && self.follow_cross_origin_redirects == other.follow_cross_origin_redirects
            && self.proxy == other.proxy
    }
}

impl fmt::Debug for SseConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseConfig")
            .field("url", &RedactedUrl(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("auth", &self.auth)
            .field("root_certificates", &self.root_certificates.len())
            .field(
                "follow_cross_origin_redirects",
                &self.follow_cross_origin_redirects,
            )
            .field("proxy", &self.proxy)
            .finish()
    }
}

/// Settings of a WebSocket server (subprotocol `mcp`).
///
/// The headers and the auth provider go on the handshake (upgrade) request.
/// `Debug` shows header names but not their values, and no url query or password.
/// Equality compares whether an auth provider is set, not which.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::config::{TransportConfig, WebSocketConfig};
/// let err = ServerConfig::new("w", TransportConfig::WebSocket(WebSocketConfig::new("http://x")))
///     .unwrap_err();
/// assert_eq!(err.to_string(), "server `w`: transport.url: websocket url must start with ws:// or wss://, found `http://x`");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct WebSocketConfig {
    /// The `ws://` or `wss://` URL.
    pub url: String,
    /// Extra headers sent with the handshake request. A header named like one the handshake
    /// sets (`Sec-WebSocket-Protocol`, `Host`, ...) replaces it.
    pub headers: Vec<(String, String)>,
    /// Called before the handshake for the `Authorization` header.
    pub auth: Option<AuthProvider>,
    /// Extra trusted root certificates (DER) for `wss://`, on top of the webpki (Mozilla) roots.
    pub root_certificates: Vec<Vec<u8>>,
    /// Whether the connection goes through a proxy (default: as the environment says).
    pub proxy: ProxyConfig,
}

impl WebSocketConfig {
    /// Settings for the WebSocket at `url`, with no extra headers, auth provider or roots.
    pub fn new(url: impl Into<String>) -> Self {
        WebSocketConfig {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            root_certificates: Vec::new(),
            proxy: ProxyConfig::FromEnv,
        }
    }
}

impl PartialEq for WebSocketConfig {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.headers == other.headers
            && self.auth.is_some() == other.auth.is_some()
            && self.root_certificates == other.root_certificates
            && self.proxy == other.proxy
    }
}

impl fmt::Debug for WebSocketConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketConfig")
            .field("url", &RedactedUrl(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("auth", &self.auth)
            .field("root_certificates", &self.root_certificates.len())
            .field("proxy", &self.proxy)
            .finish()
    }
}

/// Headers whose `Debug` shows the names and hides the values.
pub(super) struct RedactedHeaders<'a>(pub(super) &'a [(String, String)]);

impl fmt::Debug for RedactedHeaders<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| (k.as_str(), REDACTED)))
            .finish()
    }
}

/// The configured header `name: value` in the form requests take; an error that names the header
/// (never its value) when either is not valid HTTP header syntax.
pub(crate) fn header_pair(
    name: &str,
    value: &str,
) -> Result<(HeaderName, HeaderValue), ConfigError> {
    let invalid = |what: String| {
        ConfigError::new(ConfigErrorKind::InvalidValue, what).at("transport.headers")
    };
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| invalid(format!("{name:?} is not a valid HTTP header name")))?;
    let value = HeaderValue::from_str(value).map_err(|_| {
        invalid(format!(
            "the value of header `{name}` is not a valid HTTP header value (line breaks and \
             control characters are not allowed)"
        ))
    })?;
    Ok((header, value))
}
