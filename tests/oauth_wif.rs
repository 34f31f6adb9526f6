//! Workload identity (the RFC 7523 `jwt-bearer` grant) against the loopback authorization
//! server: what the token request carries, where the assertion is read from (and read again),
//! a refusal ending the authorization after one request with no other grant tried, assertions
//! refused before any request, DPoP proofs on the grant, and the assertion never shown.

mod common;
mod oauth_support;
mod support_remote;

use common::capture::{capture_logs, logs};
use common::tempdir::TempDir;
use mcp_blocking::auth::{AssertionSource, OAuthConfig, MAX_ASSERTION_BYTES};
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{fake_jwt, form_of, proof_claims, AsOptions, AuthServer, JWT_BEARER};
use serde_json::json;

fn workload_jwt(tag: &str) -> String {
    fake_jwt(&json!({"iss": "https://ci.example", "sub": tag, "aud": "mcp"}))
}

fn connect(server: &AuthServer, oauth: OAuthConfig) -> Result<Client, Error> {
    Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_oauth(oauth)
            .with_timeout_secs(10.0),
    )
}

/// The detail of an authorization failure: an `Error::Unauthorized`, or the connect error of
/// kind `Auth` that carries one.
fn auth_detail(err: &Error) -> String {
    match err {
        Error::Unauthorized { detail, .. } => detail.clone(),
        Error::Connect(c) if c.kind() == ConnectErrorKind::Auth => c.to_string(),
        other => panic!("not an authorization error: {other:?}"),
    }
}

/// The `assertion` of each token request, in order.
fn assertions_sent(server: &AuthServer) -> Vec<String> {
    server
        .requests_to("/token")
        .iter()
        .map(|r| form_of(r).get("assertion").cloned().unwrap_or_default())
        .collect()
}

