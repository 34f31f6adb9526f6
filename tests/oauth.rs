//! OAuth against a loopback authorization server of our own (`tests/oauth_support/`): what the
//! conformance suite does not cover (refresh, stores, the loopback listener, the paste flow,
//! refusals).

mod oauth_support;
mod support_remote;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use mcp_blocking::auth::{
    AuthErrorKind, FileTokenStore, LoopbackListener, OAuthConfig, RedirectHandler, TokenStore,
};
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{browser, headless, AsOptions, AuthServer};

/// A thread playing the browser.
type Browser = std::thread::JoinHandle<Result<(), String>>;

fn headless_oauth() -> OAuthConfig {
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        headless,
    ))
}

fn connect(server: &AuthServer, oauth: OAuthConfig) -> Result<Client, Error> {
    Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_oauth(oauth)
            .with_timeout_secs(10.0),
    )
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "mcpb-oauth-{}-{name}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ))
}

#[test]
fn a_401_authorizes_and_every_request_carries_the_token() {
    let server = AuthServer::start(AsOptions::default());
    let client = connect(&server, headless_oauth()).expect("connects after authorizing");
    let tools = client.list_tools().expect("tools");
    assert_eq!(tools[0].name, "hello");
    let st = &server.state;
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 1);
    assert_eq!(st.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(st.code_grants.load(Ordering::SeqCst), 1);
    assert_eq!(st.unauthorized.load(Ordering::SeqCst), 1);
    // Every POST after the first carried the bearer token.
    let posts = server.requests_to("/mcp");
    assert!(posts.len() >= 3, "{posts:?}");
    assert!(posts[1..].iter().filter(|r| r.method == "POST").all(|r| r
        .header("authorization")
        .is_some_and(|v| v.starts_with("Bearer at-"))));
    client.close().unwrap();
}

#[test]
fn a_token_close_to_expiry_is_refreshed_before_use() {
    // 30 s is inside the 60 s margin: every use refreshes first.
    let server = AuthServer::start(AsOptions {
        expires_in: 30,
        ..AsOptions::default()
    });
    let client = connect(&server, headless_oauth()).expect("connects");
    let before = server.state.refresh_grants.load(Ordering::SeqCst);
    client.list_tools().expect("tools");
    let st = &server.state;
    assert!(st.refresh_grants.load(Ordering::SeqCst) > before);
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 1);
    // No request was refused: the token was renewed before it was sent.
    assert_eq!(st.unauthorized.load(Ordering::SeqCst), 1);
    client.close().unwrap();
}

#[test]
fn a_401_with_a_token_refreshes_it() {
    let server = AuthServer::start(AsOptions::default());
    let client = connect(&server, headless_oauth()).expect("connects");
    server.state.revoke_access_tokens();
    client.list_tools().expect("tools after a refresh");
    let st = &server.state;
    assert_eq!(st.refresh_grants.load(Ordering::SeqCst), 1);
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 1);
    client.close().unwrap();
}

#[test]
fn a_rejected_refresh_token_falls_back_to_a_new_authorization() {
    let server = AuthServer::start(AsOptions {
        reject_refresh: true,
        ..AsOptions::default()
    });
    let client = connect(&server, headless_oauth()).expect("connects");
    server.state.revoke_access_tokens();
    client.list_tools().expect("tools after authorizing again");
    let st = &server.state;
    assert_eq!(st.refresh_grants.load(Ordering::SeqCst), 1);
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 2);
    assert_eq!(st.code_grants.load(Ordering::SeqCst), 2);
    client.close().unwrap();
}

#[test]
fn concurrent_callers_refresh_once() {
    let server = AuthServer::start(AsOptions::default());
    let client = connect(&server, headless_oauth()).expect("connects");
    server.state.revoke_access_tokens();
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    client.list_tools().map(|t| t.len())
                })
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap().expect("tools"), 1);
        }
    });
    let st = &server.state;
    assert_eq!(st.refresh_grants.load(Ordering::SeqCst), 1);
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 1);
    client.close().unwrap();
}

/// The second process of `the_file_store_serves_a_second_process`: connects with the stored
/// token and must not authorize.
#[test]
fn file_store_child() {
    let (Ok(path), Ok(url)) = (
        std::env::var("MCPB_OAUTH_CHILD_STORE"),
        std::env::var("MCPB_OAUTH_CHILD_URL"),
    ) else {
        return; // only meaningful when started by the parent test
    };
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        |_| Err("the second process must not authorize".into()),
    ))
    .token_store(FileTokenStore::new(path));
    let client =
        Client::connect(ServerConfig::http("secured", url).with_oauth(oauth)).expect("connects");
    assert_eq!(client.list_tools().expect("tools").len(), 1);
    client.close().unwrap();
}

