//! Settings of the legacy HTTP+SSE and WebSocket transports, and what every remote transport
//! shares with Streamable HTTP ([`HttpConfig`](super::HttpConfig)): extra headers, an auth
//! provider, extra root certificates, and their redaction in `Debug`.

use std::fmt;

use ureq::http::{HeaderName, HeaderValue};

use super::{AuthProvider, ConfigError, ConfigErrorKind, RedactedUrl, REDACTED};

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
    /// [`ServerConfig::follow_cross_origin_redirects`](crate::ServerConfig::follow_cross_origin_redirects).
    pub follow_cross_origin_redirects: bool,
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
}

impl WebSocketConfig {
    /// Settings for the WebSocket at `url`, with no extra headers, auth provider or roots.
    pub fn new(url: impl Into<String>) -> Self {
        WebSocketConfig {
            url: url.into(),
            headers: Vec::new(),
            auth: None,
            root_certificates: Vec::new(),
        }
    }
}

impl PartialEq for WebSocketConfig {
    fn eq(&self, other: &Self) -> bool {
        self.url == other.url
            && self.headers == other.headers
            && self.auth.is_some() == other.auth.is_some()
            && self.root_certificates == other.root_certificates
    }
}

impl fmt::Debug for WebSocketConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebSocketConfig")
            .field("url", &RedactedUrl(&self.url))
            .field("headers", &RedactedHeaders(&self.headers))
            .field("auth", &self.auth)
            .field("root_certificates", &self.root_certificates.len())
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
