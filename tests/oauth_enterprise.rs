//! Enterprise-managed authorization (SEP-990) against the loopback authorization server and
//! its identity provider at `/idp`: the token exchange's and the JWT bearer grant's fields and
//! client authentication, the provider's refusals (no request to the authorization server
//! then), a wrong `issued_token_type`, the authorization server refusing the ID-JAG, the
//! provider's token endpoint found in its metadata, a sign-in at the provider shared by clones
//! of the settings, and no ID token, ID-JAG or secret in errors or logs.

mod common;
mod oauth_support;
mod support_remote;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::capture::{capture_logs, logs};
use mcp_blocking::auth::{AssertionSource, EnterpriseIdp, OAuthConfig, RedirectHandler};
use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{
    basic, fake_jwt, form_of, headless, AsOptions, AuthServer, ID_JAG, JWT_BEARER, TOKEN_EXCHANGE,
};
use serde_json::json;

const CLIENT: &str = "mcp-client";
const CLIENT_SECRET: &str = "mcp-client-secret-5d1e";
const IDP_CLIENT: &str = "idp-client";
const IDP_SECRET: &str = "idp-client-secret-c09a";

/// An authorization server that takes only `client_secret_basic` from `mcp-client`.
fn start_server(more: AsOptions) -> AuthServer {
    AuthServer::start(AsOptions {
        auth_methods: Some(vec!["client_secret_basic".into()]),
        jwt_bearer_client: Some((CLIENT.into(), CLIENT_SECRET.into())),
        refresh: false,
        ..more
    })
}

fn id_token() -> String {
    fake_jwt(&json!({"iss": "idp", "sub": "person-4711", "exp": 4_000_000_000u64}))
}

/// The settings with a given ID token and the provider's token endpoint named.
fn settings(server: &AuthServer, id_token: &str) -> OAuthConfig {
    let idp = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT)
        .client_secret(IDP_SECRET)
        .token_endpoint(format!("{}/idp/token", server.origin()))
        .id_token(AssertionSource::value(id_token));
    OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .client_secret(CLIENT_SECRET)
}

fn connect_to(url: &str, oauth: OAuthConfig) -> Result<Client, Error> {
    Client::connect(
        ServerConfig::http("secured", url)
            .with_oauth(oauth)
            .with_timeout_secs(10.0),
    )
}

fn auth_detail(err: &Error) -> String {
    match err {
        Error::Unauthorized { detail, .. } => detail.clone(),
        Error::Connect(c) if c.kind() == ConnectErrorKind::Auth => c.to_string(),
        other => panic!("not an authorization error: {other:?}"),
    }
}

/// The token requests at the MCP authorization server with the `jwt-bearer` grant.
fn jwt_bearer_requests(server: &AuthServer) -> usize {
    server
        .requests_to("/token")
        .iter()
        .filter(|r| form_of(r).get("grant_type").map(String::as_str) == Some(JWT_BEARER))
        .count()
}

#[test]
fn the_exchange_and_the_grant_carry_their_fields_and_client_authentication() {
    let server = start_server(AsOptions::default());
    let id = id_token();
    let client = connect_to(&server.mcp_url(), settings(&server, &id)).expect("connects");
    assert_eq!(client.list_tools().expect("tools").len(), 1);

    let exchanges = server.requests_to("/idp/token");
    assert_eq!(exchanges.len(), 1, "one exchange");
    let x = form_of(&exchanges[0]);
    assert_eq!(x["grant_type"], TOKEN_EXCHANGE);
    assert_eq!(x["subject_token"], id);
    assert_eq!(
        x["subject_token_type"],
        "urn:ietf:params:oauth:token-type:id_token"
    );
    assert_eq!(x["requested_token_type"], ID_JAG);
    assert_eq!(x["audience"], server.origin(), "the MCP server's issuer");
    assert_eq!(x["resource"], server.mcp_url(), "the resource as published");
    assert_eq!(x.get("scope").map(String::as_str), Some("mcp:read"));
    assert!(!x.contains_key("client_secret"));
    assert_eq!(
        exchanges[0].header("authorization"),
        Some(basic(IDP_CLIENT, IDP_SECRET).as_str()),
        "client_secret_basic at the provider"
    );

    let grants = server.requests_to("/token");
    assert_eq!(grants.len(), 1, "one grant");
    let g = form_of(&grants[0]);
    assert_eq!(g["grant_type"], JWT_BEARER);
    let jags = server.state.id_jags.lock().unwrap().clone();
    assert_eq!(g["assertion"], jags[0], "the ID-JAG the provider issued");
    assert_eq!(g["resource"], server.mcp_url());
    assert_eq!(g.get("scope").map(String::as_str), Some("mcp:read"));
    assert_eq!(
        grants[0].header("authorization"),
        Some(basic(CLIENT, CLIENT_SECRET).as_str()),
        "client_secret_basic at the MCP authorization server"
    );
    assert!(
        server.requests_to("/idp/.well-known").is_empty(),
        "no provider metadata needed: its token endpoint is configured"
    );
}

