//! `mcpb --url URL login | logout | auth status`: OAuth sign-in to a remote server, kept in a
//! token file that later commands on the same URL use (and refresh) silently.
//!
//! The token file is `$MCPB_TOKEN_FILE`, else `$XDG_CONFIG_HOME/mcpb/tokens.json`, else
//! `~/.config/mcpb/tokens.json` (created with mode 0600). `login` prints the authorization URL
//! on stderr, tries the desktop opener (`$BROWSER`, else `xdg-open`, or `open` on macOS) and
//! waits on a loopback listener; `--paste` prints the URL and reads the address the browser
//! landed on from stdin instead. Nothing printed shows a token or a secret.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command as Process, ExitCode, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use mcp_blocking::auth::{FileTokenStore, OAuthConfig, RedirectHandler, StoredTokens, TokenStore};
use mcp_blocking::config::TransportConfig;
use mcp_blocking::ServerConfig;
use serde_json::{json, Value};

/// The redirect URI announced by the paste flow (nothing needs to listen there).
const PASTE_REDIRECT: &str = "http://127.0.0.1:8976/callback";

/// What an auth command line asks for.
#[derive(Debug, Default)]
struct AuthArgs {
    command: String,
    url: Option<String>,
    json: bool,
    paste: bool,
    client_id: Option<String>,
    client_secret: Option<String>,
    scopes: Vec<String>,
    timeout: Option<f64>,
}

/// Options of the main parser that take a value (so their value is not a command word).
const VALUED: [&str; 12] = [
    "--url",
    "--transport",
    "--timeout",
    "--client-id",
    "--client-secret",
    "--scope",
    "--header",
    "-H",
    "--config",
    "--server",
    "--stdio",
    "--env",
];

/// Handles `login`, `logout` and `auth status`; `None` for every other command line.
pub(crate) fn main(argv: &[String]) -> Option<ExitCode> {
    let first = first_word(argv)?;
    if !matches!(first.as_str(), "login" | "logout" | "auth") {
        return None;
    }
    let json_mode = argv.iter().any(|a| a == "--json");
    Some(match parse(argv) {
        Ok(a) => {
            let result = match a.command.as_str() {
                "login" => login(&a),
                "logout" => logout(&a),
                _ => status(&a),
            };
            match result {
                Ok((doc, text)) => {
                    if a.json {
                        println!("{doc}");
                    } else {
                        println!("{text}");
                    }
                    ExitCode::SUCCESS
                }
                Err((code, msg)) => fail(json_mode, code, &msg),
            }
        }
        Err(msg) => fail(json_mode, 2, &msg),
    })
}

fn fail(json_mode: bool, code: u8, msg: &str) -> ExitCode {
    if json_mode {
        println!("{}", json!({"error": {"message": msg, "exit": code}}));
    } else {
        eprintln!("mcpb: {msg}");
    }
    ExitCode::from(code)
}

fn first_word(argv: &[String]) -> Option<String> {
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "--" {
            return it.next().cloned();
        }
        if a.starts_with('-') && a != "-" {
            if VALUED.contains(&a.as_str()) || a == "-e" {
                it.next();
            }
            continue;
        }
        return Some(a.clone());
    }
    None
}

