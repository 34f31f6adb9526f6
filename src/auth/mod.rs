//! OAuth 2.1 authorization for remote (Streamable HTTP and legacy SSE) servers, as the MCP
//! specification describes it.
//!
//! Give a server an [`OAuthConfig`] with [`ServerConfig::with_oauth`](crate::ServerConfig::with_oauth).
//! When the server answers any request with HTTP 401, or 403 `insufficient_scope`, the client
//! authorizes and sends the request again (at most 3 authorizations per request), then every
//! request carries `Authorization: Bearer …`:
//!
//! ```text
//!  401 ─> protected-resource metadata (RFC 9728): the challenge's resource_metadata (same
//!  │      origin only), then /.well-known/oauth-protected-resource/<path>, then the root;
//!  │      its `resource` must identify the server: same scheme, host and port, and a
//!  │      path that is a prefix of the server's on segment boundaries (normalised)
//!  ├────> authorization-server metadata (RFC 8414, then OpenID discovery), `issuer` exact,
//!  │      PKCE S256 required
//!  ├────> client identity per issuer: configured id, else a client ID metadata document URL,
//!  │      else dynamic registration (RFC 7591)
//!  ├────> authorization request (state, PKCE, resource, scope) ─> RedirectHandler
//!  │      ─> state and iss (RFC 9207) checked ─> token request
//!  └────> tokens saved in the TokenStore; refreshed before expiry and on a 401
//! ```
//!
//! Machine-to-machine clients use the `client_credentials` grant instead
//! ([`OAuthConfig::client_credentials`], [`OAuthConfig::private_key_jwt`]).
//!
//! Tokens, codes, verifiers and secrets never appear in `Debug`, errors or logs.
//!
//! # The requests to the authorization server
//!
//! The metadata, registration, token and refresh requests go the way the server's own
//! connection goes: through its proxy setting ([`ProxyConfig`](crate::config::ProxyConfig),
//! applied to the authorization server's URL, so loopback and `NO_PROXY` hosts are reached
//! directly under `FromEnv`), trusting its extra root certificates (plus
//! [`OAuthConfig::root_certificates`]). Each request, its redirects included, ends within
//! [`OAuthConfig::timeout`]; an answer longer than
//! [`Limits::max_auth_response_bytes`](crate::config::Limits::max_auth_response_bytes)
//! (256 KiB by default) fails the authorization. Redirects are followed only within the origin
//! asked (at most 5; a POST only on 307 and 308), so a code, verifier, refresh token or client
//! secret never reaches another origin; a redirect elsewhere fails the authorization, naming
//! the target without its query. Before connecting, use [`OAuthConfig::login_for`] to get the
//! same settings ([`OAuthConfig::login`] uses the environment's proxy and the default roots
//! for a server not connected yet).
//!
//! The authorization server's metadata, authorization, token and registration endpoints must be
//! `https://`; `http://` is accepted only on loopback hosts (`localhost` and its subdomains,
//! 127.0.0.0/8, `::1`).
//! Any other endpoint fails the authorization with an [`Error::Unauthorized`] whose detail
//! begins `insecure authorization server endpoint` and names the endpoint
//! (`authorization_endpoint`, `token_endpoint`, `registration_endpoint`, `metadata endpoint`)
//! and its URL, before any request is made to it and before the authorization URL reaches the
//! [`RedirectHandler`].
//!
//! The authorization URL is handed to the [`RedirectHandler`] only when nothing in it can drive
//! a terminal or a program it is passed to: an authorization endpoint holding a control
//! character (C0, DEL, C1), a bidirectional-text control or a line separator fails the
//! authorization with an [`Error::Unauthorized`] whose detail names the endpoint and the
//! character (never the URL as it is), as does one with a fragment. URLs an error names show
//! such characters escaped.
//!
//! # Who signs in
//!
//! The authorization-code grant needs a person. The [`RedirectHandler`] reaches one: a loopback
//! listener (see [`LoopbackListener`] for what it does with other local connections, and with
//! a redirect whose `state` is not the request's: ignored), a paste flow, or your function.
//! [`RedirectHandler::none`] reaches no one, for programs that cannot wait: stored tokens are
//! used and refreshed, and a server that needs a new sign-in fails the request at once with
//! [`Error::SignInRequired`], before any request to the authorization server.
//!
//! # Client registrations
//!
//! A client registered dynamically is saved in the [`TokenStore`] as a [`StoredClient`], keyed by
//! issuer and redirect URI, so later authorizations, in this process or in another sharing a
//! [`FileTokenStore`], use it instead of registering again. A loopback handler on a random port
//! first tries the port of a redirect URI registered before, so that its registration applies.
//! When the authorization server answers `invalid_client` (at the token endpoint, or on a
//! redirect carrying the request's `state`), the registration is dropped from memory and the
//! store, and the authorization is run once more with a new one.
//!
//! # Refresh tokens and `offline_access`
//!
//! Registrations ask for the `refresh_token` grant. When the authorization server lists
//! `offline_access` in its metadata's `scopes_supported`, the authorization-code grant adds it
//! to the scope requested (SEP-2207; [`OAuthConfig::refresh_tokens`] turns this off); it is
//! never requested from a server that does not list it.
//!
//! # A server without metadata
//!
//! A server that publishes neither protected resource metadata nor authorization server
//! metadata is refused by default: the 2025-03-26 specification had clients fall back to
//! `/authorize`, `/token` and `/register` at the server's origin, but the current one requires
//! the client to check `code_challenge_methods_supported` for `S256` and to refuse to proceed
//! when it cannot, and without metadata it cannot. [`OAuthConfig::legacy_endpoint_fallback`]
//! turns the fallback on for servers known to need it (PKCE S256 is still sent; whether it is
//! enforced is then up to the server). Metadata without `S256` is always refused.
//!
//! ```no_run
//! use mcp_blocking::{Client, ServerConfig};
//! use mcp_blocking::auth::{FileTokenStore, OAuthConfig, RedirectHandler};
//! let oauth = OAuthConfig::authorization_code(RedirectHandler::loopback(|url| {
//!     eprintln!("Sign in at: {url}");
//! }))
//! .token_store(FileTokenStore::new("/home/me/.config/myapp/tokens.json"));
//! let client = Client::connect(ServerConfig::http("api", "https://example.com/mcp").with_oauth(oauth))?;
//! # Ok::<(), mcp_blocking::Error>(())
//! ```

