//! The assertion grants: workload identity (RFC 7523 `jwt-bearer` with the workload's own
//! JWT) and enterprise-managed authorization (SEP-990: an RFC 8693 token exchange at the
//! enterprise identity provider for an ID-JAG, then `jwt-bearer` with it).
//!
//! ```text
//!  workload identity:  AssertionSource ─read─> POST MCP AS token (jwt-bearer, assertion)
//!  enterprise:         ID token (AssertionSource, or sign-in at the IdP, kept until its exp)
//!                      ─> POST IdP token (token-exchange, audience = MCP AS issuer,
//!                         resource = the MCP resource) ─> ID-JAG
//!                      ─> POST MCP AS token (jwt-bearer, assertion = ID-JAG)
//! ```
//!
//! A refused grant is not retried and no other grant is tried: the refusal is the
//! authorization's error. These grants seldom come with a refresh token; when the token
//! expires, the next authorization runs the grant again with the assertion read afresh.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::flow::{authorize_code, choose_method, direct_grant, token_post, Discovered};
use super::live::{Inner, OAuth};
use super::net::{Net, NetError};
use super::util::{b64, encode, now_secs, require_secure};
use super::REFRESH_MARGIN;
use crate::config::oauth::{
    is_compact_jws, EnterpriseIdp, Grant, OAuthConfig, Secret, StoredTokens, MAX_ASSERTION_BYTES,
};
use crate::sync::lock;

/// The RFC 7523 grant type.
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The RFC 8693 grant type.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OpenID Connect ID token (RFC 8693 §3).
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion JWT authorization grant (SEP-990).
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// What is read before discovery, so that a missing or malformed assertion fails the
/// authorization before any request: the workload's assertion, or the ID token of a configured
/// source. `None` for other grants, and for an ID token that a sign-in will provide.
pub(super) fn read_ahead(cfg: &OAuth) -> Result<Option<Secret>, String> {
    match &cfg.grant {
        Grant::JwtBearer(source) => source.read().map(Some),
        Grant::Enterprise(idp) => {
            if cfg.client_id.is_none() {
                return Err(
                    "enterprise-managed authorization needs this client's id at the MCP \
                     server's authorization server (OAuthConfig::client_id)"
                        .into(),
                );
            }
            match &idp.id_token {
                Some(source) => source.read().map(Some),
                None if idp.redirect.is_none() => Err(
                    "enterprise-managed authorization needs the person's ID token: \
                     EnterpriseIdp::id_token, or EnterpriseIdp::sign_in to sign in at the \
                     identity provider"
                        .into(),
                ),
                None => Ok(None),
            }
        }
        _ => Ok(None),
    }
}

/// Runs the assertion grant of `cfg` at the authorization server `disc` found, with what
/// [`read_ahead`] read.
pub(super) fn run(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    disc: &Discovered,
    scope: Option<String>,
    given: Option<Secret>,
) -> Result<StoredTokens, String> {
    match &cfg.grant {
        Grant::JwtBearer(source) => {
            let assertion = match given {
                Some(a) => a,
                None => source.read()?,
            };
            jwt_bearer(cfg, net, disc, scope, &assertion)
                .map_err(|e| format!("the workload identity grant (jwt-bearer) failed: {e}"))
        }
        Grant::Enterprise(idp) => enterprise(cfg, inner, net, disc, scope, idp, given),
        _ => Err("not an assertion grant".into()),
    }
}

/// The RFC 7523 grant at the MCP server's authorization server: `assertion` with the resource
/// and scope, the client authenticated as configured (no client authentication when no client
/// id is configured).
fn jwt_bearer(
    cfg: &OAuth,
    net: &Net,
    disc: &Discovered,
    scope: Option<String>,
    assertion: &Secret,
) -> Result<StoredTokens, String> {
    let body = vec![
        ("grant_type", JWT_BEARER.to_owned()),
        ("assertion", assertion.expose().to_owned()),
    ];
    let method = match (&cfg.client_id, &cfg.signing_key) {
        (None, _) => None,
        (Some(_), Some(_)) => Some("private_key_jwt".to_owned()),
        (Some(_), None) => Some(choose_method(disc, cfg.client_secret.is_some())),
    };
    let client = cfg.client_id.as_deref().zip(method.as_deref());
    direct_grant(cfg, net, disc, body, client, scope)
}

