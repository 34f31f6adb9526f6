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
//! token store, which keeps every sign-in and registration. What a request does with it
//! (the header it carries, what a 401 starts) is `tokens.rs`; the steps of an authorization
//! are `flow.rs`.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::net;
use crate::config::oauth::{Grant, OAuthConfig, Secret, StoredTokens};
use crate::sync::lock;

/// The run-time side: tokens per server and client registrations per issuer, behind one lock
/// (so one refresh or authorization runs at a time), and a generation counter bumped on every
/// token change (a caller whose 401 came with an older generation just retries).
#[derive(Default)]
pub(crate) struct State {
    pub(crate) inner: Mutex<Inner>,
    generation: AtomicU64,
    /// The network settings of each server URL this config serves (bound at connect).
    net: Mutex<HashMap<String, net::NetSettings>>,
}

#[derive(Default)]
pub(crate) struct Inner {
    pub(crate) servers: HashMap<String, ServerState>,
    /// Client identities by issuer and redirect URI.
    pub(crate) clients: HashMap<(String, String), ClientReg>,
}

/// A client identity at one authorization server.
#[derive(Clone)]
pub(crate) struct ClientReg {
    pub(crate) client_id: String,
    pub(crate) client_secret: Option<Secret>,
    pub(crate) method: String,
    pub(crate) redirect_uri: String,
    /// Registered dynamically (kept in the store, dropped when the server rejects it).
    pub(crate) dynamic: bool,
}

#[derive(Default)]
pub(crate) struct ServerState {
    pub(crate) loaded: bool,
    pub(crate) tokens: Option<StoredTokens>,
    /// The last usable `DPoP-Nonce` the server sent, for the next proofs.
    pub(crate) dpop_nonce: Option<String>,
    /// The key of the DPoP-bound token in use, parsed once.
    pub(crate) dpop_key: Option<Arc<super::dpop::DpopKey>>,
    /// The last [`RECENT_PROOFS`] proofs sent, for hiding them in what a request fails with
    /// (a server may quote the headers it got).
    pub(crate) recent_proofs: std::collections::VecDeque<String>,
}

/// How many of a server's latest DPoP proofs are hidden in errors: enough for the requests
/// that may be under way at once, and a bound on what a long run keeps.
pub(crate) const RECENT_PROOFS: usize = 32;

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

    /// Fails when the store cannot be read: it could not keep a sign-in either, so no one is
    /// sent to sign in.
    pub(crate) fn store_readable(&self, server_url: &str) -> Result<(), String> {
        self.store
            .load(server_url)
            .map(drop)
            .map_err(|e| format!("the token store cannot be used: {e}"))
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

    pub(crate) fn bump(&self) {
        self.state.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The token generation, read before a request is sent.
    pub(crate) fn generation(&self) -> u64 {
        self.state.generation.load(Ordering::SeqCst)
    }

    pub(crate) fn pick(&self, server_url: &str) -> Option<StoredTokens> {
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

    /// Makes `tokens` the ones requests to `server_url` carry.
    pub(crate) fn use_tokens(&self, inner: &mut Inner, server_url: &str, tokens: StoredTokens) {
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
        if let Some(s) = inner.servers.get(server_url) {
            values.extend(s.recent_proofs.iter().cloned());
        }
        values.extend(self.client_secret.iter().map(|c| c.expose().to_owned()));
        // The assertion grants' credentials: a JWT given as a value, the identity provider's
        // client secret, the ID tokens of sign-ins.
        let given = match &self.grant {
            Grant::JwtBearer(source) => Some(source),
            Grant::Enterprise(idp) => {
                values.extend(idp.client_secret.iter().map(|c| c.expose().to_owned()));
                if let Some((t, _)) = lock(&idp.signed_in.id_token).as_ref() {
                    values.push(t.expose().to_owned());
                }
                idp.id_token.as_ref()
            }
            _ => None,
        };
        values.extend(
            given
                .and_then(|s| s.given_value())
                .map(|v| v.expose().to_owned()),
        );
        crate::config::Secrets::new(values)
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

    #[test]
    fn the_registry_keeps_no_entry_for_states_let_go() {
        // Settings made and dropped over a long run (a client per request, say) leave nothing
        // behind: the registry holds the states in use, not every state there ever was.
        const MADE: usize = 1_000;
        for _ in 0..MADE {
            drop(OAuth::of(&OAuthConfig::authorization_code(
                RedirectHandler::none(),
            )));
        }
        let held = OAuth::of(&OAuthConfig::authorization_code(RedirectHandler::none()));
        // Other tests running beside this one may hold a few states of their own.
        let entries = lock(&LIVE).len();
        assert!(entries < MADE / 10, "{entries} entries for one state held");
        drop(held);
    }
}
