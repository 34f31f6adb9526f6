//! OAuth against the loopback authorization server of `tests/oauth_support/`: the requests to
//! the authorization server go through the server's proxy, insecure endpoints are refused
//! before any request, registrations live in the token store (reused by a second process,
//! redone once when rejected), oversized answers and cross-origin redirects are refused,
//! `offline_access` is asked for only where listed, and a server without metadata is refused
//! unless the 2025-03-26 fallback is allowed.

mod oauth_support;
mod support_remote;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_blocking::auth::{FileTokenStore, OAuthConfig, RedirectHandler, TokenStore};
use mcp_blocking::config::Limits;
use mcp_blocking::{Client, Error, ServerConfig};
use oauth_support::{browser, headless, AsOptions, AuthServer};
use serde_json::json;
use support_remote::{Acceptor, HttpServer};

fn headless_oauth() -> OAuthConfig {
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        headless,
    ))
}

fn config(server: &AuthServer) -> ServerConfig {
    ServerConfig::http("secured", server.mcp_url()).with_timeout_secs(10.0)
}

fn connect(server: &AuthServer, oauth: OAuthConfig) -> Result<Client, Error> {
    Client::connect(config(server).with_oauth(oauth))
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "mcpb-oauth-hardening-{}-{name}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ))
}

/// The failure's text, which must be an authorization failure.
fn unauthorized(err: Error) -> String {
    let text = err.to_string();
    assert!(
        matches!(err, Error::Unauthorized { .. })
            || matches!(&err, Error::Connect(c) if c.kind() == mcp_blocking::error::ConnectErrorKind::Auth),
        "{err:?}"
    );
    text
}

// ---------------------------------------------------------------------------------------------
// A loopback CONNECT proxy (as in tests/proxy.rs).

struct ConnectProxy {
    _acceptor: Acceptor,
    addr: std::net::SocketAddr,
    tunnels: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    /// `require_auth`: refuse (407) a CONNECT without this `Proxy-Authorization`. `map`: names
    /// (`host:port`) only this proxy resolves, to loopback addresses.
    fn start(
        require_auth: Option<&'static str>,
        map: Vec<(String, std::net::SocketAddr)>,
    ) -> ConnectProxy {
        let tunnels = Arc::new(Mutex::new(Vec::new()));
        let t = tunnels.clone();
        let acceptor = Acceptor::start("proxy", move |n, stream| {
            serve(n, stream, &t, require_auth, &map)
        });
        ConnectProxy {
            addr: acceptor.addr(),
            _acceptor: acceptor,
            tunnels,
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn tunnels(&self) -> Vec<String> {
        self.tunnels.lock().unwrap().clone()
    }
}

fn serve(
    n: usize,
    client: TcpStream,
    tunnels: &Mutex<Vec<String>>,
    require: Option<&str>,
    map: &[(String, std::net::SocketAddr)],
) {
    let Ok(read_half) = client.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut auth = None;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("proxy-authorization") {
                auth = Some(v.trim().to_owned());
            }
        }
    }
    let mut out = &client;
    if method != "CONNECT" {
        let _ = out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
        return;
    }
    tunnels.lock().unwrap().push(target.clone());
    if require.is_some() && auth.as_deref() != require {
        let _ = out.write_all(
            b"HTTP/1.1 407 Proxy Authentication Required\r\n\
              Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n",
        );
        return;
    }
    let upstream = map
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, a)| *a)
        .or_else(|| target.parse::<std::net::SocketAddr>().ok())
        .filter(|a| a.ip().is_loopback())
        .and_then(|a| TcpStream::connect(a).ok());
    let Some(upstream) = upstream else {
        let _ = out.write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
        return;
    };
    if out
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .is_err()
    {
        return;
    }
    support_remote::tunnel(n, reader, &client, upstream);
}

