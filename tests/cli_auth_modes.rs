//! mcpb's OAuth options for DPoP, workload identity and enterprise-managed authorization:
//! the usage errors of options that contradict each other, and `login` with them against the
//! loopback authorization server of `tests/oauth_support/`.

mod common;
mod oauth_support;
mod support_remote;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::atomic::Ordering;

use common::mcpb::{mcpb_with_token_file, with_token_file};
use oauth_support::{browser, proof_claims, AsOptions, AuthServer};
use serde_json::Value;

/// A token file in a folder of its own.
fn temp_store(name: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!(
            "mcpb-cli-auth-modes-{}-{name}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        ))
        .join("tokens.json")
}

/// The usage error document of `mcpb --json ARGS` (exit 2), its message.
fn usage_error(args: &[&str]) -> String {
    let store = temp_store("usage");
    let args = [&["--json"][..], args].concat();
    let out = mcpb_with_token_file(&store, &args);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["error"]["kind"], "usage", "{args:?}: {doc}");
    doc["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn contradicting_oauth_options_are_usage_errors_naming_them() {
    let url = "http://127.0.0.1:9/mcp";
    let cases: [(&[&str], &str); 9] = [
        (
            &["--url", url, "--dpop", "--no-dpop", "tools"],
            "usage: --dpop and --no-dpop contradict each other: give one",
        ),
        (
            &["--url", url, "--dpop", "--no-dpop", "login"],
            "usage: --dpop and --no-dpop contradict each other: give one",
        ),
        (
            &[
                "--url",
                url,
                "--assertion-file",
                "/t",
                "--assertion-env",
                "T",
                "tools",
            ],
            "usage: --assertion-file and --assertion-env name two sources of one token: give one",
        ),
        (
            &[
                "--url",
                url,
                "--idp-issuer",
                "https://idp.example",
                "--idp-client-id",
                "c",
                "--client-id",
                "m",
                "--id-token-file",
                "/t",
                "--id-token-env",
                "T",
                "login",
            ],
            "usage: --id-token-file and --id-token-env name two sources of one token: give one",
        ),
        (
            &[
                "--url",
                url,
                "--assertion-env",
                "T",
                "--idp-issuer",
                "https://i",
                "login",
            ],
            "usage: --assertion-env (workload identity) and --idp-issuer (enterprise \
             authorization) choose two different sign-ins: give the options of one",
        ),
        (
            &["--url", url, "--idp-issuer", "https://idp.example", "login"],
            "usage: --idp-issuer (enterprise authorization) needs --idp-client-id: the identity \
             provider's issuer URL and this client's id there",
        ),
        (
            &[
                "--url",
                url,
                "--idp-issuer",
                "https://idp.example",
                "--idp-client-id",
                "c",
                "tools",
            ],
            "usage: --idp-issuer (enterprise authorization) needs --client-id: this client's id \
             at the MCP server's authorization server",
        ),
        (
            &["--url", url, "logout", "--dpop"],
            "usage: `logout` does not take --dpop (they choose how `login` signs in)",
        ),
        (
            &["--url", url, "auth", "status", "--assertion-file", "/t"],
            "usage: `auth status` does not take --assertion-file (they choose how `login` signs \
             in)",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(usage_error(args), want, "{args:?}");
    }
    // A secret given with contradicting options is not repeated.
    let m = usage_error(&[
        "--url",
        url,
        "--idp-client-secret",
        "idp-s3cret",
        "--idp-issuer",
        "https://idp.example",
        "tools",
    ]);
    assert!(!m.contains("s3cret"), "{m}");
}

#[test]
fn oauth_options_on_a_stdio_server_are_a_config_error() {
    let store = temp_store("stdio");
    let out = mcpb_with_token_file(
        &store,
        &["--stdio", "true", "--json", "--assertion-env", "T", "tools"],
    );
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["error"]["kind"], "config", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("--assertion-env: OAuth applies only to http and sse servers"),
        "{message}"
    );
}

#[test]
fn help_explains_the_modes_and_warns_of_secrets_on_the_command_line() {
    let store = temp_store("help");
    let out = mcpb_with_token_file(&store, &["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for option in [
        "--dpop",
        "--no-dpop",
        "--assertion-file <FILE>",
        "--assertion-env <VAR>",
        "--idp-issuer <URL>",
        "--idp-token-endpoint <URL>",
        "--idp-client-id <ID>",
        "--idp-client-secret <SECRET>",
        "--id-token-file <FILE>",
        "--id-token-env <VAR>",
    ] {
        assert!(help.contains(option), "{option} missing:\n{help}");
    }
    // Both secrets warn that the process list shows them (words joined across wrapped lines).
    let words = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        words
            .matches("A secret on the command line shows in the process list")
            .count(),
        2,
        "{help}"
    );
    let out = mcpb_with_token_file(&store, &["help", "login"]);
    let help = String::from_utf8_lossy(&out.stdout);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for words in [
        "workload identity",
        "enterprise-managed authorization",
        "--dpop",
    ] {
        assert!(help.contains(words), "{words} missing:\n{help}");
    }
}

/// Runs `mcpb ARGS login` with the token file `store` (loopback listener), playing the browser
/// from the URL it prints when `browse` (a grant with no person prints none).
fn login(store: &Path, args: &[&str], browse: bool) -> Output {
    let args = [args, &["login"]].concat();
    let mut child = with_token_file(store, &args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mcpb login");
    let mut seen = String::new();
    if browse {
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let auth_url = loop {
            let mut line = String::new();
            if stderr.read_line(&mut line).unwrap() == 0 {
                break None;
            }
            seen.push_str(&line);
            let line = line.trim();
            if line.starts_with("http") && line.contains("/authorize?") {
                break Some(line.to_owned());
            }
        };
        let auth_url = auth_url.unwrap_or_else(|| panic!("no authorization URL printed:\n{seen}"));
        browser(&auth_url).expect("the browser reaches the loopback listener");
    }
    let out = child.wait_with_output().expect("mcpb login ends");
    assert!(
        out.status.success(),
        "{seen}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn login_with_dpop_binds_the_stored_token_to_a_key() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("nonce-1".into()),
        ..AsOptions::default()
    });
    let url = server.mcp_url();
    let store = temp_store("dpop");
    let out = login(&store, &["--url", &url, "--dpop"], true);
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed in to"));
    let token_requests = server.requests_to("/token");
    assert!(!token_requests.is_empty());
    for r in &token_requests {
        let proof = r.header("DPoP").expect("a proof on every token request");
        assert_eq!(proof_claims(proof)["htm"], "POST");
    }
    assert!(
        token_requests.iter().any(|r| r
            .header("DPoP")
            .is_some_and(|p| proof_claims(p)["nonce"] == "nonce-1")),
        "the server's nonce was used"
    );

    // A later command, without --dpop, sends the stored token as a DPoP token with a proof.
    let before = server.requests_to("/mcp").len();
    let out = mcpb_with_token_file(&store, &["--url", &url, "tools"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mcp = server.requests_to("/mcp");
    let sent = &mcp[before..];
    assert!(!sent.is_empty());
    for r in sent {
        let auth = r.header("authorization").unwrap_or_default();
        assert!(auth.starts_with("DPoP "), "{auth}");
        let proof = r.header("DPoP").expect("a proof with each request");
        assert!(proof_claims(proof)["ath"].is_string());
    }
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);

    // Nothing printed shows the token or a proof.
    let token = server.state.access.lock().unwrap()[0].clone();
    let proof = token_requests[0]
        .header("DPoP")
        .unwrap_or_default()
        .to_owned();
    let status = mcpb_with_token_file(&store, &["--url", &url, "--json", "auth", "status"]);
    let printed = [&out, &status]
        .iter()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
        })
        .collect::<String>();
    assert!(
        !printed.contains(&token) && !printed.contains(&proof),
        "{printed}"
    );
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}

