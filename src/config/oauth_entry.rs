//! The `oauth` block of a server entry in a config file (Streamable HTTP and legacy SSE only):
//!
//! ```text
//! oauth:
//!   grant: authorization_code         # optional: authorization_code (default; a person signs
//!                                     # in), client_credentials, workload_identity, enterprise
//!   client_id: ${MY_CLIENT_ID}        # optional: pre-registered client (else registration)
//!   client_secret: ${MY_CLIENT_SECRET}
//!   scopes: [mcp:read, mcp:write]     # optional: when the server's challenge names none
//!   redirect_port: 8976               # optional: the loopback listener's port (else random)
//!   store: ~/.config/myapp/tokens.json  # optional: a token file (else in memory)
//!   client_metadata_url: https://...  # optional: a client ID metadata document
//!   legacy_endpoint_fallback: false   # optional: allow the 2025-03-26 default endpoints for a
//!                                     # server without metadata (see OAuthConfig)
//!   dpop: true                        # optional: sender-constrained tokens (DPoP); absent:
//!                                     # used when the authorization server requires it
//!   enabled: true                     # optional: false ignores the block
//! ```
//!
//! Each grant has its own keys:
//!
//! ```text
//! # Machine to machine: client_id and client_secret are required.
//! oauth: {grant: client_credentials, client_id: svc, client_secret: ${SVC_SECRET}}
//!
//! # Workload identity: the platform's JWT from a file or a variable (exactly one), read
//! # afresh each time a token is needed. No person signs in, no redirect_port.
//! oauth:
//!   grant: workload_identity
//!   assertion: {file: /var/run/secrets/tokens/mcp-token}   # or {env: MCP_ID_TOKEN}
//!
//! # Enterprise-managed authorization: the ID token from the enterprise's identity provider
//! # is exchanged there for an assertion the MCP server's authorization server accepts.
//! oauth:
//!   grant: enterprise
//!   client_id: mcp-client              # required: this client at the MCP authorization server
//!   client_secret: ${MCP_SECRET}
//!   idp:
//!     issuer: https://idp.example.com
//!     client_id: mcp-client-at-idp     # required: this client at the identity provider
//!     client_secret: ${IDP_SECRET}     # optional
//!     token_endpoint: https://...      # optional: else from the issuer's OpenID metadata
//!     id_token: {env: IDP_ID_TOKEN}    # optional: else the person signs in at the provider
//! ```
//!
//! camelCase spellings (`clientId`, `clientSecret`, `redirectPort`, `tokenStore`,
//! `legacyEndpointFallback`, `tokenEndpoint`, `idToken`; grants `authorizationCode`,
//! `clientCredentials`, `workloadIdentity`) are accepted too, as other hosts write them.
//! Strings take `${VAR}`; a path in `store` or `file` may start with `~/`. A grant's key in
//! another grant's block (`assertion` without `grant: workload_identity`, say) is an error, as
//! is a grant's required key left out.
//!
//! The person signing in (the authorization code, or the enterprise grant without an
//! `id_token`) is reached through a loopback listener whose URL is logged (warn level); replace
//! the handler with [`OAuthConfig::redirect`](crate::auth::OAuthConfig::redirect) (or
//! [`OAuthConfig::idp_sign_in`](crate::auth::OAuthConfig::idp_sign_in) for the enterprise
//! provider's sign-in) to show it yourself.

use serde_json::{Map, Value};

use super::fields::{get_bool, get_list, get_str, join, present, Dialect};
use super::oauth::{AssertionSource, EnterpriseIdp, FileTokenStore, OAuthConfig, RedirectHandler};
use super::suggest::nearest;
use super::{ConfigError, ConfigErrorKind};

const KEYS: [&str; 18] = [
    "enabled",
    "grant",
    "client_id",
    "clientId",
    "client_secret",
    "clientSecret",
    "scopes",
    "redirect_port",
    "redirectPort",
    "store",
    "tokenStore",
    "client_metadata_url",
    "clientMetadataUrl",
    "legacy_endpoint_fallback",
    "legacyEndpointFallback",
    "dpop",
    "assertion",
    "idp",
];

