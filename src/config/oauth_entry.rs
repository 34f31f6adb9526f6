//! The `oauth` block of a server entry in a config file (Streamable HTTP and legacy SSE only):
//!
//! ```text
//! oauth:
//!   client_id: ${MY_CLIENT_ID}        # optional: pre-registered client (else registration)
//!   client_secret: ${MY_CLIENT_SECRET}
//!   scopes: [mcp:read, mcp:write]     # optional: when the server's challenge names none
//!   redirect_port: 8976               # optional: the loopback listener's port (else random)
//!   store: ~/.config/myapp/tokens.json  # optional: a token file (else in memory)
//!   client_metadata_url: https://...  # optional: a client ID metadata document
//!   legacy_endpoint_fallback: false   # optional: allow the 2025-03-26 default endpoints for a
//!                                     # server without metadata (see OAuthConfig)
//!   enabled: true                     # optional: false ignores the block
//! ```
//!
//! camelCase spellings (`clientId`, `clientSecret`, `redirectPort`, `tokenStore`,
//! `legacyEndpointFallback`) are accepted too, as other hosts write them. Strings take `${VAR}`.
//! The person signing in is reached through a loopback listener whose URL is logged (warn
//! level); replace the handler with
//! [`OAuthConfig::redirect`](crate::auth::OAuthConfig::redirect) to show it yourself.

use serde_json::{Map, Value};

use super::fields::{get_bool, get_list, get_str, join, Dialect};
use super::oauth::{FileTokenStore, OAuthConfig, RedirectHandler};
use super::suggest::nearest;
use super::{ConfigError, ConfigErrorKind};

const KEYS: [&str; 14] = [
    "enabled",
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

/// Parses the block at `path` (`None` when absent or `enabled: false`). `expand` applies the
/// config's variables; the key paths of [`FOREIGN`] keys found are pushed to `foreign`.
pub(super) fn parse(
    v: &Value,
    path: &str,
    dialect: Dialect,
    expand: &mut dyn FnMut(String, String) -> Result<String, ConfigError>,
    foreign: &mut Vec<String>,
) -> Result<Option<OAuthConfig>, ConfigError> {
    let obj: &Map<String, Value> = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        other => return Err(ConfigError::wrong_type(path, "a mapping", other)),
    };
    for key in obj.keys() {
        if KEYS.contains(&key.as_str()) {
            continue;
        }
        if dialect == Dialect::Host && FOREIGN.contains(&key.as_str()) {
            foreign.push(join(path, key));
            continue;
        }
        return Err(
            ConfigError::new(ConfigErrorKind::UnknownKey, format!("unknown key `{key}`"))
                .at(join(path, key))
                .found_expected(key.clone(), format!("one of: {}", KEYS.join(", ")))
                .suggest(nearest(key, KEYS.iter().copied())),
        );
    }
    if get_bool(obj, "enabled", path)? == Some(false) {
        return Ok(None);
    }
    let mut text = |keys: [&str; 2]| -> Result<Option<String>, ConfigError> {
        for k in keys {
            if let Some(s) = get_str(obj, k, path)? {
                return expand(s, join(path, k)).map(Some);
            }
        }
        Ok(None)
    };
    let client_id = text(["client_id", "clientId"])?;
    let client_secret = text(["client_secret", "clientSecret"])?;
    let store = text(["store", "tokenStore"])?;
    let metadata_url = text(["client_metadata_url", "clientMetadataUrl"])?;
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
    let redirect = RedirectHandler::loopback(|url| {
        log::warn!("sign-in needed: open this address in a browser: {url}")
    })
    .port(port);
    let mut oauth = OAuthConfig::authorization_code(redirect).scopes(scopes);
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
    if let Some(store) = store {
        let expanded = match (store.strip_prefix("~/"), store_home()) {
            (Some(rest), Some(home)) => std::path::PathBuf::from(home).join(rest),
            _ => std::path::PathBuf::from(&store),
        };
        oauth = oauth.token_store(FileTokenStore::new(expanded));
    }
    Ok(Some(oauth))
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