/// An authorization server whose issuer is `http://as.localhost:<port>`, a name only the proxy
/// resolves (to this same loopback server), so the proxy's tunnels to that name are the
/// authorization's own requests, told apart from the MCP requests (to `127.0.0.1:<port>`).
fn named_as() -> (AuthServer, String, ConnectProxy) {
    let server = AuthServer::start_with(|origin| {
        let port = origin.rsplit(':').next().unwrap_or("0").to_owned();
        AsOptions {
            issuer: Some(format!("http://as.localhost:{port}")),
            ..AsOptions::default()
        }
    });
    let addr: std::net::SocketAddr = server
        .origin()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let name = format!("as.localhost:{}", addr.port());
    let proxy = ConnectProxy::start(None, vec![(name.clone(), addr)]);
    (server, name, proxy)
}

/// Plays the browser through `proxy` (the authorization endpoint has a name only it knows).
fn proxied_browser(proxy: String) -> OAuthConfig {
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        move |url| {
            let agent: ureq::Agent = ureq::Agent::config_builder()
                .max_redirects(0)
                .http_status_as_error(false)
                .proxy(Some(ureq::Proxy::new(&proxy).map_err(|e| e.to_string())?))
                .build()
                .into();
            let resp = agent.get(url).call().map_err(|e| e.to_string())?;
            resp.headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
                .ok_or_else(|| format!("no redirect ({})", resp.status()))
        },
    ))
}

#[test]
fn authorization_server_requests_go_through_the_servers_proxy() {
    let (server, name, proxy) = named_as();
    let cfg = config(&server).with_proxy(proxy.url());
    let to_as = |p: &ConnectProxy| p.tunnels().iter().filter(|t| **t == name).count();

    // Connecting: the authorization's requests take the server's proxy.
    let client = Client::connect(cfg.clone().with_oauth(proxied_browser(proxy.url())))
        .expect("authorizes through the proxy");
    // Authorization server metadata, registration, the browser's visit, token.
    assert!(to_as(&proxy) >= 4, "{:?}", proxy.tunnels());
    assert_eq!(server.state.code_grants.load(Ordering::SeqCst), 1);
    // A refresh after the token is revoked goes the same way.
    let before = to_as(&proxy);
    server.state.revoke_access_tokens();
    client.list_tools().expect("refreshes, then lists");
    assert_eq!(server.state.refresh_grants.load(Ordering::SeqCst), 1);
    assert_eq!(to_as(&proxy), before + 1, "{:?}", proxy.tunnels());
    client.close().unwrap();

    // login_for, before any connection, too.
    let before = to_as(&proxy);
    let tokens = proxied_browser(proxy.url())
        .login_for(&cfg)
        .expect("logs in through the proxy");
    assert!(tokens.access_token.expose().starts_with("at-"));
    assert!(to_as(&proxy) >= before + 4, "{:?}", proxy.tunnels());

    // A proxy refusing the tunnel fails the authorization: nothing went around it.
    let strict = ConnectProxy::start(Some("Basic dTpw"), Vec::new());
    let fresh = AuthServer::start(AsOptions::default());
    let err = headless_oauth()
        .login_for(&config(&fresh).with_proxy(strict.url()))
        .unwrap_err();
    let text = unauthorized(err);
    assert!(!strict.tunnels().is_empty(), "{text}");
    assert!(fresh.http.requests().is_empty(), "{text}");
}

#[test]
fn login_for_refuses_a_server_without_oauth_transport() {
    let err = headless_oauth()
        .login_for(&ServerConfig::stdio("local", "true"))
        .unwrap_err();
    assert!(err.to_string().contains("Streamable HTTP"), "{err}");
}

/// A handler that counts its calls and plays the browser.
fn counting_oauth(calls: &Arc<AtomicUsize>) -> OAuthConfig {
    let c = calls.clone();
    OAuthConfig::authorization_code(RedirectHandler::custom(
        "http://localhost:3000/callback",
        move |url| {
            c.fetch_add(1, Ordering::SeqCst);
            headless(url)
        },
    ))
}

