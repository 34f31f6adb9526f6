//! `mcpb login | logout | auth status`: OAuth sign-in to a remote (Streamable HTTP or legacy
//! SSE) server, `--url URL` or `--config FILE --server NAME`, kept in a token file that later
//! commands on the same server use (and refresh) silently.
//!
//! The token file is `$MCPB_TOKEN_FILE`, else `$XDG_CONFIG_HOME/mcpb/tokens.json`, else
//! `~/.config/mcpb/tokens.json` (created with mode 0600); on Windows `%MCPB_TOKEN_FILE%`, else
//! `%APPDATA%\mcpb\tokens.json` (created with an ACL for the user alone). mcpb keeps a config
//! entry's tokens there too, whatever store its `oauth` block names (the block's client,
//! secret, scopes and redirect port are used). `login` prints the authorization URL on stderr,
//! tries the desktop opener (`$BROWSER`, else `xdg-open`, or `open` on macOS, `url.dll`'s
//! handler on Windows) and waits on a loopback listener (`--max-time`, 5 minutes by default);
//! `--paste` prints the URL and reads the address the browser landed on from stdin instead.
//! Every other command that needs a new sign-in fails at once (exit 7) naming the `login`
//! command.
//! Nothing printed shows a token or a secret. A token file that cannot be read (over
//! `FileTokenStore::MAX_FILE_BYTES`, or not valid, as a truncated one is) fails `login`, `logout`
//! and `auth status` with exit 2 naming it, and is left as it is; a later command on a server it
//! may hold a sign-in for fails at the server's 401 naming it too.

use std::ffi::OsString;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command as Process, Stdio};
use std::sync::{Arc, Mutex};

use mcp_blocking::auth::{
    FileTokenStore, OAuthConfig, RedirectHandler, StoredTokens, TokenStore, DEFAULT_LOGIN_TIMEOUT,
};
use mcp_blocking::config::locations::{home_dir_in, Platform};
use mcp_blocking::config::TransportConfig;
use mcp_blocking::ServerConfig;
use serde_json::{json, Value};

use crate::args::{AuthAction, Command, Global, Target, UrlTransport, UsageError};
use crate::sign_in::{self, SignIn};
use crate::{Failure, FailureInfo, Output};

/// The redirect URI announced by the paste flow (nothing needs to listen there).
const PASTE_REDIRECT: &str = "http://127.0.0.1:8976/callback";

/// The remote server an auth command is about.
struct Remote {
    /// Its name in messages (the config entry's, or the URL's host).
    name: String,
    url: String,
    /// The `oauth` block of its config entry.
    oauth: Option<OAuthConfig>,
    /// Its configuration: the sign-in uses its proxy setting and extra root certificates.
    config: ServerConfig,
}

/// `login`, `logout` or `auth status`.
pub(crate) fn command(global: &Global, command: &Command) -> Result<Output, Failure> {
    let word = match command {
        Command::Auth {
            action: AuthAction::Status,
        } => "auth status",
        other => other.name(),
    };
    global
        .refuse(
            word,
            &["--stdio", "--header", "--env", "--log-level"],
            "it takes --url URL or --config FILE --server NAME, and --timeout, --json",
        )
        .map_err(crate::usage)?;
    if !matches!(command, Command::Login { paste: false }) {
        let hint = match command {
            Command::Login { .. } => "with --paste, `login` waits for you, not for the browser",
            _ => "it bounds how long `login` waits for the browser",
        };
        global
            .refuse(word, &["--max-time"], hint)
            .map_err(crate::usage)?;
    }
    if !matches!(command, Command::Login { .. }) {
        global
            .refuse(word, &sign_in::ALL, "they choose how `login` signs in")
            .map_err(crate::usage)?;
    }
    let sign_in = sign_in::options(global, true).map_err(crate::usage)?;
    let remote = remote(global, word)?;
    match command {
        Command::Login { paste } => login(global, &sign_in, &remote, *paste),
        Command::Logout => logout(&remote),
        _ => status(&remote),
    }
}

