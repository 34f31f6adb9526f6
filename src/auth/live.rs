//! The run-time side of OAuth: for each [`OAuthConfig`] in use (its clones included), the
//! tokens each server's requests carry, the client registrations, the lock that makes one
//! refresh or authorization run at a time, and the network settings of the servers it serves.
//!
//! ```text
//!  OAuthConfig (settings, config) ──id──> State (here): found while anything holds it
//!      └ a Client's connection and its Authorization provider hold an OAuth = settings + State
//! ```
//!
//! A state lives while a client (or a running `login`) holds it; a later one starts from the
//! token store, which keeps every sign-in and registration.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::util::{self, Challenge};
use super::{auth_error, flow, net, sign_in_required, Refused, REFRESH_MARGIN};
use crate::config::oauth::{OAuthConfig, StoredTokens};
use crate::error::Error;
use crate::sync::lock;

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
    pub(crate) servers: HashMap<String, ServerState>,
    /// Client identities by issuer and redirect URI.
    pub(crate) clients: HashMap<(String, String), flow::ClientReg>,
}

#[derive(Default)]
pub(crate) struct ServerState {
    loaded: bool,
    pub(crate) tokens: Option<StoredTokens>,
}

/// The states of the settings in use, by their identity. Entries whose state has gone are
/// dropped at the next lookup.
static LIVE: Mutex<Vec<(u64, Weak<State>)>> = Mutex::new(Vec::new());

impl State {
    /// The state of the settings `id` (and their clones): the one in use, or a new one.
    fn of(id: u64) -> Arc<State> {
        let mut live = lock(&LIVE);
        live.retain(|(_, w)| w.strong_count() > 0);
        if let Some(state) = live
            .iter()
            .find(|(i, _)| *i == id)
            .and_then(|(_, w)| w.upgrade())
        {
            return state;
        }
        let state = Arc::new(State::default());
        live.push((id, Arc::downgrade(&state)));
        state
    }
}

/// OAuth at work: settings and the state they share with their clones.
#[derive(Clone, Debug)]
pub(crate) struct OAuth {
    settings: OAuthConfig,
    pub(crate) state: Arc<State>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("State")
    }
}

/// The settings are read through an `OAuth` as through the config they come from.
impl Deref for OAuth {
    type Target = OAuthConfig;

    fn deref(&self) -> &OAuthConfig {
        &self.settings
    }
}

impl OAuth {
    /// `settings` at work, sharing the state of every clone of them in use.
    pub(crate) fn of(settings: &OAuthConfig) -> OAuth {
        OAuth {
            state: State::of(settings.id),
            settings: settings.clone(),
        }
    }

    /// Forgets the tokens of `server_url` in memory (the store is the caller's).
    pub(crate) fn forget(&self, server_url: &str) {
        let mut inner = lock(&self.state.inner);
        if let Some(st) = inner.servers.get_mut(server_url) {
            st.tokens = None;
        }
        self.bump();
    }

    pub(crate) fn login_at(&self, server: &str, server_url: &str) -> Result<StoredTokens, Error> {
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
            .filter(|t| crate::url::covers(&t.resource, server_url))
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

#[cfg(test)]
mod tests {
    //! Clones of settings share one state while it is held; a new one starts when none is.

    use super::*;
    use crate::config::oauth::RedirectHandler;

    #[test]
    fn clones_of_settings_share_one_state_and_others_do_not() {
        let settings = OAuthConfig::authorization_code(RedirectHandler::none());
        let first = OAuth::of(&settings);
        let clone = OAuth::of(&settings.clone().client_id("changed later"));
        assert!(Arc::ptr_eq(&first.state, &clone.state));
        let other = OAuth::of(&OAuthConfig::authorization_code(RedirectHandler::none()));
        assert!(!Arc::ptr_eq(&first.state, &other.state));
        // A token change one sees, the other sees.
        first.bump();
        assert_eq!(clone.generation(), first.generation());
        assert_ne!(other.generation(), first.generation());
    }

    #[test]
    fn a_state_no_one_holds_is_let_go() {
        let settings = OAuthConfig::authorization_code(RedirectHandler::none());
        let weak = Arc::downgrade(&OAuth::of(&settings).state);
        assert_eq!(
            weak.strong_count(),
            0,
            "nothing keeps the state of unused settings"
        );
        let again = OAuth::of(&settings);
        assert_eq!(again.generation(), 0, "a new state starts from the store");
    }
}