/// The keys of `idp` (enterprise-managed authorization).
const IDP_KEYS: [&str; 9] = [
    "issuer",
    "token_endpoint",
    "tokenEndpoint",
    "client_id",
    "clientId",
    "client_secret",
    "clientSecret",
    "id_token",
    "idToken",
];

/// The keys of a JWT's source (`assertion`, `idp.id_token`).
const SOURCE_KEYS: [&str; 2] = ["file", "env"];

/// The values of `grant`, in the snake_case spelling (camelCase is accepted too).
const GRANTS: [&str; 4] = [
    "authorization_code",
    "client_credentials",
    "workload_identity",
    "enterprise",
];

/// Keys other hosts (Gemini CLI) write in their `oauth` blocks that this library has no use for:
/// accepted in host files, and reported as ignored.
pub(super) const FOREIGN: [&str; 6] = [
    "authorizationUrl",
    "tokenUrl",
    "redirectUri",
    "audiences",
    "tokenParamName",
    "registrationUrl",
];

/// The grant a block chose.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum GrantKind {
    AuthorizationCode,
    ClientCredentials,
    WorkloadIdentity,
    Enterprise,
}

impl GrantKind {
    fn parse(word: &str) -> Option<GrantKind> {
        Some(match word {
            "authorization_code" | "authorizationCode" => GrantKind::AuthorizationCode,
            "client_credentials" | "clientCredentials" => GrantKind::ClientCredentials,
            "workload_identity" | "workloadIdentity" => GrantKind::WorkloadIdentity,
            "enterprise" => GrantKind::Enterprise,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            GrantKind::AuthorizationCode => "authorization_code",
            GrantKind::ClientCredentials => "client_credentials",
            GrantKind::WorkloadIdentity => "workload_identity",
            GrantKind::Enterprise => "enterprise",
        }
    }
}

/// Refuses a key of `obj` that is not in `keys` (nor, in host files, in `foreign`, whose key
/// paths are pushed to `ignored`), suggesting the nearest known one.
fn check_keys(
    obj: &Map<String, Value>,
    path: &str,
    keys: &[&str],
    foreign: &[&str],
    ignored: &mut Vec<String>,
) -> Result<(), ConfigError> {
    for key in obj.keys() {
        if keys.contains(&key.as_str()) {
            continue;
        }
        if foreign.contains(&key.as_str()) {
            ignored.push(join(path, key));
            continue;
        }
        return Err(
            ConfigError::new(ConfigErrorKind::UnknownKey, format!("unknown key `{key}`"))
                .at(join(path, key))
                .found_expected(key.clone(), format!("one of: {}", keys.join(", ")))
                .suggest(nearest(key, keys.iter().copied())),
        );
    }
    Ok(())
}

/// The first of `keys` (spellings of one key) present in `obj`, with its key path.
fn first_present<'v>(
    obj: &'v Map<String, Value>,
    path: &str,
    keys: &[&str],
) -> Option<(String, &'v Value)> {
    keys.iter()
        .find_map(|k| present(obj, k).map(|v| (join(path, k), v)))
}

type Expand<'a> = dyn FnMut(String, String) -> Result<String, ConfigError> + 'a;

/// The string at the first of `keys` present, `${VAR}` expanded; `None` when none is.
fn text(
    obj: &Map<String, Value>,
    path: &str,
    keys: &[&str],
    expand: &mut Expand<'_>,
) -> Result<Option<String>, ConfigError> {
    for k in keys {
        if let Some(s) = get_str(obj, k, path)? {
            return expand(s, join(path, k)).map(Some);
        }
    }
    Ok(None)
}

