//! What a request does with the OAuth state: the `Authorization` value it carries (refreshed
//! before expiry, or adopted from another process sharing the store), what a 401 or 403
//! `insufficient_scope` starts, and an explicit sign-in; each under the state's one lock.

use super::live::{Inner, OAuth};
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
            return authorization(&t);
        }
        // Another process sharing the store may have refreshed already.
        if let Some(stored) = self.pick(server_url).filter(|s| {
            s.access_token != t.access_token
                && s.expires_at
                    .is_none_or(|at| at > util::now_secs() + REFRESH_MARGIN.as_secs())
        }) {
            let value = authorization(&stored)?;
            if let Some(st) = inner.servers.get_mut(server_url) {
                st.tokens = Some(stored);
            }
            self.bump();
            return Ok(value);
        }
        if t.refresh_token.is_some() {
            match flow::refresh(self, server_url, &t) {
                Ok(new) => {
                    let value = authorization(&new);
                    self.adopt(&mut inner, server_url, new);
                    return value;
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

/// The `Authorization` value for `t`: `Bearer <token>`. A DPoP-bound token is refused: the
/// server would need a proof with each request, which requests to MCP servers do not carry
/// yet, and sending it as a bearer token would only be rejected.
fn authorization(t: &StoredTokens) -> Result<String, String> {
    if t.is_dpop() {
        return Err(
            "the access token is DPoP-bound (token_type DPoP), and requests to MCP \
                    servers do not carry DPoP proofs yet; sign in without OAuthConfig::dpop"
                .into(),
        );
    }
    Ok(format!("Bearer {}", t.access_token.expose()))
}