mod display;
mod error;
mod flow;
mod jwt;
mod loopback;
mod net;
mod redirect;
mod store;
pub(crate) mod util;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use error::{AuthError, AuthErrorKind};
pub use jwt::{JwtAlgorithm, SigningKey};
pub use loopback::LoopbackListener;
pub use redirect::{RedirectHandler, DEFAULT_LOGIN_TIMEOUT};
pub use store::{
    FileTokenStore, MemoryTokenStore, Secret, StoredClient, StoredTokens, TokenStore,
    MAX_TOKEN_LIFETIME,
};

use crate::error::Error;
use crate::sync::lock;
use util::Challenge;

/// How many authorizations one request may trigger before its 401/403 is returned.
pub const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3;

/// An access token this close to its expiry is refreshed before use: 60 seconds.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// Which grant obtains tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    AuthorizationCode,
    ClientCredentials,
}

/// OAuth settings of one remote server, and the tokens it holds at run time.
///
/// Clones share the tokens (and the lock that makes one refresh at a time), so a config cloned
/// into several clients of the same server authorizes once. `Debug` shows no secret.
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
    pub(crate) state: Arc<State>,
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
            .finish_non_exhaustive()
    }
}

/// The run-time side: tokens per server and client registrations per issuer, behind one lock
/// (so one refresh or authorization runs at a time), and a generation counter bumped on every
/// token change (a caller whose 401 came with an older generation just retries).
#[derive(Default)]
pub(crate) struct State {
    inner: Mutex<Inner>,
    generation: AtomicU64,
    /// The network settings of each server URL this config serves (bound at connect).
    net: Mutex<HashMap<String, net::NetSettings>>,
}

