//! DPoP (RFC 9449) against the loopback authorization server: token requests and every MCP
//! request carry proofs (the MCP ones bound to the token through `ath`), a `use_dpop_nonce`
//! answer from either server is followed by exactly one more request with the server's nonce,
//! the `DPoP` token is kept with its key, and neither the key, the token nor a proof shows in
//! an error or a log line.

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
    // The MCP requests carry the token with the DPoP scheme and a proof of the same key.
    let client = Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_timeout_secs(10.0)
            .with_oauth(oauth),
    )
    .expect("a DPoP-bound token is sent with proofs");
    client.list_tools().expect("tools/list");
    client.close().expect("closed");
    let token_jwk =
        claims(server.requests_to("/token")[1].header("DPoP").unwrap()).0["jwk"].clone();
    let (mcp, _) = mcp_proofs(&server, tokens.access_token.expose());
    assert!(!mcp.is_empty());
    assert!(
        mcp.iter().all(|(header, _)| header["jwk"] == token_jwk),
        "the token's key signs"
    );
}

/// Checks every request to `/mcp` that carries `token`: the `DPoP` scheme, one proof whose
/// signature verifies with its own `jwk`, `htm` the request's method, `htu` the endpoint,
/// `ath` the token's hash, a `jti` of its own. Returns each proof's header and claims, and how
/// many requests went without a token.
fn mcp_proofs(server: &AuthServer, token: &str) -> (Vec<(Value, Value)>, usize) {
    let endpoint = server.mcp_url();
    let ath = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(ring::digest::digest(
        &ring::digest::SHA256,
        token.as_bytes(),
    ));
    let mut out = Vec::new();
    let mut without = 0;
    let mut jtis = std::collections::HashSet::new();
    for r in server.requests_to("/mcp") {
        let Some(auth) = r.header("Authorization") else {
            without += 1;
            continue;
        };
        assert_eq!(auth, format!("DPoP {token}"), "{} {}", r.method, r.path);
        let proofs = r.header_values("DPoP");
        assert_eq!(proofs.len(), 1, "one proof on {} {}", r.method, r.path);
        assert!(verifies(proofs[0]), "the proof verifies with its jwk");
        let (header, c) = claims(proofs[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(c["htm"], r.method.as_str());
        assert_eq!(c["htu"], endpoint.as_str());
        assert_eq!(c["ath"], ath.as_str());
        assert!(c["iat"].is_u64());
        assert!(
            jtis.insert(c["jti"].as_str().expect("jti").to_owned()),
            "each proof is fresh"
        );
        out.push((header, c));
    }
    (out, without)
}

/// Whether a compact JWS verifies with the P-256 key of its own header's `jwk`.
fn verifies(jwt: &str) -> bool {
    use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};
    let d = |s: &str| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s)
            .unwrap_or_default()
    };
    let p: Vec<&str> = jwt.split('.').collect();
    if p.len() != 3 {
        return false;
    }
    let (header, _) = claims(jwt);
    let x = d(header["jwk"]["x"].as_str().unwrap_or_default());
    let y = d(header["jwk"]["y"].as_str().unwrap_or_default());
    let point: Vec<u8> = [&[4u8][..], &x, &y].concat();
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(format!("{}.{}", p[0], p[1]).as_bytes(), &d(p[2]))
        .is_ok()
}

fn m2m(server: &AuthServer) -> (OAuthConfig, ServerConfig) {
    let oauth = OAuthConfig::client_credentials("m2m", "m2m-secret")
        .dpop(true)
        .token_store(MemoryTokenStore::new());
    let config = ServerConfig::http("secured", server.mcp_url())
        .with_timeout_secs(10.0)
        .with_oauth(oauth.clone());
    (oauth, config)
}

