//! The steps of an authorization: discovery, client identity, the authorization-code request
//! and the token requests (code, refresh, client credentials).

use std::time::Instant;

use serde_json::{json, Map, Value};

use super::display::require_showable;
use super::dpop::{self, DpopKey};
use super::live::{ClientReg, Inner, OAuth};
use super::net::{Net, NetError, Reply};
use super::util::{
    b64, encode, form, now_secs, param, query_params, random_token, require_secure, s256, Challenge,
};
use crate::config::oauth::{
    expiry, Grant, RedirectKind as Kind, Secret, StoredClient, StoredTokens,
};
use crate::config::Secrets;
use crate::url::{covers, resource_of, same_origin, split};

/// How one authorization attempt failed.
pub(super) enum Failure {
    /// The authorization server answered `invalid_client` for this client.
    InvalidClient(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(s: String) -> Failure {
        Failure::Other(s)
    }
}

impl From<&str> for Failure {
    fn from(s: &str) -> Failure {
        Failure::Other(s.to_owned())
    }
}

impl From<Failure> for String {
    fn from(f: Failure) -> String {
        match f {
            Failure::InvalidClient(s) | Failure::Other(s) => s,
        }
    }
}

/// What discovery found.
pub(super) struct Discovered {
    /// The RFC 8707 resource (the metadata's `resource`, else the server URL); empty for an
    /// authorization that names none (a sign-in at an enterprise identity provider).
    pub(super) resource: String,
    /// The issuer the metadata was looked up for.
    pub(super) issuer: String,
    /// The authorization server metadata (empty when none was found, in the legacy fallback).
    pub(super) meta: Map<String, Value>,
    /// The metadata's `scopes_supported`.
    pub(super) prm_scopes: Vec<String>,
    /// The DPoP key of this authorization, when DPoP is on.
    pub(super) dpop: Option<DpopKey>,
    /// The protected resource metadata says `dpop_bound_access_tokens_required` (RFC 9728).
    pub(super) dpop_required: bool,
}

impl Discovered {
    pub(super) fn endpoint(&self, name: &str, fallback: &str) -> String {
        match self.meta.get(name).and_then(Value::as_str) {
            Some(u) => u.to_owned(),
            None => {
                let base = split(&self.issuer).map(|(base, _)| base);
                format!("{}{fallback}", base.unwrap_or_default())
            }
        }
    }

    /// The issuer as the metadata states it (what `iss` and `aud` must be).
    pub(super) fn meta_issuer(&self) -> &str {
        self.meta
            .get("issuer")
            .and_then(Value::as_str)
            .unwrap_or(&self.issuer)
    }

