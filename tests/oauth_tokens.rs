//! Token scope and token state against the loopback authorization server of
//! `tests/oauth_support/`: a protected resource that names a resource broader than itself is
//! refused and its token never reaches another server (nor does a stored token for such a
//! resource), an absurd `expires_in` does not make every request refresh, and a token file that
//! cannot be read back fails the sign-in instead of losing it.

#[cfg(feature = "cli")]
mod common;
mod oauth_support;
mod support_remote;

use std::sync::atomic::Ordering;

use mcp_blocking::auth::{FileTokenStore, OAuthConfig, RedirectHandler, StoredTokens, TokenStore};
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{headless, AsOptions, AuthServer};

#[cfg(feature = "cli")]
use common::mcpb::{mcpb_with_token_file, with_token_file};

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "mcpb-oauth-tokens-{}-{name}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ))
}

/// An authorization that completes without a browser, keeping tokens in `store`.
fn signing_in(store: impl TokenStore + 'static) -> OAuthConfig {
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        headless,
    ))
    .token_store(store)
}

/// An authorization that can only use what `store` holds (signing in anew fails).
fn stored_only(store: impl TokenStore + 'static) -> OAuthConfig {
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        |_| Err("no sign-in in this test".into()),
    ))
    .token_store(store)
}

fn connect(server: &AuthServer, oauth: OAuthConfig) -> Result<Client, Error> {
    Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_timeout_secs(10.0)
            .with_oauth(oauth),
    )
}

/// The `Authorization` values `server` received.
fn authorizations(server: &AuthServer) -> Vec<String> {
    server
        .http
        .requests()
        .iter()
        .filter_map(|r| r.header("authorization").map(str::to_owned))
        .collect()
}

/// A token file holding one entry for `resource` with access token `token`, as a version
/// without the resource rule may have written it.
fn token_file_with(path: &std::path::Path, resource: &str, token: &str) {
    let entry = serde_json::json!({"tokens": [{
        "issuer": "http://127.0.0.1:9/",
        "resource": resource,
        "client_id": "c",
        "token_endpoint_auth_method": "none",
        "token_endpoint": "http://127.0.0.1:9/token",
        "access_token": token,
    }]});
    std::fs::write(path, entry.to_string()).unwrap();
}