#[test]
fn every_mcp_request_carries_a_fresh_proof_for_its_method_and_url() {
    capture_logs();
    let server = dpop_server();
    let (oauth, config) = m2m(&server);
    let client = Client::connect(config).expect("connected with a DPoP-bound token");
    client.list_tools().expect("tools/list");
    client
        .call_tool("hello", serde_json::json!({}))
        .expect("tools/call");
    client.close().expect("closed");

    let stored = oauth.stored_tokens(&server.mcp_url()).expect("store");
    assert_eq!(stored.len(), 1);
    assert!(stored[0].is_dpop());
    let token = stored[0].access_token.expose().to_owned();
    let (proofs, without) = mcp_proofs(&server, &token);
    // initialize, initialized, tools/list, tools/call at least; the first may go without a
    // token (the client signs in on its 401).
    assert!(proofs.len() >= 4, "{} requests with proofs", proofs.len());
    assert!(without <= 1, "{without} requests without a token");
    let jwk = &proofs[0].0["jwk"];
    assert!(
        proofs.iter().all(|(h, _)| h["jwk"] == *jwk),
        "one key signs every proof"
    );
    assert!(
        proofs.iter().all(|(_, c)| c.get("nonce").is_none()),
        "the resource server asked for no nonce"
    );

    let key = stored[0].dpop_key.clone().expect("key kept");
    let sent: Vec<String> = server
        .requests_to("/mcp")
        .iter()
        .filter_map(|r| r.header("DPoP").map(str::to_owned))
        .collect();
    for line in logs().iter().filter(|l| l.contains(" mcp_blocking")) {
        assert!(
            !line.contains(key.expose())
                && !line.contains(&token)
                && sent.iter().all(|p| !line.contains(p.as_str())),
            "a log line shows the key, the token or a proof: {line}"
        );
    }
}

#[test]
fn a_resource_servers_nonce_is_used_once_asked_and_kept() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("as-nonce".into()),
        rs_dpop_nonce: Some("rs-nonce-7".into()),
        ..AsOptions::default()
    });
    let (oauth, config) = m2m(&server);
    let client = Client::connect(config).expect("connected after the nonce retry");
    client.list_tools().expect("tools/list");
    client.close().expect("closed");

    let token = oauth.stored_tokens(&server.mcp_url()).expect("store")[0]
        .access_token
        .expose()
        .to_owned();
    let (proofs, _) = mcp_proofs(&server, &token);
    let nonces: Vec<Option<&str>> = proofs.iter().map(|(_, c)| c["nonce"].as_str()).collect();
    assert_eq!(nonces[0], None, "the first proof knows no nonce");
    assert!(
        nonces[1..].iter().all(|n| *n == Some("rs-nonce-7")),
        "the retry and every later proof carry the server's nonce: {nonces:?}"
    );
    let asked = server
        .requests_to("/mcp")
        .iter()
        .filter(|r| r.header("DPoP").is_some())
        .count()
        - nonces.iter().filter(|n| n.is_some()).count();
    assert_eq!(asked, 1, "one request was asked for the nonce");
    // The nonce retry is not a new authorization: one token grant (plus its AS nonce retry).
    assert_eq!(server.requests_to("/token").len(), 2);
}

#[test]
fn a_nonce_asked_for_again_after_the_retry_fails_the_request() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("as-nonce".into()),
        rs_dpop_nonce: Some("fresh".into()),
        rs_nonce_never_accepted: true,
        ..AsOptions::default()
    });
    let (oauth, config) = m2m(&server);
    let err = Client::connect(config).expect_err("no proof satisfies this server");
    let token = oauth.stored_tokens(&server.mcp_url()).expect("store")[0]
        .access_token
        .expose()
        .to_owned();
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("401"), "{shown}");
    assert!(
        !shown.contains(&token),
        "the error shows the token: {shown}"
    );
    let (proofs, _) = mcp_proofs(&server, &token);
    assert_eq!(
        proofs.len(),
        2,
        "the request, then once more with the nonce; never a third time"
    );
    assert!(
        proofs[1].1["nonce"]
            .as_str()
            .is_some_and(|n| n.starts_with("fresh-")),
        "the retry carries the nonce the server named"
    );
    assert_eq!(
        server.requests_to("/token").len(),
        2,
        "a nonce demand does not start a new authorization"
    );
}

#[test]
fn a_server_quoting_the_token_and_proof_back_gets_neither_into_the_error() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("as-nonce".into()),
        echo_authorization: true,
        ..AsOptions::default()
    });
    let (oauth, config) = m2m(&server);
    let client = Client::connect(config).expect("connected");
    let token = oauth.stored_tokens(&server.mcp_url()).expect("store")[0]
        .access_token
        .expose()
        .to_owned();
    for tool in ["leak_http", "leak_rpc"] {
        let err = client
            .call_tool(tool, serde_json::json!({}))
            .expect_err("the server refuses, quoting what it got");
        let shown = format!("{err} {err:?}");
        let last = server
            .requests_to("/mcp")
            .last()
            .cloned()
            .expect("a request");
        let proof = last.header("DPoP").expect("a proof").to_owned();
        assert!(shown.contains("you sent"), "the quote is kept: {shown}");
        assert!(
            !shown.contains(&token) && !shown.contains(&proof),
            "{tool}: the error shows the token or the proof: {shown}"
        );
    }
    client.close().expect("closed");
}

