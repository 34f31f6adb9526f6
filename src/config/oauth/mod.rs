//! The OAuth 2.1 settings of a remote server ([`OAuthConfig`]), and what they name: the token
//! store and its records, the redirect handler, the `private_key_jwt` key. Running the
//! authorization (discovery, sign-in, refresh) and the tokens a client holds at run time are
//! `auth`'s; this module only says what to do.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | [`OAuthConfig`]: grant, client identity, scopes, store, redirect handler, timeouts |
//! | `redirect.rs` | [`RedirectHandler`]: how the authorization code comes back (callbacks) |
//! | `store/` | [`TokenStore`] and its records, in memory or in a file several processes share |
//! | `key.rs` | [`SigningKey`] for `private_key_jwt` |
//! | `error.rs` | [`AuthError`]: how the functions that need no server fail |

mod assertion;
mod error;
mod key;
mod redirect;
mod store;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) use assertion::is_compact_jws;
pub use assertion::{AssertionSource, EnterpriseIdp, MAX_ASSERTION_BYTES};
pub use error::{AuthError, AuthErrorKind};
pub(crate) use key::Key;
pub use key::{JwtAlgorithm, SigningKey};
pub(crate) use redirect::Kind as RedirectKind;
pub use redirect::{RedirectHandler, DEFAULT_LOGIN_TIMEOUT};
pub(crate) use store::expiry;
pub(crate) use store::private_file;
pub use store::{
    FileTokenStore, MemoryTokenStore, Secret, StoredClient, StoredTokens, TokenStore,
    MAX_TOKEN_LIFETIME,
};

/// The identity of the next settings made (clones keep theirs).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// Which grant obtains tokens.
#[derive(Clone, Debug)]
pub(crate) enum Grant {
    AuthorizationCode,
    ClientCredentials,
    /// RFC 7523 `jwt-bearer` with a workload's own JWT (workload identity federation).
    JwtBearer(AssertionSource),
    /// SEP-990: token exchange at the enterprise IdP for an ID-JAG, then `jwt-bearer`.
    Enterprise(Box<EnterpriseIdp>),
}

impl Grant {
    pub(crate) fn is_authorization_code(&self) -> bool {
        matches!(self, Grant::AuthorizationCode)
    }
}