/// A JWT's source at `path`: `{file: PATH}` or `{env: VAR}`, exactly one.
fn source(v: &Value, path: &str, expand: &mut Expand<'_>) -> Result<AssertionSource, ConfigError> {
    let Value::Object(obj) = v else {
        return Err(ConfigError::wrong_type(
            path,
            "a mapping with `file` or `env`",
            v,
        ));
    };
    check_keys(obj, path, &SOURCE_KEYS, &[], &mut Vec::new())?;
    let file = text(obj, path, &["file"], expand)?;
    let env = text(obj, path, &["env"], expand)?;
    let empty = |key: &str| {
        ConfigError::new(ConfigErrorKind::MissingField, format!("`{key}` is empty"))
            .at(join(path, key))
    };
    match (file, env) {
        (Some(_), Some(_)) => Err(ConfigError::new(
            ConfigErrorKind::InvalidValue,
            "takes one of `file` and `env`, not both",
        )
        .at(path)),
        (Some(f), None) if f.trim().is_empty() => Err(empty("file")),
        (None, Some(e)) if e.trim().is_empty() => Err(empty("env")),
        (Some(f), None) => Ok(AssertionSource::file(home_path(&f))),
        (None, Some(e)) => Ok(AssertionSource::env(e)),
        (None, None) => Err(ConfigError::new(
            ConfigErrorKind::MissingField,
            "needs `file` (a path) or `env` (a variable's name)",
        )
        .at(path)),
    }
}

/// A URL key's value must be an http or https URL.
fn check_url(url: &str, path: &str) -> Result<(), ConfigError> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    if matches!(scheme.as_deref(), Some("https" | "http")) {
        return Ok(());
    }
    Err(
        ConfigError::new(ConfigErrorKind::InvalidUrl, "expected an https URL")
            .at(path)
            .found_expected(url, "an https URL"),
    )
}

/// The `idp` block at `path`; `redirect` signs the person in when it names no `id_token`.
fn idp(
    v: &Value,
    path: &str,
    redirect: RedirectHandler,
    expand: &mut Expand<'_>,
) -> Result<EnterpriseIdp, ConfigError> {
    let Value::Object(obj) = v else {
        return Err(ConfigError::wrong_type(path, "a mapping", v));
    };
    check_keys(obj, path, &IDP_KEYS, &[], &mut Vec::new())?;
    let required = |key: &str, what: &str| {
        ConfigError::new(
            ConfigErrorKind::MissingField,
            format!("`grant: enterprise` needs `idp.{key}` ({what})"),
        )
        .at(join(path, key))
    };
    let issuer = text(obj, path, &["issuer"], expand)?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| required("issuer", "the identity provider's issuer URL"))?;
    check_url(&issuer, &join(path, "issuer"))?;
    let client_id = text(obj, path, &["client_id", "clientId"], expand)?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| required("client_id", "this client's id at the identity provider"))?;
    let mut idp = EnterpriseIdp::new(issuer, client_id);
    if let Some(url) = text(obj, path, &["token_endpoint", "tokenEndpoint"], expand)? {
        let key = if obj.contains_key("token_endpoint") {
            "token_endpoint"
        } else {
            "tokenEndpoint"
        };
        check_url(&url, &join(path, key))?;
        idp = idp.token_endpoint(url);
    }
    if let Some(secret) = text(obj, path, &["client_secret", "clientSecret"], expand)? {
        idp = idp.client_secret(secret);
    }
    let id_token = match first_present(obj, path, &["id_token", "idToken"]) {
        Some((key_path, v)) => Some(source(v, &key_path, expand)?),
        None => None,
    };
    idp = match id_token {
        Some(token) => idp.id_token(token),
        None => idp.sign_in(redirect),
    };
    Ok(idp)
}