fn parse(argv: &[String]) -> Result<AuthArgs, String> {
    let mut a = AuthArgs::default();
    let mut words = Vec::new();
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next().cloned())
                .ok_or(format!("{name} needs a value"))
        };
        match name {
            "--url" => a.url = Some(value()?),
            "--json" => a.json = true,
            "--paste" => a.paste = true,
            "--client-id" => a.client_id = Some(value()?),
            "--client-secret" => a.client_secret = Some(value()?),
            "--scope" => a
                .scopes
                .extend(value()?.split_whitespace().map(str::to_owned)),
            "--timeout" => {
                let raw = value()?;
                a.timeout = Some(
                    raw.trim()
                        .parse()
                        .ok()
                        .filter(|s: &f64| *s > 0.0 && *s <= 86_400.0)
                        .ok_or(format!(
                            "--timeout must be a number of seconds, not `{raw}`"
                        ))?,
                );
            }
            "--transport" => {
                let t = value()?;
                if !matches!(t.as_str(), "http" | "streamable-http" | "sse") {
                    return Err(format!(
                        "OAuth applies to http and sse servers, not `--transport {t}`"
                    ));
                }
            }
            "--verbose" => {}
            n if n.len() >= 2 && n.starts_with('-') && n[1..].bytes().all(|b| b == b'v') => {}
            n if n.starts_with('-') => {
                return Err(format!(
                    "`{n}` does not apply to login, logout and auth status (they take --url, \
                     --paste, --client-id, --client-secret, --scope, --timeout, --json)"
                ))
            }
            _ => words.push(arg.clone()),
        }
    }
    a.command = match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["login"] => "login".into(),
        ["logout"] => "logout".into(),
        ["auth", "status"] => "status".into(),
        ["auth", ..] => return Err("usage: mcpb --url URL auth status".into()),
        _ => return Err(format!("unexpected arguments: {}", words.join(" "))),
    };
    if a.url.is_none() {
        return Err(format!("`{}` needs --url URL", words.join(" ")));
    }
    if a.client_secret.is_some() && a.client_id.is_none() {
        return Err("--client-secret needs --client-id".into());
    }
    if a.command != "login" && (a.paste || a.client_id.is_some() || !a.scopes.is_empty()) {
        return Err("--paste, --client-id, --client-secret and --scope apply to login".into());
    }
    Ok(a)
}

/// The token file.
pub(crate) fn store_path() -> PathBuf {
    if let Some(p) = std::env::var_os("MCPB_TOKEN_FILE").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("mcpb").join("tokens.json")
}

/// `--client-id ID --client-secret SECRET [--scope S]` on a command other than `login`: the
/// client-credentials grant (machine to machine).
struct MachineClient {
    id: String,
    secret: String,
    scopes: Vec<String>,
}

static MACHINE_CLIENT: OnceLock<MachineClient> = OnceLock::new();

/// Takes `--client-id`, `--client-secret` and `--scope` out of a command line that is not an
/// auth command (they select the client-credentials grant for `--url`); the rest goes to the
/// main parser.
pub(crate) fn take_client_options(argv: Vec<String>) -> Result<Vec<String>, String> {
    let (mut id, mut secret, mut scopes) = (None, None, Vec::new());
    let mut rest = Vec::new();
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        if arg == "--" {
            rest.push(arg);
            rest.extend(it.by_ref());
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let slot = match name.as_str() {
            "--client-id" => 0,
            "--client-secret" => 1,
            "--scope" => 2,
            _ => {
                rest.push(arg);
                continue;
            }
        };
        let value = inline
            .or_else(|| it.next())
            .ok_or(format!("{name} needs a value"))?;
        match slot {
            0 => id = Some(value),
            1 => secret = Some(value),
            _ => scopes.extend(value.split_whitespace().map(str::to_owned)),
        }
    }
    match (id, secret) {
        (None, None) if scopes.is_empty() => Ok(rest),
        (Some(id), Some(secret)) => {
            if !rest.iter().any(|a| a == "--url" || a.starts_with("--url=")) {
                return Err("--client-id and --client-secret apply to --url".into());
            }
            let _ = MACHINE_CLIENT.set(MachineClient { id, secret, scopes });
            Ok(rest)
        }
        _ => Err(
            "--client-id with --client-secret (and optionally --scope) sign in as a machine \
             client; for a person's sign-in use `login`"
                .into(),
        ),
    }
}

