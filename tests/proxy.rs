//! Every remote transport through an HTTP proxy: a loopback `CONNECT` proxy (port 0, a thread
//! per connection) in front of the loopback MCP servers. The per-server setting is used where
//! tests run in parallel; the environment variables are tried in a child process of this test
//! binary, so this process's environment is never changed.

mod support_remote;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};

use mcp_blocking::error::ConnectErrorKind;
use mcp_blocking::{Client, Error, ServerConfig};
use serde_json::json;
use support_remote::mcp::{McpHttp, McpSse, Options};
use support_remote::ws::WsServer;
use support_remote::Acceptor;

/// One request the proxy received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    target: String,
    proxy_authorization: Option<String>,
}

/// A loopback HTTP proxy that only tunnels (`CONNECT`); anything else gets 405. Names in `map`
/// (`host:port`) stand for loopback addresses, so a test can reach a server by a name no DNS
/// knows: only the proxy ever resolves it.
struct ConnectProxy {
    acceptor: Acceptor,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl ConnectProxy {
    fn start(require_auth: Option<&str>, map: HashMap<String, SocketAddr>) -> ConnectProxy {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let require_auth = require_auth.map(str::to_owned);
        let acceptor = Acceptor::start("proxy", move |n, stream| {
            serve(n, stream, &seen2, require_auth.as_deref(), &map)
        });
        ConnectProxy { acceptor, seen }
    }

    fn url(&self) -> String {
        format!("http://{}", self.acceptor.addr())
    }

    fn port(&self) -> u16 {
        self.acceptor.addr().port()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    /// The targets of the `CONNECT`s received.
    fn tunnels(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == "CONNECT")
            .map(|s| s.target)
            .collect()
    }
}

fn serve(
    n: usize,
    client: TcpStream,
    seen: &Mutex<Vec<Seen>>,
    require_auth: Option<&str>,
    map: &HashMap<String, SocketAddr>,
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
    seen.lock().unwrap().push(Seen {
        method: method.clone(),
        target: target.clone(),
        proxy_authorization: auth.clone(),
    });
    let mut out = &client;
    if method != "CONNECT" {
        let _ = out.write_all(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
        return;
    }
    if require_auth.is_some() && auth.as_deref() != require_auth {
        let _ = out.write_all(
            b"HTTP/1.1 407 Proxy Authentication Required\r\n\
              Proxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\n\r\n",
        );
        return;
    }
    let upstream = map
        .get(&target)
        .copied()
        .or_else(|| target.to_socket_addrs().ok().and_then(|mut a| a.next()))
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

fn tool_count(client: &Client) -> usize {
    client.list_tools().expect("list tools").len()
}

#[test]
fn streamable_http_goes_through_the_per_server_proxy() {
    let srv = McpHttp::start(Options::default());
    let proxy = ConnectProxy::start(None, HashMap::new());
    let config = ServerConfig::http("via", srv.url())
        .with_proxy(proxy.url())
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    assert_eq!(tool_count(&client), 2);
    client.close().expect("close");
    let port = srv.server.port();
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty(), "{:?}", proxy.seen());
    assert!(
        tunnels.iter().all(|t| *t == format!("127.0.0.1:{port}")),
        "{tunnels:?}"
    );
}

#[test]
fn legacy_sse_goes_through_the_per_server_proxy() {
    let srv = McpSse::start("/messages?sid=1");
    let proxy = ConnectProxy::start(None, HashMap::new());
    let config = ServerConfig::sse("old", srv.server.url("/sse"))
        .with_proxy(proxy.url())
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    assert_eq!(tool_count(&client), 2);
    client.close().expect("close");
    let port = srv.server.port();
    let tunnels = proxy.tunnels();
    assert!(!tunnels.is_empty(), "{:?}", proxy.seen());
    assert!(
        tunnels.iter().all(|t| *t == format!("127.0.0.1:{port}")),
        "{tunnels:?}"
    );
}

#[test]
fn websocket_goes_through_the_per_server_proxy() {
    let srv = WsServer::start(true);
    let proxy = ConnectProxy::start(None, HashMap::new());
    let config = ServerConfig::websocket("wsvia", srv.url())
        .with_proxy(proxy.url())
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    let r = client
        .call_tool("add", json!({"a": 40, "b": 2}))
        .expect("call");
    assert_eq!(r.content.len(), 1);
    client.close().expect("close");
    let addr = srv.url();
    let addr = addr.trim_start_matches("ws://").trim_end_matches('/');
    assert_eq!(proxy.tunnels(), [addr.to_owned()]);
    assert_eq!(srv.seen().subprotocol.as_deref(), Some("mcp"));
    assert_eq!(srv.seen().close_frames, 1);
}

#[test]
fn proxy_credentials_go_as_basic_proxy_authorization_and_are_never_shown() {
    // "user:p@ss:w0rd" in base64.
    let expected = "Basic dXNlcjpwQHNzOncwcmQ=";
    let proxy = ConnectProxy::start(Some(expected), HashMap::new());
    let with_creds = format!("http://user:p%40ss%3Aw0rd@127.0.0.1:{}", proxy.port());
    let http = McpHttp::start(Options::default());
    let ws = WsServer::start(true);
    for config in [
        ServerConfig::http("h", http.url()),
        ServerConfig::websocket("w", ws.url()),
    ] {
        let config = config.with_proxy(&with_creds).with_timeout_secs(5.0);
        let shown = format!("{config:?}");
        assert!(
            !shown.contains("p%40ss") && !shown.contains("w0rd"),
            "{shown}"
        );
        let client = Client::connect(config).expect("connect");
        assert_eq!(tool_count(&client), 2);
        client.close().expect("close");
    }
    let seen = proxy.seen();
    assert!(seen.len() >= 2, "{seen:?}");
    for s in &seen {
        assert_eq!(s.proxy_authorization.as_deref(), Some(expected), "{s:?}");
    }
}

#[test]
fn a_proxy_that_wants_credentials_fails_connect_naming_the_proxy_and_not_the_password() {
    let proxy = ConnectProxy::start(Some("Basic bm9ib2R5Om5vdGhpbmc="), HashMap::new());
    let wrong = format!("http://user:s3cret@127.0.0.1:{}", proxy.port());
    let ws = WsServer::start(true);
    let err = Client::connect(
        ServerConfig::websocket("w407", ws.url())
            .with_proxy(&wrong)
            .with_timeout_secs(5.0),
    )
    .expect_err("407");
    let Error::Connect(c) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(c.kind(), ConnectErrorKind::Auth, "{err}");
    assert_eq!(c.http_status(), Some(407));
    let text = err.to_string();
    assert!(
        text.contains(&format!(
            "the proxy http://127.0.0.1:{} (from the server's proxy setting) refused to open a \
             tunnel to 127.0.0.1:",
            proxy.port()
        )),
        "{text}"
    );
    assert!(text.contains("HTTP 407"), "{text}");
    assert!(!text.contains("s3cret") && !format!("{err:?}").contains("s3cret"));
    assert!(ws.seen().headers.is_empty(), "nothing reached the server");

    let http = McpHttp::start(Options::default());
    let err = Client::connect(
        ServerConfig::http("h407", http.url())
            .with_proxy(&wrong)
            .with_timeout_secs(5.0),
    )
    .expect_err("407");
    match &err {
        Error::Connect(c) => {
            assert_eq!(c.kind(), ConnectErrorKind::Auth, "{err:?}");
            assert_eq!(c.http_status(), Some(407), "{err:?}");
        }
        other => panic!("expected a connect error, got {other:?}"),
    }
    assert!(!err.to_string().contains("s3cret") && !format!("{err:?}").contains("s3cret"));
    assert!(http.requests().is_empty(), "nothing reached the server");
}

#[test]
fn an_unusable_proxy_setting_fails_before_connecting() {
    let ws = WsServer::start(true);
    let err =
        Client::connect(ServerConfig::websocket("s5", ws.url()).with_proxy("socks5://h:1080"))
            .expect_err("unsupported");
    let Error::Config(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.path, "transport.proxy");
    assert!(err.to_string().contains("only `http://`"), "{err}");
    let err =
        Client::connect(ServerConfig::stdio("fs", "mcp-fs").with_no_proxy()).expect_err("stdio");
    assert!(
        err.to_string()
            .contains("`no_proxy` applies only to remote"),
        "{err}"
    );
    assert!(ws.seen().headers.is_empty());
}

/// The variables the child process is given; every proxy variable is removed first.
const PROXY_VARS: [&str; 10] = [
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
    "REQUEST_METHOD",
    "MCPB_TEST_DIRECT_URL",
];

#[test]
fn the_environment_chooses_the_proxy_by_scheme_and_never_for_loopback() {
    let http = McpHttp::start(Options::default());
    let ws = WsServer::start(true);
    let ws_addr: SocketAddr = ws
        .url()
        .trim_start_matches("ws://")
        .trim_end_matches('/')
        .parse()
        .expect("ws addr");
    let http_addr: SocketAddr = format!("127.0.0.1:{}", http.server.port())
        .parse()
        .expect("http addr");
    let map = HashMap::from([
        ("mcp.test:80".to_owned(), http_addr),
        ("ws.test:80".to_owned(), ws_addr),
    ]);
    let proxy = ConnectProxy::start(None, map);
    let exe = std::env::current_exe().expect("test binary");
    let mut child = std::process::Command::new(exe);
    for var in PROXY_VARS {
        child.env_remove(var);
    }
    // `https_proxy` points nowhere: a plain http:// or ws:// target must not use it.
    child
        .args([
            "--exact",
            "environment_child",
            "--ignored",
            "--test-threads=1",
        ])
        .env("HTTP_PROXY", format!(" {} ", proxy.url()))
        .env("https_proxy", "http://127.0.0.1:1")
        .env("NO_PROXY", " other.example , .another.example")
        .env("MCPB_TEST_DIRECT_URL", http.url());
    let out = child.output().expect("run the child");
    let shown = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("1 passed"), "{shown}");
    let mut tunnels = proxy.tunnels();
    tunnels.sort();
    tunnels.dedup();
    assert_eq!(tunnels, ["mcp.test:80", "ws.test:80"], "{:?}", proxy.seen());
}

/// Run by the test above in a child process whose environment names the proxy.
#[test]
#[ignore = "run by the_environment_chooses_the_proxy_by_scheme_and_never_for_loopback"]
fn environment_child() {
    let Ok(direct) = std::env::var("MCPB_TEST_DIRECT_URL") else {
        return;
    };
    // Names only the proxy can resolve: reaching them proves the proxy was used.
    for config in [
        ServerConfig::http("envhttp", "http://mcp.test/mcp"),
        ServerConfig::websocket("envws", "ws://ws.test/"),
        // Loopback: straight to the server, never through the proxy.
        ServerConfig::http("envdirect", direct),
    ] {
        let client = Client::connect(config.with_timeout_secs(5.0)).expect("connect");
        assert_eq!(tool_count(&client), 2);
        client.close().expect("close");
    }
}

#[test]
fn no_proxy_connects_directly_whatever_the_setting_was() {
    let ws = WsServer::start(true);
    // The proxy was set, then `no_proxy`: the last word wins.
    let config = ServerConfig::websocket("direct", ws.url())
        .with_proxy("http://127.0.0.1:1")
        .with_no_proxy()
        .with_timeout_secs(5.0);
    let client = Client::connect(config).expect("connect");
    assert_eq!(tool_count(&client), 2);
    client.close().expect("close");
}
