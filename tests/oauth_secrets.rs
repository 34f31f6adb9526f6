//! What an authorization server says back never shows the credentials we sent it: a token
//! endpoint that quotes the refresh token in its refusal shows it neither in a log line nor in
//! an error.

mod common;
mod oauth_support;
mod support_remote;

use common::capture::{capture_logs, logs};
use mcp_blocking::auth::{MemoryTokenStore, OAuthConfig, RedirectHandler};
use mcp_blocking::{Client, ServerConfig};
use oauth_support::{headless, AsOptions, AuthServer};

/// Signs in to server `name` at `url` (of an authorization server whose refusals quote the
/// refresh token), then revokes the access token: the server's 401 makes the client refresh,
/// the refusal quotes the refresh token, and the client then signs in anew. Closes the client.
fn refused_refresh(name: &str, url: impl FnOnce(&AuthServer) -> String) -> AuthServer {
    let server = AuthServer::start(AsOptions {
        refresh: true,
        echo_refresh: true,
        ..AsOptions::default()
    });
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        headless,
    ))
    .token_store(MemoryTokenStore::new());
    let client = Client::connect(
        ServerConfig::http(name, url(&server))
            .with_timeout_secs(10.0)
            .with_oauth(oauth),
    )
    .expect("connect");
    server.state.revoke_access_tokens();
    let _ = client.list_tools();
    client.close().expect("close");
    server
}

#[test]
fn a_refusal_quoting_the_refresh_token_shows_it_nowhere() {
    capture_logs();
    let server = refused_refresh("secured", |s| s.mcp_url());
    assert!(
        server
            .state
            .refresh_grants
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0,
        "the client tried to refresh"
    );
    let logs = logs();
    assert!(
        logs.iter().any(|l| l.contains("rejected")),
        "the refusal is logged: {logs:#?}"
    );
    // This crate's lines (ureq's own trace level dumps every byte it sends, which only the
    // program's logger can cap, as mcpb does).
    // The refusal reads "refresh token rt-N rejected" (the tokens are `rt-1`, `rt-2`, ...).
    for line in logs.iter().filter(|l| l.contains(" mcp_blocking")) {
        assert!(
            !line.contains("refresh token rt-"),
            "a log line shows the refresh token: {line}"
        );
    }
}

#[test]
fn a_refusal_quoting_the_basic_client_secret_shows_it_nowhere() {
    capture_logs();
    // The secret travels only inside the Basic `Authorization` header; the refusal quotes it
    // decoded.
    let server = AuthServer::start(AsOptions {
        echo_client_secret: true,
        ..AsOptions::default()
    });
    let e = OAuthConfig::client_credentials("m2m", "m2m-secret")
        .token_store(MemoryTokenStore::new())
        .login("secured", &server.mcp_url())
        .expect_err("the grant is refused");
    let shown = e.to_string();
    assert!(shown.contains("rejected"), "the refusal is shown: {shown}");
    assert!(
        !shown.contains("m2m-secret"),
        "the error shows the client secret: {shown}"
    );
    let logs = logs();
    for line in logs.iter().filter(|l| l.contains(" mcp_blocking")) {
        assert!(
            !line.contains("m2m-secret"),
            "a log line shows the client secret: {line}"
        );
    }
}

#[test]
fn a_failed_refresh_is_logged_without_the_server_url_s_query() {
    capture_logs();
    let _server = refused_refresh("query", |s| format!("{}?key=qv-oauth-5150", s.mcp_url()));
    let logs = logs();
    assert!(
        logs.iter().any(|l| l.contains("refreshing the token of")),
        "the failed refresh is logged: {logs:#?}"
    );
    for line in logs.iter().filter(|l| l.contains(" mcp_blocking")) {
        assert!(
            !line.contains("qv-oauth-5150"),
            "a log line shows the query: {line}"
        );
    }
}