#[test]
fn without_a_client_secret_at_the_provider_its_client_id_goes_in_the_body() {
    let server = start_server(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT)
        .token_endpoint(format!("{}/idp/token", server.origin()))
        .id_token(AssertionSource::value(id_token()));
    OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .client_secret(CLIENT_SECRET)
        .login("secured", &server.mcp_url())
        .expect("signed in");
    let exchange = &server.requests_to("/idp/token")[0];
    assert_eq!(form_of(exchange)["client_id"], IDP_CLIENT);
    assert!(exchange.header("authorization").is_none());
}

#[test]
fn a_refusal_by_the_provider_ends_the_authorization_before_the_grant() {
    let server = start_server(AsOptions {
        idp_error: Some("invalid_grant".into()),
        ..AsOptions::default()
    });
    let err = connect_to(&server.mcp_url(), settings(&server, &id_token()))
        .map(drop)
        .expect_err("refused");
    let detail = auth_detail(&err);
    assert!(
        detail.contains("invalid_grant") && detail.contains("identity provider"),
        "{detail}"
    );
    assert_eq!(server.requests_to("/idp/token").len(), 1, "not retried");
    assert!(
        server.requests_to("/token").is_empty(),
        "no request to the authorization server"
    );
}

#[test]
fn an_answer_that_is_not_an_id_jag_is_refused() {
    let server = start_server(AsOptions {
        idp_issued_type: Some("urn:ietf:params:oauth:token-type:access_token".into()),
        ..AsOptions::default()
    });
    let err = settings(&server, &id_token())
        .login("secured", &server.mcp_url())
        .map(drop)
        .expect_err("refused");
    let detail = auth_detail(&err);
    assert!(
        detail.contains("token-type:access_token") && detail.contains("ID-JAG"),
        "{detail}"
    );
    assert!(server.requests_to("/token").is_empty());
}

#[test]
fn the_authorization_server_refusing_the_id_jag_ends_the_authorization() {
    let server = start_server(AsOptions {
        jwt_bearer_error: Some("invalid_grant".into()),
        ..AsOptions::default()
    });
    let err = connect_to(&server.mcp_url(), settings(&server, &id_token()))
        .map(drop)
        .expect_err("refused");
    let detail = auth_detail(&err);
    assert!(
        detail.contains("invalid_grant") && detail.contains("ID-JAG"),
        "{detail}"
    );
    assert_eq!(server.requests_to("/idp/token").len(), 1);
    assert_eq!(jwt_bearer_requests(&server), 1, "not retried");
}

#[test]
fn wrong_client_credentials_at_the_authorization_server_are_refused() {
    let server = start_server(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT)
        .token_endpoint(format!("{}/idp/token", server.origin()))
        .id_token(AssertionSource::value(id_token()));
    let err = OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .client_secret("not-the-secret")
        .login("secured", &server.mcp_url())
        .map(drop)
        .expect_err("refused");
    assert!(auth_detail(&err).contains("invalid_client"), "{err}");
}