#[test]
fn a_machine_client_with_dpop_sends_proofs() {
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("nonce-2".into()),
        ..AsOptions::default()
    });
    let url = server.mcp_url();
    let store = temp_store("m2m-dpop");
    let out = mcpb_with_token_file(
        &store,
        &[
            "--url",
            &url,
            "--client-id",
            "m2m",
            "--client-secret",
            "m2m-secret",
            "--dpop",
            "tools",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        server
            .state
            .client_credentials_grants
            .load(Ordering::SeqCst),
        1
    );
    assert!(server
        .requests_to("/token")
        .iter()
        .all(|r| r.header("DPoP").is_some()));
    assert!(server.requests_to("/mcp").iter().any(|r| r
        .header("authorization")
        .is_some_and(|a| a.starts_with("DPoP "))));

    // --no-dpop: a Bearer token from the same server, no proof sent.
    let server = AuthServer::start(AsOptions {
        dpop_nonce: Some("nonce-3".into()),
        ..AsOptions::default()
    });
    let url = server.mcp_url();
    let store = temp_store("m2m-no-dpop");
    let out = mcpb_with_token_file(
        &store,
        &[
            "--url",
            &url,
            "--client-id",
            "m2m",
            "--client-secret",
            "m2m-secret",
            "--no-dpop",
            "tools",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server
        .requests_to("/token")
        .iter()
        .all(|r| r.header("DPoP").is_none()));
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}

/// A JWT-shaped assertion (its signature is the authorization server's concern).
const ASSERTION: &str = "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJjaS1qb2IifQ.c2lnbmF0dXJl";

/// The form fields of a token request's body.
fn form(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn login_with_an_assertion_file_uses_workload_identity() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("wif");
    let dir = store.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("ci-token");
    std::fs::write(&file, format!("{ASSERTION}\n")).unwrap();
    let out = login(
        &store,
        &["--url", &url, "--assertion-file", file.to_str().unwrap()],
        false,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed in to"));
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 0);
    let token_requests = server.requests_to("/token");
    assert_eq!(token_requests.len(), 1, "one token request");
    let fields = form(&token_requests[0].body);
    assert_eq!(
        field(&fields, "grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert_eq!(field(&fields, "assertion"), Some(ASSERTION));
    // The stored token serves a later command without the assertion.
    let out = mcpb_with_token_file(&store, &["--url", &url, "tools"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests_to("/token").len(), 1);
    let printed = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!printed.contains(ASSERTION), "{printed}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_assertion_from_a_variable_serves_each_command() {
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("wif-env");
    let out = with_token_file(
        &store,
        &[
            "--url",
            &url,
            "--assertion-env",
            "MCPB_TEST_ASSERTION",
            "tools",
        ],
    )
    .env("MCPB_TEST_ASSERTION", ASSERTION)
    .output()
    .expect("run mcpb");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fields = form(&server.requests_to("/token")[0].body);
    assert_eq!(field(&fields, "assertion"), Some(ASSERTION));
    let _ = std::fs::remove_dir_all(store.parent().unwrap());
}

#[test]
fn login_through_the_enterprise_identity_provider() {
    // The loopback server plays the identity provider too, at `/idp`; its token endpoint is
    // found in its OpenID metadata.
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("enterprise");
    let dir = store.parent().unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let id_token = dir.join("id-token");
    std::fs::write(&id_token, ASSERTION).unwrap();
    let idp = format!("{}/idp", server.origin());
    let out = login(
        &store,
        &[
            "--url",
            &url,
            "--idp-issuer",
            &idp,
            "--idp-client-id",
            "idp-client",
            "--id-token-file",
            id_token.to_str().unwrap(),
            "--client-id",
            "m2m",
            "--client-secret",
            "m2m-secret",
        ],
        false,
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Signed in to"));
    assert_eq!(
        server
            .requests_to("/idp/.well-known/openid-configuration")
            .len(),
        1
    );
    let exchanges = server.requests_to("/idp/token");
    assert_eq!(exchanges.len(), 1, "one token exchange");
    assert_eq!(
        field(&form(&exchanges[0].body), "grant_type"),
        Some("urn:ietf:params:oauth:grant-type:token-exchange")
    );
    let grants = server.requests_to("/token");
    assert_eq!(grants.len(), 1, "one grant at the authorization server");
    assert_eq!(
        field(&form(&grants[0].body), "grant_type"),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    let requests = exchanges;
    let exchange = form(&requests[0].body);
    assert_eq!(field(&exchange, "subject_token"), Some(ASSERTION));
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !printed.contains(ASSERTION) && !printed.contains("m2m-secret"),
        "{printed}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_enterprise_sign_in_on_another_command_says_to_run_login() {
    // No ID token source: the person would sign in at the provider, which only `login` does.
    let server = AuthServer::start(AsOptions::default());
    let url = server.mcp_url();
    let store = temp_store("enterprise-unattended");
    let idp = format!("{}/idp", server.origin());
    let out = mcpb_with_token_file(
        &store,
        &[
            "--url",
            &url,
            "--idp-issuer",
            &idp,
            "--idp-client-id",
            "idp-client",
            "--client-id",
            "m2m",
            "--client-secret",
            "m2m-secret",
            "tools",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{stderr}");
    assert!(stderr.contains("mcpb login"), "{stderr}");
    assert!(
        server.requests_to("/idp").is_empty(),
        "nothing asked of the provider"
    );
}
