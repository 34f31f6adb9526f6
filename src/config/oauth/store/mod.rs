//! Where tokens and dynamic client registrations live between requests and between processes:
//! the [`TokenStore`] trait, the in-memory default and a JSON file (`file.rs`: mode 0600, or on
//! Windows an ACL for the user alone (`acl.rs`); replaced atomically (`private_file.rs`), read
//! back, size capped).

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sync::lock;
use crate::url::covers;

#[cfg(windows)]
mod acl;
mod file;
pub(crate) mod private_file;
pub use file::FileTokenStore;

/// A secret string (token, code, verifier, client secret): `Debug` and `Display` show
/// `<redacted>`; [`expose`](Secret::expose) gives the value. Serialized as the plain string.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::config::REDACTED)
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::config::REDACTED)
    }
}

/// The longest an access token is taken to live: 365 days. A token answer's `expires_in` is
/// cut to it, so an absurd one (up to `u64::MAX` seconds) means "refresh in a year" rather than
/// an expiry that wraps around into the past, which would refresh the token before every
/// request.
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// When a token issued at `now` (seconds since the Unix epoch) with `expires_in` expires:
/// `expires_in` cut to [`MAX_TOKEN_LIFETIME`], the sum saturating.
pub(crate) fn expiry(now: u64, expires_in: u64) -> u64 {
    now.saturating_add(expires_in.min(MAX_TOKEN_LIFETIME.as_secs()))
}

/// What is kept for one server after an authorization: the tokens, when the access token
/// expires, and what refreshing needs (token endpoint, client identity and its authentication
/// method). Keyed by [`issuer`](Self::issuer), [`resource`](Self::resource) and
/// [`client_id`](Self::client_id). `Debug` hides the tokens and the client secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredTokens {
    /// The authorization server (its issuer identifier).
    pub issuer: String,
    /// The protected resource (the MCP server URL as its metadata names it).
    pub resource: String,
    /// The OAuth client the tokens were issued to.
    pub client_id: String,
    /// The client secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint: `client_secret_basic`,
    /// `client_secret_post` or `none`.
    pub token_endpoint_auth_method: String,
    /// The token endpoint.
    pub token_endpoint: String,
    /// The access token.
    pub access_token: Secret,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires (seconds since the Unix epoch), when known: the token
    /// answer's `expires_in` after the time it came, at most [`MAX_TOKEN_LIFETIME`] ahead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The granted scope (space-separated), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The token type the authorization server issued: `Bearer`, or `DPoP` for a token bound
    /// to [`dpop_key`](Self::dpop_key). `None` in entries saved before it was kept: `Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// The DPoP key (RFC 9449) a `DPoP` token is bound to: its PKCS#8 document, base64url. The
    /// token is useless without it, so it is kept with it, as secret as the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
}

impl StoredTokens {
    /// Whether the access token is DPoP-bound (`token_type` `DPoP`, case-insensitive).
    pub fn is_dpop(&self) -> bool {
        self.token_type
            .as_deref()
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }

    /// Whether this entry has the same key (issuer, resource, client) as `other`.
    pub fn same_key(&self, other: &StoredTokens) -> bool {
        self.issuer == other.issuer
            && self.resource == other.resource
            && self.client_id == other.client_id
    }
}

/// A client registered dynamically (RFC 7591) at one authorization server for one redirect
/// URI, kept so that later authorizations (in this process or another sharing the store) use it
/// instead of registering again. Keyed by [`issuer`](Self::issuer) and
/// [`redirect_uri`](Self::redirect_uri). `Debug` hides the client secret.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredClient {
    /// The authorization server (its issuer identifier).
    pub issuer: String,
    /// The redirect URI the client was registered with.
    pub redirect_uri: String,
    /// The client id the authorization server assigned.
    pub client_id: String,
    /// The client secret it assigned, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint.
    pub token_endpoint_auth_method: String,
}

impl StoredClient {
    /// A registration record.
    pub fn new(
        issuer: impl Into<String>,
        redirect_uri: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: Option<Secret>,
        token_endpoint_auth_method: impl Into<String>,
    ) -> StoredClient {
        StoredClient {
            issuer: issuer.into(),
            redirect_uri: redirect_uri.into(),
            client_id: client_id.into(),
            client_secret,
            token_endpoint_auth_method: token_endpoint_auth_method.into(),
        }
    }

    fn same_key(&self, other: &StoredClient) -> bool {
        self.issuer == other.issuer && self.redirect_uri == other.redirect_uri
    }
}