    fn strings(&self, key: &str) -> Vec<String> {
        strings(self.meta.get(key))
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn discover(
    cfg: &OAuth,
    net: &Net,
    server_url: &str,
    challenge: &Challenge,
) -> Result<Discovered, String> {
    let (server_origin, path) =
        split(server_url).ok_or_else(|| "the server URL is not usable".to_owned())?;
    let mut candidates = Vec::new();
    if let Some(rm) = &challenge.resource_metadata {
        if same_origin(rm, server_url) {
            candidates.push(rm.clone());
        } else {
            log::warn!(
                "ignoring a resource_metadata URL on another origin ({}) than the server's",
                crate::config::echo(&super::net::shown(rm), 200)
            );
        }
    }
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{server_origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!(
        "{server_origin}/.well-known/oauth-protected-resource"
    ));
    // Discovery is one step of the sign-in: its requests share one timeout, so a server whose
    // every well-known address stalls fails it once, not once per address.
    let until = crate::deadline::after(net.timeout());
    let out_of_time = |what: &str, e: &str| {
        format!(
            "{what} did not come within {:.1} s ({e})",
            net.timeout().as_secs_f64()
        )
    };
    let mut prm = None;
    for c in &candidates {
        match net.get_by(c, until) {
            Ok(r) if r.status == 200 => {
                if let Some(m) = r.json() {
                    if !strings(m.get("authorization_servers")).is_empty() {
                        prm = Some(m);
                        break;
                    }
                }
            }
            Ok(_) => {}
            Err(NetError::Refused(e)) => return Err(e),
            Err(NetError::Failed(e)) if Instant::now() >= until => {
                return Err(out_of_time("the protected resource metadata", &e))
            }
            Err(NetError::Failed(e)) => log::debug!("protected resource metadata: {e}"),
        }
    }
    let dpop_required = prm
        .as_ref()
        .and_then(|m| m.get("dpop_bound_access_tokens_required"))
        .and_then(Value::as_bool)
        == Some(true);
    let (resource, issuer, strict, prm_scopes) = match prm {
        Some(m) => {
            let resource = m
                .get("resource")
                .and_then(Value::as_str)
                .ok_or("the protected resource metadata has no `resource`")?
                .to_owned();
            // A token is sent wherever its resource covers the URL: a resource broader than
            // this server (another path, another origin, a bare `http://`) would take the
            // token to servers it was never meant for.
            if !covers(&resource, server_url) {
                return Err(format!(
                    "the protected resource metadata is for `{}`, which does not identify this \
                     server (same scheme, host and port, and a path that is a prefix of the \
                     server's); refusing to authorize",
                    crate::config::echo(&resource, 200)
                ));
            }
            let issuer = strings(m.get("authorization_servers")).remove(0);
            (resource, issuer, true, strings(m.get("scopes_supported")))
        }
        None => (
            resource_of(server_url).ok_or("the server URL is not usable")?,
            server_origin.clone(),
            false,
            Vec::new(),
        ),
    };
    let (iss_origin, iss_path) = split(&issuer)
        .ok_or_else(|| "the authorization server's issuer is not a URL".to_owned())?;
    let p = iss_path.trim_end_matches('/');
    let meta_candidates = if p.is_empty() {
        vec![
            format!("{iss_origin}/.well-known/oauth-authorization-server"),
            format!("{iss_origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{iss_origin}/.well-known/oauth-authorization-server{p}"),
            format!("{iss_origin}/.well-known/openid-configuration{p}"),
            format!("{iss_origin}{p}/.well-known/openid-configuration"),
        ]
    };
    require_secure(&meta_candidates[0], "metadata endpoint")?;
    let mut meta = None;
    for c in &meta_candidates {
        match net.get_by(c, until) {
            Ok(r) if r.status == 200 => {
                if let Some(m) = r.json() {
                    meta = Some(m);
                    break;
                }
            }
            Ok(_) => {}
            Err(NetError::Refused(e)) => return Err(e),
            Err(NetError::Failed(e)) if Instant::now() >= until => {
                return Err(out_of_time("the authorization server metadata", &e))
            }
            Err(NetError::Failed(e)) => log::debug!("authorization server metadata: {e}"),
        }
    }
    let meta = match meta {
        Some(m) => {
            let stated = m.get("issuer").and_then(Value::as_str).unwrap_or("");
            if strict && stated != issuer {
                return Err(format!(
                    "the authorization server metadata states issuer `{}`, not `{}`",
                    crate::config::echo(stated, 200),
                    issuer
                ));
            }
            // Only the authorization code grant uses PKCE: client credentials and the
            // assertion grants have no code to protect.
            if cfg.grant.is_authorization_code()
                && !strings(m.get("code_challenge_methods_supported"))
                    .iter()
                    .any(|s| s == "S256")
            {
                return Err("the authorization server does not support PKCE with S256 \
                     (code_challenge_methods_supported); refusing to use it"
                    .into());
            }
            m
        }
        None if strict => {
            return Err(format!(
                "no authorization server metadata found for `{issuer}`"
            ))
        }
        None if !cfg.endpoint_fallback => {
            return Err(format!(
                "the server publishes no OAuth metadata (neither protected resource metadata \
                 nor authorization server metadata at `{issuer}`), so its support of PKCE with \
                 S256 cannot be verified; refusing to authorize (OAuthConfig::\
                 legacy_endpoint_fallback allows the 2025-03-26 default endpoints)"
            ))
        }
        None => {
            log::warn!(
                "no OAuth metadata at `{issuer}`: using its default endpoints (/authorize, \
                 /token, /register) without knowing whether it supports PKCE with S256"
            );
            Map::new()
        }
    };
    Ok(Discovered {
        resource,
        issuer,
        meta,
        prm_scopes,
        dpop: None,
        dpop_required,
    })
}

/// Runs discovery and the configured grant.
pub(super) fn obtain(
    cfg: &OAuth,
    inner: &mut Inner,
    server_url: &str,
    challenge: &Challenge,
    granted: Option<String>,
) -> Result<StoredTokens, String> {
    // An assertion that cannot be used fails the authorization before any request.
    let given = super::grants::read_ahead(cfg)?;
    let net = cfg.net(server_url);
    let mut disc = discover(cfg, &net, server_url, challenge)?;
    // DPoP when the program asked for it, or (unless it said no) when the server takes only
    // DPoP-bound tokens: its challenge names only the DPoP scheme, or its protected resource
    // metadata says `dpop_bound_access_tokens_required`.
    let required = challenge.dpop_only || disc.dpop_required;
    match cfg.dpop {
        Some(true) => disc.dpop = Some(DpopKey::generate()?),
        None if required => {
            if !dpop::supported_by(&disc.meta)
                && disc.meta.contains_key("dpop_signing_alg_values_supported")
            {
                return Err(
                    "the server takes only DPoP-bound tokens, and its authorization \
                            server does not accept ES256 proofs"
                        .into(),
                );
            }
            log::debug!("the server takes only DPoP-bound tokens: sending DPoP proofs");
            disc.dpop = Some(DpopKey::generate()?);
        }
        Some(false) if required => {
            return Err("the server takes only DPoP-bound tokens, and DPoP is off \
                        (OAuthConfig::dpop(false))"
                .into());
        }
        _ if dpop::supported_by(&disc.meta) => log::debug!(
            "the authorization server accepts DPoP proofs; not sending them (OAuthConfig::dpop)"
        ),
        _ => {}
    }
    // The issuer is kept with the tokens and shown with them.
    require_showable(disc.meta_issuer(), "issuer")?;
    let scope = choose_scope(cfg, &disc, challenge, granted.as_deref());
    log::info!(
        "authorizing at {} for {}",
        disc.meta_issuer(),
        disc.resource
    );
    match &cfg.grant {
        Grant::ClientCredentials => client_credentials(cfg, &net, &disc, scope),
        Grant::AuthorizationCode => authorization_code(cfg, inner, &net, &disc, scope),
        Grant::JwtBearer(_) | Grant::Enterprise(_) => {
            super::grants::run(cfg, inner, &net, &disc, scope, given)
        }
    }
}

/// The challenge's scope (with what was granted before), else the configured scopes, else the
/// metadata's `scopes_supported`, else none.
fn choose_scope(
    cfg: &OAuth,
    disc: &Discovered,
    challenge: &Challenge,
    granted: Option<&str>,
) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |s: &str| {
        for w in s.split_whitespace() {
            if !out.iter().any(|o| o == w) {
                out.push(w.to_owned());
            }
        }
    };
    if let Some(s) = challenge.scope.as_deref().filter(|s| !s.trim().is_empty()) {
        add(s);
        if let Some(g) = granted {
            add(g);
        }
    } else if !cfg.scopes.is_empty() {
        add(&cfg.scopes.join(" "));
    } else if !disc.prm_scopes.is_empty() {
        add(&disc.prm_scopes.join(" "));
    }
    // SEP-2207: a client that wants refresh tokens asks for `offline_access` where the
    // authorization server lists it, and never where it does not.
    if cfg.grant.is_authorization_code()
        && cfg.refresh_tokens
        && disc
            .strings("scopes_supported")
            .iter()
            .any(|s| s == OFFLINE_ACCESS)
    {
        add(OFFLINE_ACCESS);
    }
    (!out.is_empty()).then(|| out.join(" "))
}

/// The OpenID scope that asks for a refresh token.
const OFFLINE_ACCESS: &str = "offline_access";

/// The token endpoint authentication for a client with (or without) a secret: the first
/// secret method the server lists (`client_secret_basic` when it lists none), or `none` when
/// the server accepts only public clients or there is no secret.
pub(super) fn choose_method(disc: &Discovered, has_secret: bool) -> String {
    if !has_secret {
        return "none".into();
    }
    let listed = disc.strings("token_endpoint_auth_methods_supported");
    if let Some(m) = listed
        .iter()
        .find(|m| matches!(m.as_str(), "client_secret_basic" | "client_secret_post"))
    {
        return m.clone();
    }
    if listed.iter().any(|m| m == "none") {
        return "none".into();
    }
    "client_secret_basic".into()
}

/// The client identity to use at the authorization server for `redirect_uri`: the configured
/// one, else a client ID metadata document, else a registration kept in memory or in the
/// store, else a new dynamic registration (saved in the store).
fn client_for(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    disc: &Discovered,
    redirect_uri: &str,
) -> Result<ClientReg, String> {
    if let Some(id) = &cfg.client_id {
        return Ok(ClientReg {
            client_id: id.clone(),
            client_secret: cfg.client_secret.clone(),
            method: choose_method(disc, cfg.client_secret.is_some()),
            redirect_uri: redirect_uri.to_owned(),
            dynamic: false,
        });
    }
    let cimd = disc
        .meta
        .get("client_id_metadata_document_supported")
        .and_then(Value::as_bool)
        == Some(true);
    if let (Some(url), true) = (&cfg.client_metadata_url, cimd) {
        return Ok(ClientReg {
            client_id: url.clone(),
            client_secret: None,
            method: "none".into(),
            redirect_uri: redirect_uri.to_owned(),
            dynamic: false,
        });
    }
    let issuer = disc.meta_issuer().to_owned();
    let key = (issuer.clone(), redirect_uri.to_owned());
    if let Some(reg) = inner.clients.get(&key) {
        return Ok(reg.clone());
    }
    match cfg.store.load_clients(&issuer) {
        Ok(list) => {
            if let Some(c) = list.into_iter().find(|c| c.redirect_uri == redirect_uri) {
                log::debug!("using the client registered at {issuer} before");
                let reg = ClientReg {
                    client_id: c.client_id,
                    client_secret: c.client_secret,
                    method: c.token_endpoint_auth_method,
                    redirect_uri: c.redirect_uri,
                    dynamic: true,
                };
                inner.clients.insert(key, reg.clone());
                return Ok(reg);
            }
        }
        Err(e) => log::warn!("OAuth token store: {e}"),
    }
    let endpoint = match disc
        .meta
        .get("registration_endpoint")
        .and_then(Value::as_str)
    {
        Some(e) => e.to_owned(),
        None if disc.meta.is_empty() => disc.endpoint("registration_endpoint", "/register"),
        None => {
            return Err("the authorization server offers no dynamic registration; \
                        configure a client id"
                .into())
        }
    };
    require_secure(&endpoint, "registration_endpoint")?;
    let mut body = json!({
        "client_name": cfg.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "application_type": "native",
    });
    // A public client (PKCE protects the code), where the server allows one.
    let methods = disc.strings("token_endpoint_auth_methods_supported");
    if methods.is_empty() || methods.iter().any(|m| m == "none") {
        body["token_endpoint_auth_method"] = json!("none");
    }
    let reply = net.post_json(&endpoint, &body)?;
    if !(200..300).contains(&reply.status) {
        return Err(format!("client registration failed: {}", reply.describe()));
    }
    let m = reply
        .json()
        .ok_or("the client registration answer is not a JSON object")?;
    let client_id = m
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or("the client registration answer has no client_id")?
        .to_owned();
    let client_secret = m
        .get("client_secret")
        .and_then(Value::as_str)
        .map(Secret::new);
    let method = match m.get("token_endpoint_auth_method").and_then(Value::as_str) {
        Some(x) => x.to_owned(),
        None => choose_method(disc, client_secret.is_some()),
    };
    let reg = ClientReg {
        client_id,
        client_secret,
        method,
        redirect_uri: redirect_uri.to_owned(),
        dynamic: true,
    };
    let stored = StoredClient::new(
        issuer,
        redirect_uri,
        reg.client_id.clone(),
        reg.client_secret.clone(),
        reg.method.clone(),
    );
    if let Err(e) = cfg.store.save_client(&stored) {
        log::warn!("OAuth token store: {e}");
    }
    inner.clients.insert(key, reg.clone());
    Ok(reg)
}

/// Forgets a registration the authorization server rejected, in memory and in the store.
fn forget_client(cfg: &OAuth, inner: &mut Inner, issuer: &str, reg: &ClientReg) {
    inner
        .clients
        .remove(&(issuer.to_owned(), reg.redirect_uri.clone()));
    if let Err(e) = cfg.store.remove_client(issuer, &reg.redirect_uri) {
        log::warn!("OAuth token store: {e}");
    }
}

/// Adds the client authentication to a token request.
fn authenticate(
    cfg: &OAuth,
    client_id: &str,
    secret: Option<&Secret>,
    method: &str,
    audience: &str,
    body: &mut Vec<(&'static str, String)>,
    headers: &mut Vec<(&'static str, String)>,
) -> Result<(), String> {
    if let Some(key) = &cfg.signing_key {
        body.push(("client_id", client_id.to_owned()));
        body.push((
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".into(),
        ));
        body.push(("client_assertion", key.assertion(client_id, audience)?));
        return Ok(());
    }
    match (method, secret) {
        ("client_secret_basic", Some(s)) => headers.push((
            "Authorization",
            format!(
                "Basic {}",
                b64(format!("{}:{}", encode(client_id), encode(s.expose())).as_bytes())
            ),
        )),
        ("client_secret_post", Some(s)) => {
            body.push(("client_id", client_id.to_owned()));
            body.push(("client_secret", s.expose().to_owned()));
        }
        _ => body.push(("client_id", client_id.to_owned())),
    }
    Ok(())
}

/// The fields of a token request that carry a credential.
const CREDENTIALS: [&str; 7] = [
    "refresh_token",
    "code",
    "code_verifier",
    "client_secret",
    "client_assertion",
    "assertion",
    "subject_token",
];

/// Posts a token request: `body` and `headers` as [`authenticate`] completed them, `secret`
/// the client secret they carry (in the body, or encoded in an `Authorization` header).
///
/// With a DPoP key, each request carries a proof (`DPoP` header); an answer asking for a
/// server-provided nonce (400 `use_dpop_nonce`, or 401 with a `DPoP-Nonce`) is followed by one
/// more request whose proof carries it, and no more.
///
/// The answer must carry an access token of type `Bearer` (or `DPoP`, with a key).
fn token_request(
    net: &Net,
    endpoint: &str,
    body: &[(&'static str, String)],
    headers: &[(&'static str, String)],
    secret: Option<&Secret>,
    dpop: Option<&DpopKey>,
) -> Result<Map<String, Value>, Failure> {
    let m = token_post(net, endpoint, body, headers, secret, dpop)?;
    match m.get("access_token").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => {}
        _ => return Err("the token answer has no access_token".into()),
    }
    if let Some(tt) = m.get("token_type").and_then(Value::as_str) {
        // A DPoP token only to a client that sent a proof: one bound to no key of ours could
        // not be used.
        let dpop_ok = dpop.is_some() && tt.eq_ignore_ascii_case("dpop");
        if !tt.eq_ignore_ascii_case("bearer") && !dpop_ok {
            let expected = if dpop.is_some() {
                "Bearer or DPoP"
            } else {
                "Bearer"
            };
            return Err(Failure::Other(format!(
                "the token type is `{}`, not {expected}",
                crate::config::echo(tt, 40)
            )));
        }
    }
    Ok(m)
}

/// [`token_request`] without the checks of an access token answer: the successful answer as
/// it came (a token exchange answers with other kinds of token).
pub(super) fn token_post(
    net: &Net,
    endpoint: &str,
    body: &[(&'static str, String)],
    headers: &[(&'static str, String)],
    secret: Option<&Secret>,
    dpop: Option<&DpopKey>,
) -> Result<Map<String, Value>, Failure> {
    require_secure(endpoint, "token_endpoint")?;
    let pairs: Vec<(&str, &str)> = body.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut nonce: Option<String> = None;
    let (reply, headers) = loop {
        let mut headers = headers.to_vec();
        if let Some(key) = dpop {
            headers.push(("DPoP", key.proof("POST", endpoint, None, nonce.as_deref())?));
        }
        let reply: Reply = net
            .post_form(endpoint, form(&pairs), &headers)
            .map_err(String::from)?;
        if let (Some(_), None) = (dpop, &nonce) {
            let code = reply.error_code();
            if let Some(n) =
                dpop::nonce_asked(reply.status, code.as_deref(), reply.dpop_nonce.as_deref())
            {
                log::debug!("the token endpoint asks for a DPoP nonce; asking once more with it");
                nonce = Some(n.to_owned());
                continue;
            }
        }
        break (reply, headers);
    };
    if reply.status != 200 {
        // The server may quote what it was sent: the credentials of the request (a refresh
        // token, a code and its verifier, a client secret or assertion, the `Authorization`
        // header, and the client secret it encodes) never reach an error or a log line
        // through it.
        let sent = Secrets::new(
            body.iter()
                .filter(|(k, _)| CREDENTIALS.contains(k))
                .map(|(_, v)| v.clone())
                .chain(secret.map(|s| s.expose().to_owned()))
                .chain(headers.iter().flat_map(|(_, v)| {
                    let credential = v.split_once(' ').map(|(_, c)| c.to_owned());
                    std::iter::once(v.clone()).chain(credential)
                })),
        );
        let msg = sent
            .redact(&format!("the token request failed: {}", reply.describe()))
            .into_owned();
        if reply.error_code().as_deref() == Some("invalid_client") {
            return Err(Failure::InvalidClient(msg));
        }
        return Err(Failure::Other(msg));
    }
    reply
        .json()
        .ok_or_else(|| "the token answer is not a JSON object".into())
}

/// Tokens from a token answer.
#[allow(clippy::too_many_arguments)]
fn tokens_from(
    m: &Map<String, Value>,
    issuer: &str,
    resource: &str,
    client_id: &str,
    client_secret: Option<Secret>,
    method: &str,
    token_endpoint: &str,
    requested_scope: Option<String>,
    old_refresh: Option<Secret>,
    dpop: Option<&DpopKey>,
) -> StoredTokens {
    let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_owned);
    let token_type = s("token_type").unwrap_or_else(|| "Bearer".to_owned());
    // The key goes with the token it binds, and only with one (token_request refused a DPoP
    // token without a key).
    let dpop_key = dpop
        .filter(|_| token_type.eq_ignore_ascii_case("dpop"))
        .map(|k| k.stored().clone());
    StoredTokens {
        issuer: issuer.to_owned(),
        resource: resource.to_owned(),
        client_id: client_id.to_owned(),
        client_secret,
        token_endpoint_auth_method: method.to_owned(),
        token_endpoint: token_endpoint.to_owned(),
        access_token: Secret::new(s("access_token").unwrap_or_default()),
        refresh_token: s("refresh_token").map(Secret::new).or(old_refresh),
        expires_at: m
            .get("expires_in")
            .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
            .map(|secs| expiry(now_secs(), secs)),
        scope: s("scope").or(requested_scope),
        token_type: Some(token_type),
        dpop_key,
    }
}

fn authorization_code(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    disc: &Discovered,
    scope: Option<String>,
) -> Result<StoredTokens, String> {
    match authorize_once(cfg, inner, net, disc, scope.clone()) {
        Ok(t) => Ok(t),
        Err((Failure::InvalidClient(msg), Some(reg))) if reg.dynamic => {
            // A registration the server no longer knows: register again, once.
            log::warn!(
                "the authorization server rejected the registered client ({msg}); registering \
                 again"
            );
            forget_client(cfg, inner, disc.meta_issuer(), &reg);
            authorize_once(cfg, inner, net, disc, scope).map_err(|(f, _)| String::from(f))
        }
        Err((f, _)) => Err(f.into()),
    }
}

/// The loopback listener for an authorization: on the configured port, else on the port of a
/// redirect URI registered at this issuer before (so the registration can be used again), else
/// on a random one.
fn bind_listener(
    cfg: &OAuth,
    inner: &Inner,
    disc: &Discovered,
    port: u16,
) -> Result<super::LoopbackListener, String> {
    if port == 0 && cfg.client_id.is_none() {
        let issuer = disc.meta_issuer();
        let mut uris: Vec<String> = inner
            .clients
            .keys()
            .filter(|(i, _)| i == issuer)
            .map(|(_, u)| u.clone())
            .collect();
        match cfg.store.load_clients(issuer) {
            Ok(list) => uris.extend(list.into_iter().map(|c| c.redirect_uri)),
            Err(e) => log::warn!("OAuth token store: {e}"),
        }
        for uri in uris {
            let Some(p) = uri
                .strip_prefix("http://127.0.0.1:")
                .and_then(|rest| rest.strip_suffix("/callback"))
                .and_then(|p| p.parse::<u16>().ok())
                .filter(|p| *p != 0)
            else {
                continue;
            };
            if let Ok(l) = super::LoopbackListener::bind(p) {
                return Ok(l);
            }
        }
    }
    super::LoopbackListener::bind(port).map_err(String::from)
}

/// A failed attempt and the client identity it used (none when it failed before choosing one).
pub(super) type Attempt = (Failure, Option<Box<ClientReg>>);

/// Refuses an authorization endpoint with a fragment: the query appended to it would be part
/// of the fragment, never sent.
fn require_no_fragment(endpoint: &str) -> Result<(), String> {
    if !endpoint.contains('#') {
        return Ok(());
    }
    Err(format!(
        "the authorization server's authorization_endpoint `{}` has a fragment (`#`), which an \
         authorization endpoint must not have (RFC 6749 §3.1); refusing to use it",
        super::net::shown(endpoint)
    ))
}

/// One authorization-code flow.
fn authorize_once(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    disc: &Discovered,
    scope: Option<String>,
) -> Result<StoredTokens, Attempt> {
    let (m, client) = authorize_code(cfg, inner, net, disc, scope.as_deref())?;
    let token_endpoint = disc.endpoint("token_endpoint", "/token");
    Ok(tokens_from(
        &m,
        disc.meta_issuer(),
        &disc.resource,
        &client.client_id,
        client.client_secret.clone(),
        &client.method,
        &token_endpoint,
        scope,
        None,
        disc.dpop.as_ref(),
    ))
}

/// The steps of an authorization-code flow up to the token answer, as it came, and the client
/// identity it used. `disc.resource` goes with the requests unless it is empty.
pub(super) fn authorize_code(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    disc: &Discovered,
    scope: Option<&str>,
) -> Result<(Map<String, Value>, ClientReg), Attempt> {
    // `RedirectHandler::none` is refused before discovery (a sign-in-required error); this
    // keeps it from reaching the matches below.
    let handler = cfg
        .redirect
        .as_ref()
        .filter(|h| h.reaches_a_person())
        .ok_or((
            Failure::from("no redirect handler is configured for the authorization-code grant"),
            None,
        ))?;
    let authorization_endpoint = disc.endpoint("authorization_endpoint", "/authorize");
    let token_endpoint = disc.endpoint("token_endpoint", "/token");
    // Both are checked before anyone is sent to sign in. The authorization endpoint becomes
    // the URL a person is shown and a browser opener is handed: nothing in it may drive a
    // terminal, and no fragment may swallow the query (RFC 6749 §3.1 forbids one).
    require_showable(&authorization_endpoint, "authorization_endpoint")
        .and_then(|()| require_no_fragment(&authorization_endpoint))
        .and_then(|()| require_secure(&authorization_endpoint, "authorization_endpoint"))
        .and_then(|()| require_secure(&token_endpoint, "token_endpoint"))
        .map_err(|e| (Failure::Other(e), None))?;
    let listener = match &handler.kind {
        Kind::Loopback { port, .. } => {
            Some(bind_listener(cfg, inner, disc, *port).map_err(|e| (e.into(), None))?)
        }
        Kind::Exchange { .. } | Kind::None => None,
    };
    let redirect_uri = match (&listener, &handler.kind) {
        (Some(l), _) => l.redirect_uri(),
        (None, Kind::Exchange { redirect_uri, .. }) => redirect_uri.clone(),
        (None, _) => unreachable!("a loopback handler has a listener; `none` was refused"),
    };
    let client = client_for(cfg, inner, net, disc, &redirect_uri).map_err(|e| (e.into(), None))?;
    let with = |f: Failure| (f, Some(Box::new(client.clone())));
    let verifier = random_token(32).map_err(|e| with(e.into()))?;
    let state = random_token(16).map_err(|e| with(e.into()))?;
    let mut q: Vec<(&str, String)> = vec![
        ("response_type", "code".into()),
        ("client_id", client.client_id.clone()),
        ("redirect_uri", redirect_uri.clone()),
        ("state", state.clone()),
        ("code_challenge", s256(&verifier)),
        ("code_challenge_method", "S256".into()),
    ];
    if !disc.resource.is_empty() {
        q.push(("resource", disc.resource.clone()));
    }
    if let Some(s) = scope {
        q.push(("scope", s.to_owned()));
    }
    // RFC 9449 §10: the code is bound to the key whose proof must come with its redemption.
    if let Some(k) = &disc.dpop {
        q.push(("dpop_jkt", k.thumbprint()));
    }
    let pairs: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let sep = if authorization_endpoint.contains('?') {
        '&'
    } else {
        '?'
    };
    let url = format!("{authorization_endpoint}{sep}{}", form(&pairs));
    // The URL handed to the callback is the checked endpoint's.
    require_secure(&url, "authorization_endpoint")
        .and_then(|()| require_showable(&url, "authorization URL"))
        .map_err(|e| with(e.into()))?;
    let back = match (&handler.kind, &listener) {
        (
            Kind::Loopback {
                on_url, timeout, ..
            },
            Some(l),
        ) => {
            on_url(&url);
            // Only the authorization server knows `state`: any other request to the listener
            // is ignored, whatever it carries.
            l.wait_for_state(&state, *timeout)
                .map_err(|e| with(String::from(e).into()))?
        }
        (Kind::Exchange { exchange, .. }, _) => exchange(&url).map_err(|e| with(e.into()))?,
        _ => unreachable!("a loopback handler has a listener; `none` was refused"),
    };
    let params = query_params(back.trim());
    // `state` first: an answer that is not to this request is not acted on, not even its
    // `error` (an `invalid_client` would otherwise drop the registration).
    if param(&params, "state") != Some(state.as_str()) {
        return Err(with(
            "the redirect's `state` does not match the request; the code is not used".into(),
        ));
    }
    if let Some(err) = param(&params, "error") {
        let desc = param(&params, "error_description").unwrap_or("");
        let msg = format!(
            "the authorization server refused: {} {}",
            crate::config::echo(err, 100),
            crate::config::echo(desc, 200)
        );
        return Err(with(if err == "invalid_client" {
            Failure::InvalidClient(msg)
        } else {
            Failure::Other(msg)
        }));
    }
    let iss_supported = disc
        .meta
        .get("authorization_response_iss_parameter_supported")
        .and_then(Value::as_bool)
        == Some(true);
    match param(&params, "iss") {
        Some(iss) if iss != disc.meta_issuer() => {
            return Err(with(Failure::Other(format!(
                "the redirect's `iss` ({}) is not the authorization server's issuer; the code \
                 is not used",
                crate::config::echo(iss, 200)
            ))))
        }
        None if iss_supported => {
            return Err(with(
                "the redirect has no `iss` although the authorization server promises one; the \
                 code is not used"
                    .into(),
            ))
        }
        _ => {}
    }
    let code = param(&params, "code")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| with("the redirect carries no authorization code".into()))?
        .to_owned();
    let mut body = vec![
        ("grant_type", "authorization_code".to_owned()),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("code_verifier", verifier),
    ];
    if !disc.resource.is_empty() {
        body.push(("resource", disc.resource.clone()));
    }
    let mut headers = Vec::new();
    authenticate(
        cfg,
        &client.client_id,
        client.client_secret.as_ref(),
        &client.method,
        disc.meta_issuer(),
        &mut body,
        &mut headers,
    )
    .map_err(|e| with(e.into()))?;
    let m = token_request(
        net,
        &token_endpoint,
        &body,
        &headers,
        client.client_secret.as_ref(),
        disc.dpop.as_ref(),
    )
    .map_err(with)?;
    Ok((m, client))
}

fn client_credentials(
    cfg: &OAuth,
    net: &Net,
    disc: &Discovered,
    scope: Option<String>,
) -> Result<StoredTokens, String> {
    let client_id = cfg
        .client_id
        .clone()
        .ok_or("the client_credentials grant needs a client id")?;
    let method = if cfg.signing_key.is_some() {
        "private_key_jwt".to_owned()
    } else {
        // The secret is the client's only credential here: always present it.
        match choose_method(disc, cfg.client_secret.is_some()).as_str() {
            "none" => "client_secret_basic".to_owned(),
            m => m.to_owned(),
        }
    };
    let body = vec![("grant_type", "client_credentials".to_owned())];
    direct_grant(cfg, net, disc, body, Some((&client_id, &method)), scope)
}

/// The token request of a grant no person takes part in (client credentials, jwt-bearer):
/// `body` with the resource and scope added, the client authenticated with its method when
/// there is one (`None`: no client authentication), and the tokens of the answer.
pub(super) fn direct_grant(
    cfg: &OAuth,
    net: &Net,
    disc: &Discovered,
    mut body: Vec<(&'static str, String)>,
    client: Option<(&str, &str)>,
    scope: Option<String>,
) -> Result<StoredTokens, String> {
    let token_endpoint = disc.endpoint("token_endpoint", "/token");
    body.push(("resource", disc.resource.clone()));
    if let Some(s) = &scope {
        body.push(("scope", s.clone()));
    }
    let mut headers = Vec::new();
    if let Some((id, method)) = client {
        authenticate(
            cfg,
            id,
            cfg.client_secret.as_ref(),
            method,
            disc.meta_issuer(),
            &mut body,
            &mut headers,
        )?;
    }
    let m = token_request(
        net,
        &token_endpoint,
        &body,
        &headers,
        cfg.client_secret.as_ref(),
        disc.dpop.as_ref(),
    )?;
    let (client_id, method) = client.unwrap_or(("", "none"));
    Ok(tokens_from(
        &m,
        disc.meta_issuer(),
        &disc.resource,
        client_id,
        cfg.client_secret.clone(),
        method,
        &token_endpoint,
        scope,
        None,
        disc.dpop.as_ref(),
    ))
}

/// Uses the refresh token (RFC 6749 §6, with `resource`).
pub(super) fn refresh(
    cfg: &OAuth,
    server_url: &str,
    t: &StoredTokens,
) -> Result<StoredTokens, String> {
    let refresh = t.refresh_token.clone().ok_or("there is no refresh token")?;
    let net = cfg.net(server_url);
    let mut body = vec![
        ("grant_type", "refresh_token".to_owned()),
        ("refresh_token", refresh.expose().to_owned()),
        ("resource", t.resource.clone()),
    ];
    let mut headers = Vec::new();
    authenticate(
        cfg,
        &t.client_id,
        t.client_secret.as_ref(),
        &t.token_endpoint_auth_method,
        &t.issuer,
        &mut body,
        &mut headers,
    )?;
    // A DPoP-bound token is refreshed with proofs of its own key (the authorization server
    // may have bound the refresh token to it too); with DPoP on, a bearer token gets a new key.
    let dpop = match &t.dpop_key {
        Some(k) if t.is_dpop() => Some(DpopKey::from_stored(k)?),
        _ if cfg.dpop == Some(true) => Some(DpopKey::generate()?),
        _ => None,
    };
    let m = token_request(
        &net,
        &t.token_endpoint,
        &body,
        &headers,
        t.client_secret.as_ref(),
        dpop.as_ref(),
    )?;
    Ok(tokens_from(
        &m,
        &t.issuer,
        &t.resource,
        &t.client_id,
        t.client_secret.clone(),
        &t.token_endpoint_auth_method,
        &t.token_endpoint,
        t.scope.clone(),
        Some(refresh),
        dpop.as_ref(),
    ))
}