/// OAuth settings of one remote server: plain data, plus the [`TokenStore`] tokens are kept in
/// and the [`RedirectHandler`] that reaches the person signing in.
///
/// The tokens in use, the client registrations and the lock that makes one refresh at a time
/// are kept by the crate for these settings while a client uses them; clones (and settings
/// made from a clone with more setters) share them, so a config cloned into several clients of
/// the same server authorizes once. `Debug` shows no secret.
///
/// While an authorization runs (a person signing in may take minutes), other requests that need
/// a token from this config wait for it; the [`RedirectHandler`] callback runs meanwhile, so it
/// must not itself make requests through a client using this config.
///
/// ```
/// use mcp_blocking::ServerConfig;
/// use mcp_blocking::auth::{OAuthConfig, RedirectHandler};
/// let oauth = OAuthConfig::authorization_code(RedirectHandler::loopback(|url| println!("{url}")))
///     .client_id("my-app")
///     .scopes(["mcp:read"]);
/// let s = ServerConfig::http("api", "https://example.com/mcp").with_oauth(oauth);
/// s.validate()?;
/// let m2m = OAuthConfig::client_credentials("svc", "s3cret");
/// assert!(!format!("{m2m:?}").contains("s3cret"));
/// # Ok::<(), mcp_blocking::config::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct OAuthConfig {
    pub(crate) grant: Grant,
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) signing_key: Option<SigningKey>,
    pub(crate) client_metadata_url: Option<String>,
    pub(crate) client_name: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) redirect: Option<RedirectHandler>,
    pub(crate) store: Arc<dyn TokenStore>,
    pub(crate) timeout: Duration,
    pub(crate) extra_roots: Vec<Vec<u8>>,
    pub(crate) refresh_tokens: bool,
    pub(crate) endpoint_fallback: bool,
    /// `None`: DPoP when the server requires it; `Some(b)`: as the program said.
    pub(crate) dpop: Option<bool>,
    /// Shared by clones: the run-time side (tokens in use, registrations, the refresh lock)
    /// that `auth` keeps for these settings is found by it.
    pub(crate) id: u64,
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("signing_key", &self.signing_key)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("redirect", &self.redirect)
            .field("timeout", &self.timeout)
            .field("refresh_tokens", &self.refresh_tokens)
            .field("endpoint_fallback", &self.endpoint_fallback)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl OAuthConfig {
    fn base(grant: Grant) -> OAuthConfig {
        OAuthConfig {
            grant,
            client_id: None,
            client_secret: None,
            signing_key: None,
            client_metadata_url: None,
            client_name: "mcp-blocking".into(),
            scopes: Vec::new(),
            redirect: None,
            store: Arc::new(MemoryTokenStore::new()),
            timeout: Duration::from_secs(30),
            extra_roots: Vec::new(),
            refresh_tokens: true,
            endpoint_fallback: false,
            dpop: None,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The authorization-code grant with PKCE: a person signs in through `redirect`.
    pub fn authorization_code(redirect: RedirectHandler) -> OAuthConfig {
        let mut c = Self::base(Grant::AuthorizationCode);
        c.redirect = Some(redirect);
        c
    }

    /// The `client_credentials` grant with a client secret (machine to machine).
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> OAuthConfig {
        let mut c = Self::base(Grant::ClientCredentials);
        c.client_id = Some(client_id.into());
        c.client_secret = Some(Secret::new(client_secret));
        c
    }

    /// The `client_credentials` grant authenticated with a signed JWT (`private_key_jwt`,
    /// RFC 7523): `iss` = `sub` = `client_id`, `aud` = the authorization server's issuer.
    pub fn private_key_jwt(client_id: impl Into<String>, key: SigningKey) -> OAuthConfig {
        let mut c = Self::base(Grant::ClientCredentials);
        c.client_id = Some(client_id.into());
        c.signing_key = Some(key);
        c
    }

    /// Workload identity federation: the RFC 7523 `jwt-bearer` grant with a JWT the workload's
    /// platform issued (a CI job's OIDC token, a Kubernetes projected service account token, a
    /// cloud metadata token), read from `assertion` each time a token is needed; no client
    /// secret and no person involved. Add [`client_id`](Self::client_id) when the authorization
    /// server expects one with the grant (it is then sent as the server's metadata says,
    /// with [`client_secret`](Self::client_secret) or a signing key if set).
    ///
    /// The token request carries `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`,
    /// `assertion`, `resource` and the scope chosen as for the other grants. An assertion that
    /// is missing, empty, larger than [`MAX_ASSERTION_BYTES`] or not a signed JWT fails the
    /// authorization before any request; an authorization server that refuses it
    /// (`invalid_grant`, `invalid_scope`, `unauthorized_client`...) fails it at once, naming
    /// its error: the grant is not retried and no other grant is tried. When a token without
    /// a refresh token expires, the grant is run again with the assertion read afresh.
    ///
    /// ```
    /// use mcp_blocking::auth::{AssertionSource, OAuthConfig};
    /// let oauth = OAuthConfig::workload_identity(AssertionSource::file(
    ///     "/var/run/secrets/tokens/mcp-token",
    /// ))
    /// .client_id("build-agent");
    /// # let _ = oauth;
    /// ```
    pub fn workload_identity(assertion: AssertionSource) -> OAuthConfig {
        Self::base(Grant::JwtBearer(assertion))
    }

    /// Enterprise-managed authorization (SEP-990): the person's ID token from the enterprise
    /// identity provider (given, or from a sign-in there) is exchanged at the provider's token
    /// endpoint for an identity assertion grant (ID-JAG, RFC 8693 token exchange naming this
    /// server's authorization server as `audience` and the server as `resource`), which is then
    /// presented to the server's authorization server as a `jwt-bearer` grant, authenticated
    /// with [`client_id`](Self::client_id) (required) and [`client_secret`](Self::client_secret).
    ///
    /// The ID token of a sign-in is kept while it is valid (its `exp`) and shared by the clones
    /// of these settings: one sign-in serves every MCP server they reach. An answer from the
    /// provider whose `issued_token_type` is not the ID-JAG type is refused; a refusal by either
    /// server fails the authorization at once.
    ///
    /// ```
    /// use mcp_blocking::auth::{EnterpriseIdp, OAuthConfig, RedirectHandler};
    /// let idp = EnterpriseIdp::new("https://idp.example.com", "mcp-client-at-idp")
    ///     .sign_in(RedirectHandler::loopback(|url| eprintln!("Sign in at: {url}")));
    /// let oauth = OAuthConfig::enterprise(idp).client_id("mcp-client").client_secret("s3cret");
    /// # let _ = oauth;
    /// ```
    pub fn enterprise(idp: EnterpriseIdp) -> OAuthConfig {
        Self::base(Grant::Enterprise(Box::new(idp)))
    }

    /// A pre-registered client id (used instead of registering).
    pub fn client_id(mut self, id: impl Into<String>) -> OAuthConfig {
        self.client_id = Some(id.into());
        self
    }

    /// The pre-registered client's secret.
    pub fn client_secret(mut self, secret: impl Into<String>) -> OAuthConfig {
        self.client_secret = Some(Secret::new(secret));
        self
    }

    /// The HTTPS URL of this client's metadata document, used as its client id where the
    /// authorization server supports client ID metadata documents.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> OAuthConfig {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The name sent when registering dynamically (default `mcp-blocking`).
    pub fn client_name(mut self, name: impl Into<String>) -> OAuthConfig {
        self.client_name = name.into();
        self
    }

    /// Scopes to ask for when the server's challenge names none (before the metadata's
    /// `scopes_supported`).
    pub fn scopes<I, S>(mut self, scopes: I) -> OAuthConfig
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How the authorization code comes back (see [`RedirectHandler`]).
    pub fn redirect(mut self, redirect: RedirectHandler) -> OAuthConfig {
        self.redirect = Some(redirect);
        self
    }

    /// How the person signs in at the enterprise identity provider of
    /// [`enterprise`](Self::enterprise) settings, replacing the provider's
    /// [`EnterpriseIdp::sign_in`] (settings read from a config file log the sign-in URL; a
    /// program shows it its own way). A provider with an ID token source never asks anyone to
    /// sign in, and other grants have no provider: for them this changes nothing.
    ///
    /// ```
    /// use mcp_blocking::auth::{EnterpriseIdp, OAuthConfig, RedirectHandler};
    /// let idp = EnterpriseIdp::new("https://idp.example.com", "mcp-client-at-idp");
    /// let oauth = OAuthConfig::enterprise(idp)
    ///     .idp_sign_in(RedirectHandler::loopback(|url| eprintln!("sign in at {url}")));
    /// # let _ = oauth;
    /// ```
    pub fn idp_sign_in(mut self, redirect: RedirectHandler) -> OAuthConfig {
        if let Grant::Enterprise(idp) = &mut self.grant {
            if idp.id_token.is_none() {
                idp.redirect = Some(redirect);
            }
        }
        self
    }

    /// The loopback port the redirect handler listens on: `Some(0)` for a random one, `None`
    /// when the handler is not a loopback listener (or there is none yet, as in a config file's
    /// `oauth` block without `redirect_port`).
    ///
    /// ```
    /// use mcp_blocking::auth::{OAuthConfig, RedirectHandler};
    /// let oauth = OAuthConfig::authorization_code(RedirectHandler::loopback(|_| {}).port(8976));
    /// assert_eq!(oauth.redirect_port(), Some(8976));
    /// ```
    pub fn redirect_port(&self) -> Option<u16> {
        match &self.redirect.as_ref()?.kind {
            redirect::Kind::Loopback { port, .. } => Some(*port),
            _ => None,
        }
    }

    /// Where tokens are kept (default: [`MemoryTokenStore`]).
    pub fn token_store(mut self, store: impl TokenStore + 'static) -> OAuthConfig {
        self.store = Arc::new(store);
        self
    }

    /// The same, shared.
    pub fn token_store_shared(mut self, store: Arc<dyn TokenStore>) -> OAuthConfig {
        self.store = store;
        self
    }

    /// The timeout of each request to the authorization server (default 30 s). The requests of
    /// one discovery (the protected resource's and the authorization server's metadata, at each
    /// well-known address) share it: a server whose every address stalls fails the sign-in once.
    pub fn timeout(mut self, timeout: Duration) -> OAuthConfig {
        self.timeout = timeout;
        self
    }

    /// Extra trusted root certificates (DER) for the authorization server, on top of those the
    /// server's own connection trusts (its `root_certificates`, which the requests to the
    /// authorization server trust too).
    pub fn root_certificates(mut self, roots: Vec<Vec<u8>>) -> OAuthConfig {
        self.extra_roots = roots;
        self
    }

    /// Whether the authorization-code grant wants refresh tokens (default: yes). When it does
    /// and the authorization server lists `offline_access` in its metadata's
    /// `scopes_supported`, `offline_access` is added to the scope requested (OpenID-flavoured
    /// servers issue refresh tokens only for it); it is never requested from a server that
    /// does not list it, nor with the `client_credentials` grant.
    pub fn refresh_tokens(mut self, wanted: bool) -> OAuthConfig {
        self.refresh_tokens = wanted;
        self
    }

    /// The 2025-03-26 fallback for a server that publishes no metadata at all (no protected
    /// resource metadata and no authorization-server metadata at its origin): use `/authorize`,
    /// `/token` and `/register` at the server's origin. Off by default, because without
    /// metadata the client cannot verify that the server supports PKCE with S256, which the
    /// current specification requires before any authorization; see the
    /// [module documentation](crate::auth#a-server-without-metadata).
    pub fn legacy_endpoint_fallback(mut self, allowed: bool) -> OAuthConfig {
        self.endpoint_fallback = allowed;
        self
    }

    /// Sender-constrained tokens (DPoP, RFC 9449): each authorization makes a new P-256 key,
    /// and every token request carries a proof signed with it (`DPoP:` header; a server that
    /// answers `use_dpop_nonce`, or 401 with a `DPoP-Nonce`, is asked once more with its
    /// nonce). A token the authorization server binds to the key (`token_type: DPoP`) is kept
    /// in the [`TokenStore`] with the key, and refreshed with proofs of the same key.
    ///
    /// Unless this is called, DPoP is automatic: on for a server that takes only DPoP-bound
    /// tokens (its 401 challenge names the `DPoP` scheme and not `Bearer`, or its protected
    /// resource metadata says `dpop_bound_access_tokens_required`), off otherwise. `dpop(true)`
    /// sends proofs to every server; `dpop(false)` never does, and a server that takes only
    /// DPoP-bound tokens then fails the authorization with an error saying so.
    ///
    /// Every request to the MCP server with a DPoP-bound token (Streamable HTTP POST, GET and
    /// DELETE; legacy SSE) carries `Authorization: DPoP <token>` and a fresh proof for that
    /// request: its method (`htm`), its URL without query or fragment (`htu`) and the token's
    /// hash (`ath`). A 401 whose `WWW-Authenticate` holds `DPoP error="use_dpop_nonce"` with
    /// a usable `DPoP-Nonce` is sent once more with a proof carrying that nonce; the latest
    /// nonce of each server goes into its later proofs. A server that asks for a nonce again
    /// fails the request with [`Error::Unauthorized`](crate::Error::Unauthorized) (no new
    /// sign-in is started for it). A token the authorization server issues as `Bearer` is
    /// sent as one.
    ///
    /// ```
    /// use mcp_blocking::auth::OAuthConfig;
    /// let oauth = OAuthConfig::client_credentials("svc", "s3cret").dpop(true);
    /// assert!(format!("{oauth:?}").contains("dpop: Some(true)"));
    /// ```
    pub fn dpop(mut self, enabled: bool) -> OAuthConfig {
        self.dpop = Some(enabled);
        self
    }

    /// The token store.
    pub fn store(&self) -> &Arc<dyn TokenStore> {
        &self.store
    }

    /// What the store holds for `server_url`.
    ///
    /// # Errors
    /// An [`AuthError`] of kind [`AuthErrorKind::Store`] when the store failed.
    pub fn stored_tokens(&self, server_url: &str) -> Result<Vec<StoredTokens>, AuthError> {
        self.store
            .load(server_url)
            .map_err(|e| AuthError::new(AuthErrorKind::Store, e))
    }

    /// Whether an authorization may run without a person it cannot reach: the authorization
    /// code needs a redirect handler that reaches one (not [`RedirectHandler::none`]), and so
    /// does enterprise-managed authorization when it signs the person in at the identity
    /// provider (no ID token source is set); the other grants need no one.
    pub(crate) fn may_sign_in(&self) -> bool {
        let reaches =
            |r: Option<&RedirectHandler>| r.is_some_and(RedirectHandler::reaches_a_person);
        match &self.grant {
            Grant::AuthorizationCode => reaches(self.redirect.as_ref()),
            // Without a handler at all the flow fails with what is missing.
            Grant::Enterprise(idp) if idp.id_token.is_none() && idp.redirect.is_some() => {
                reaches(idp.redirect.as_ref())
            }
            _ => true,
        }
    }
}
