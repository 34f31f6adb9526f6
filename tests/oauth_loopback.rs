//! The loopback listener of a sign-in against what another local program can send it: a
//! connection that trickles bytes or stays idle cannot keep the browser's redirect from being
//! read nor the login's deadline from firing, an oversized request is refused, and a redirect
//! whose `state` is missing or wrong is ignored, even when it says `invalid_client`.

mod oauth_support;
mod support_remote;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use mcp_blocking::auth::{LoopbackListener, OAuthConfig, RedirectHandler};
use mcp_blocking::ServerConfig;
use oauth_support::{browser, AsOptions, AuthServer};

/// The threads a test started (browsers and tricklers), joined at its end.
#[derive(Default, Clone)]
struct Threads(Arc<Mutex<Vec<JoinHandle<()>>>>);

impl Threads {
    fn spawn(&self, name: &str, f: impl FnOnce() + Send + 'static) {
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .unwrap();
        self.0.lock().unwrap().push(h);
    }

    fn join(&self) {
        let all: Vec<_> = self.0.lock().unwrap().drain(..).collect();
        for h in all {
            h.join().unwrap();
        }
    }
}

/// The loopback port of an authorization URL's `redirect_uri`.
fn port_of(auth_url: &str) -> u16 {
    let marker = "redirect_uri=http%3A%2F%2F127.0.0.1%3A";
    let rest = &auth_url[auth_url.find(marker).expect("a loopback redirect_uri") + marker.len()..];
    rest[..rest.find('%').unwrap()].parse().unwrap()
}

/// A local connection that sends the start of a request, then one byte every 100 ms until
/// `stop` is signalled, the listener closes it, or 30 s pass.
fn trickle(threads: &Threads, port: u16, stop: Receiver<()>) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.write_all(b"GET /callback?").unwrap();
    threads.spawn("trickler", move || {
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            match stop.recv_timeout(Duration::from_millis(100)) {
                Err(RecvTimeoutError::Timeout) => {
                    if conn.write_all(b"a").is_err() {
                        return;
                    }
                }
                _ => return,
            }
        }
    });
}

/// A browser coming back to the listener, on its own thread.
fn browse(threads: &Threads, auth_url: &str) {
    let url = auth_url.to_owned();
    threads.spawn("browser", move || {
        browser(&url).expect("the browser reaches the listener")
    });
}

fn server_config(server: &AuthServer) -> ServerConfig {
    ServerConfig::http("secured", server.mcp_url())
}

#[test]
fn a_trickling_connection_does_not_hold_back_the_browser() {
    let server = AuthServer::start(AsOptions::default());
    let threads = Threads::default();
    let (stop, stopped): (Sender<()>, Receiver<()>) = crossbeam_channel::bounded(1);
    let t = threads.clone();
    let oauth = OAuthConfig::authorization_code(
        RedirectHandler::loopback(move |url| {
            // The trickler is connected (and so queued) before the browser.
            trickle(&t, port_of(url), stopped.clone());
            browse(&t, url);
        })
        .timeout(Duration::from_secs(20)),
    );
    let result = oauth.login_for(&server_config(&server));
    let _ = stop.send(());
    threads.join();
    result.expect("signed in while the other connection trickles");
    assert_eq!(server.state.code_grants.load(Ordering::SeqCst), 1);
}

#[test]
fn a_trickling_connection_alone_does_not_hold_the_deadline() {
    let server = AuthServer::start(AsOptions::default());
    let threads = Threads::default();
    let (stop, stopped) = crossbeam_channel::bounded(1);
    let t = threads.clone();
    let shown: Arc<Mutex<Option<Instant>>> = Arc::default();
    let s = shown.clone();
    let timeout = Duration::from_secs(1);
    let oauth = OAuthConfig::authorization_code(
        RedirectHandler::loopback(move |url| {
            *s.lock().unwrap() = Some(Instant::now());
            trickle(&t, port_of(url), stopped.clone());
        })
        .timeout(timeout),
    );
    let result = oauth.login_for(&server_config(&server));
    let ended = Instant::now();
    let _ = stop.send(());
    threads.join();
    let err = result.expect_err("nobody came back").to_string();
    assert!(err.contains("no browser came back"), "{err}");
    let waited = ended - shown.lock().unwrap().expect("the URL was shown");
    assert!(waited < timeout + Duration::from_secs(1), "{waited:?}");
}

