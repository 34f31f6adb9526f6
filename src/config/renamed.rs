//! The setters of [`ServerConfig`] under their earlier names, kept so that code written
//! against them still compiles: each forwards to its `with_*` name and is deprecated.
//!
//! The setters are named `with_*` and the getters bare (`timeout()`/`with_timeout`,
//! `protocol()`/`with_protocol`, `oauth()`/`with_oauth`). `oauth` itself has no alias here:
//! it is the getter now.

use std::path::PathBuf;

use super::{AuthProvider, ConfigError, ProtocolMode, ServerConfig};

impl ServerConfig {
    /// Renamed [`with_args`](Self::with_args).
    #[deprecated(since = "0.2.0", note = "renamed to `with_args`")]
    #[doc(hidden)]
    pub fn args<I, S>(self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.with_args(args)
    }

    /// Renamed [`with_env`](Self::with_env).
    #[deprecated(since = "0.2.0", note = "renamed to `with_env`")]
    #[doc(hidden)]
    pub fn env(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.with_env(key, value)
    }

    /// Renamed [`with_cwd`](Self::with_cwd).
    #[deprecated(since = "0.2.0", note = "renamed to `with_cwd`")]
    #[doc(hidden)]
    pub fn cwd(self, cwd: impl Into<PathBuf>) -> Self {
        self.with_cwd(cwd)
    }

    /// Renamed [`with_inherit_env`](Self::with_inherit_env).
    #[deprecated(since = "0.2.0", note = "renamed to `with_inherit_env`")]
    #[doc(hidden)]
    pub fn inherit_env(self, inherit: bool) -> Self {
        self.with_inherit_env(inherit)
    }

    /// Renamed [`with_max_message_bytes`](Self::with_max_message_bytes).
    #[deprecated(since = "0.2.0", note = "renamed to `with_max_message_bytes`")]
    #[doc(hidden)]
    pub fn max_message_bytes(self, bytes: usize) -> Self {
        self.with_max_message_bytes(bytes)
    }

    /// Renamed [`with_header`](Self::with_header).
    #[deprecated(since = "0.2.0", note = "renamed to `with_header`")]
    #[doc(hidden)]
    pub fn header(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.with_header(key, value)
    }

    /// Renamed [`with_bearer_token`](Self::with_bearer_token).
    #[deprecated(since = "0.2.0", note = "renamed to `with_bearer_token`")]
    #[doc(hidden)]
    pub fn bearer_token(self, token: impl AsRef<str>) -> Self {
        self.with_bearer_token(token)
    }

    /// Renamed [`with_auth_provider`](Self::with_auth_provider).
    #[deprecated(since = "0.2.0", note = "renamed to `with_auth_provider`")]
    #[doc(hidden)]
    pub fn auth_provider(self, auth: AuthProvider) -> Self {
        self.with_auth_provider(auth)
    }

    /// Renamed [`with_follow_cross_origin_redirects`](Self::with_follow_cross_origin_redirects).
    #[deprecated(
        since = "0.2.0",
        note = "renamed to `with_follow_cross_origin_redirects`"
    )]
    #[doc(hidden)]
    pub fn follow_cross_origin_redirects(self, follow: bool) -> Self {
        self.with_follow_cross_origin_redirects(follow)
    }

    /// Renamed [`with_proxy`](Self::with_proxy).
    #[deprecated(since = "0.2.0", note = "renamed to `with_proxy`")]
    #[doc(hidden)]
    pub fn proxy(self, url: impl Into<String>) -> Self {
        self.with_proxy(url)
    }

    /// Renamed [`with_no_proxy`](Self::with_no_proxy).
    #[deprecated(since = "0.2.0", note = "renamed to `with_no_proxy`")]
    #[doc(hidden)]
    pub fn no_proxy(self) -> Self {
        self.with_no_proxy()
    }

    /// Renamed [`with_session_id`](Self::with_session_id).
    #[deprecated(since = "0.2.0", note = "renamed to `with_session_id`")]
    #[doc(hidden)]
    pub fn session_id(self, id: impl Into<String>) -> Self {
        self.with_session_id(id)
    }

    /// Renamed [`with_tls_root_certificates_pem`](Self::with_tls_root_certificates_pem).
    #[deprecated(since = "0.2.0", note = "renamed to `with_tls_root_certificates_pem`")]
    #[doc(hidden)]
    pub fn tls_root_certificates_pem(self, pem: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        self.with_tls_root_certificates_pem(pem)
    }

    /// Renamed [`with_timeout_secs`](Self::with_timeout_secs).
    #[deprecated(since = "0.2.0", note = "renamed to `with_timeout_secs`")]
    #[doc(hidden)]
    pub fn timeout_secs(self, secs: f64) -> Self {
        self.with_timeout_secs(secs)
    }

    /// Renamed [`with_protocol`](Self::with_protocol).
    #[deprecated(since = "0.2.0", note = "renamed to `with_protocol`")]
    #[doc(hidden)]
    pub fn protocol_mode(self, mode: ProtocolMode) -> Self {
        self.with_protocol(mode)
    }

    /// Renamed [`oauth`](Self::oauth).
    #[deprecated(since = "0.2.0", note = "renamed to `oauth`")]
    #[doc(hidden)]
    pub fn oauth_config(&self) -> Option<&super::oauth::OAuthConfig> {
        self.oauth()
    }
}