/// SEP-990: the person's ID token exchanged at the identity provider for an ID-JAG naming
/// this authorization server and resource, then the ID-JAG presented as a JWT bearer grant.
fn enterprise(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    disc: &Discovered,
    scope: Option<String>,
    idp: &EnterpriseIdp,
    given: Option<Secret>,
) -> Result<StoredTokens, String> {
    // The provider's metadata is needed for its token endpoint when none is configured, and
    // for its authorization endpoint when the person signs in.
    // The provider's metadata: for its token endpoint when none is configured, and for its
    // authorization endpoint when the person signs in (read then, not for a kept ID token).
    let mut meta = match idp.token_endpoint {
        None => Some(idp_metadata(net, idp)?),
        Some(_) => None,
    };
    let token_endpoint = match (&idp.token_endpoint, &meta) {
        (Some(t), _) => t.clone(),
        (None, Some(m)) => m
            .get("token_endpoint")
            .and_then(Value::as_str)
            .ok_or("the identity provider's metadata has no token_endpoint")?
            .to_owned(),
        (None, None) => return Err("the identity provider's token endpoint is unknown".into()),
    };
    require_secure(&token_endpoint, "identity provider's token_endpoint")?;
    // A sign-in is shared by the clones of the provider's settings: one under way elsewhere is
    // waited for (the guard is held until this one has its ID token).
    let (id_token, signed_in) = match given {
        Some(t) => (t, false),
        None => {
            let _one_at_a_time = lock(&idp.signed_in.signing_in);
            match kept_id_token(idp) {
                Some(t) => {
                    log::debug!(
                        "using the ID token of the earlier sign-in at {}",
                        idp.issuer
                    );
                    (t, true)
                }
                None => {
                    let meta = match meta.take() {
                        Some(m) => m,
                        None => idp_metadata(net, idp)?,
                    };
                    (sign_in(cfg, inner, net, idp, meta)?, true)
                }
            }
        }
    };
    let id_jag = match exchange(net, &token_endpoint, disc, scope.as_deref(), idp, &id_token) {
        Ok(j) => j,
        Err(e) => {
            // An ID token the provider no longer takes is not used again: the next
            // authorization signs the person in anew.
            if signed_in {
                forget_id_token(idp, &id_token);
            }
            return Err(format!(
                "the token exchange at the enterprise identity provider failed: {e}"
            ));
        }
    };
    jwt_bearer(cfg, net, disc, scope, &id_jag).map_err(|e| {
        format!("the authorization server did not accept the identity assertion (ID-JAG): {e}")
    })
}

/// The RFC 8693 exchange of `id_token` for an ID-JAG at the identity provider.
fn exchange(
    net: &Net,
    endpoint: &str,
    disc: &Discovered,
    scope: Option<&str>,
    idp: &EnterpriseIdp,
    id_token: &Secret,
) -> Result<Secret, String> {
    let mut body = vec![
        ("grant_type", TOKEN_EXCHANGE.to_owned()),
        ("subject_token", id_token.expose().to_owned()),
        ("subject_token_type", ID_TOKEN_TYPE.to_owned()),
        ("requested_token_type", ID_JAG_TYPE.to_owned()),
        ("audience", disc.meta_issuer().to_owned()),
        ("resource", disc.resource.clone()),
    ];
    if let Some(s) = scope {
        body.push(("scope", s.to_owned()));
    }
    let mut headers = Vec::new();
    match &idp.client_secret {
        Some(secret) => headers.push((
            "Authorization",
            format!(
                "Basic {}",
                b64(format!("{}:{}", encode(&idp.client_id), encode(secret.expose())).as_bytes())
            ),
        )),
        None => body.push(("client_id", idp.client_id.clone())),
    }
    let m = token_post(
        net,
        endpoint,
        &body,
        &headers,
        idp.client_secret.as_ref(),
        None,
    )
    .map_err(String::from)?;
    let issued = m
        .get("issued_token_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if issued != ID_JAG_TYPE {
        return Err(format!(
            "the identity provider issued a token of type `{}`, not an ID-JAG ({ID_JAG_TYPE})",
            crate::config::echo(issued, 100)
        ));
    }
    let jag = m
        .get("access_token")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    if jag.is_empty() {
        return Err("the token exchange answer has no access_token".into());
    }
    if jag.len() > MAX_ASSERTION_BYTES || !is_compact_jws(jag) {
        return Err(format!(
            "the ID-JAG the identity provider issued is not a signed JWT of at most \
             {MAX_ASSERTION_BYTES} bytes"
        ));
    }
    Ok(Secret::new(jag))
}

/// The identity provider's OpenID metadata (`/.well-known/openid-configuration` under its
/// issuer), whose `issuer` must be the configured one.
fn idp_metadata(net: &Net, idp: &EnterpriseIdp) -> Result<Map<String, Value>, String> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        idp.issuer.trim_end_matches('/')
    );
    require_secure(&url, "identity provider's metadata endpoint")?;
    let until = crate::deadline::after(net.timeout());
    let reply = net.get_by(&url, until).map_err(|e| match e {
        NetError::Failed(e) | NetError::Refused(e) => {
            format!("the identity provider's metadata could not be read: {e}")
        }
    })?;
    if reply.status != 200 {
        return Err(format!(
            "the identity provider's metadata could not be read: {}",
            reply.describe()
        ));
    }
    let m = reply
        .json()
        .ok_or("the identity provider's metadata is not a JSON object")?;
    let stated = m.get("issuer").and_then(Value::as_str).unwrap_or("");
    if stated != idp.issuer {
        return Err(format!(
            "the identity provider's metadata states issuer `{}`, not `{}`",
            crate::config::echo(stated, 200),
            crate::config::echo(&idp.issuer, 200)
        ));
    }
    Ok(m)
}