#[test]
fn the_token_request_carries_the_grant_the_assertion_the_resource_and_the_client() {
    let server = AuthServer::start(AsOptions {
        refresh: false,
        ..AsOptions::default()
    });
    let jwt = workload_jwt("fields");
    let oauth =
        OAuthConfig::workload_identity(AssertionSource::value(jwt.clone())).client_id("wif-client");
    let client = connect(&server, oauth).expect("the 401 runs the grant");
    assert_eq!(client.list_tools().expect("tools").len(), 1);

    let requests = server.requests_to("/token");
    assert_eq!(requests.len(), 1, "one token request");
    let f = form_of(&requests[0]);
    assert_eq!(f["grant_type"], JWT_BEARER);
    assert_eq!(f["assertion"], jwt);
    assert_eq!(f["resource"], server.mcp_url());
    assert_eq!(f["client_id"], "wif-client");
    assert_eq!(
        f.get("scope").map(String::as_str),
        Some("mcp:read"),
        "the protected resource's scopes"
    );
    assert!(
        requests[0].header("authorization").is_none(),
        "no client authentication without a secret"
    );
    assert_eq!(
        server
            .state
            .jwt_bearer_grants
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert!(server.requests_to("/authorize").is_empty());
    assert!(server.requests_to("/register").is_empty());
}

#[test]
fn the_assertion_is_read_from_a_file_a_variable_and_a_callback() {
    let dir = TempDir::new("wif-sources");
    let from_file = workload_jwt("file");
    // Surrounding whitespace (a trailing newline, as tools write) is not part of the JWT.
    let path = dir.file("token", &format!("\n  {from_file}\n"));
    let from_env = workload_jwt("env");
    let var = format!("MCP_WIF_TEST_TOKEN_{}", std::process::id());
    std::env::set_var(&var, &from_env);
    let from_callback = workload_jwt("callback");
    let cb = from_callback.clone();
    let cases = [
        (AssertionSource::file(&path), from_file),
        (AssertionSource::env(&var), from_env),
        (
            AssertionSource::callback(move || Ok(cb.clone())),
            from_callback,
        ),
    ];
    for (source, want) in cases {
        let server = AuthServer::start(AsOptions::default());
        let label = format!("{source:?}");
        OAuthConfig::workload_identity(source)
            .login("secured", &server.mcp_url())
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(assertions_sent(&server), vec![want], "{label}");
    }
    std::env::remove_var(&var);
}

#[test]
fn a_rotated_file_is_read_again_by_the_next_authorization() {
    let dir = TempDir::new("wif-rotation");
    let first = workload_jwt("first");
    let path = dir.file("token", &first);
    let server = AuthServer::start(AsOptions {
        refresh: false,
        ..AsOptions::default()
    });
    let client = connect(
        &server,
        OAuthConfig::workload_identity(AssertionSource::file(&path)),
    )
    .expect("connects");
    // The platform rotates the token; the server stops taking the access token (it expired,
    // say): the next request's 401 runs the grant again with the file as it is now.
    let second = workload_jwt("second");
    dir.file("token", &second);
    server.state.revoke_access_tokens();
    client
        .list_tools()
        .expect("tools after the grant ran again");
    assert_eq!(assertions_sent(&server), vec![first, second]);
}

#[test]
fn a_refused_assertion_ends_the_authorization_after_one_request() {
    for error in ["invalid_grant", "invalid_scope", "unauthorized_client"] {
        let server = AuthServer::start(AsOptions {
            jwt_bearer_error: Some(error.into()),
            ..AsOptions::default()
        });
        let oauth = OAuthConfig::workload_identity(AssertionSource::value(workload_jwt(error)))
            .client_id("wif-client");
        let err = connect(&server, oauth)
            .map(drop)
            .expect_err("the connect fails");
        let detail = auth_detail(&err);
        assert!(detail.contains(error), "{error}: {detail}");
        assert!(detail.contains("jwt-bearer"), "{detail}");
        let tokens = server.requests_to("/token");
        assert_eq!(tokens.len(), 1, "{error}: not retried");
        assert_eq!(form_of(&tokens[0])["grant_type"], JWT_BEARER);
        assert!(
            server.requests_to("/authorize").is_empty()
                && server.requests_to("/register").is_empty(),
            "{error}: no other grant tried"
        );
    }
}

#[test]
fn an_unusable_assertion_is_refused_before_any_request() {
    let dir = TempDir::new("wif-unusable");
    let oversize = format!("{}.{}.c2ln", "a".repeat(MAX_ASSERTION_BYTES), "b");
    let big = dir.file("big", &oversize);
    let empty = dir.file("empty", "  \n");
    let missing = dir.path().join("missing");
    let var = format!("MCP_WIF_TEST_EMPTY_{}", std::process::id());
    std::env::set_var(&var, "");
    let unset = format!("MCP_WIF_TEST_UNSET_{}", std::process::id());
    let secretish = "not-a-jwt-but-secret-value";
    let over = oversize.clone();
    let cases: Vec<(AssertionSource, &str)> = vec![
        (AssertionSource::file(&big), "big"),
        (AssertionSource::file(&empty), "empty"),
        (AssertionSource::file(&missing), "missing"),
        (AssertionSource::env(&var), var.as_str()),
        (AssertionSource::env(&unset), unset.as_str()),
        (AssertionSource::value(secretish), "value"),
        (AssertionSource::value("a.b"), "value"),
        (AssertionSource::value("a..c"), "value"),
        (AssertionSource::value("a.b+.c"), "value"),
        (
            AssertionSource::callback(|| Err("the metadata service is down".into())),
            "metadata service is down",
        ),
        (
            AssertionSource::callback(move || Ok(over.clone())),
            "callback",
        ),
    ];
    for (source, named) in cases {
        let server = AuthServer::start(AsOptions::default());
        let label = format!("{source:?}");
        let err = OAuthConfig::workload_identity(source)
            .login("secured", &server.mcp_url())
            .map(drop)
            .expect_err(&format!("{label}: refused"));
        let text = err.to_string();
        assert!(text.contains(named), "{label}: names its source: {text}");
        assert!(!text.contains(secretish), "{label}: {text}");
        assert!(!text.contains("aaaaaaaa"), "{label}: {text}");
        assert!(
            server.http.requests().is_empty(),
            "{label}: no request was made"
        );
    }
    std::env::remove_var(&var);
}

#[test]
fn the_grant_carries_dpop_proofs_and_honours_the_nonce() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("wif-nonce".into()),
        ..AsOptions::default()
    });
    let jwt = workload_jwt("dpop");
    let tokens = OAuthConfig::workload_identity(AssertionSource::value(jwt.clone()))
        .dpop(true)
        .login("secured", &server.mcp_url())
        .expect("the grant succeeds with the nonce");
    assert!(tokens.is_dpop(), "a DPoP-bound token, kept with its key");
    assert!(tokens.dpop_key.is_some());
    let requests = server.requests_to("/token");
    assert_eq!(requests.len(), 2, "one request, then one with the nonce");
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(form_of(r)["assertion"], jwt, "request {i}");
        let proofs = r.header_values("DPoP");
        assert_eq!(proofs.len(), 1, "request {i}");
        let c = proof_claims(proofs[0]);
        assert_eq!(c["htm"], "POST");
        assert_eq!(c["htu"], format!("{}/token", server.origin()));
        assert_eq!(c["nonce"].as_str(), (i == 1).then_some("wif-nonce"));
    }
}

#[test]
fn the_assertion_never_shows_in_errors_or_logs() {
    capture_logs();
    let jwt = workload_jwt("secret-subject-7f3a");
    let server = AuthServer::start(AsOptions {
        jwt_bearer_error: Some("invalid_grant".into()),
        echo_assertion: true,
        ..AsOptions::default()
    });
    let oauth = OAuthConfig::workload_identity(AssertionSource::value(jwt.clone()))
        .client_id("wif-client")
        .client_secret("wif-client-secret-91b2");
    let err = connect(&server, oauth.clone())
        .map(drop)
        .expect_err("refused");
    let text = format!("{err} {err:?}");
    assert!(
        text.contains("invalid_grant") && text.contains("<redacted>"),
        "the server's words, the assertion hidden: {text}"
    );
    let login = oauth
        .login("secured", &server.mcp_url())
        .map(drop)
        .expect_err("refused");
    let text = format!("{text} {login} {login:?} {oauth:?}");
    // A good grant as well, so its token and the assertion go through every log line.
    let good = AuthServer::start(AsOptions::default());
    let client = connect(
        &good,
        OAuthConfig::workload_identity(AssertionSource::value(jwt.clone())),
    )
    .expect("connects");
    client.list_tools().expect("tools");
    let lines = logs().join("\n");
    let payload = jwt.split('.').nth(1).unwrap().to_owned();
    for secret in [jwt.as_str(), payload.as_str(), "wif-client-secret-91b2"] {
        assert!(!text.contains(secret), "{secret} in {text}");
        assert!(!lines.contains(secret), "{secret} in the logs");
    }
    assert!(!lines.is_empty(), "the flow logs at all");
}