/// The server of `--url` or `--config FILE --server NAME`; it must be http or sse.
fn remote(global: &Global, word: &str) -> Result<Remote, Failure> {
    let not_remote = |what: &str| {
        FailureInfo::usage(format!("OAuth applies to http and sse servers, not {what}"))
    };
    let target = match global.target() {
        Ok(t) => t,
        Err(_) if global.url.is_none() && global.config.is_none() => {
            return Err(FailureInfo::usage(format!(
                "`{word}` needs --url URL (or --config FILE --server NAME)"
            )))
        }
        Err(UsageError(m)) => return Err(FailureInfo::usage(m)),
    };
    match target {
        Target::Url(url, transport) => {
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            let ws = matches!(scheme.as_deref(), Some("ws" | "wss"));
            if ws || transport == Some(UrlTransport::Ws) {
                return Err(not_remote("WebSocket ones"));
            }
            let name = crate::host_of(&url);
            let config = match transport {
                Some(UrlTransport::Sse) => ServerConfig::sse(name, url.clone()),
                _ => ServerConfig::http(name, url.clone()),
            };
            Ok(Remote {
                name: crate::host_of(&url),
                url,
                oauth: None,
                config,
            })
        }
        Target::Config(file, wanted) => {
            let report = crate::load_config(global, &file)?;
            let config = crate::pick_server(&file, wanted.as_deref(), &report, word)?;
            let Some(url) = url_of(&config) else {
                let name = config.name();
                return Err(FailureInfo::config(
                    Some(name),
                    format!(
                        "server `{name}`: OAuth applies to http and sse servers, this one is {}",
                        config.transport_type()
                    ),
                    vec![],
                ));
            };
            Ok(Remote {
                name: config.name().to_owned(),
                url,
                oauth: config.oauth().cloned(),
                config,
            })
        }
        Target::Stdio(_) => Err(not_remote("stdio ones")),
    }
}

/// The token file.
pub(crate) fn store_path() -> PathBuf {
    store_path_in(Platform::current(), |name| std::env::var_os(name))
}