#[test]
fn a_missing_client_id_or_id_token_source_is_refused_before_any_request() {
    let server = start_server(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT)
        .id_token(AssertionSource::value(id_token()));
    let err = OAuthConfig::enterprise(idp)
        .login("secured", &server.mcp_url())
        .map(drop)
        .expect_err("refused");
    assert!(
        auth_detail(&err).contains("OAuthConfig::client_id"),
        "{err}"
    );
    let bare = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT);
    let err = OAuthConfig::enterprise(bare)
        .client_id(CLIENT)
        .login("secured", &server.mcp_url())
        .map(drop)
        .expect_err("refused");
    assert!(
        auth_detail(&err).contains("EnterpriseIdp::sign_in"),
        "{err}"
    );
    assert!(server.http.requests().is_empty(), "no request was made");
}

#[test]
fn the_provider_token_endpoint_is_found_in_its_metadata() {
    let server = start_server(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT)
        .client_secret(IDP_SECRET)
        .id_token(AssertionSource::value(id_token()));
    OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .client_secret(CLIENT_SECRET)
        .login("secured", &server.mcp_url())
        .expect("signed in");
    assert_eq!(
        server
            .requests_to("/idp/.well-known/openid-configuration")
            .len(),
        1
    );
    assert_eq!(server.requests_to("/idp/token").len(), 1);
    assert_eq!(jwt_bearer_requests(&server), 1);

    // Metadata stating another issuer is not used.
    let other = start_server(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp/", other.origin()), IDP_CLIENT)
        .id_token(AssertionSource::value(id_token()));
    let err = OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .login("secured", &other.mcp_url())
        .map(drop)
        .expect_err("refused");
    assert!(auth_detail(&err).contains("states issuer"), "{err}");
    assert!(other.requests_to("/idp/token").is_empty());
}

#[test]
fn a_sign_in_at_the_provider_serves_every_clone_of_the_settings() {
    // Two MCP servers, each with its own authorization server, trusting the identity provider
    // of the first.
    let first = start_server(AsOptions::default());
    let second = start_server(AsOptions::default());
    let sign_ins = Arc::new(AtomicUsize::new(0));
    let urls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (count, seen) = (sign_ins.clone(), urls.clone());
    let handler = RedirectHandler::custom("http://127.0.0.1:9/callback", move |url| {
        count.fetch_add(1, Ordering::SeqCst);
        seen.lock().unwrap().push(url.to_owned());
        headless(url)
    });
    let idp = EnterpriseIdp::new(format!("{}/idp", first.origin()), IDP_CLIENT)
        .client_secret(IDP_SECRET)
        .sign_in(handler);
    let oauth = OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .client_secret(CLIENT_SECRET);
    let a = connect_to(&first.mcp_url(), oauth.clone()).expect("connects to the first");
    let b = connect_to(&second.mcp_url(), oauth.clone()).expect("connects to the second");
    a.list_tools().expect("tools");
    b.list_tools().expect("tools");
    assert_eq!(sign_ins.load(Ordering::SeqCst), 1, "one sign-in");

    let authorize = urls.lock().unwrap()[0].clone();
    assert!(
        authorize.starts_with(&format!("{}/idp/authorize?", first.origin())),
        "{authorize}"
    );
    for part in [
        "response_type=code",
        "client_id=idp-client",
        "scope=openid",
        "code_challenge_method=S256",
        "state=",
    ] {
        assert!(authorize.contains(part), "{part} in {authorize}");
    }
    assert!(!authorize.contains("resource="), "{authorize}");
    let id = first.state.id_tokens.lock().unwrap().clone();
    assert_eq!(id.len(), 1, "one ID token issued");
    let subjects: Vec<String> = first
        .requests_to("/idp/token")
        .iter()
        .map(form_of)
        .filter(|f| f["grant_type"] == TOKEN_EXCHANGE)
        .map(|f| f["subject_token"].clone())
        .collect();
    assert_eq!(
        subjects,
        vec![id[0].clone(), id[0].clone()],
        "both exchanges"
    );
    let audiences: Vec<String> = first
        .requests_to("/idp/token")
        .iter()
        .map(form_of)
        .filter(|f| f["grant_type"] == TOKEN_EXCHANGE)
        .map(|f| f["audience"].clone())
        .collect();
    assert_eq!(audiences, vec![first.origin(), second.origin()]);
    assert_eq!(jwt_bearer_requests(&first), 1);
    assert_eq!(jwt_bearer_requests(&second), 1);
}

#[test]
fn id_tokens_id_jags_and_secrets_never_show_in_errors_or_logs() {
    capture_logs();
    let id = id_token();
    let mut text = String::new();
    // The provider quotes the ID token in its refusal.
    let refusing_idp = start_server(AsOptions {
        idp_error: Some("invalid_grant".into()),
        idp_echo_subject: true,
        ..AsOptions::default()
    });
    let err = connect_to(&refusing_idp.mcp_url(), settings(&refusing_idp, &id))
        .map(drop)
        .expect_err("refused");
    text.push_str(&format!("{err} {err:?} "));
    assert!(auth_detail(&err).contains("<redacted>"), "{err}");
    // The authorization server quotes the ID-JAG in its refusal.
    let refusing_as = start_server(AsOptions {
        jwt_bearer_error: Some("invalid_grant".into()),
        echo_assertion: true,
        ..AsOptions::default()
    });
    let oauth = settings(&refusing_as, &id);
    let err = connect_to(&refusing_as.mcp_url(), oauth.clone())
        .map(drop)
        .expect_err("refused");
    text.push_str(&format!("{err} {err:?} {oauth:?}"));
    assert!(auth_detail(&err).contains("<redacted>"), "{err}");
    // A good run through a sign-in, too.
    let good = start_server(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp", good.origin()), IDP_CLIENT)
        .client_secret(IDP_SECRET)
        .sign_in(RedirectHandler::custom(
            "http://127.0.0.1:9/callback",
            headless,
        ));
    let client = connect_to(
        &good.mcp_url(),
        OAuthConfig::enterprise(idp)
            .client_id(CLIENT)
            .client_secret(CLIENT_SECRET),
    )
    .expect("connects");
    client.list_tools().expect("tools");

    let mut secrets = vec![id.clone(), IDP_SECRET.to_owned(), CLIENT_SECRET.to_owned()];
    secrets.extend(refusing_as.state.id_jags.lock().unwrap().iter().cloned());
    secrets.extend(good.state.id_jags.lock().unwrap().iter().cloned());
    secrets.extend(good.state.id_tokens.lock().unwrap().iter().cloned());
    assert!(secrets.len() >= 6, "the ID-JAGs and the signed-in ID token");
    let lines = logs().join("\n");
    for secret in &secrets {
        let payload = secret.split('.').nth(1).unwrap_or(secret);
        assert!(!text.contains(secret.as_str()), "{secret} in {text}");
        assert!(!text.contains(payload), "a JWT's payload in {text}");
        assert!(!lines.contains(secret.as_str()), "{secret} in the logs");
        assert!(!lines.contains(payload), "a JWT's payload in the logs");
    }
}

#[test]
fn a_sign_in_at_the_provider_no_one_can_answer_is_a_sign_in_required() {
    let server = AuthServer::start(AsOptions::default());
    let idp = EnterpriseIdp::new(format!("{}/idp", server.origin()), IDP_CLIENT)
        .sign_in(RedirectHandler::none());
    let oauth = OAuthConfig::enterprise(idp)
        .client_id("m2m")
        .client_secret("m2m-secret");
    let config = ServerConfig::http("corp", server.mcp_url())
        .with_timeout_secs(10.0)
        .with_oauth(oauth);
    let err = Client::connect(config).expect_err("no one can sign in");
    assert!(err.is_sign_in_required(), "{err:?}");
    assert!(
        server.requests_to("/idp").is_empty(),
        "nothing asked of the provider"
    );
    assert!(
        server.requests_to("/token").is_empty(),
        "nor of the authorization server"
    );
}

/// A handler that counts the sign-ins it plays a browser for.
fn counting_handler(count: &Arc<AtomicUsize>) -> RedirectHandler {
    let count = count.clone();
    RedirectHandler::custom("http://127.0.0.1:9/callback", move |url| {
        count.fetch_add(1, Ordering::SeqCst);
        headless(url)
    })
}

#[test]
fn settings_made_from_clones_of_one_provider_sign_in_once() {
    // Two servers, two different settings (not clones of one another), one provider value.
    let first = start_server(AsOptions::default());
    let second = start_server(AsOptions::default());
    let sign_ins = Arc::new(AtomicUsize::new(0));
    let idp = EnterpriseIdp::new(format!("{}/idp", first.origin()), IDP_CLIENT)
        .client_secret(IDP_SECRET)
        .sign_in(counting_handler(&sign_ins));
    let a = OAuthConfig::enterprise(idp.clone())
        .client_id(CLIENT)
        .client_secret(CLIENT_SECRET);
    let b = OAuthConfig::enterprise(idp)
        .client_id(CLIENT)
        .client_secret(CLIENT_SECRET);
    // Both at once: the second waits for the first's sign-in rather than starting its own.
    std::thread::scope(|s| {
        let one = s.spawn(|| connect_to(&first.mcp_url(), a));
        let two = s.spawn(|| connect_to(&second.mcp_url(), b));
        one.join().unwrap().expect("first connects");
        two.join().unwrap().expect("second connects");
    });
    assert_eq!(sign_ins.load(Ordering::SeqCst), 1, "one sign-in");
    assert_eq!(jwt_bearer_requests(&first), 1);
    assert_eq!(jwt_bearer_requests(&second), 1);
}

/// A config file with one server at each of `servers`, whose `idp` blocks name the first
/// server's provider with client id `idp_clients[i]`.
fn config_file(servers: &[&AuthServer], idp_clients: &[&str]) -> Vec<ServerConfig> {
    let mut entries = serde_json::Map::new();
    for (i, (server, idp_client)) in servers.iter().zip(idp_clients).enumerate() {
        entries.insert(
            format!("corp{i}"),
            json!({
                "type": "http",
                "url": server.mcp_url(),
                "oauth": {
                    "grant": "enterprise",
                    "client_id": CLIENT,
                    "client_secret": CLIENT_SECRET,
                    "idp": {
                        "issuer": format!("{}/idp", servers[0].origin()),
                        "client_id": idp_client,
                        "client_secret": IDP_SECRET,
                    },
                },
            }),
        );
    }
    let doc = json!({ "mcpServers": entries });
    mcp_blocking::config::ConfigLoader::new()
        .strict(true)
        .load_value(&doc)
        .expect("the file loads")
        .servers
}

/// Connects to each server of `configs`, the provider's sign-in played by one counting handler.
fn connect_all_counting(configs: Vec<ServerConfig>) -> usize {
    let sign_ins = Arc::new(AtomicUsize::new(0));
    for cfg in configs {
        let oauth = cfg
            .oauth()
            .expect("an oauth block")
            .clone()
            .idp_sign_in(counting_handler(&sign_ins));
        let client =
            Client::connect(cfg.with_oauth(oauth).with_timeout_secs(10.0)).expect("connects");
        client.list_tools().expect("tools");
    }
    sign_ins.load(Ordering::SeqCst)
}

#[test]
fn the_servers_of_a_config_file_naming_one_provider_the_same_way_sign_in_once() {
    let first = start_server(AsOptions::default());
    let second = start_server(AsOptions::default());
    let same = config_file(&[&first, &second], &[IDP_CLIENT, IDP_CLIENT]);
    assert_eq!(connect_all_counting(same), 1, "one sign-in for both");

    // Another client id at the provider is another sign-in.
    let third = start_server(AsOptions::default());
    let fourth = start_server(AsOptions::default());
    let different = config_file(&[&third, &fourth], &[IDP_CLIENT, "another-idp-client"]);
    assert_eq!(connect_all_counting(different), 2, "one sign-in each");
}
