//! The `oauth` block of config files: validated like every other key, `${VAR}` for the client
//! credentials, and a working server config.

mod oauth_support;
mod support_remote;

use std::collections::BTreeMap;

use mcp_blocking::auth::RedirectHandler;
use mcp_blocking::config::ConfigErrorKind;
use mcp_blocking::{Client, ConfigLoader};
use oauth_support::{headless, AsOptions, AuthServer};
use serde_json::json;

fn loader() -> ConfigLoader {
    ConfigLoader::new().with_env(BTreeMap::from([
        ("CID".to_owned(), "my-client".to_owned()),
        ("CSEC".to_owned(), "s3cret-from-env".to_owned()),
    ]))
}

#[test]
fn an_oauth_block_configures_the_server() {
    let server = AuthServer::start(AsOptions::default());
    let store = std::env::temp_dir().join(format!(
        "mcpb-oauth-config-{}-{:?}.json",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let doc = json!({"mcpServers": {"api": {
        "url": server.mcp_url(),
        "oauth": {
            "client_id": "${CID}",
            "client_secret": "${CSEC}",
            "scopes": ["mcp:read"],
            "redirect_port": 0,
            "store": store.to_string_lossy(),
        },
    }}});
    let report = loader().load_value(&doc).expect("loads");
    assert!(report.is_ok(), "{:?}", report.errors);
    let config = report.server("api").unwrap().clone();
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret-from-env"), "{shown}");
    let oauth = config.oauth().expect("oauth set").clone();
    // The file's loopback handler logs the URL; drive the flow headlessly here.
    let config = config.with_oauth(oauth.redirect(RedirectHandler::custom(
        "http://localhost:3000/callback",
        headless,
    )));
    let client = Client::connect(config).expect("connects");
    assert_eq!(client.list_tools().unwrap().len(), 1);
    client.close().unwrap();
    let authorize = &server.requests_to("/authorize")[0];
    assert!(
        authorize.path.contains("client_id=my-client"),
        "{}",
        authorize.path
    );
    assert!(
        authorize.path.contains("scope=mcp%3Aread"),
        "{}",
        authorize.path
    );
    assert!(server.requests_to("/register").is_empty());
    assert!(std::fs::read_to_string(&store)
        .unwrap()
        .contains("my-client"));
    let _ = std::fs::remove_file(store);
}

#[test]
fn oauth_keys_are_checked() {
    let doc = json!({"mcpServers": {"api": {
        "url": "https://example.com/mcp",
        "oauth": {"client_id": "x", "scope": ["a"]},
    }}});
    let report = loader().load_value(&doc).unwrap();
    let e = &report.errors[0];
    assert_eq!(e.kind, ConfigErrorKind::UnknownKey);
    assert!(e.to_string().contains("oauth.scope"), "{e}");
    assert_eq!(e.suggestion.as_deref(), Some("scopes"));

    let doc = json!({"mcpServers": {"api": {
        "url": "https://example.com/mcp",
        "oauth": {"client_id": "x", "redirect_port": 70000},
    }}});
    let e = &loader().load_value(&doc).unwrap().errors[0];
    assert_eq!(e.kind, ConfigErrorKind::WrongType, "{e}");

    let doc = json!({"mcpServers": {"api": {
        "url": "https://example.com/mcp",
        "oauth": {"client_secret": "${CSEC}"},
    }}});
    let e = &loader().load_value(&doc).unwrap().errors[0];
    assert_eq!(e.kind, ConfigErrorKind::MissingField);
    assert!(!e.to_string().contains("s3cret-from-env"));
}

#[test]
fn oauth_applies_to_http_and_sse_only() {
    let doc = json!({"mcpServers": {
        "local": {"command": "x", "oauth": {}},
        "ws": {"url": "wss://example.com/mcp", "oauth": {}},
        "sse": {"type": "sse", "url": "https://example.com/sse", "oauth": {}},
    }});
    let report = loader().load_value(&doc).unwrap();
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    assert!(report
        .errors
        .iter()
        .all(|e| e.kind == ConfigErrorKind::NotApplicable));
    assert!(report.server("sse").unwrap().oauth().is_some());
}

#[test]
fn other_hosts_keys_are_skipped_and_disabled_blocks_ignored() {
    let doc = json!({"mcpServers": {
        "gemini": {"url": "https://example.com/mcp",
                   "oauth": {"enabled": true, "clientId": "c", "authorizationUrl": "https://a/x"}},
        "off": {"url": "https://example.com/mcp", "oauth": {"enabled": false}},
    }});
    let report = loader().load_value(&doc).unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert!(report.server("gemini").unwrap().oauth().is_some());
    assert!(report.server("off").unwrap().oauth().is_none());
}

#[test]
fn the_legacy_endpoint_fallback_is_off_unless_the_block_allows_it() {
    let doc = json!({"mcpServers": {
        "old": {"url": "https://example.com/mcp", "oauth": {"legacy_endpoint_fallback": true}},
        "camel": {"url": "https://example.com/mcp", "oauth": {"legacyEndpointFallback": true}},
        "new": {"url": "https://example.com/mcp", "oauth": {}},
    }});
    let report = loader().load_value(&doc).unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    let shown = |name: &str| format!("{:?}", report.server(name).unwrap().oauth().unwrap());
    assert!(
        shown("old").contains("endpoint_fallback: true"),
        "{}",
        shown("old")
    );
    assert!(shown("camel").contains("endpoint_fallback: true"));
    assert!(shown("new").contains("endpoint_fallback: false"));

    let doc = json!({"mcpServers": {"api": {
        "url": "https://example.com/mcp",
        "oauth": {"legacy_endpoint_fallback": "yes"},
    }}});
    let e = &loader().load_value(&doc).unwrap().errors[0];
    assert_eq!(e.kind, ConfigErrorKind::WrongType, "{e}");
}

/// The settings of server `name` of `doc`'s `mcpServers`, as `Debug` shows them.
fn shown_oauth(doc: &serde_json::Value, name: &str) -> String {
    let report = loader().load_value(doc).expect("loads");
    assert!(report.is_ok(), "{:?}", report.errors);
    format!("{:?}", report.server(name).unwrap().oauth().expect("oauth"))
}

#[test]
fn a_block_chooses_its_grant() {
    let doc = json!({"mcpServers": {
        "person": {"url": "https://example.com/mcp", "oauth": {"grant": "authorization_code"}},
        "default": {"url": "https://example.com/mcp", "oauth": {}},
        "m2m": {"url": "https://example.com/mcp",
                "oauth": {"grant": "client_credentials", "client_id": "svc", "client_secret": "${CSEC}"}},
        "m2m_camel": {"url": "https://example.com/mcp",
                "oauth": {"grant": "clientCredentials", "clientId": "svc", "clientSecret": "lit-s3cret"}},
        "wif_file": {"url": "https://example.com/mcp",
                "oauth": {"grant": "workload_identity", "assertion": {"file": "/run/tokens/mcp"}}},
        "wif_home": {"url": "https://example.com/mcp",
                "oauth": {"grant": "workloadIdentity", "assertion": {"file": "~/tokens/mcp"}}},
        "wif_env": {"url": "https://example.com/mcp",
                "oauth": {"grant": "workload_identity", "client_id": "${CID}",
                          "assertion": {"env": "MCP_ID_TOKEN"}}},
        "ent_token": {"url": "https://example.com/mcp", "oauth": {
            "grant": "enterprise", "client_id": "mcp-client", "client_secret": "${CSEC}",
            "idp": {"issuer": "https://idp.example.com", "client_id": "at-idp",
                    "client_secret": "idp-s3cret", "token_endpoint": "https://idp.example.com/t",
                    "id_token": {"env": "IDP_ID_TOKEN"}}}},
        "ent_sign_in": {"url": "https://example.com/mcp", "oauth": {
            "grant": "enterprise", "client_id": "mcp", "redirect_port": 8977,
            "idp": {"issuer": "https://idp.example.com", "clientId": "at-idp",
                    "tokenEndpoint": "https://idp.example.com/t2"}}},
        "ent_camel_token": {"url": "https://example.com/mcp", "oauth": {
            "grant": "enterprise", "client_id": "mcp",
            "idp": {"issuer": "https://idp.example.com", "client_id": "at-idp",
                    "idToken": {"file": "/run/id-token"}}}},
    }});
    let shown = |name: &str| shown_oauth(&doc, name);
    assert!(shown("person").contains("grant: AuthorizationCode"));
    assert!(shown("default").contains("grant: AuthorizationCode"));
    for m2m in ["m2m", "m2m_camel"] {
        let s = shown(m2m);
        assert!(s.contains("grant: ClientCredentials"), "{s}");
        assert!(s.contains("client_id: Some(\"svc\")"), "{s}");
        assert!(!s.contains("s3cret"), "{s}");
    }
    let s = shown("wif_file");
    assert!(
        s.contains("grant: JwtBearer(AssertionSource::file(/run/tokens/mcp))"),
        "{s}"
    );
    let s = shown("wif_home");
    assert!(s.contains("JwtBearer(AssertionSource::file("), "{s}");
    assert!(!s.contains("~/") && s.contains("tokens"), "{s}");
    let s = shown("wif_env");
    assert!(
        s.contains("JwtBearer(AssertionSource::env(MCP_ID_TOKEN))"),
        "{s}"
    );
    assert!(s.contains("client_id: Some(\"my-client\")"), "{s}");
    let s = shown("ent_token");
    assert!(s.contains("grant: Enterprise(EnterpriseIdp {"), "{s}");
    assert!(s.contains("issuer: \"https://idp.example.com\""), "{s}");
    assert!(
        s.contains("token_endpoint: Some(\"https://idp.example.com/t\")"),
        "{s}"
    );
    assert!(s.contains("client_id: \"at-idp\""), "{s}");
    assert!(
        s.contains("id_token: Some(AssertionSource::env(IDP_ID_TOKEN))"),
        "{s}"
    );
    assert!(
        s.contains("redirect: None, .. })"),
        "no sign-in with an ID token: {s}"
    );
    assert!(s.contains("client_id: Some(\"mcp-client\")"), "{s}");
    assert!(!s.contains("s3cret"), "{s}");
    let s = shown("ent_sign_in");
    assert!(s.contains("id_token: None"), "{s}");
    assert!(s.contains("token_endpoint: Some(\"https://idp.example.com/t2\")"));
    assert!(
        !s.contains("redirect: None, .. })"),
        "the person signs in at the provider: {s}"
    );
    assert!(
        s.contains("id_token: None, redirect: Some(Loopback { port: 8977"),
        "{s}"
    );
    let report = loader().load_value(&doc).unwrap();
    let oauth = report
        .server("ent_sign_in")
        .unwrap()
        .oauth()
        .unwrap()
        .clone();
    assert_eq!(oauth.redirect_port(), Some(8977));
    // A program replaces how the person signs in at the provider.
    let replaced = format!("{:?}", oauth.idp_sign_in(RedirectHandler::none()));
    assert!(
        replaced.contains("id_token: None, redirect: Some(None), .. })"),
        "{replaced}"
    );
    let s = shown("ent_camel_token");
    assert!(
        s.contains("id_token: Some(AssertionSource::file(/run/id-token))"),
        "{s}"
    );
}

#[test]
fn dpop_is_automatic_unless_the_block_says() {
    let doc = json!({"mcpServers": {
        "on": {"url": "https://example.com/mcp", "oauth": {"dpop": true}},
        "off": {"url": "https://example.com/mcp",
                "oauth": {"grant": "client_credentials", "client_id": "a", "client_secret": "b",
                          "dpop": false}},
        "auto": {"url": "https://example.com/mcp", "oauth": {}},
    }});
    assert!(shown_oauth(&doc, "on").contains("dpop: Some(true)"));
    assert!(shown_oauth(&doc, "off").contains("dpop: Some(false)"));
    assert!(shown_oauth(&doc, "auto").contains("dpop: None"));
}

/// The one error of an `api` server whose `oauth` block is `block`.
fn block_error(block: serde_json::Value) -> mcp_blocking::config::ConfigError {
    let doc = json!({"mcpServers": {"api": {"url": "https://example.com/mcp", "oauth": block}}});
    let report = loader().load_value(&doc).expect("loads");
    assert_eq!(report.errors.len(), 1, "{block}: {:?}", report.errors);
    report.errors[0].clone()
}

#[test]
fn each_grant_keys_are_checked() {
    use ConfigErrorKind::*;
    let idp = json!({"issuer": "https://idp.example.com", "client_id": "at-idp"});
    let with_idp = |extra: serde_json::Value| {
        let mut idp = idp.clone();
        for (k, v) in extra.as_object().unwrap() {
            idp[k] = v.clone();
        }
        json!({"grant": "enterprise", "client_id": "mcp", "idp": idp})
    };
    // (block, kind, key path under `oauth`, suggestion)
    let cases: Vec<(serde_json::Value, ConfigErrorKind, &str, Option<&str>)> = vec![
        (
            json!({"grant": "client_credential"}),
            InvalidValue,
            "grant",
            Some("client_credentials"),
        ),
        (json!({"grant": 3}), WrongType, "grant", None),
        (json!({"dpo": true}), UnknownKey, "dpo", Some("dpop")),
        (json!({"dpop": "yes"}), WrongType, "dpop", None),
        (
            json!({"assertion": {"file": "t"}}),
            NotApplicable,
            "assertion",
            None,
        ),
        (
            json!({"grant": "enterprise", "client_id": "mcp", "idp": idp, "assertion": {"env": "T"}}),
            NotApplicable,
            "assertion",
            None,
        ),
        (json!({"idp": idp}), NotApplicable, "idp", None),
        (
            json!({"grant": "workload_identity", "assertion": {"env": "T"}, "idp": idp}),
            NotApplicable,
            "idp",
            None,
        ),
        (
            json!({"grant": "workload_identity", "assertion": {"env": "T"}, "redirect_port": 1}),
            NotApplicable,
            "redirect_port",
            None,
        ),
        (
            json!({"grant": "client_credentials", "client_id": "a", "client_secret": "b",
                "redirectPort": 1}),
            NotApplicable,
            "redirectPort",
            None,
        ),
        (
            json!({"grant": "enterprise", "client_id": "mcp", "redirect_port": 1,
                "idp": {"issuer": "https://i.example", "client_id": "c", "id_token": {"env": "T"}}}),
            NotApplicable,
            "redirect_port",
            None,
        ),
        (
            json!({"grant": "client_credentials"}),
            MissingField,
            "client_id",
            None,
        ),
        (
            json!({"grant": "client_credentials", "client_id": "a"}),
            MissingField,
            "client_secret",
            None,
        ),
        (
            json!({"grant": "workload_identity"}),
            MissingField,
            "assertion",
            None,
        ),
        (
            json!({"grant": "workload_identity", "assertion": {}}),
            MissingField,
            "assertion",
            None,
        ),
        (
            json!({"grant": "workload_identity", "assertion": {"file": " "}}),
            MissingField,
            "assertion.file",
            None,
        ),
        (
            json!({"grant": "workload_identity", "assertion": "/run/t"}),
            WrongType,
            "assertion",
            None,
        ),
        (
            json!({"grant": "workload_identity", "assertion": {"fil": "/run/t"}}),
            UnknownKey,
            "assertion.fil",
            Some("file"),
        ),
        (
            json!({"grant": "workload_identity", "assertion": {"file": "/run/t", "env": "T"}}),
            InvalidValue,
            "assertion",
            None,
        ),
        (
            json!({"grant": "enterprise"}),
            MissingField,
            "client_id",
            None,
        ),
        (
            json!({"grant": "enterprise", "client_id": "mcp"}),
            MissingField,
            "idp",
            None,
        ),
        (
            json!({"grant": "enterprise", "client_id": "mcp", "idp": "https://idp.example.com"}),
            WrongType,
            "idp",
            None,
        ),
        (
            json!({"grant": "enterprise", "client_id": "mcp", "idp": {"client_id": "c"}}),
            MissingField,
            "idp.issuer",
            None,
        ),
        (
            json!({"grant": "enterprise", "client_id": "mcp", "idp": {"issuer": "https://i.example"}}),
            MissingField,
            "idp.client_id",
            None,
        ),
        (
            with_idp(json!({"tokenEndpont": "https://i.example/t"})),
            UnknownKey,
            "idp.tokenEndpont",
            Some("tokenEndpoint"),
        ),
        (
            with_idp(json!({"issuer": "idp.example.com"})),
            InvalidUrl,
            "idp.issuer",
            None,
        ),
        (
            with_idp(json!({"token_endpoint": "ftp://i.example/t"})),
            InvalidUrl,
            "idp.token_endpoint",
            None,
        ),
        (
            with_idp(json!({"id_token": {"file": "/a", "env": "B"}})),
            InvalidValue,
            "idp.id_token",
            None,
        ),
        (
            with_idp(json!({"idToken": {"envv": "B"}})),
            UnknownKey,
            "idp.idToken.envv",
            Some("env"),
        ),
    ];
    for (block, kind, key, suggestion) in cases {
        let e = block_error(block.clone());
        assert_eq!(e.kind, kind, "{block}: {e}");
        assert!(
            e.path.ends_with(&format!("oauth.{key}")),
            "{block}: the error is at `{}`: {e}",
            e.path
        );
        assert_eq!(e.suggestion.as_deref(), suggestion, "{block}: {e}");
    }
}

#[test]
fn grant_errors_show_no_secret() {
    let blocks = [
        json!({"grant": "client_credentials", "client_id": "a", "client_secret": "${CSEC}",
               "assertion": {"env": "T"}}),
        json!({"grant": "client_credentials", "client_secret": "literal-s3cret"}),
        json!({"grant": "enterprise", "client_id": "a", "client_secret": "${CSEC}",
               "idp": {"issuer": "https://i.example", "client_id": "c",
                       "client_secret": "literal-s3cret", "id_token": {}}}),
        json!({"grant": "enterprise", "client_id": "mcp",
               "idp": {"issuer": "${CSEC}", "client_id": "c", "client_secret": "${CSEC}"}}),
    ];
    for block in blocks {
        let e = block_error(block.clone());
        let all = format!("{e} {e:?}");
        assert!(!all.contains("s3cret"), "{block}: {all}");
    }
}

#[test]
fn a_client_credentials_block_signs_in_as_a_machine_client_with_dpop() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("n-1".into()),
        ..AsOptions::default()
    });
    let doc = json!({"mcpServers": {"api": {
        "url": server.mcp_url(),
        "oauth": {"grant": "client_credentials", "client_id": "m2m",
                  "client_secret": "m2m-secret", "dpop": true},
    }}});
    let report = loader().load_value(&doc).expect("loads");
    assert!(report.is_ok(), "{:?}", report.errors);
    let client = Client::connect(report.server("api").unwrap().clone()).expect("connects");
    assert_eq!(client.list_tools().unwrap().len(), 1);
    client.close().unwrap();
    assert_eq!(
        server
            .state
            .client_credentials_grants
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    assert_eq!(server.requests_to("/authorize").len(), 0);
    let token_requests = server.requests_to("/token");
    assert!(!token_requests.is_empty());
    assert!(
        token_requests.iter().all(|r| r.header("DPoP").is_some()),
        "every token request carries a proof"
    );
    let mcp = server.requests_to("/mcp");
    assert!(
        mcp.iter().any(|r| r
            .header("authorization")
            .is_some_and(|a| a.starts_with("DPoP "))),
        "the MCP requests carry the DPoP-bound token"
    );
}