#[test]
fn a_nonce_longer_than_the_cap_is_not_used() {
    let long = "n".repeat(2000);
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("as-nonce".into()),
        rs_dpop_nonce: Some(long.clone()),
        ..AsOptions::default()
    });
    let (oauth, config) = m2m(&server);
    let err = Client::connect(config).expect_err("the only nonce is over the cap");
    assert!(err.to_string().contains("401"), "{err}");
    let token = oauth.stored_tokens(&server.mcp_url()).expect("store")[0]
        .access_token
        .expose()
        .to_owned();
    let (proofs, _) = mcp_proofs(&server, &token);
    assert_eq!(proofs.len(), 1, "no retry with a nonce that cannot be used");
    assert!(proofs[0].1.get("nonce").is_none());
}

/// Client credentials with DPoP left to the client's choice (`dpop` not called).
fn m2m_auto(server: &AuthServer, dpop: Option<bool>) -> (OAuthConfig, ServerConfig) {
    let mut oauth =
        OAuthConfig::client_credentials("m2m", "m2m-secret").token_store(MemoryTokenStore::new());
    if let Some(on) = dpop {
        oauth = oauth.dpop(on);
    }
    let config = ServerConfig::http("secured", server.mcp_url())
        .with_timeout_secs(10.0)
        .with_oauth(oauth.clone());
    (oauth, config)
}

/// Whether the server's token endpoint saw a DPoP proof.
fn token_requests_with_proofs(server: &AuthServer) -> (usize, usize) {
    let reqs = server.requests_to("/token");
    let with = reqs.iter().filter(|r| r.header("DPoP").is_some()).count();
    (with, reqs.len())
}

#[test]
fn dpop_turns_on_by_itself_for_a_server_that_challenges_with_the_dpop_scheme_only() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("n-1".into()),
        dpop_challenge: true,
        ..AsOptions::default()
    });
    let (oauth, config) = m2m_auto(&server, None);
    let client = Client::connect(config).expect("connected with a DPoP-bound token");
    client.list_tools().expect("tools/list");
    client.close().expect("closed");
    let stored = oauth.stored_tokens(&server.mcp_url()).expect("store");
    assert!(stored[0].is_dpop(), "the token is DPoP-bound: {stored:?}");
    let (with, all) = token_requests_with_proofs(&server);
    assert!(
        with == all && all >= 1,
        "{with} of {all} token requests had a proof"
    );
}

#[test]
fn dpop_turns_on_by_itself_when_the_resource_metadata_requires_it() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("n-2".into()),
        prm_requires_dpop: true,
        ..AsOptions::default()
    });
    let (oauth, config) = m2m_auto(&server, None);
    let client = Client::connect(config).expect("connected");
    client.close().expect("closed");
    assert!(oauth.stored_tokens(&server.mcp_url()).expect("store")[0].is_dpop());
    let (with, all) = token_requests_with_proofs(&server);
    assert!(
        with == all && all >= 1,
        "{with} of {all} token requests had a proof"
    );
}

#[test]
fn without_a_requirement_dpop_stays_off_unless_asked_for() {
    // The authorization server accepts proofs, but nothing requires them.
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("n-3".into()),
        ..AsOptions::default()
    });
    let (oauth, config) = m2m_auto(&server, None);
    let client = Client::connect(config).expect("connected");
    client.close().expect("closed");
    let stored = oauth.stored_tokens(&server.mcp_url()).expect("store");
    assert!(!stored[0].is_dpop(), "a bearer token: {stored:?}");
    assert_eq!(token_requests_with_proofs(&server).0, 0, "no proof sent");
}

#[test]
fn dpop_turned_off_fails_a_server_that_takes_only_dpop_bound_tokens() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("n-4".into()),
        prm_requires_dpop: true,
        ..AsOptions::default()
    });
    let (_, config) = m2m_auto(&server, Some(false));
    let err = Client::connect(config).expect_err("DPoP is off");
    let text = err.to_string();
    assert!(
        text.contains("only DPoP-bound tokens") && text.contains("secured"),
        "{text}"
    );
    assert!(
        server.requests_to("/token").is_empty(),
        "no token was asked for"
    );
}