#[derive(Default)]
pub(crate) struct Inner {
    servers: HashMap<String, ServerState>,
    /// Client identities by issuer and redirect URI.
    pub(crate) clients: HashMap<(String, String), flow::ClientReg>,
}

#[derive(Default)]
struct ServerState {
    loaded: bool,
    tokens: Option<StoredTokens>,
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
            state: Arc::default(),
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

    /// Forgets the tokens of `server_url`, in memory and in the store; returns how many stored
    /// entries went.
    ///
    /// # Errors
    /// An [`AuthError`] of kind [`AuthErrorKind::Store`] when the store failed.
    pub fn logout(&self, server_url: &str) -> Result<usize, AuthError> {
        let mut inner = lock(&self.state.inner);
        if let Some(st) = inner.servers.get_mut(server_url) {
            st.tokens = None;
        }
        self.bump();
        self.store
            .remove(server_url)
            .map_err(|e| AuthError::new(AuthErrorKind::Store, e))
    }

    /// Authorizes now for the server at `server_url`, without waiting for it to ask: discovery
    /// from the well-known locations, then the configured grant; the tokens are saved.
    ///
    /// The requests use the network settings of the server at `server_url` once a client has
    /// connected to it with this config (or [`login_for`](Self::login_for) has run); before
    /// that, the environment's proxy variables and the default roots. Prefer
    /// [`login_for`](Self::login_for), which takes them from the server's configuration.
    ///
    /// # Errors
    /// [`Error::Unauthorized`] naming `server` when any step fails, and when the token store
    /// cannot keep the sign-in: it cannot be read (checked before anyone is sent to sign in),
    /// the save fails, or the store does not give the tokens back for `server_url` afterwards;
    /// [`Error::SignInRequired`] when the redirect handler is [`RedirectHandler::none`].
    pub fn login(&self, server: &str, server_url: &str) -> Result<StoredTokens, Error> {
        self.login_at(server, server_url)
    }

    /// [`login`](Self::login) for `server`, with its network settings: the requests to the
    /// authorization server go through the server's proxy setting and trust its extra root
    /// certificates, as they do once the server is connected.
    ///
    /// # Errors
    /// [`Error::Unauthorized`] naming the server when any step fails, or when `server` is not
    /// a Streamable HTTP or legacy SSE server; [`Error::SignInRequired`] when the redirect
    /// handler is [`RedirectHandler::none`].
    pub fn login_for(&self, server: &crate::ServerConfig) -> Result<StoredTokens, Error> {
        let Some(url) = server.transport().url().filter(|_| self.bind(server)) else {
            return Err(auth_error(
                server.name(),
                401,
                "OAuth applies to Streamable HTTP and legacy SSE servers only".into(),
                None,
            ));
        };
        self.login_at(server.name(), url)
    }

    fn login_at(&self, server: &str, server_url: &str) -> Result<StoredTokens, Error> {
        if !self.may_sign_in() {
            return Err(sign_in_required(server, server_url));
        }
        let mut inner = lock(&self.state.inner);
        let fail = |d: String| auth_error(server, 401, d, None);
        self.store_readable(server_url).map_err(fail)?;
        let tokens = flow::obtain(self, &mut inner, server_url, &Challenge::default(), None)
            .map_err(fail)?;
        self.keep(&mut inner, server_url, tokens.clone(), true)
            .map_err(fail)?;
        Ok(tokens)
    }

    /// Fails when the store cannot be read: it could not keep a sign-in either, so no one is
    /// sent to sign in.
    fn store_readable(&self, server_url: &str) -> Result<(), String> {
        self.store
            .load(server_url)
            .map(drop)
            .map_err(|e| format!("the token store cannot be used: {e}"))
    }