#[test]
fn plain_http_endpoints_off_loopback_are_refused_before_any_request() {
    for (endpoint, url) in [
        ("token_endpoint", "http://as.example.com/token"),
        ("authorization_endpoint", "http://as.example.com/authorize"),
        ("registration_endpoint", "http://as.example.com/register"),
    ] {
        let server = AuthServer::start(AsOptions {
            endpoints: vec![(endpoint.into(), url.into())],
            ..AsOptions::default()
        });
        let calls = Arc::new(AtomicUsize::new(0));
        let text = unauthorized(connect(&server, counting_oauth(&calls)).unwrap_err());
        assert!(
            text.contains("insecure authorization server endpoint")
                && text.contains(endpoint)
                && text.contains(url),
            "{text}"
        );
        // Nobody was sent to sign in, and nothing was registered.
        assert_eq!(calls.load(Ordering::SeqCst), 0, "{endpoint}");
        assert_eq!(server.state.authorize_requests.load(Ordering::SeqCst), 0);
        assert_eq!(server.state.registrations.load(Ordering::SeqCst), 0);
    }
    // An issuer on plain http: its metadata is never asked for.
    let server = AuthServer::start(AsOptions {
        issuer: Some("http://as.example.com".into()),
        ..AsOptions::default()
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let text = unauthorized(connect(&server, counting_oauth(&calls)).unwrap_err());
    assert!(
        text.contains("metadata endpoint") && text.contains("http://as.example.com/"),
        "{text}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_registration_is_reused_by_a_second_process_sharing_the_file_store() {
    let server = AuthServer::start(AsOptions {
        check_clients: true,
        ..AsOptions::default()
    });
    let path = temp_path("reuse");
    // "Processes" are configs with their own state, sharing nothing but the file.
    let first = headless_oauth().token_store(FileTokenStore::new(&path));
    connect(&server, first).expect("first").close().unwrap();
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 1);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["clients"][0]["client_id"], "client-1");
    assert_eq!(doc["clients"][0]["issuer"], json!(server.origin()));
    assert_eq!(
        doc["clients"][0]["redirect_uri"],
        "http://localhost:3000/callback"
    );
    // Without its tokens, the second one authorizes again, with the same client.
    assert_eq!(
        FileTokenStore::new(&path)
            .remove(&server.mcp_url())
            .unwrap(),
        1
    );
    let second = headless_oauth().token_store(FileTokenStore::new(&path));
    let client = connect(&server, second).expect("second");
    assert_eq!(client.list_tools().unwrap().len(), 1);
    let st = &server.state;
    assert_eq!(st.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 2);
    assert_eq!(
        *st.token_clients.lock().unwrap(),
        vec!["client-1".to_owned(), "client-1".to_owned()]
    );
    client.close().unwrap();
    let _ = std::fs::remove_file(&path);
}

type Browser = std::thread::JoinHandle<Result<(), String>>;

fn loopback_oauth(browsers: &Arc<Mutex<Vec<Browser>>>, path: &std::path::Path) -> OAuthConfig {
    let b = browsers.clone();
    OAuthConfig::authorization_code(RedirectHandler::loopback(move |url| {
        let url = url.to_owned();
        let h = std::thread::Builder::new()
            .name("test-browser".into())
            .spawn(move || browser(&url))
            .unwrap();
        b.lock().unwrap().push(h);
    }))
    .token_store(FileTokenStore::new(path))
}

#[test]
fn a_loopback_registration_is_reused_on_its_port_by_a_second_process() {
    let server = AuthServer::start(AsOptions {
        check_clients: true,
        ..AsOptions::default()
    });
    let path = temp_path("loopback");
    let browsers: Arc<Mutex<Vec<Browser>>> = Arc::default();
    connect(&server, loopback_oauth(&browsers, &path))
        .expect("first")
        .close()
        .unwrap();
    let first_uri = server.state.last_redirect_uri.lock().unwrap().clone();
    FileTokenStore::new(&path)
        .remove(&server.mcp_url())
        .unwrap();
    let client = connect(&server, loopback_oauth(&browsers, &path)).expect("second");
    for h in browsers.lock().unwrap().drain(..) {
        h.join().unwrap().expect("the browser reached the listener");
    }
    let second_uri = server.state.last_redirect_uri.lock().unwrap().clone();
    assert!(first_uri
        .as_deref()
        .is_some_and(|u| u.starts_with("http://127.0.0.1:")));
    assert_eq!(first_uri, second_uri);
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 1);
    assert_eq!(server.state.code_grants.load(Ordering::SeqCst), 2);
    client.close().unwrap();
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_rejected_registration_is_dropped_and_redone_once() {
    let server = AuthServer::start(AsOptions {
        check_clients: true,
        ..AsOptions::default()
    });
    let path = temp_path("rejected");
    let first = headless_oauth().token_store(FileTokenStore::new(&path));
    connect(&server, first).expect("first").close().unwrap();
    // The server forgets the client; the next process starts without tokens.
    server.state.forget_clients();
    FileTokenStore::new(&path)
        .remove(&server.mcp_url())
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let second = counting_oauth(&calls).token_store(FileTokenStore::new(&path));
    let client = connect(&server, second).expect("registers again and connects");
    let st = &server.state;
    assert_eq!(st.registrations.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(
        *st.token_clients.lock().unwrap(),
        vec![
            "client-1".to_owned(),
            "client-1".to_owned(),
            "client-2".to_owned()
        ]
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["clients"].as_array().unwrap().len(), 1);
    assert_eq!(doc["clients"][0]["client_id"], "client-2");
    client.close().unwrap();
    let _ = std::fs::remove_file(&path);

    // A server that rejects every client: one registration more, then the failure.
    let server = AuthServer::start(AsOptions {
        reject_clients: true,
        ..AsOptions::default()
    });
    let calls = Arc::new(AtomicUsize::new(0));
    let text = unauthorized(connect(&server, counting_oauth(&calls)).unwrap_err());
    assert!(text.contains("invalid_client"), "{text}");
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn oversized_metadata_is_refused_naming_the_cap() {
    let server = AuthServer::start(AsOptions {
        metadata_padding: 300 * 1024,
        ..AsOptions::default()
    });
    let text = unauthorized(connect(&server, headless_oauth()).unwrap_err());
    assert!(
        text.contains("larger than 262144 bytes") && text.contains("max_auth_response_bytes"),
        "{text}"
    );
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 0);
    // The cap is the server's limit.
    let roomy = Limits::default().with_max_auth_response_bytes(1 << 20);
    let client = Client::connect(
        config(&server)
            .with_limits(roomy)
            .with_oauth(headless_oauth()),
    )
    .expect("connects under a larger cap");
    client.close().unwrap();
}

#[test]
fn redirects_of_the_authorization_server_stay_within_its_origin() {
    let server = AuthServer::start(AsOptions {
        metadata_redirect: Some("/as-metadata".into()),
        ..AsOptions::default()
    });
    let client = connect(&server, headless_oauth()).expect("a same-origin redirect is followed");
    client.close().unwrap();
    assert_eq!(server.requests_to("/as-metadata").len(), 1);

    // localhost is another origin than 127.0.0.1: refused before anything is sent there.
    let server = AuthServer::start(AsOptions {
        metadata_redirect: Some("http://localhost:9/as-metadata?secret=1".into()),
        ..AsOptions::default()
    });
    let text = unauthorized(connect(&server, headless_oauth()).unwrap_err());
    assert!(
        text.contains("another origin") && text.contains("http://localhost:9/as-metadata"),
        "{text}"
    );
    assert!(!text.contains("secret=1"), "{text}");
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 0);
}

#[test]
fn offline_access_is_asked_for_only_where_the_server_lists_it() {
    let listed = || AsOptions {
        as_scopes: Some(vec!["mcp:read".into(), "offline_access".into()]),
        ..AsOptions::default()
    };
    let server = AuthServer::start(listed());
    connect(&server, headless_oauth()).unwrap().close().unwrap();
    assert_eq!(
        *server.state.scopes.lock().unwrap(),
        vec![Some("mcp:read offline_access".to_owned())]
    );

    let server = AuthServer::start(listed());
    connect(&server, headless_oauth().refresh_tokens(false))
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(
        *server.state.scopes.lock().unwrap(),
        vec![Some("mcp:read".to_owned())]
    );

    let server = AuthServer::start(AsOptions {
        as_scopes: Some(vec!["mcp:read".into()]),
        ..AsOptions::default()
    });
    connect(&server, headless_oauth()).unwrap().close().unwrap();
    assert_eq!(
        *server.state.scopes.lock().unwrap(),
        vec![Some("mcp:read".to_owned())]
    );
}

/// A protected server that publishes no metadata at all.
fn bare_server() -> HttpServer {
    HttpServer::start(|req, conn| {
        if req.path == "/mcp" {
            conn.json(
                401,
                &[("WWW-Authenticate", "Bearer")],
                &json!({"error": "invalid_token"}),
            );
        } else {
            conn.respond(404, &[], b"");
        }
    })
}

#[test]
fn a_server_without_metadata_is_refused_unless_the_fallback_is_allowed() {
    let server = bare_server();
    let calls = Arc::new(AtomicUsize::new(0));
    let cfg = || ServerConfig::http("bare", server.url("/mcp")).with_timeout_secs(10.0);
    let text = unauthorized(Client::connect(cfg().with_oauth(counting_oauth(&calls))).unwrap_err());
    assert!(
        text.contains("publishes no OAuth metadata") && text.contains("S256"),
        "{text}"
    );
    assert!(server
        .requests()
        .iter()
        .all(|r| r.path != "/register" && r.path != "/token"));

    // Allowed: the default endpoints are used (here, /register is missing).
    let oauth = counting_oauth(&calls).legacy_endpoint_fallback(true);
    let text = unauthorized(Client::connect(cfg().with_oauth(oauth)).unwrap_err());
    assert!(
        text.contains("client registration failed: HTTP 404"),
        "{text}"
    );
    assert!(server.requests().iter().any(|r| r.path == "/register"));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[test]
fn a_token_request_follows_only_307_and_308_within_the_origin() {
    let redirected = |status: u16, location: &str| {
        AuthServer::start(AsOptions {
            token_redirect: Some((status, location.to_owned())),
            ..AsOptions::default()
        })
    };
    // 307 and 308 keep the method and body: followed within the origin.
    for status in [307, 308] {
        let server = redirected(status, "/token2");
        connect(&server, headless_oauth())
            .expect("the token request follows")
            .close()
            .unwrap();
        assert_eq!(server.requests_to("/token2").len(), 1);
    }
    // A 302 to a POST is the answer, not a hop.
    let server = redirected(302, "/token2");
    let text = unauthorized(connect(&server, headless_oauth()).unwrap_err());
    assert!(
        text.contains("the token request failed: HTTP 302"),
        "{text}"
    );
    assert!(server.requests_to("/token2").is_empty());
    // Another origin never receives the code, the verifier or the client's credentials.
    let server = redirected(307, "http://localhost:9/token?x=secret");
    let text = unauthorized(connect(&server, headless_oauth()).unwrap_err());
    assert!(
        text.contains("refused a redirect to another origin, http://localhost:9/token"),
        "{text}"
    );
    assert!(!text.contains("secret"), "{text}");
}

#[test]
fn discovery_whose_every_address_stalls_fails_once_within_the_timeout() {
    // The well-known addresses of one discovery share the timeout: four stalled addresses
    // (two of the resource's metadata, two of the authorization server's) fail the sign-in
    // once, not once each.
    let server = AuthServer::start(AsOptions {
        stall_metadata: true,
        ..AsOptions::default()
    });
    let timeout = std::time::Duration::from_secs(1);
    let oauth = headless_oauth().timeout(timeout);
    let start = std::time::Instant::now();
    let err = oauth
        .login("secured", &server.mcp_url())
        .expect_err("no metadata comes");
    let took = start.elapsed();
    assert!(
        took < timeout + std::time::Duration::from_secs(1),
        "discovery took {took:?} with a {timeout:?} timeout: {err}"
    );
    assert!(err.to_string().contains("did not come within"), "{err}");
}

#[test]
fn a_timeout_too_long_for_the_clock_is_as_long_as_it_gets() {
    // A timeout is the user's to choose: one no deadline can hold is a sign-in without one,
    // not a panic.
    let server = AuthServer::start(AsOptions::default());
    let oauth = headless_oauth().timeout(std::time::Duration::MAX);
    let client = connect(&server, oauth).expect("signs in and connects");
    client.close().unwrap();
}