/// The ID token of an earlier sign-in at this provider, while it has a while to live.
fn kept_id_token(idp: &EnterpriseIdp) -> Option<Secret> {
    let mut kept = lock(&idp.signed_in.id_token);
    match kept.as_ref() {
        Some((token, exp)) if *exp > now_secs() + REFRESH_MARGIN.as_secs() => Some(token.clone()),
        _ => {
            *kept = None;
            None
        }
    }
}

/// Drops `token` if it is still the one kept (a newer sign-in's is left alone).
fn forget_id_token(idp: &EnterpriseIdp, token: &Secret) {
    let mut kept = lock(&idp.signed_in.id_token);
    if kept.as_ref().is_some_and(|(t, _)| t == token) {
        *kept = None;
    }
}

/// Signs the person in at the identity provider (authorization code with PKCE and `state`,
/// scope `openid`, through the provider's own redirect handler) and returns the ID token of
/// its answer, kept for the clones of these settings until it expires.
fn sign_in(
    cfg: &OAuth,
    inner: &mut Inner,
    net: &Net,
    idp: &EnterpriseIdp,
    meta: Map<String, Value>,
) -> Result<Secret, String> {
    let Some(handler) = idp.redirect.clone().filter(|h| h.reaches_a_person()) else {
        return Err(
            "signing in at the enterprise identity provider needs a redirect handler that \
             reaches a person (EnterpriseIdp::sign_in)"
                .into(),
        );
    };
    if !meta.contains_key("authorization_endpoint") {
        return Err("the identity provider's metadata has no authorization_endpoint".into());
    }
    // The provider's client: its own id, secret and redirect handler; the network settings
    // and timeout of the MCP server's authorization.
    let mut settings = OAuthConfig::authorization_code(handler).client_id(idp.client_id.clone());
    if let Some(s) = &idp.client_secret {
        settings = settings.client_secret(s.expose());
    }
    settings = settings
        .timeout(cfg.timeout)
        .root_certificates(cfg.extra_roots.clone());
    let provider = OAuth::of(&settings);
    let disc = Discovered {
        resource: String::new(),
        issuer: idp.issuer.clone(),
        meta,
        prm_scopes: Vec::new(),
        dpop: None,
        dpop_required: false,
    };
    log::info!(
        "signing in at the enterprise identity provider {}",
        idp.issuer
    );
    let (m, _) =
        authorize_code(&provider, inner, net, &disc, Some("openid")).map_err(|(f, _)| {
            format!(
                "signing in at the identity provider failed: {}",
                String::from(f)
            )
        })?;
    let id_token = m
        .get("id_token")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or("the identity provider's token answer has no id_token")?;
    if id_token.len() > MAX_ASSERTION_BYTES || !is_compact_jws(id_token) {
        return Err(format!(
            "the identity provider's id_token is not a signed JWT of at most \
             {MAX_ASSERTION_BYTES} bytes"
        ));
    }
    let id_token = Secret::new(id_token);
    match expiry_of(&id_token) {
        Some(exp) => *lock(&idp.signed_in.id_token) = Some((id_token.clone(), exp)),
        None => log::debug!("the ID token states no expiry: it is used once, not kept"),
    }
    Ok(id_token)
}

/// The `exp` claim of a JWT (its payload decoded for nothing else; the signature is the
/// provider's and the MCP authorization server's to check).
fn expiry_of(jwt: &Secret) -> Option<u64> {
    let payload = jwt.expose().split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("exp")?.as_u64()
}

#[cfg(test)]
mod tests {
    //! The parts that need no server: the expiry of an ID token.

    use super::*;

    fn jwt(claims: &str) -> Secret {
        let p = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims);
        Secret::new(format!("eyJhbGciOiJFUzI1NiJ9.{p}.c2ln"))
    }

    #[test]
    fn the_expiry_of_an_id_token_is_its_exp_claim() {
        assert_eq!(
            expiry_of(&jwt(r#"{"exp": 1700000000}"#)),
            Some(1_700_000_000)
        );
        assert_eq!(expiry_of(&jwt(r#"{"sub": "x"}"#)), None);
        assert_eq!(expiry_of(&jwt(r#"{"exp": "soon"}"#)), None);
        assert_eq!(expiry_of(&jwt("not json")), None);
        assert_eq!(expiry_of(&Secret::new("no-dots")), None);
        assert_eq!(expiry_of(&Secret::new("a.!!!.c")), None);
    }
}