#[test]
fn idle_connections_do_not_hold_back_the_browser() {
    let server = AuthServer::start(AsOptions::default());
    let threads = Threads::default();
    let idle: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
    let (t, i) = (threads.clone(), idle.clone());
    let oauth = OAuthConfig::authorization_code(
        RedirectHandler::loopback(move |url| {
            let port = port_of(url);
            let mut idle = i.lock().unwrap();
            for _ in 0..40 {
                idle.push(TcpStream::connect(("127.0.0.1", port)).unwrap());
            }
            browse(&t, url);
        })
        .timeout(Duration::from_secs(20)),
    );
    let result = oauth.login_for(&server_config(&server));
    threads.join();
    result.expect("signed in past 40 idle connections");
    assert_eq!(idle.lock().unwrap().len(), 40);
}

#[test]
fn an_oversized_request_is_refused_and_the_wait_goes_on() {
    let listener = LoopbackListener::bind(0).unwrap();
    let port: u16 = listener
        .redirect_uri()
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/callback")
        .parse()
        .unwrap();
    let threads = Threads::default();
    threads.spawn("oversized", move || {
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = conn.write_all(b"GET /callback?state=s HTTP/1.1\r\nX-Pad: ");
        let _ = conn.write_all(&[b'a'; 20 * 1024]);
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 431 "), "{answer}");
        let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
        conn.write_all(b"GET /callback?state=s&code=c HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    });
    let got = listener.wait_for_state("s", Duration::from_secs(20));
    threads.join();
    assert!(got.unwrap().ends_with("/callback?state=s&code=c"));
}

/// Sends `target` to the listener at `port` as a whole request (queued before anything sent
/// later) and, on a thread, records the status line of its answer in `statuses`.
fn forge(threads: &Threads, port: u16, target: &str, statuses: Arc<Mutex<Vec<String>>>) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(conn, "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    threads.spawn("forger", move || {
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        let status = answer.lines().next().unwrap_or("").to_owned();
        statuses.lock().unwrap().push(status);
    });
}

#[test]
fn a_redirect_without_the_right_state_is_ignored() {
    for forged in [
        "/callback?error=invalid_client",
        "/callback?state=forged&error=invalid_client",
        "/callback?state=&code=forged",
    ] {
        let server = AuthServer::start(AsOptions::default());
        let threads = Threads::default();
        let shown = Arc::new(Mutex::new(Vec::new()));
        let (t, s) = (threads.clone(), shown.clone());
        let oauth = OAuthConfig::authorization_code(
            RedirectHandler::loopback(move |url| {
                forge(&t, port_of(url), forged, s.clone());
                browse(&t, url);
            })
            .timeout(Duration::from_secs(20)),
        );
        let result = oauth.login_for(&server_config(&server));
        threads.join();
        result.unwrap_or_else(|e| panic!("{forged}: {e}"));
        // Shown once: the registration was not dropped, nor the browser sent again.
        let shown = shown.lock().unwrap().clone();
        assert_eq!(shown.len(), 1, "{forged}");
        assert!(shown[0].starts_with("HTTP/1.1 400 "), "{forged}: {shown:?}");
        let st = &server.state;
        assert_eq!(st.registrations.load(Ordering::SeqCst), 1, "{forged}");
        assert_eq!(st.authorize_requests.load(Ordering::SeqCst), 1, "{forged}");
        assert_eq!(st.code_grants.load(Ordering::SeqCst), 1, "{forged}");
    }
}

#[test]
fn a_pasted_redirect_without_the_state_is_refused_and_not_acted_on() {
    let server = AuthServer::start(AsOptions::default());
    let calls = Arc::new(Mutex::new(0));
    let c = calls.clone();
    let oauth = OAuthConfig::authorization_code(RedirectHandler::paste(
        "http://127.0.0.1:8976/callback",
        move |_| {
            *c.lock().unwrap() += 1;
            Ok("http://127.0.0.1:8976/callback?error=invalid_client".into())
        },
    ));
    let err = oauth
        .login_for(&server_config(&server))
        .expect_err("refused")
        .to_string();
    assert!(err.contains("`state`"), "{err}");
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(server.state.registrations.load(Ordering::SeqCst), 1);
}