/// Keeps tokens and dynamic client registrations. Implementations must be safe to call from
/// many threads; the library calls [`save`](Self::save) after every authorization and refresh,
/// and [`save_client`](Self::save_client) after every dynamic registration.
///
/// The client methods have defaults that keep nothing (every process then registers anew);
/// [`MemoryTokenStore`] and [`FileTokenStore`] implement them.
///
/// An `Err` is a message without secrets; it fails the authorization that needed the store
/// (a failing client method is logged and the flow registers anew).
pub trait TokenStore: Send + Sync {
    /// Every entry whose [`resource`](StoredTokens::resource) identifies the server at
    /// `server_url`: an `http(s)://` URL on the same origin (scheme, host and port, the
    /// defaults normalised, the host in any case) whose normalised path is the server's or a
    /// prefix of it ending on a segment boundary, with no userinfo, query or fragment. The
    /// client also applies this rule to what `load` returns, so an entry for another server is
    /// never used.
    fn load(&self, server_url: &str) -> Result<Vec<StoredTokens>, String>;
    /// Adds `tokens`, replacing the entry with the same issuer, resource and client.
    fn save(&self, tokens: &StoredTokens) -> Result<(), String>;
    /// Removes every entry [`load`](Self::load) would give for `server_url`; returns how many.
    fn remove(&self, server_url: &str) -> Result<usize, String>;
    /// Every client registration kept for authorization server `issuer`.
    fn load_clients(&self, issuer: &str) -> Result<Vec<StoredClient>, String> {
        let _ = issuer;
        Ok(Vec::new())
    }
    /// Adds `client`, replacing the one with the same issuer and redirect URI.
    fn save_client(&self, client: &StoredClient) -> Result<(), String> {
        let _ = client;
        Ok(())
    }
    /// Forgets the registration of `issuer` for `redirect_uri` (the authorization server
    /// rejected it); returns how many went.
    fn remove_client(&self, issuer: &str, redirect_uri: &str) -> Result<usize, String> {
        let _ = (issuer, redirect_uri);
        Ok(0)
    }
}

/// Tokens kept in memory only (the default): lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<Vec<StoredTokens>>,
    clients: Mutex<Vec<StoredClient>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> MemoryTokenStore {
        MemoryTokenStore::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, server_url: &str) -> Result<Vec<StoredTokens>, String> {
        Ok(lock(&self.entries)
            .iter()
            .filter(|t| covers(&t.resource, server_url))
            .cloned()
            .collect())
    }

    fn save(&self, tokens: &StoredTokens) -> Result<(), String> {
        let mut entries = lock(&self.entries);
        entries.retain(|t| !t.same_key(tokens));
        entries.push(tokens.clone());
        Ok(())
    }

    fn remove(&self, server_url: &str) -> Result<usize, String> {
        let mut entries = lock(&self.entries);
        let before = entries.len();
        entries.retain(|t| !covers(&t.resource, server_url));
        Ok(before - entries.len())
    }

    fn load_clients(&self, issuer: &str) -> Result<Vec<StoredClient>, String> {
        Ok(lock(&self.clients)
            .iter()
            .filter(|c| c.issuer == issuer)
            .cloned()
            .collect())
    }

    fn save_client(&self, client: &StoredClient) -> Result<(), String> {
        let mut clients = lock(&self.clients);
        clients.retain(|c| !c.same_key(client));
        clients.push(client.clone());
        Ok(())
    }

    fn remove_client(&self, issuer: &str, redirect_uri: &str) -> Result<usize, String> {
        let mut clients = lock(&self.clients);
        let before = clients.len();
        clients.retain(|c| !(c.issuer == issuer && c.redirect_uri == redirect_uri));
        Ok(before - clients.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tokens for `resource` with access token `token` and a client secret, for the stores'
    /// tests.
    pub(super) fn entry(resource: &str, token: &str) -> StoredTokens {
        StoredTokens {
            issuer: "https://as".into(),
            resource: resource.into(),
            client_id: "c".into(),
            client_secret: Some(Secret::new("sec-ret")),
            token_endpoint_auth_method: "none".into(),
            token_endpoint: "https://as/token".into(),
            access_token: Secret::new(token),
            refresh_token: None,
            expires_at: None,
            scope: None,
            token_type: None,
            dpop_key: None,
        }
    }

    #[test]
    fn an_absurd_expiry_is_cut_to_the_longest_lifetime_without_overflow() {
        let year = MAX_TOKEN_LIFETIME.as_secs();
        assert_eq!(expiry(1_000, 3_600), 4_600);
        assert_eq!(expiry(1_000, u64::MAX), 1_000 + year);
        assert_eq!(expiry(1_000, year + 1), 1_000 + year);
        assert_eq!(expiry(u64::MAX - 5, u64::MAX), u64::MAX);
        assert_eq!(expiry(u64::MAX, 0), u64::MAX);
    }

    #[test]
    fn debug_hides_secrets() {
        let shown = format!("{:?}", entry("https://h/mcp", "tok-123"));
        assert!(
            !shown.contains("tok-123") && !shown.contains("sec-ret"),
            "{shown}"
        );
    }
}