    /// Saves the tokens of an authorization (a store that fails, fails the authorization: the
    /// sign-in would be lost) and, with `read_back`, checks the store gives them back for
    /// `server_url`; then uses them.
    fn keep(
        &self,
        inner: &mut Inner,
        server_url: &str,
        tokens: StoredTokens,
        read_back: bool,
    ) -> Result<(), String> {
        self.store
            .save(&tokens)
            .map_err(|e| format!("the sign-in could not be saved: {e}"))?;
        if read_back {
            let back = self
                .store
                .load(server_url)
                .map_err(|e| format!("the sign-in could not be read back: {e}"))?;
            if !back
                .iter()
                .any(|t| t.same_key(&tokens) && t.access_token == tokens.access_token)
            {
                let lost = "the token store did not keep the sign-in: it does not give it back";
                return Err(lost.into());
            }
        }
        self.use_tokens(inner, server_url, tokens);
        Ok(())
    }

    /// Records the network settings of `server` (its proxy setting, extra root certificates and
    /// answer cap) for the requests its authorizations make; `false` for a server that is not
    /// Streamable HTTP or legacy SSE.
    pub(crate) fn bind(&self, server: &crate::ServerConfig) -> bool {
        use crate::config::TransportConfig;
        let (url, proxy, roots) = match server.transport() {
            TransportConfig::StreamableHttp(h) => (&h.url, &h.proxy, &h.root_certificates),
            TransportConfig::Sse(s) => (&s.url, &s.proxy, &s.root_certificates),
            _ => return false,
        };
        let settings = net::NetSettings {
            proxy: proxy.clone(),
            roots: roots.clone(),
            max_body: server.limits().max_auth_response_bytes,
        };
        lock(&self.state.net).insert(url.clone(), settings);
        true
    }

    /// The HTTP client for the authorizations of the server at `server_url`.
    pub(crate) fn net(&self, server_url: &str) -> net::Net {
        let settings = lock(&self.state.net)
            .get(server_url)
            .cloned()
            .unwrap_or_default();
        net::Net::new(settings, &self.extra_roots, self.timeout)
    }

    /// Whether an authorization may run: any grant but the authorization code, or a redirect
    /// handler that reaches a person (not [`RedirectHandler::none`]).
    fn may_sign_in(&self) -> bool {
        self.grant != Grant::AuthorizationCode
            || self
                .redirect
                .as_ref()
                .is_some_and(RedirectHandler::reaches_a_person)
    }

