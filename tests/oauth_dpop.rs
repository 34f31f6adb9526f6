//! DPoP (RFC 9449) against the loopback authorization server: token requests carry proofs, a
//! `use_dpop_nonce` answer is followed by exactly one more request with the server's nonce, the
//! `DPoP` token is kept with its key, and neither the key nor a proof shows in an error or a
//! log line.

mod common;
mod oauth_support;
mod support_remote;

use base64::Engine as _;
use common::capture::{capture_logs, logs};
use mcp_blocking::auth::{MemoryTokenStore, OAuthConfig, RedirectHandler};
use mcp_blocking::{Client, ServerConfig};
use oauth_support::{headless, AsOptions, AuthServer};
use serde_json::Value;

fn claims(proof: &str) -> (Value, Value) {
    let part = |i: usize| -> Value {
        let raw = proof.split('.').nth(i).expect("a compact JWS");
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(raw)
                .expect("base64url"),
        )
        .expect("JSON")
    };
    (part(0), part(1))
}

fn dpop_server() -> AuthServer {
    AuthServer::start(AsOptions {
        dpop_nonce: Some("server-nonce-1".into()),
        ..AsOptions::default()
    })
}

#[test]
fn a_use_dpop_nonce_answer_is_retried_once_with_the_nonce() {
    capture_logs();
    let server = dpop_server();
    let oauth = OAuthConfig::client_credentials("m2m", "m2m-secret")
        .dpop(true)
        .token_store(MemoryTokenStore::new());
    let tokens = oauth
        .login("secured", &server.mcp_url())
        .expect("the grant succeeds with the nonce");
    assert_eq!(tokens.token_type.as_deref(), Some("DPoP"));
    assert!(tokens.is_dpop());
    let key = tokens
        .dpop_key
        .clone()
        .expect("the key is kept with the token");

    let token_requests = server.requests_to("/token");
    assert_eq!(
        token_requests.len(),
        2,
        "one request, then one with the nonce"
    );
    let endpoint = format!("{}/token", server.origin());
    let mut keys = Vec::new();
    for (i, r) in token_requests.iter().enumerate() {
        let proofs = r.header_values("DPoP");
        assert_eq!(proofs.len(), 1, "one proof per request");
        let (header, c) = claims(proofs[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"]["x"].is_string() && header["jwk"].get("d").is_none());
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], endpoint.as_str());
        assert!(c["jti"].is_string() && c["iat"].is_u64());
        assert!(c.get("ath").is_none(), "no access token on a token request");
        let want_nonce = (i == 1).then_some("server-nonce-1");
        assert_eq!(c["nonce"].as_str(), want_nonce, "request {i}");
        keys.push(header["jwk"].clone());
    }
    assert_eq!(keys[0], keys[1], "both proofs are signed with the same key");

    // The stored entry carries the key; nothing in the logs or Debug shows it or a proof.
    let stored = oauth.stored_tokens(&server.mcp_url()).expect("store");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].dpop_key.as_ref(), Some(&key));
    let shown = format!("{stored:?}{oauth:?}");
    assert!(!shown.contains(key.expose()), "Debug shows the key");
    let proof = token_requests[1].header("DPoP").unwrap_or_default();
    for line in logs().iter().filter(|l| l.contains(" mcp_blocking")) {
        assert!(
            !line.contains(key.expose()) && !line.contains(proof),
            "a log line shows the key or a proof: {line}"
        );
    }
}

#[test]
fn a_nonce_asked_for_twice_is_not_retried_again() {
    // A server that never accepts the nonce it names: the client asks twice, then stops.
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("a nonce with a space is never usable".into()),
        ..AsOptions::default()
    });
    let e = OAuthConfig::client_credentials("m2m", "m2m-secret")
        .dpop(true)
        .login("secured", &server.mcp_url())
        .expect_err("no nonce the client may use");
    assert!(e.to_string().contains("use_dpop_nonce"), "{e}");
    assert_eq!(
        server.requests_to("/token").len(),
        1,
        "a malformed nonce is not retried with"
    );

    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("n-2".into()),
        ..AsOptions::default()
    });
    // Without DPoP, no proof is sent and a Bearer token comes back.
    let tokens = OAuthConfig::client_credentials("m2m", "m2m-secret")
        .login("secured", &server.mcp_url())
        .expect("bearer grant");
    assert_eq!(tokens.token_type.as_deref(), Some("Bearer"));
    assert!(tokens.dpop_key.is_none());
    let reqs = server.requests_to("/token");
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].header("DPoP").is_none());
}

#[test]
fn the_authorization_code_grant_binds_the_code_and_the_token() {
    let server = dpop_server();
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        headless,
    ))
    .dpop(true)
    .token_store(MemoryTokenStore::new());
    let tokens = oauth
        .login("secured", &server.mcp_url())
        .expect("signed in");
    assert!(tokens.is_dpop());
    let authorize = server.requests_to("/authorize");
    assert_eq!(authorize.len(), 1);
    assert!(
        authorize[0].path.contains("dpop_jkt="),
        "the authorization request names the key's thumbprint"
    );
    // Requests to the MCP server carry no proof yet: a DPoP-bound token is refused there with
    // an error saying so, never sent as a bearer token.
    let err = Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_timeout_secs(10.0)
            .with_oauth(oauth),
    )
    .expect_err("a DPoP-bound token is not sent as a bearer token");
    assert!(err.to_string().contains("DPoP"), "{err}");
    assert!(server
        .requests_to("/mcp")
        .iter()
        .all(|r| r.header("Authorization").is_none()));
}