#[test]
fn the_file_store_serves_a_second_process() {
    let server = AuthServer::start(AsOptions::default());
    let path = temp_path("store").join("tokens.json");
    let oauth = headless_oauth().token_store(FileTokenStore::new(&path));
    let client = connect(&server, oauth).expect("connects");
    client.close().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "file_store_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MCPB_OAUTH_CHILD_STORE", &path)
        .env("MCPB_OAUTH_CHILD_URL", server.mcp_url())
        .output()
        .expect("run the second process");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);
    let stored = FileTokenStore::new(&path).load(&server.mcp_url()).unwrap();
    assert_eq!(stored.len(), 1);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn the_loopback_listener_receives_the_browser() {
    let server = AuthServer::start(AsOptions::default());
    let browsers: Arc<Mutex<Vec<Browser>>> = Arc::default();
    let b = browsers.clone();
    let oauth = OAuthConfig::authorization_code(RedirectHandler::loopback(move |url| {
        let url = url.to_owned();
        let h = std::thread::Builder::new()
            .name("test-browser".into())
            .spawn(move || browser(&url))
            .unwrap();
        b.lock().unwrap().push(h);
    }));
    let client = connect(&server, oauth).expect("connects through the loopback listener");
    assert_eq!(client.list_tools().unwrap().len(), 1);
    for h in browsers.lock().unwrap().drain(..) {
        h.join().unwrap().expect("the browser reached the listener");
    }
    let redirect = server
        .state
        .last_redirect_uri
        .lock()
        .unwrap()
        .clone()
        .unwrap();
    assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"));
    client.close().unwrap();
}

#[test]
fn the_loopback_listener_times_out() {
    let listener = LoopbackListener::bind(0).unwrap();
    let err = listener.wait(Duration::from_millis(200)).unwrap_err();
    assert!(err.detail.contains("within"), "{err}");
    assert_eq!(err.kind, AuthErrorKind::TimedOut);

    let server = AuthServer::start(AsOptions::default());
    let oauth = OAuthConfig::authorization_code(
        RedirectHandler::loopback(|_| {}).timeout(Duration::from_millis(300)),
    );
    let err = connect(&server, oauth).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("no browser came back"), "{text}");
    assert_eq!(server.state.code_grants.load(Ordering::SeqCst), 0);
}

#[test]
fn the_paste_flow_takes_the_pasted_address() {
    let server = AuthServer::start(AsOptions::default());
    let shown = Arc::new(Mutex::new(String::new()));
    let s = shown.clone();
    let oauth = OAuthConfig::authorization_code(RedirectHandler::paste(
        "http://localhost:8976/callback",
        move |url| {
            *s.lock().unwrap() = url.to_owned();
            // What the person copies from the address bar, with the line end.
            headless(url).map(|l| format!("  {l}\n"))
        },
    ));
    let client = connect(&server, oauth).expect("connects");
    assert!(shown.lock().unwrap().contains("code_challenge_method=S256"));
    assert_eq!(client.list_tools().unwrap().len(), 1);
    client.close().unwrap();
}

#[test]
fn an_authorization_server_without_s256_is_refused() {
    let server = AuthServer::start(AsOptions {
        s256: false,
        ..AsOptions::default()
    });
    let err = connect(&server, headless_oauth()).unwrap_err();
    assert!(err.to_string().contains("S256"), "{err}");
    assert!(server.requests_to("/authorize").is_empty());
    assert!(server.requests_to("/register").is_empty());
}

#[test]
fn client_credentials_need_no_s256_for_they_have_no_code() {
    let server = AuthServer::start(AsOptions {
        s256: false,
        ..AsOptions::default()
    });
    let oauth = OAuthConfig::client_credentials("m2m", "m2m-secret");
    let client = connect(&server, oauth).expect("a machine client connects");
    client.list_tools().expect("tools/list");
    assert_eq!(server.requests_to("/token").len(), 1);
}

#[test]
fn a_wrong_state_is_refused() {
    let server = AuthServer::start(AsOptions::default());
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        |url| headless(url).map(|l| l.replace("state=", "state=x")),
    ));
    let err = connect(&server, oauth).unwrap_err();
    assert!(err.to_string().contains("`state`"), "{err}");
    assert!(server.requests_to("/token").is_empty());
}

#[test]
fn a_wrong_iss_is_refused() {
    let server = AuthServer::start(AsOptions {
        wrong_iss: Some("https://attacker.example".into()),
        ..AsOptions::default()
    });
    let err = connect(&server, headless_oauth()).unwrap_err();
    assert!(err.to_string().contains("`iss`"), "{err}");
    assert!(server.requests_to("/token").is_empty());
}