    fn bump(&self) {
        self.state.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The token generation, read before a request is sent.
    pub(crate) fn generation(&self) -> u64 {
        self.state.generation.load(Ordering::SeqCst)
    }

    fn pick(&self, server_url: &str) -> Option<StoredTokens> {
        let list = match self.store.load(server_url) {
            Ok(l) => l,
            Err(e) => {
                log::warn!("OAuth token store: {e}");
                return None;
            }
        };
        // A store of someone else's making may answer more than it should: a token goes only
        // to a server its resource identifies.
        list.into_iter()
            .filter(|t| crate::transport::web::url::covers(&t.resource, server_url))
            .filter(|t| self.client_id.as_ref().is_none_or(|id| *id == t.client_id))
            .max_by_key(|t| t.resource.len())
    }

    /// Saves refreshed tokens (a store that fails is logged: the tokens are used anyway, as
    /// failing the request would not keep them either) and uses them.
    fn adopt(&self, inner: &mut Inner, server_url: &str, tokens: StoredTokens) {
        if let Err(e) = self.store.save(&tokens) {
            log::warn!("OAuth token store: {e}");
        }
        self.use_tokens(inner, server_url, tokens);
    }

    /// Makes `tokens` the ones requests to `server_url` carry.
    fn use_tokens(&self, inner: &mut Inner, server_url: &str, tokens: StoredTokens) {
        let st = inner.servers.entry(server_url.to_owned()).or_default();
        st.loaded = true;
        st.tokens = Some(tokens);
        self.bump();
    }

    /// The credentials this configuration holds for `server_url` (the access and refresh
    /// tokens in use, the client secrets), for hiding them in whatever a request to it fails
    /// with.
    pub(crate) fn secrets(&self, server_url: &str) -> crate::config::Secrets {
        let inner = lock(&self.state.inner);
        let mut values: Vec<String> = Vec::new();
        if let Some(t) = inner
            .servers
            .get(server_url)
            .and_then(|s| s.tokens.as_ref())
        {
            values.push(t.access_token.expose().to_owned());
            values.extend(t.refresh_token.iter().map(|r| r.expose().to_owned()));
            values.extend(t.client_secret.iter().map(|c| c.expose().to_owned()));
        }
        values.extend(self.client_secret.iter().map(|c| c.expose().to_owned()));
        crate::config::Secrets::new(values)
    }

    /// The `Authorization` value for the next request to `server_url` (`""`: none yet),
    /// refreshing first when the token is about to expire.
    pub(crate) fn header_value(&self, server_url: &str) -> Result<String, String> {
        let mut inner = lock(&self.state.inner);
        let st = inner.servers.entry(server_url.to_owned()).or_default();
        if !st.loaded {
            st.loaded = true;
            st.tokens = self.pick(server_url);
        }
        let Some(t) = st.tokens.clone() else {
            return Ok(String::new());
        };
        let expiring = t
            .expires_at
            .is_some_and(|at| at <= util::now_secs() + REFRESH_MARGIN.as_secs());
        if !expiring {
            return Ok(format!("Bearer {}", t.access_token.expose()));
        }
        // Another process sharing the store may have refreshed already.
        if let Some(stored) = self.pick(server_url).filter(|s| {
            s.access_token != t.access_token
                && s.expires_at
                    .is_none_or(|at| at > util::now_secs() + REFRESH_MARGIN.as_secs())
        }) {
            let value = format!("Bearer {}", stored.access_token.expose());
            if let Some(st) = inner.servers.get_mut(server_url) {
                st.tokens = Some(stored);
            }
            self.bump();
            return Ok(value);
        }
        if t.refresh_token.is_some() {
            match flow::refresh(self, server_url, &t) {
                Ok(new) => {
                    let value = format!("Bearer {}", new.access_token.expose());
                    self.adopt(&mut inner, server_url, new);
                    return Ok(value);
                }
                Err(e) => log::warn!(
                    "OAuth: refreshing the token of {} failed: {e}",
                    net::shown(server_url)
                ),
            }
        }
        // Expired and not refreshable: send none; the server's 401 starts a new authorization.
        if let Some(st) = inner.servers.get_mut(server_url) {
            st.tokens = None;
        }
        self.bump();
        Ok(String::new())
    }

    /// After a 401 or 403 `insufficient_scope`: adopt a token another thread or process got
    /// meanwhile, else refresh (401 only), else authorize anew (when a sign-in may run).
    pub(crate) fn on_unauthorized(
        &self,
        server_url: &str,
        seen_generation: u64,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<(), Refused> {
        let mut inner = lock(&self.state.inner);
        if self.generation() != seen_generation {
            return Ok(());
        }
        let challenge = Challenge::parse(www_authenticate);
        let current = inner.servers.get(server_url).and_then(|s| s.tokens.clone());
        if status == 401 && !challenge.insufficient_scope() {
            if let Some(stored) = self.pick(server_url) {
                let fresher = current
                    .as_ref()
                    .is_none_or(|c| c.access_token != stored.access_token);
                if fresher {
                    let st = inner.servers.entry(server_url.to_owned()).or_default();
                    st.tokens = Some(stored);
                    self.bump();
                    return Ok(());
                }
            }
            if let Some(t) = current.as_ref().filter(|t| t.refresh_token.is_some()) {
                match flow::refresh(self, server_url, t) {
                    Ok(new) => {
                        self.adopt(&mut inner, server_url, new);
                        return Ok(());
                    }
                    Err(e) => log::warn!(
                        "OAuth: refreshing the token of {} failed: {e}; authorizing again",
                        net::shown(server_url)
                    ),
                }
            }
        }
        // A store that cannot be read may hold this server's sign-in: say so, naming it, rather
        // than asking for a new one.
        self.store_readable(server_url).map_err(Refused::Failed)?;
        if !self.may_sign_in() {
            return Err(Refused::SignInRequired);
        }
        let granted = current.as_ref().and_then(|t| t.scope.clone());
        let tokens = flow::obtain(self, &mut inner, server_url, &challenge, granted)
            .map_err(Refused::Failed)?;
        self.keep(&mut inner, server_url, tokens, false)
            .map_err(Refused::Failed)
    }
}

/// Why a refused request got no new token.
pub(crate) enum Refused {
    /// A person would have to sign in, and the redirect handler is [`RedirectHandler::none`].
    SignInRequired,
    /// A step of the authorization failed; the detail says which.
    Failed(String),
}

/// The error of a sign-in that needs a person where none may be asked.
fn sign_in_required(server: &str, server_url: &str) -> Error {
    Error::SignInRequired {
        server: server.to_owned(),
        detail: format!(
            "{} asks for an OAuth sign-in, and this client asks no one to sign in \
             (RedirectHandler::none); sign in first, then try again",
            net::shown(server_url)
        ),
    }
}

/// Whether a failed request's status and challenge call for authorization.
pub(crate) fn wants_authorization(status: u16, www_authenticate: Option<&str>) -> bool {
    status == 401 || (status == 403 && Challenge::parse(www_authenticate).insufficient_scope())
}

/// The error of a failed authorization.
pub(crate) fn auth_error(
    server: &str,
    status: u16,
    detail: String,
    www_authenticate: Option<String>,
) -> Error {
    // The detail may quote what the authorization server sent (an issuer, an error
    // description): one line, its control characters shown escaped.
    Error::Unauthorized {
        server: server.to_owned(),
        status,
        detail: format!("authorization failed: {}", display::escaped(&detail)),
        www_authenticate,
    }
}

/// The status and challenge of an authentication failure: an [`Error::Unauthorized`], or a
/// connect error of kind `Auth` that carries one.
fn refusal(e: &Error) -> Option<(u16, Option<String>)> {
    match e {
        Error::Unauthorized {
            status,
            www_authenticate,
            ..
        } => Some((*status, www_authenticate.clone())),
        Error::Connect(c) if c.kind() == crate::error::ConnectErrorKind::Auth => {
            Some((c.http_status()?, c.www_authenticate().map(str::to_owned)))
        }
        _ => None,
    }
}

/// Runs `attempt` and, while it fails with a 401 or 403 `insufficient_scope` and `oauth` is
/// set, authorizes and runs it again (at most [`MAX_AUTHORIZATIONS_PER_REQUEST`] times).
pub(crate) fn with_authorization<T>(
    oauth: Option<&(OAuthConfig, String)>,
    server: &str,
    mut attempt: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    let Some((oauth, url)) = oauth else {
        return attempt();
    };
    // A server (or its authorization server) may quote the credentials it was sent back into
    // an error body or message: whatever fails here leaves without them.
    authorizing(oauth, url, server, attempt).map_err(|e| e.redact(&oauth.secrets(url)))
}

/// [`with_authorization`] with an OAuth configuration, before the credentials are hidden.
fn authorizing<T>(
    oauth: &OAuthConfig,
    url: &str,
    server: &str,
    mut attempt: impl FnMut() -> Result<T, Error>,
) -> Result<T, Error> {
    let mut tries = 0;
    loop {
        let seen = oauth.generation();
        let err = match attempt() {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let Some((status, challenge)) = refusal(&err) else {
            return Err(err);
        };
        if tries >= MAX_AUTHORIZATIONS_PER_REQUEST
            || !wants_authorization(status, challenge.as_deref())
        {
            return Err(err);
        }
        tries += 1;
        log::debug!("server `{server}`: HTTP {status}; authorizing (attempt {tries})");
        match oauth.on_unauthorized(url, seen, status, challenge.as_deref()) {
            Ok(()) => {}
            Err(Refused::SignInRequired) => return Err(sign_in_required(server, url)),
            Err(Refused::Failed(d)) => return Err(auth_error(server, status, d, challenge)),
        }
    }
}