/// A remote config with the stored sign-in of its URL, when there is one: requests carry the
/// token and refresh it; a sign-in that can no longer be refreshed fails with a hint to log in.
/// With `--client-id` and `--client-secret`, the client-credentials grant instead.
pub(crate) fn with_stored_tokens(config: ServerConfig) -> ServerConfig {
    let url = match config.transport() {
        TransportConfig::StreamableHttp(h) => h.url.clone(),
        TransportConfig::Sse(s) => s.url.clone(),
        _ => return config,
    };
    let store = FileTokenStore::new(store_path());
    if let Some(m) = MACHINE_CLIENT.get() {
        let oauth = OAuthConfig::client_credentials(&m.id, &m.secret)
            .scopes(m.scopes.clone())
            .token_store(store);
        return config.oauth(oauth);
    }
    match store.load(&url) {
        Ok(found) if !found.is_empty() => {}
        _ => return config,
    }
    let hint = format!("the stored sign-in is no longer valid; run `mcpb --url {url} login`");
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://127.0.0.1/callback",
        move |_| Err(hint.clone()),
    ))
    .token_store(store);
    config.oauth(oauth)
}

type Outcome = Result<(Value, String), (u8, String)>;

fn login(a: &AuthArgs) -> Outcome {
    let url = a.url.clone().unwrap_or_default();
    let opener: Arc<Mutex<Option<Child>>> = Arc::default();
    let redirect = if a.paste {
        RedirectHandler::paste(PASTE_REDIRECT, |auth_url| {
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
            eprintln!(
                "Sign in with your browser; if it does not open, visit:\n\n  {auth_url}\n\n\
                 Waiting for the browser to come back..."
            );
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = open_browser(auth_url);
        })
    };
    let mut oauth = OAuthConfig::authorization_code(redirect)
        .token_store(FileTokenStore::new(store_path()))
        .client_name("mcpb");
    if let Some(id) = &a.client_id {
        oauth = oauth.client_id(id);
    }
    if let Some(secret) = &a.client_secret {
        oauth = oauth.client_secret(secret);
    }
    if !a.scopes.is_empty() {
        oauth = oauth.scopes(a.scopes.clone());
    }
    if let Some(t) = a.timeout {
        oauth = oauth.timeout(std::time::Duration::from_secs_f64(t));
    }
    let result = oauth.login(&host_of(&url), &url);
    if let Some(mut child) = opener.lock().unwrap_or_else(|p| p.into_inner()).take() {
        if !matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    let tokens = result.map_err(|e| (3, e.to_string()))?;
    Ok((
        json!({"signed_in": true, "server": url, "tokens": [summary(&tokens)]}),
        format!("Signed in to {url}.\n{}", describe(&tokens)),
    ))
}

fn logout(a: &AuthArgs) -> Outcome {
    let url = a.url.clone().unwrap_or_default();
    let removed = FileTokenStore::new(store_path())
        .remove(&url)
        .map_err(|e| (2, e))?;
    Ok((
        json!({"signed_in": false, "server": url, "removed": removed}),
        if removed == 0 {
            format!("No stored sign-in for {url}.")
        } else {
            format!("Signed out of {url}.")
        },
    ))
}

fn status(a: &AuthArgs) -> Outcome {
    let url = a.url.clone().unwrap_or_default();
    let found = FileTokenStore::new(store_path())
        .load(&url)
        .map_err(|e| (2, e))?;
    let text = if found.is_empty() {
        format!("Not signed in to {url}.")
    } else {
        let lines: Vec<String> = found.iter().map(describe).collect();
        format!("Signed in to {url}.\n{}", lines.join("\n"))
    };
    Ok((
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
        t.issuer,
        t.client_id,
        t.scope.as_deref().unwrap_or("(none)"),
        if t.refresh_token.is_some() {
            "yes"
        } else {
            "no"
        }
    )
}

/// Starts the desktop opener on `url` (`$BROWSER`, else `open` on macOS, else `xdg-open`);
/// `None` when none could start (the URL is printed anyway).
fn open_browser(url: &str) -> Option<Child> {
    let program = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".into()
            } else {
                "xdg-open".into()
            }
        });
    Process::new(program.trim())
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()
}

fn host_of(url: &str) -> String {
    url.split("://")
        .nth(1)
        .and_then(|r| r.split(['/', '?', '#']).next())
        .unwrap_or("server")
        .to_owned()
}
