//! `RedirectHandler::none`, for programs that cannot wait for a person: stored tokens are used
//! and refreshed, and a server that needs a new sign-in fails the request at once with
//! `Error::SignInRequired`, without contacting the authorization server.

mod oauth_support;
mod support_remote;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_blocking::auth::{MemoryTokenStore, OAuthConfig, RedirectHandler, TokenStore};
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{headless, AsOptions, AuthServer};

fn config(server: &AuthServer) -> ServerConfig {
    ServerConfig::http("secured", server.mcp_url()).with_timeout_secs(5.0)
}

/// A person signs in once, headlessly, into `store`.
fn signed_in(server: &AuthServer, store: &Arc<dyn TokenStore>) {
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://127.0.0.1:3000/callback",
        headless,
    ))
    .token_store_shared(store.clone())
    .login_for(&config(server))
    .expect("signed in");
}

fn unattended(store: &Arc<dyn TokenStore>) -> OAuthConfig {
    OAuthConfig::authorization_code(RedirectHandler::none()).token_store_shared(store.clone())
}

#[test]
fn a_needed_sign_in_fails_at_once_and_contacts_no_one() {
    let server = AuthServer::start(AsOptions::default());
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    let started = Instant::now();
    let err = Client::connect(config(&server).with_oauth(unattended(&store))).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "{err}");
    assert!(err.is_sign_in_required(), "{err:?}");
    assert!(
        matches!(&err, Error::Connect(c) if c.kind() == ConnectErrorKind::Auth),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("asks for an OAuth sign-in"), "{text}");
    assert!(server.requests_to("/.well-known").is_empty());
    assert!(server.requests_to("/register").is_empty());
    assert!(server.requests_to("/authorize").is_empty());

    let err = unattended(&store)
        .login_for(&config(&server))
        .expect_err("no one to sign in");
    assert!(
        matches!(&err, Error::SignInRequired { server, .. } if server == "secured"),
        "{err:?}"
    );
}

#[test]
fn stored_tokens_are_used_and_refreshed_and_a_lost_sign_in_is_reported() {
    let server = AuthServer::start(AsOptions::default());
    let store: Arc<dyn TokenStore> = Arc::new(MemoryTokenStore::new());
    signed_in(&server, &store);
    let client = Client::connect(config(&server).with_oauth(unattended(&store))).expect("connects");
    assert_eq!(client.list_tools().expect("tools").len(), 1);

    server.state.revoke_access_tokens();
    assert_eq!(client.list_tools().expect("refreshed").len(), 1);
    assert_eq!(server.state.refresh_grants.load(Ordering::SeqCst), 1);

    // Neither token is accepted any more: a new sign-in is needed, and reported at once.
    server.state.revoke_access_tokens();
    server.state.refresh.lock().unwrap().clear();
    let err = client.list_tools().unwrap_err();
    assert!(
        matches!(&err, Error::SignInRequired { .. }) && err.is_sign_in_required(),
        "{err:?}"
    );
    assert!(!err.is_retryable());
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);
    client.close().unwrap();
}