#[test]
fn a_resource_broader_than_the_server_is_refused_and_its_token_goes_nowhere() {
    let path = temp_path("broad");
    let hostile = AuthServer::start(AsOptions {
        prm_resource: Some("http://".into()),
        ..AsOptions::default()
    });
    let err = connect(&hostile, signing_in(FileTokenStore::new(&path)))
        .expect_err("a resource of `http://` is refused");
    let text = err.to_string();
    assert!(
        text.contains("does not identify this server"),
        "the refusal says why: {text}"
    );
    assert_eq!(
        hostile.state.code_grants.load(Ordering::SeqCst),
        0,
        "no token was asked for"
    );

    // Another server sharing the token store gets no token and no sign-in.
    let other = AuthServer::start(AsOptions::default());
    let store = FileTokenStore::new(&path);
    assert!(store.load(&other.mcp_url()).unwrap().is_empty());
    assert!(connect(&other, stored_only(FileTokenStore::new(&path))).is_err());
    assert_eq!(authorizations(&other), Vec::<String>::new());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_stored_token_for_a_broader_resource_is_not_sent() {
    let server = AuthServer::start(AsOptions::default());
    for broad in [
        "http://",
        "http:",
        "http://127.0.0.1",
        "http://127.0.0.1:1/mcp",
        "http://127.0.0.1.evil/mcp",
    ] {
        let path = temp_path("stored");
        token_file_with(&path, broad, "leaked-token");
        let store = FileTokenStore::new(&path);
        assert!(
            store.load(&server.mcp_url()).unwrap().is_empty(),
            "`{broad}` does not identify {}",
            server.mcp_url()
        );
        assert!(connect(&server, stored_only(FileTokenStore::new(&path))).is_err());
        let sent = authorizations(&server);
        assert!(
            !sent.iter().any(|a| a.contains("leaked-token")),
            "a token for `{broad}` was sent: {sent:?}"
        );
        let _ = std::fs::remove_file(&path);
    }
}

/// A store that answers every lookup with everything it holds, whatever the URL.
struct Careless(Vec<StoredTokens>);

impl TokenStore for Careless {
    fn load(&self, _server_url: &str) -> Result<Vec<StoredTokens>, String> {
        Ok(self.0.clone())
    }
    fn save(&self, _tokens: &StoredTokens) -> Result<(), String> {
        Ok(())
    }
    fn remove(&self, _server_url: &str) -> Result<usize, String> {
        Ok(0)
    }
}

#[test]
fn a_token_a_custom_store_hands_out_for_another_resource_is_not_sent() {
    let server = AuthServer::start(AsOptions::default());
    let path = temp_path("careless");
    token_file_with(&path, "http://", "leaked-token");
    let entries = FileTokenStore::new(&path).store_entries();
    let _ = std::fs::remove_file(&path);
    assert_eq!(entries.len(), 1);
    assert!(connect(&server, stored_only(Careless(entries))).is_err());
    let sent = authorizations(&server);
    assert!(!sent.iter().any(|a| a.contains("leaked-token")), "{sent:?}");
}

/// Every entry of a token file, whatever its resource.
trait StoreEntries {
    fn store_entries(&self) -> Vec<StoredTokens>;
}

impl StoreEntries for FileTokenStore {
    fn store_entries(&self) -> Vec<StoredTokens> {
        let text = std::fs::read_to_string(self.path()).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        serde_json::from_value(doc["tokens"].clone()).unwrap()
    }
}

#[test]
fn an_absurd_expires_in_neither_panics_nor_refreshes_on_every_request() {
    let server = AuthServer::start(AsOptions {
        expires_in: u64::MAX,
        ..AsOptions::default()
    });
    let store = std::sync::Arc::new(mcp_blocking::auth::MemoryTokenStore::new());
    let client = connect(&server, signing_in(Shared(store.clone()))).expect("connects");
    for _ in 0..3 {
        client.list_tools().unwrap();
        client
            .call_tool("hello", serde_json::json!({}))
            .expect("the call succeeds");
    }
    assert_eq!(server.state.code_grants.load(Ordering::SeqCst), 1);
    assert_eq!(
        server.state.refresh_grants.load(Ordering::SeqCst),
        0,
        "a token that lives `u64::MAX` seconds is not refreshed"
    );
    let stored = store.load(&server.mcp_url()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let at = stored[0].expires_at.expect("an expiry is kept");
    let most = now + mcp_blocking::auth::MAX_TOKEN_LIFETIME.as_secs();
    assert!(
        at > now + 3_600 && at <= most,
        "{at} not within ({now}, {most}]"
    );
    client.close().unwrap();
}

/// A store shared with the test, to look at what was saved.
struct Shared(std::sync::Arc<mcp_blocking::auth::MemoryTokenStore>);

impl TokenStore for Shared {
    fn load(&self, server_url: &str) -> Result<Vec<StoredTokens>, String> {
        self.0.load(server_url)
    }
    fn save(&self, tokens: &StoredTokens) -> Result<(), String> {
        self.0.save(tokens)
    }
    fn remove(&self, server_url: &str) -> Result<usize, String> {
        self.0.remove(server_url)
    }
}

/// A token file cut short in the middle of an entry, as a full disk or a crash leaves it.
fn truncated_token_file(path: &std::path::Path) -> String {
    let text = r#"{"tokens": [{"issuer": "https://as", "resource": "https://h/mcp", "acc"#;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    text.to_owned()
}

#[test]
fn login_with_a_truncated_token_file_fails_before_anyone_signs_in() {
    let server = AuthServer::start(AsOptions::default());
    let path = temp_path("truncated");
    let before = truncated_token_file(&path);
    let oauth = signing_in(FileTokenStore::new(&path));
    let err = oauth
        .login("secured", &server.mcp_url())
        .expect_err("a sign-in that cannot be kept fails");
    let text = err.to_string();
    assert!(matches!(err, Error::Unauthorized { .. }), "{err:?}");
    assert!(
        text.contains(&path.display().to_string()) && text.contains("truncated"),
        "the failure names the file and what is wrong with it: {text}"
    );
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let _ = std::fs::remove_file(&path);
}

/// A store that forgets what it is given, or fails to save it.
struct Lossy {
    save_fails: bool,
}

impl TokenStore for Lossy {
    fn load(&self, _server_url: &str) -> Result<Vec<StoredTokens>, String> {
        Ok(Vec::new())
    }
    fn save(&self, _tokens: &StoredTokens) -> Result<(), String> {
        if self.save_fails {
            Err("no space left on the device".into())
        } else {
            Ok(())
        }
    }
    fn remove(&self, _server_url: &str) -> Result<usize, String> {
        Ok(0)
    }
}

#[test]
fn login_fails_when_the_store_does_not_give_the_sign_in_back() {
    let server = AuthServer::start(AsOptions::default());
    let err = signing_in(Lossy { save_fails: false })
        .login("secured", &server.mcp_url())
        .expect_err("a sign-in the store forgot is not reported as done");
    assert!(
        err.to_string().contains("did not keep the sign-in"),
        "{err}"
    );
}

#[test]
fn an_authorization_whose_tokens_cannot_be_saved_fails_saying_why() {
    let server = AuthServer::start(AsOptions::default());
    let err = signing_in(Lossy { save_fails: true })
        .login("secured", &server.mcp_url())
        .expect_err("login");
    assert!(err.to_string().contains("no space left"), "{err}");
    let err = connect(&server, signing_in(Lossy { save_fails: true }))
        .expect_err("connecting authorizes, and the sign-in cannot be kept");
    assert!(err.to_string().contains("no space left"), "{err}");
}

/// Runs `mcpb login` (loopback listener) and, should it print an authorization URL, plays the
/// browser; returns how it ended and everything it wrote on stderr.
#[cfg(feature = "cli")]
fn login_playing_the_browser(store: &std::path::Path, url: &str) -> (std::process::Output, String) {
    use std::io::BufRead;
    let mut child = with_token_file(store, &["--url", url, "--timeout", "10", "login"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start mcpb login");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        seen.push_str(&line);
        let trimmed = line.trim();
        if trimmed.starts_with("http") && trimmed.contains("/authorize?") {
            oauth_support::browser(trimmed).expect("the browser reaches the loopback listener");
        }
        line.clear();
    }
    (child.wait_with_output().expect("mcpb login ends"), seen)
}

#[cfg(feature = "cli")]
#[test]
fn mcpb_with_a_truncated_token_file_says_so_instead_of_signing_in_or_a_bare_401() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let path = temp_path("cli").join("tokens.json");
    let before = truncated_token_file(&path);
    let shown = path.display().to_string();

    let (out, seen) = login_playing_the_browser(&path, &url);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}{seen}");
    assert!(!stdout.contains("Signed in"), "{stdout}");
    // A failure of the token file, as `auth status` reports one: exit 2, naming the file.
    assert_eq!(out.status.code(), Some(2), "{seen}");
    assert!(
        seen.lines()
            .any(|l| l.starts_with("mcpb: ") && l.contains(&shown) && l.contains("truncated")),
        "{seen}"
    );
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 0);
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 0);

    let out = mcpb_with_token_file(&path, &["--url", &url, "--timeout", "10", "tools"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&shown) && stderr.contains("truncated"),
        "the next command names the token file: {stderr}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[cfg(feature = "cli")]
#[test]
fn auth_status_does_not_count_a_token_for_a_broader_resource() {
    let server = AuthServer::start(AsOptions::default());
    let path = temp_path("status");
    token_file_with(&path, "http://", "leaked-token");
    let out = mcpb_with_token_file(
        &path,
        &["--url", &server.mcp_url(), "--json", "auth", "status"],
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["signed_in"], false, "{doc}");
    let out = mcpb_with_token_file(&path, &["--url", &server.mcp_url(), "auth", "status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Not signed in"), "{text}");
    let _ = std::fs::remove_file(&path);
}

#[cfg(feature = "cli")]
#[test]
fn mcpb_login_refuses_a_resource_broader_than_the_server_and_stores_nothing() {
    let hostile = AuthServer::start(AsOptions {
        prm_resource: Some("http://".into()),
        ..AsOptions::default()
    });
    let other = AuthServer::start(AsOptions::default());
    let path = temp_path("cli-broad").join("tokens.json");
    let (out, seen) = login_playing_the_browser(&path, &hostile.mcp_url());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}{seen}");
    assert!(!stdout.contains("Signed in"), "{stdout}");
    assert!(seen.contains("does not identify this server"), "{seen}");
    assert_eq!(hostile.state.authorize_requests.load(Ordering::SeqCst), 0);
    let stored = FileTokenStore::new(&path);
    assert!(stored.load(&hostile.mcp_url()).unwrap().is_empty());
    assert!(stored.load(&other.mcp_url()).unwrap().is_empty());
    let out = mcpb_with_token_file(&path, &["--url", &other.mcp_url(), "auth", "status"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Not signed in"));
    let out = mcpb_with_token_file(
        &path,
        &["--url", &other.mcp_url(), "--timeout", "10", "tools"],
    );
    assert!(!out.status.success());
    assert_eq!(authorizations(&other), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_server_quoting_the_access_token_back_shows_none_of_it_in_the_error() {
    let server = AuthServer::start(AsOptions {
        echo_authorization: true,
        ..AsOptions::default()
    });
    let client = connect(
        &server,
        signing_in(mcp_blocking::auth::MemoryTokenStore::new()),
    )
    .expect("connect");
    let token = server
        .state
        .access
        .lock()
        .unwrap()
        .last()
        .cloned()
        .expect("a token was issued");
    for tool in ["leak_http", "leak_rpc"] {
        let err = client
            .call_tool(tool, serde_json::json!({}))
            .expect_err("the server refuses");
        let shown = format!("{err} {err:?}");
        assert!(
            shown.contains("you sent"),
            "{tool}: the server's text is kept: {shown}"
        );
        assert!(
            !shown.contains(&token),
            "{tool}: the access token is hidden: {shown}"
        );
    }
    client.close().expect("close");
}

#[test]
fn a_token_issued_for_less_than_the_refresh_margin_is_used_while_it_lasts() {
    // 30 s, no refresh token: the token is good for 30 s and is used, not dropped at once (which
    // would authorize again before every request).
    let server = AuthServer::start(AsOptions {
        expires_in: 30,
        refresh: false,
        ..AsOptions::default()
    });
    let oauth = OAuthConfig::client_credentials("m2m", "m2m-secret");
    let client = Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_oauth(oauth)
            .with_timeout_secs(10.0),
    )
    .expect("connects");
    for _ in 0..3 {
        client.list_tools().expect("tools/list");
    }
    client.close().expect("closed");
    assert_eq!(
        server.requests_to("/token").len(),
        1,
        "one token served every request"
    );
}
