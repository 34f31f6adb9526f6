//! What a request does with the OAuth state: the `Authorization` value it carries (refreshed
//! before expiry, or adopted from another process sharing the store), what a 401 or 403
//! `insufficient_scope` starts, and an explicit sign-in; each under the state's one lock.

use super::dpop::{self, DpopKey};
use super::live::{Inner, OAuth, RECENT_PROOFS};
use super::util::{self, Challenge};
use super::{auth_error, flow, net, sign_in_required, Refused, REFRESH_MARGIN};
use crate::config::oauth::StoredTokens;
use crate::error::Error;
use crate::sync::lock;

impl OAuth {
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

    /// Saves refreshed tokens (a store that fails is logged: the tokens are used anyway, as
    /// failing the request would not keep them either) and uses them.
    fn adopt(&self, inner: &mut Inner, server_url: &str, tokens: StoredTokens) {
        if let Err(e) = self.store.save(&tokens) {
            log::warn!("OAuth token store: {e}");
        }
        self.use_tokens(inner, server_url, tokens);
    }

    /// The `Authorization` value for the next request to `server_url` (`""`: none yet),
    /// refreshing first when the token is about to expire. A DPoP-bound token fails: it goes
    /// only with a proof, which [`request_headers`](Self::request_headers) signs.
    pub(crate) fn header_value(&self, server_url: &str) -> Result<String, String> {
        let mut inner = lock(&self.state.inner);
        match self.current(&mut inner, server_url) {
            None => Ok(String::new()),
            Some(t) if t.is_dpop() => Err("the access token is DPoP-bound: it is sent only \
                                           with a proof for each request"
                .into()),
            Some(t) => Ok(format!("Bearer {}", t.access_token.expose())),
        }
    }

    /// The `Authorization` value (`""`: none yet) and, for a DPoP-bound token, the `DPoP`
    /// proof of a `method` request to `url` on the server at `server_url` (with the last
    /// nonce the server sent); refreshing first when the token is about to expire.
    pub(crate) fn request_headers(
        &self,
        server_url: &str,
        method: &str,
        url: &str,
    ) -> Result<(String, Option<String>), String> {
        let mut inner = lock(&self.state.inner);
        let Some(t) = self.current(&mut inner, server_url) else {
            return Ok((String::new(), None));
        };
        let token = t.access_token.expose();
        if !t.is_dpop() {
            return Ok((format!("Bearer {token}"), None));
        }
        let st = inner.servers.entry(server_url.to_owned()).or_default();
        let Some(stored) = t.dpop_key.as_ref() else {
            return Err(
                "the access token is DPoP-bound (token_type DPoP), and the token \
                        store kept no key for it; sign in again"
                    .into(),
            );
        };
        let key = match st.dpop_key.as_ref().filter(|k| k.stored() == stored) {
            Some(k) => k.clone(),
            None => {
                let k = std::sync::Arc::new(DpopKey::from_stored(stored)?);
                st.dpop_key = Some(k.clone());
                k
            }
        };
        let proof = key.proof(method, url, Some(token), st.dpop_nonce.as_deref())?;
        if st.recent_proofs.len() == RECENT_PROOFS {
            st.recent_proofs.pop_front();
        }
        st.recent_proofs.push_back(proof.clone());
        Ok((format!("DPoP {token}"), Some(proof)))
    }

    /// Keeps `nonce`, sent by the server at `server_url`, for the next proofs; `false` when it
    /// is not usable (empty, too long, or holding characters a nonce may not).
    pub(crate) fn keep_nonce(&self, server_url: &str, nonce: &str) -> bool {
        let Some(nonce) = dpop::usable_nonce(nonce) else {
            return false;
        };
        let mut inner = lock(&self.state.inner);
        let st = inner.servers.entry(server_url.to_owned()).or_default();
        st.dpop_nonce = Some(nonce.to_owned());
        true
    }

    /// The tokens the next request to `server_url` carries (`None`: none yet), refreshed
    /// first when about to expire, or adopted from the store when another process sharing it
    /// refreshed them.
    fn current(&self, inner: &mut Inner, server_url: &str) -> Option<StoredTokens> {
        let st = inner.servers.entry(server_url.to_owned()).or_default();
        if !st.loaded {
            st.loaded = true;
            st.tokens = self.pick(server_url);
        }
        let t = st.tokens.clone()?;
        // A refreshable token is refreshed a margin ahead of its expiry; one that cannot be is
        // used until it expires (a token issued for less than the margin is still good: dropping
        // it at once would authorize again on every request).
        let margin = if t.refresh_token.is_some() {
            REFRESH_MARGIN.as_secs()
        } else {
            0
        };
        let expiring = t
            .expires_at
            .is_some_and(|at| at <= util::now_secs() + margin);
        if !expiring {
            return Some(t);
        }
        // Another process sharing the store may have refreshed already.
        if let Some(stored) = self.pick(server_url).filter(|s| {
            s.access_token != t.access_token
                && s.expires_at.is_none_or(|at| at > util::now_secs() + margin)
        }) {
            if let Some(st) = inner.servers.get_mut(server_url) {
                st.tokens = Some(stored.clone());
            }
            self.bump();
            return Some(stored);
        }
        if t.refresh_token.is_some() {
            match flow::refresh(self, server_url, &t) {
                Ok(new) => {
                    self.adopt(inner, server_url, new.clone());
                    return Some(new);
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
        None
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
