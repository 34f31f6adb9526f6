//! Token scope and token state against the loopback authorization server of
//! `tests/oauth_support/`: a protected resource that names a resource broader than itself is
//! refused and its token never reaches another server (nor does a stored token for such a
//! resource), an absurd `expires_in` does not make every request refresh, and a token file that
//! cannot be read back fails the sign-in instead of losing it.

mod oauth_support;
mod support_remote;

use std::sync::atomic::Ordering;

use mcp_blocking::auth::{FileTokenStore, OAuthConfig, RedirectHandler, StoredTokens, TokenStore};
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{headless, AsOptions, AuthServer};

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
            .timeout_secs(10.0)
            .oauth(oauth),
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
        .err()
        .expect("a resource of `http://` is refused");
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