/// The token file on `platform`, with environment variables looked up by `env` (see the module
/// docs).
pub(crate) fn store_path_in(platform: Platform, env: impl Fn(&str) -> Option<OsString>) -> PathBuf {
    if let Some(p) = env("MCPB_TOKEN_FILE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if platform == Platform::Windows {
        // Where Windows programs keep a user's settings: %APPDATA% (the roaming folder of the
        // profile, which only its user can open).
        let app_data = env("APPDATA").filter(|p| !p.is_empty()).or_else(|| {
            let mut roaming = home_dir_in(platform, &env)?.into_os_string();
            roaming.push("\\AppData\\Roaming");
            Some(roaming)
        });
        let mut path = app_data.unwrap_or_else(|| OsString::from("."));
        path.push("\\mcpb\\tokens.json");
        return PathBuf::from(path);
    }
    let base = env("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("mcpb").join("tokens.json")
}

/// The URL of an http or sse server; `None` for the other transports.
pub(crate) fn url_of(config: &ServerConfig) -> Option<String> {
    match config.transport() {
        TransportConfig::StreamableHttp(h) => Some(h.url.clone()),
        TransportConfig::Sse(s) => Some(s.url.clone()),
        _ => None,
    }
}

/// A remote config with its sign-in: the grant of the OAuth options (client credentials,
/// workload identity, enterprise); else the config entry's `oauth` block, or the stored sign-in
/// of its URL when there is one (requests carry the token and refresh it); --dpop or --no-dpop
/// on top. Tokens are kept in mcpb's token file. No command but `login` asks a person to sign
/// in (at the server's authorization server or at an enterprise identity provider): one that
/// needs a new sign-in fails at once with
/// [`Error::SignInRequired`](mcp_blocking::Error::SignInRequired) (exit 7, naming
/// [`login_command`]). Other configs are returned as they are.
///
/// With `timeout` (`--timeout`), each request to the authorization server (metadata, token,
/// refresh) is bounded by it too, as every request mcpb makes.
pub(crate) fn with_sign_in(
    config: ServerConfig,
    sign_in: &SignIn,
    timeout: Option<f64>,
) -> ServerConfig {
    let Some(url) = url_of(&config) else {
        return config;
    };
    let bounded = |oauth: OAuthConfig| {
        let oauth = match timeout {
            Some(t) => oauth.timeout(std::time::Duration::from_secs_f64(t)),
            None => oauth,
        };
        match sign_in.dpop {
            Some(on) => oauth.dpop(on),
            None => oauth,
        }
    };
    let store = FileTokenStore::new(store_path());
    if let Some(oauth) = sign_in.grant_config(RedirectHandler::none()) {
        let oauth = sign_in.finish(oauth).token_store(store);
        return config.with_oauth(bounded(oauth));
    }
    if let Some(oauth) = config.oauth().cloned() {
        let oauth = oauth
            .redirect(RedirectHandler::none())
            .idp_sign_in(RedirectHandler::none())
            .token_store(store);
        return config.with_oauth(bounded(oauth));
    }
    match store.load(&url) {
        Ok(found) if found.is_empty() => return config,
        // A token file that cannot be read may hold this server's sign-in: the server's 401
        // then fails naming the file, instead of as if no one had signed in.
        Ok(_) | Err(_) => {}
    }
    let oauth = OAuthConfig::authorization_code(RedirectHandler::none()).token_store(store);
    config.with_oauth(bounded(oauth))
}

/// Names the `login` command in the detail lines of a failure to connect to `config`'s server
/// that a sign-in would mend: one that needs a sign-in (the only line), or an HTTP 401 from a
/// server that asks for a bearer token when no sign-in is configured for it.
pub(crate) fn hint_login(
    global: &Global,
    config: &ServerConfig,
    e: &mcp_blocking::Error,
    detail: &mut Vec<String>,
) {
    let login = || login_command(global, config);
    if e.is_sign_in_required() {
        *detail = vec![format!("run `{}` to sign in, then run this again", login())];
        return;
    }
    let bearer = e
        .www_authenticate()
        .is_some_and(|c| c.trim_start().to_ascii_lowercase().starts_with("bearer"));
    let refused = matches!(e, mcp_blocking::Error::Connect(c) if c.http_status() == Some(401));
    if refused && bearer && config.oauth().is_none() {
        detail.push(format!(
            "the server asks for a sign-in: run `{}`, then run this again",
            login()
        ));
    }
}

/// The `mcpb ... login` command that signs in to `config`'s server, as this run named it
/// (`--config FILE --server NAME`, else `--url URL`).
pub(crate) fn login_command(global: &Global, config: &ServerConfig) -> String {
    match (&global.config, url_of(config)) {
        (Some(file), _) => format!("mcpb --config {file} --server {} login", config.name()),
        (None, Some(url)) => format!("mcpb --url {url} login"),
        (None, None) => "mcpb login".to_owned(),
    }
}

/// A failure of the token file (exit 2).
fn store_failure(remote: &Remote, e: String) -> Failure {
    FailureInfo::config(
        Some(&remote.name),
        format!("server `{}`: {e}", remote.name),
        vec![],
    )
}

fn login(
    global: &Global,
    sign_in: &SignIn,
    remote: &Remote,
    paste: bool,
) -> Result<Output, Failure> {
    let url = &remote.url;
    // A token file that cannot be read could not keep the sign-in either: a failure of the
    // token file (exit 2, as for `auth status`), before anyone is sent to sign in.
    FileTokenStore::new(store_path())
        .load(url)
        .map_err(|e| store_failure(remote, e))?;
    let opener: Arc<Mutex<Option<Child>>> = Arc::default();
    let redirect = if paste {
        RedirectHandler::paste(PASTE_REDIRECT, |auth_url| {
            let auth_url = showable(auth_url)?;
            eprintln!(
                "Open this address in a browser and sign in:\n\n  {auth_url}\n\nThen paste the \
                 address the browser ends on (it starts with {PASTE_REDIRECT}; the page itself \
                 may fail to load) and press Enter:"
            );
            let mut line = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut line)
                .map_err(|e| format!("reading the pasted address: {e}"))?;
            Ok(line)
        })
    } else {
        let slot = opener.clone();
        RedirectHandler::loopback(move |auth_url| {
            let Ok(auth_url) = showable(auth_url) else {
                eprintln!("mcpb: the authorization URL holds control characters; not shown");
                return;
            };
            eprintln!(
                "Sign in with your browser; if it does not open, visit:\n\n  {auth_url}\n\n\
                 Waiting for the browser to come back..."
            );
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = open_browser(auth_url);
        })
        .port(remote.oauth.as_ref().map_or(0, redirect_port))
        .timeout(
            global
                .max_time
                .map_or(DEFAULT_LOGIN_TIMEOUT, std::time::Duration::from_secs_f64),
        )
    };
    // The grant of the options replaces the entry's block; without one, the entry's block (or
    // the authorization code) with the options' client. The person, if anyone signs in, is
    // sent to the browser the same way at the authorization server or the identity provider.
    let oauth = match (sign_in.grant_config(redirect.clone()), &remote.oauth) {
        (Some(oauth), _) => oauth,
        (None, Some(entry)) => sign_in.client(
            entry
                .clone()
                .redirect(redirect.clone())
                .idp_sign_in(redirect),
        ),
        (None, None) => {
            sign_in.client(OAuthConfig::authorization_code(redirect).client_name("mcpb"))
        }
    };
    let mut oauth = sign_in
        .finish(oauth)
        .token_store(FileTokenStore::new(store_path()));
    if let Some(t) = global.timeout {
        oauth = oauth.timeout(std::time::Duration::from_secs_f64(t));
    }
    let result = oauth.login_for(&remote.config);
    if let Some(mut child) = opener.lock().unwrap_or_else(|p| p.into_inner()).take() {
        if !matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    // Signing in is part of connecting: a refusal is exit 3 (reason `auth`), as when a
    // server refuses the first request.
    let tokens = result.map_err(|e| {
        let mut f = FailureInfo::from_error(&e, false);
        if let mcp_blocking::Error::Unauthorized { detail, .. } = &e {
            let detail = detail
                .strip_prefix("authorization failed: ")
                .unwrap_or(detail);
            f.headline = format!("server `{}`: sign-in failed: {detail}", remote.name);
        }
        (f.exit, f.kind) = (3, "connect");
        f.extra = json!({ "reason": "auth" });
        f
    })?;
    Ok(Output::ok(
        json!({"signed_in": true, "server": url, "tokens": [summary(&tokens)]}),
        format!("Signed in to {url}.\n{}", describe(&tokens)),
    ))
}

/// The authorization URL, when it can be printed and handed to the opener as it is: no control
/// character (newline and tab included) and no bidirectional-text control. The library refuses
/// any other before it gets here; this keeps the promise where the printing is done.
fn showable(auth_url: &str) -> Result<&str, String> {
    let clean =
        !auth_url.chars().any(char::is_control) && crate::terminal::escaped(auth_url) == auth_url;
    if clean {
        Ok(auth_url)
    } else {
        Err("the authorization URL holds control characters; not shown".into())
    }
}

/// A value the authorization server chose (issuer, client id, scope), on one line: control
/// characters, newline and tab included, are written as escapes (the rest of the text output
/// is escaped when printed).
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The loopback port an entry's `oauth` block asks for (`redirect_port`; 0: any).
fn redirect_port(oauth: &OAuthConfig) -> u16 {
    oauth.redirect_port().unwrap_or(0)
}

fn logout(remote: &Remote) -> Result<Output, Failure> {
    let url = &remote.url;
    let removed = FileTokenStore::new(store_path())
        .remove(url)
        .map_err(|e| store_failure(remote, e))?;
    Ok(Output::ok(
        json!({"signed_in": false, "server": url, "removed": removed}),
        if removed == 0 {
            format!("No stored sign-in for {url}.")
        } else {
            format!("Signed out of {url}.")
        },
    ))
}

fn status(remote: &Remote) -> Result<Output, Failure> {
    let url = &remote.url;
    let found = FileTokenStore::new(store_path())
        .load(url)
        .map_err(|e| store_failure(remote, e))?;
    let text = if found.is_empty() {
        format!("Not signed in to {url}.")
    } else {
        let lines: Vec<String> = found.iter().map(describe).collect();
        format!("Signed in to {url}.\n{}", lines.join("\n"))
    };
    Ok(Output::ok(
        json!({
            "signed_in": !found.is_empty(),
            "server": url,
            "tokens": found.iter().map(summary).collect::<Vec<_>>(),
        }),
        text,
    ))
}

/// What is shown of stored tokens: never the tokens or the secret.
fn summary(t: &StoredTokens) -> Value {
    json!({
        "issuer": t.issuer,
        "resource": t.resource,
        "client_id": t.client_id,
        "scope": t.scope,
        "expires_at": t.expires_at,
        "refreshable": t.refresh_token.is_some(),
    })
}

fn describe(t: &StoredTokens) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let expiry = match t.expires_at {
        Some(at) if at > now => format!("expires in {} s", at - now),
        Some(_) => "expired".to_owned(),
        None => "no expiry given".to_owned(),
    };
    format!(
        "  authorization server: {}\n  client: {}\n  scope: {}\n  access token: {expiry}; \
         refresh token: {}",
        one_line(&t.issuer),
        one_line(&t.client_id),
        one_line(t.scope.as_deref().unwrap_or("(none)")),
        if t.refresh_token.is_some() {
            "yes"
        } else {
            "no"
        }
    )
}

