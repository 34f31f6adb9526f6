//! OAuth 2.1 authorization for remote (Streamable HTTP and legacy SSE) servers, as the MCP
//! specification describes it.
//!
//! Give a server an [`OAuthConfig`] with [`ServerConfig::with_oauth`](crate::ServerConfig::with_oauth).
//! When the server answers any request with HTTP 401, or 403 `insufficient_scope`, the client
//! authorizes and sends the request again (at most 3 authorizations per request), then every
//! request carries `Authorization: Bearer …` (or, for a token bound to the client's key with
//! [`OAuthConfig::dpop`], `Authorization: DPoP …` and a proof of its own):
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
//! # Workload identity and enterprise-managed authorization
//!
//! Two grants present a JWT instead of a person's sign-in (RFC 7523 `jwt-bearer`):
//! [`OAuthConfig::workload_identity`] sends one the workload's platform issued, read from an
//! [`AssertionSource`] for every authorization; [`OAuthConfig::enterprise`] first exchanges the
//! person's ID token at the enterprise identity provider ([`EnterpriseIdp`]) for an ID-JAG
//! naming this server (RFC 8693), then sends that:
//!
//! ```text
//!  discovery ─> [IdP: token-exchange, subject_token = ID token, audience = AS issuer,
//!  │             resource = the server] ─> ID-JAG            (enterprise only)
//!  └──────────> AS token endpoint: grant_type = jwt-bearer, assertion, resource, scope
//! ```
//!
//! An assertion that is missing, empty, larger than [`MAX_ASSERTION_BYTES`] or not a signed
//! JWT fails the authorization before any request. A refusal by the identity provider or the
//! authorization server ends it: it is not retried, and no other grant is tried. Neither
//! grant needs PKCE, so their authorization server's metadata need not list `S256`.
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
mod dpop;
mod flow;
mod grants;
mod jwt;
mod live;
mod loopback;
mod net;
mod tokens;
pub(crate) mod util;

use std::time::Duration;

// The settings are plain data of `config`; the flow and the state it keeps are here.
pub use crate::config::oauth::{
    AssertionSource, AuthError, AuthErrorKind, EnterpriseIdp, FileTokenStore, JwtAlgorithm,
    MemoryTokenStore, OAuthConfig, RedirectHandler, Secret, SigningKey, StoredClient, StoredTokens,
    TokenStore, DEFAULT_LOGIN_TIMEOUT, MAX_ASSERTION_BYTES, MAX_TOKEN_LIFETIME,
};
pub use loopback::LoopbackListener;

pub(crate) use live::OAuth;

use std::sync::Arc;

use crate::config::{AuthProvider, RequestAuth, ServerConfig};
use crate::error::Error;
use util::Challenge;

/// How many authorizations one request may trigger before its 401/403 is returned.
pub const MAX_AUTHORIZATIONS_PER_REQUEST: u32 = 3;

/// An access token this close to its expiry is refreshed before use: 60 seconds.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// What signing in does with the settings: run now ([`login`](Self::login)), or forget
/// ([`logout`](Self::logout)).
impl OAuthConfig {
    /// Forgets the tokens of `server_url`, in memory and in the store; returns how many stored
    /// entries went.
    ///
    /// # Errors
    /// An [`AuthError`] of kind [`AuthErrorKind::Store`] when the store failed.
    pub fn logout(&self, server_url: &str) -> Result<usize, AuthError> {
        OAuth::of(self).forget(server_url);
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
        OAuth::of(self).login_at(server, server_url)
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
        let oauth = OAuth::of(self);
        let Some(url) = server.transport().url().filter(|_| oauth.bind(server)) else {
            return Err(auth_error(
                server.name(),
                401,
                "OAuth applies to Streamable HTTP and legacy SSE servers only".into(),
                None,
            ));
        };
        oauth.login_at(server.name(), url)
    }
}