#[test]
fn a_cross_origin_resource_metadata_url_is_not_fetched() {
    let other = AuthServer::start(AsOptions::default());
    let server = AuthServer::start(AsOptions {
        resource_metadata: Some(format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            other.origin()
        )),
        ..AsOptions::default()
    });
    // Discovery falls back to the server's own well-known location.
    let client = connect(&server, headless_oauth()).expect("connects");
    assert!(
        other.http.requests().is_empty(),
        "{:?}",
        other.http.requests()
    );
    client.close().unwrap();
}

#[test]
fn tokens_and_secrets_stay_out_of_debug_and_errors() {
    let server = AuthServer::start(AsOptions::default());
    let oauth = headless_oauth().client_secret("s3cret-value");
    let config = ServerConfig::http("secured", server.mcp_url()).with_oauth(oauth.clone());
    let client = Client::connect(config.clone()).expect("connects");
    let stored = oauth.stored_tokens(&server.mcp_url()).unwrap();
    let token = stored[0].access_token.expose().to_owned();
    assert!(token.starts_with("at-"));
    for shown in [
        format!("{config:?}"),
        format!("{oauth:?}"),
        format!("{stored:?}"),
        format!("{client:?}"),
    ] {
        assert!(
            !shown.contains(&token) && !shown.contains("s3cret-value"),
            "{shown}"
        );
    }
    client.close().unwrap();
}

#[test]
fn a_request_authorizes_at_most_three_times() {
    let server = AuthServer::start(AsOptions {
        forbid_scope: Some("mcp:admin".into()),
        ..AsOptions::default()
    });
    let err = connect(&server, headless_oauth()).unwrap_err();
    match &err {
        Error::Connect(c) => assert_eq!(c.http_status(), Some(403), "{err}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 3);
    // The step-up asked for the challenged scope.
    let last = server.requests_to("/authorize").pop().unwrap();
    assert!(last.path.contains("scope=mcp%3Aadmin"), "{}", last.path);
}

#[test]
fn a_token_refreshed_elsewhere_is_picked_up_from_the_shared_file() {
    let server = AuthServer::start(AsOptions::default());
    let path = temp_path("shared").join("tokens.json");
    let a = connect(
        &server,
        headless_oauth().token_store(FileTokenStore::new(&path)),
    )
    .expect("first client signs in");
    // A second, independent config on the same file: it uses the stored sign-in.
    let b = connect(
        &server,
        OAuthConfig::authorization_code(RedirectHandler::custom(
            "http://localhost:3000/callback",
            |_| Err("must not sign in again".into()),
        ))
        .token_store(FileTokenStore::new(&path)),
    )
    .expect("second client uses the stored token");
    server.state.revoke_access_tokens();
    a.list_tools()
        .expect("the first refreshes (the refresh token rotates)");
    // The second's refresh token is spent; it takes the first one's tokens from the file.
    b.list_tools()
        .expect("the second picks up the refreshed token");
    let st = &server.state;
    assert_eq!(st.refresh_grants.load(Ordering::SeqCst), 1);
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 1);
    a.close().unwrap();
    b.close().unwrap();
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn a_legacy_sse_server_is_authorized_on_its_stream() {
    let server = AuthServer::start(AsOptions::default());
    let config = ServerConfig::sse("legacy", format!("{}/sse", server.origin()))
        .with_oauth(headless_oauth())
        .with_timeout_secs(10.0);
    let client = Client::connect(config).expect("connects after authorizing");
    assert_eq!(client.list_tools().unwrap()[0].name, "hello");
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 1);
    let stream = server.requests_to("/sse");
    assert!(stream
        .last()
        .and_then(|r| r.header("authorization"))
        .is_some_and(|v| v.starts_with("Bearer ")));
    client.close().unwrap();
}

#[test]
fn a_request_sent_again_after_a_slow_sign_in_has_a_timeout_of_its_own() {
    let server = AuthServer::start(AsOptions {
        reject_refresh: true,
        ..AsOptions::default()
    });
    let signed_in = std::sync::atomic::AtomicUsize::new(0);
    // The second sign-in is a person who takes longer than the request timeout.
    let person = move |url: &str| {
        if signed_in.fetch_add(1, Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(1500));
        }
        headless(url)
    };
    let oauth = OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        person,
    ));
    let client = Client::connect(
        ServerConfig::http("secured", server.mcp_url())
            .with_oauth(oauth)
            .with_timeout_secs(1.0),
    )
    .expect("connects");
    server.state.revoke_access_tokens();
    let tools = client.list_tools().expect("tools after signing in again");
    assert_eq!(tools[0].name, "hello");
    assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 2);
    client.close().unwrap();
}