/// Starts the desktop opener on `url` (`$BROWSER`, else `open` on macOS, the URL handler of
/// `url.dll` on Windows, else `xdg-open`); `None` when none could start (the URL is printed
/// anyway).
fn open_browser(url: &str) -> Option<Child> {
    let browser = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty());
    let mut opener = match browser {
        Some(program) => Process::new(program.trim()),
        None if cfg!(target_os = "macos") => Process::new("open"),
        None if cfg!(windows) => {
            // Not `cmd /c start`: cmd would read the URL's `&` as a command separator.
            let mut rundll = Process::new("rundll32");
            rundll.arg("url.dll,FileProtocolHandler");
            rundll
        }
        None => Process::new("xdg-open"),
    };
    opener
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An environment of `pairs` alone, for the paths mcpb's files take.
    pub(crate) fn env_of<'a>(
        pairs: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    fn path_on(platform: Platform, pairs: &[(&str, &str)]) -> String {
        store_path_in(platform, env_of(pairs))
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn the_token_file_on_windows_is_under_appdata() {
        let env = [
            ("APPDATA", r"C:\Users\a\AppData\Roaming"),
            ("USERPROFILE", r"C:\Users\a"),
            ("XDG_CONFIG_HOME", "/ignored"),
        ];
        assert_eq!(
            path_on(Platform::Windows, &env),
            r"C:\Users\a\AppData\Roaming\mcpb\tokens.json"
        );
        assert_eq!(
            path_on(Platform::Windows, &[("USERPROFILE", r"C:\Users\a")]),
            r"C:\Users\a\AppData\Roaming\mcpb\tokens.json"
        );
        let named = [("MCPB_TOKEN_FILE", r"D:\t.json"), ("APPDATA", r"C:\R")];
        assert_eq!(path_on(Platform::Windows, &named), r"D:\t.json");
    }

    // The Unix form is joined with the separator of the system it runs on.
    #[cfg(unix)]
    #[test]
    fn the_token_file_on_unix_is_under_the_xdg_config_home() {
        let env = [("HOME", "/home/a"), ("APPDATA", "/ignored")];
        assert_eq!(
            path_on(Platform::Unix, &env),
            "/home/a/.config/mcpb/tokens.json"
        );
        let env = [("HOME", "/home/a"), ("XDG_CONFIG_HOME", "/cfg")];
        assert_eq!(path_on(Platform::MacOs, &env), "/cfg/mcpb/tokens.json");
        assert_eq!(path_on(Platform::Unix, &[]), "./mcpb/tokens.json");
        let named = [("MCPB_TOKEN_FILE", "/t.json"), ("HOME", "/home/a")];
        assert_eq!(path_on(Platform::Unix, &named), "/t.json");
    }

    #[test]
    fn the_redirect_port_of_an_oauth_block_is_read() {
        let port = |h: RedirectHandler| redirect_port(&OAuthConfig::authorization_code(h));
        assert_eq!(port(RedirectHandler::loopback(|_| {}).port(8976)), 8976);
        assert_eq!(port(RedirectHandler::loopback(|_| {})), 0);
        assert_eq!(
            port(RedirectHandler::custom("http://x/cb", |_| Err(
                String::new()
            ))),
            0
        );
    }
}
