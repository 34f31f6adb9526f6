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