#[cfg(test)]
#[allow(deprecated, reason = "these tests call the earlier names on purpose")]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_earlier_stdio_setters_set_what_the_new_ones_do() {
        let old = ServerConfig::stdio("fs", "mcp-fs")
            .args(["--root", "/data"])
            .env("DEBUG", "1")
            .cwd("/tmp")
            .inherit_env(true)
            .max_message_bytes(4096)
            .timeout_secs(2.5)
            .protocol_mode(ProtocolMode::Legacy);
        let new = ServerConfig::stdio("fs", "mcp-fs")
            .with_args(["--root", "/data"])
            .with_env("DEBUG", "1")
            .with_cwd("/tmp")
            .with_inherit_env(true)
            .with_max_message_bytes(4096)
            .with_timeout_secs(2.5)
            .with_protocol(ProtocolMode::Legacy);
        assert_eq!(old, new);
        assert_eq!(old.timeout(), Duration::from_millis(2500));
        assert_eq!(old.protocol(), ProtocolMode::Legacy);
    }

    #[test]
    fn the_earlier_remote_setters_set_what_the_new_ones_do() {
        let old = ServerConfig::http("api", "https://example.com/mcp")
            .header("X-Api-Key", "k-1")
            .bearer_token("t0ken")
            .follow_cross_origin_redirects(true)
            .proxy("http://proxy:3128")
            .session_id("s-1");
        let new = ServerConfig::http("api", "https://example.com/mcp")
            .with_header("X-Api-Key", "k-1")
            .with_bearer_token("t0ken")
            .with_follow_cross_origin_redirects(true)
            .with_proxy("http://proxy:3128")
            .with_session_id("s-1");
        assert_eq!(old, new);
        assert_eq!(
            ServerConfig::sse("old", "https://example.com/sse").no_proxy(),
            ServerConfig::sse("old", "https://example.com/sse").with_no_proxy()
        );
        assert!(old.oauth_config().is_none());
    }

    #[test]
    fn the_earlier_certificate_setter_checks_as_the_new_one_does() {
        let old = ServerConfig::http("api", "https://example.com/mcp")
            .tls_root_certificates_pem("not a certificate")
            .unwrap_err();
        let new = ServerConfig::http("api", "https://example.com/mcp")
            .with_tls_root_certificates_pem("not a certificate")
            .unwrap_err();
        assert_eq!(old, new);
    }

    #[test]
    fn the_earlier_auth_provider_setter_replaces_as_the_new_one_does() {
        let provider = AuthProvider::new(|| Ok("Bearer fresh".to_string()));
        let old = ServerConfig::websocket("w", "wss://example.com/mcp")
            .auth_provider(provider.clone())
            .validate();
        let new = ServerConfig::websocket("w", "wss://example.com/mcp")
            .with_auth_provider(provider)
            .validate();
        assert_eq!(old, new);
        assert!(old.is_ok());
    }
}