/// Parses the block at `path` (`None` when absent or `enabled: false`). `expand` applies the
/// config's variables; the key paths of [`FOREIGN`] keys found are pushed to `foreign`.
pub(super) fn parse(
    v: &Value,
    path: &str,
    dialect: Dialect,
    expand: &mut Expand<'_>,
    foreign: &mut Vec<String>,
    idps: Option<&std::cell::RefCell<Vec<EnterpriseIdp>>>,
) -> Result<Option<OAuthConfig>, ConfigError> {
    let obj: &Map<String, Value> = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => return Err(ConfigError::wrong_type(path, "a mapping", other)),
    };
    let others: &[&str] = if dialect == Dialect::Host {
        &FOREIGN
    } else {
        &[]
    };
    check_keys(obj, path, &KEYS, others, foreign)?;
    if get_bool(obj, "enabled", path)? == Some(false) {
        return Ok(None);
    }
    let grant = match text(obj, path, &["grant"], expand)? {
        None => GrantKind::AuthorizationCode,
        Some(word) => GrantKind::parse(word.trim()).ok_or_else(|| {
            ConfigError::new(
                ConfigErrorKind::InvalidValue,
                format!("unknown grant `{word}`"),
            )
            .at(join(path, "grant"))
            .found_expected(word.clone(), format!("one of: {}", GRANTS.join(", ")))
            .suggest(nearest(&word, GRANTS.iter().copied()))
        })?,
    };
    // A grant's keys in another grant's block: refused, rather than silently unused.
    let id_token_given = obj
        .get("idp")
        .and_then(Value::as_object)
        .is_some_and(|m| first_present(m, "", &["id_token", "idToken"]).is_some());
    let for_grant = |only: GrantKind| {
        format!(
            "applies only to `grant: {}` (this block's grant is {})",
            only.name(),
            grant.name()
        )
    };
    let no_sign_in = match grant {
        GrantKind::AuthorizationCode => None,
        GrantKind::Enterprise if !id_token_given => None,
        GrantKind::Enterprise => Some("`grant: enterprise` with an `idp.id_token`".to_owned()),
        other => Some(format!("`grant: {}`", other.name())),
    }
    .map(|g| format!("is the port of a person's sign-in, and {g} has none"));
    let misplaced = [
        (
            "assertion",
            (grant != GrantKind::WorkloadIdentity).then(|| for_grant(GrantKind::WorkloadIdentity)),
        ),
        (
            "idp",
            (grant != GrantKind::Enterprise).then(|| for_grant(GrantKind::Enterprise)),
        ),
        ("redirect_port", no_sign_in.clone()),
        ("redirectPort", no_sign_in),
    ];
    for (key, why) in misplaced {
        if let (Some(why), Some(_)) = (why, present(obj, key)) {
            return Err(
                ConfigError::new(ConfigErrorKind::NotApplicable, format!("`{key}` {why}"))
                    .at(join(path, key)),
            );
        }
    }
    let client_id = text(obj, path, &["client_id", "clientId"], expand)?;
    let client_secret = text(obj, path, &["client_secret", "clientSecret"], expand)?;
    let store = text(obj, path, &["store", "tokenStore"], expand)?;
    let metadata_url = text(
        obj,
        path,
        &["client_metadata_url", "clientMetadataUrl"],
        expand,
    )?;
    let mut port = 0u16;
    for k in ["redirect_port", "redirectPort"] {
        match obj.get(k) {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) if n.as_u64().is_some_and(|p| p <= 65535) => {
                port = n.as_u64().unwrap_or(0) as u16;
            }
            Some(other) => {
                return Err(ConfigError::wrong_type(
                    &join(path, k),
                    "a port number (0 to 65535)",
                    other,
                ))
            }
        }
    }
    if client_secret.is_some() && client_id.is_none() {
        return Err(ConfigError::new(
            ConfigErrorKind::MissingField,
            "`client_secret` needs a `client_id`",
        )
        .at(join(path, "client_id")));
    }
    let mut scopes = Vec::new();
    for (i, s) in get_list(obj, "scopes", path)?.into_iter().enumerate() {
        scopes.push(expand(s, format!("{}[{i}]", join(path, "scopes")))?);
    }
    let loopback = || {
        RedirectHandler::loopback(|url| {
            log::warn!("sign-in needed: open this address in a browser: {url}")
        })
        .port(port)
    };
    let mut oauth = match grant {
        GrantKind::AuthorizationCode => OAuthConfig::authorization_code(loopback()),
        GrantKind::ClientCredentials => {
            let missing = |key: &str| {
                ConfigError::new(
                    ConfigErrorKind::MissingField,
                    format!("`grant: client_credentials` needs a `{key}`"),
                )
                .at(join(path, key))
            };
            let id = client_id.clone().ok_or_else(|| missing("client_id"))?;
            let secret = client_secret
                .clone()
                .ok_or_else(|| missing("client_secret"))?;
            OAuthConfig::client_credentials(id, secret)
        }
        GrantKind::WorkloadIdentity => {
            let Some((key_path, v)) = first_present(obj, path, &["assertion"]) else {
                return Err(ConfigError::new(
                    ConfigErrorKind::MissingField,
                    "`grant: workload_identity` needs an `assertion`: {file: PATH} or {env: VAR}",
                )
                .at(join(path, "assertion")));
            };
            OAuthConfig::workload_identity(source(v, &key_path, expand)?)
        }
        GrantKind::Enterprise => {
            if client_id.is_none() {
                return Err(ConfigError::new(
                    ConfigErrorKind::MissingField,
                    "`grant: enterprise` needs a `client_id` (this client's id at the MCP \
                     server's authorization server)",
                )
                .at(join(path, "client_id")));
            }
            let Some((key_path, v)) = first_present(obj, path, &["idp"]) else {
                return Err(ConfigError::new(
                    ConfigErrorKind::MissingField,
                    "`grant: enterprise` needs an `idp` (the enterprise identity provider: \
                     issuer, client_id)",
                )
                .at(join(path, "idp")));
            };
            // The listener's port is the settings' too, where programs look for it
            // (`OAuthConfig::redirect_port`).
            let mut provider = idp(v, &key_path, loopback(), expand)?;
            // The servers of one load whose blocks name the same provider the same way sign
            // the person in once.
            if let Some(seen) = idps {
                let mut seen = seen.borrow_mut();
                match seen.iter().find(|p| p.same_provider(&provider)) {
                    Some(first) => provider = provider.share_sign_in_with(first),
                    None => seen.push(provider.clone()),
                }
            }
            let oauth = OAuthConfig::enterprise(provider);
            if !id_token_given {
                oauth.redirect(loopback())
            } else {
                oauth
            }
        }
    }
    .scopes(scopes);
    if let Some(id) = client_id {
        oauth = oauth.client_id(id);
    }
    if let Some(secret) = client_secret {
        oauth = oauth.client_secret(secret);
    }
    if let Some(url) = metadata_url {
        oauth = oauth.client_metadata_url(url);
    }
    for key in ["legacy_endpoint_fallback", "legacyEndpointFallback"] {
        if let Some(allowed) = get_bool(obj, key, path)? {
            oauth = oauth.legacy_endpoint_fallback(allowed);
        }
    }
    if let Some(on) = get_bool(obj, "dpop", path)? {
        oauth = oauth.dpop(on);
    }
    if let Some(store) = store {
        oauth = oauth.token_store(FileTokenStore::new(home_path(&store)));
    }
    Ok(Some(oauth))
}

/// `path` with a leading `~/` replaced by the home folder (see [`store_home`]).
fn home_path(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), store_home()) {
        (Some(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The home a token store path's `~/` stands for: `HOME`; on Windows `USERPROFILE`, else `HOME`.
fn store_home() -> Option<std::ffi::OsString> {
    if cfg!(windows) {
        use super::locations::{home_dir_in, Platform};
        home_dir_in(Platform::Windows, |name| std::env::var_os(name)).map(Into::into)
    } else {
        std::env::var_os("HOME")
    }
}
