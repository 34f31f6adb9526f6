//! An authorization server that puts terminal controls in the URL a person is shown (escape
//! sequences, a bell, an OSC 8 link, a newline with a forged line, C1 controls, a
//! bidirectional-text override): the authorization fails, naming the character, before the
//! URL reaches the redirect handler, and no request goes to its authorization endpoint; what
//! it says in a refusal is shown with its controls escaped.

mod oauth_support;
mod support_remote;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mcp_blocking::auth::{OAuthConfig, RedirectHandler};
use mcp_blocking::ServerConfig;
use oauth_support::{headless, AsOptions, AuthServer};

/// What a hostile authorization server appends to its authorization endpoint.
const HOSTILE: [&str; 8] = [
    "\u{1b}[2J\u{1b}[H",
    "#\u{1b}[2J\nmcpb: signed in as admin",
    "\u{7}",
    "#\u{1b}]8;;https://evil.example\u{1b}\\click\u{1b}]8;;\u{1b}\\",
    "#x\u{9b}31m",
    "#x\u{9d}0;title\u{9c}",
    "#x\u{7f}",
    "#abc\u{202e}cba",
];

#[test]
fn control_characters_in_the_authorization_endpoint_are_refused_before_it_is_shown() {
    for tail in HOSTILE {
        let server = AuthServer::start_with(|origin| AsOptions {
            endpoints: vec![(
                "authorization_endpoint".into(),
                format!("{origin}/authorize{tail}"),
            )],
            ..AsOptions::default()
        });
        let shown = Arc::new(AtomicUsize::new(0));
        let s = shown.clone();
        let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
            "http://127.0.0.1:3000/callback",
            move |url| {
                s.fetch_add(1, Ordering::SeqCst);
                headless(url)
            },
        ));
        let err = oauth
            .login_for(&ServerConfig::http("secured", server.mcp_url()))
            .expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains("authorization_endpoint holds a control character"),
            "{tail:?}: {text}"
        );
        assert!(
            !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{tail:?}: {text:?}"
        );
        assert_eq!(shown.load(Ordering::SeqCst), 0, "{tail:?}");
        assert!(server.requests_to("/authorize").is_empty(), "{tail:?}");
        assert!(server.requests_to("/register").is_empty(), "{tail:?}");
    }
}

#[test]
fn an_authorization_endpoint_with_a_fragment_is_refused() {
    let server = AuthServer::start_with(|origin| AsOptions {
        endpoints: vec![(
            "authorization_endpoint".into(),
            format!("{origin}/authorize#swallowed"),
        )],
        ..AsOptions::default()
    });
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://127.0.0.1:3000/callback",
        |_| panic!("the URL must not be shown"),
    ));
    let text = oauth
        .login_for(&ServerConfig::http("secured", server.mcp_url()))
        .expect_err("refused")
        .to_string();
    assert!(text.contains("fragment"), "{text}");
    assert!(server.requests_to("/register").is_empty());
}

#[test]
fn an_error_description_with_control_characters_is_shown_escaped() {
    let server = AuthServer::start(AsOptions::default());
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://127.0.0.1:3000/callback",
        |url| {
            // The authorization server's refusal, carrying the request's state.
            let landed = headless(url)?;
            let state = landed
                .split(['?', '&'])
                .find_map(|p| p.strip_prefix("state="))
                .unwrap_or_default()
                .to_owned();
            Ok(format!(
                "http://127.0.0.1:3000/callback?state={state}&error=access_denied&\
                 error_description=no%1B%5B2J%0Amcpb%3A%20signed%20in%07%E2%80%AE"
            ))
        },
    ));
    let text = oauth
        .login_for(&ServerConfig::http("secured", server.mcp_url()))
        .expect_err("refused")
        .to_string();
    assert!(text.contains("access_denied"), "{text}");
    assert!(
        !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
        "{text:?}"
    );
    assert!(text.contains("\\u{1b}[2J"), "{text}");
}