/// `config` with its OAuth at work: unless an auth provider was set after
/// [`ServerConfig::with_oauth`], requests carry the access token of the settings' state (shared with
/// every client of a clone of them), refreshed before it expires.
pub(crate) fn attach(mut config: ServerConfig) -> ServerConfig {
    let (Some(settings), Some(url)) = (config.oauth(), config.url()) else {
        return config;
    };
    let (oauth, url) = (OAuth::of(settings), url.to_owned());
    let per_request = Arc::new(ServerAuth {
        oauth: oauth.clone(),
        server_url: url.clone(),
    });
    config.default_auth_provider(AuthProvider::per_request(
        move || oauth.header_value(&url),
        per_request,
    ));
    config
}

/// The credentials of each request to one server: its token, and a proof when the token is
/// DPoP-bound.
struct ServerAuth {
    oauth: OAuth,
    server_url: String,
}

impl RequestAuth for ServerAuth {
    fn headers(&self, method: &str, url: &str) -> Result<(String, Option<String>), String> {
        self.oauth.request_headers(&self.server_url, method, url)
    }

    fn nonce(&self, nonce: &str) -> bool {
        self.oauth.keep_nonce(&self.server_url, nonce)
    }
}

/// Whether a `WWW-Authenticate` value holds a `DPoP` challenge with `error="use_dpop_nonce"`.
pub(crate) fn asks_for_dpop_nonce(www_authenticate: &str) -> bool {
    Challenge::parse(Some(www_authenticate)).use_dpop_nonce
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
///
/// A 401 asking for a DPoP nonce does not: the transport has sent the request once more with
/// the nonce already, and a server asking again would not be satisfied by a new token either.
pub(crate) fn wants_authorization(status: u16, www_authenticate: Option<&str>) -> bool {
    let challenge = Challenge::parse(www_authenticate);
    (status == 401 && !challenge.use_dpop_nonce)
        || (status == 403 && challenge.insufficient_scope())
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
    oauth: Option<&(OAuth, String)>,
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
    oauth: &OAuth,
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

#[cfg(test)]
mod tests {
    //! Which `Authorization` a server's requests carry once its OAuth is at work.

    use super::*;
    use crate::config::TransportConfig;

    fn provider_of(config: &ServerConfig) -> Option<Result<String, String>> {
        match config.transport() {
            TransportConfig::StreamableHttp(h) => h.auth.as_ref().map(|a| (a.0)()),
            TransportConfig::Sse(s) => s.auth.as_ref().map(|a| (a.0)()),
            _ => None,
        }
    }

    fn headless() -> OAuthConfig {
        OAuthConfig::authorization_code(RedirectHandler::none())
    }

    #[test]
    fn oauth_replaces_an_earlier_auth_provider_and_a_later_one_replaces_it() {
        let fixed = || AuthProvider::new(|| Ok("Bearer fixed".into()));
        for http in [true, false] {
            let base = if http {
                ServerConfig::http("h", "http://127.0.0.1:9/mcp")
            } else {
                ServerConfig::sse("s", "http://127.0.0.1:9/sse")
            };
            let settings_only = base
                .clone()
                .with_auth_provider(fixed())
                .with_oauth(headless());
            assert!(
                provider_of(&settings_only).is_none(),
                "settings carry no provider"
            );
            // At work, the token of the (empty) state: no header yet.
            assert_eq!(provider_of(&attach(settings_only)), Some(Ok(String::new())));
            let later = base.with_oauth(headless()).with_auth_provider(fixed());
            assert_eq!(provider_of(&attach(later)), Some(Ok("Bearer fixed".into())));
        }
    }

    #[test]
    fn a_nonce_demand_does_not_start_an_authorization() {
        assert!(wants_authorization(
            401,
            Some(r#"DPoP error="invalid_token""#)
        ));
        assert!(wants_authorization(401, None));
        assert!(!wants_authorization(
            401,
            Some(r#"DPoP error="use_dpop_nonce""#)
        ));
        assert!(asks_for_dpop_nonce(r#"DPoP error="use_dpop_nonce""#));
        assert!(!asks_for_dpop_nonce(r#"Bearer error="use_dpop_nonce""#));
    }

    #[test]
    fn a_server_without_oauth_is_left_as_it_is() {
        let plain = ServerConfig::http("h", "http://127.0.0.1:9/mcp");
        assert!(provider_of(&attach(plain)).is_none());
    }
}
