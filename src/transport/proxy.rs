//! Which proxy, if any, a remote connection goes through, and the HTTP `CONNECT` tunnel the
//! WebSocket transport opens through it (Streamable HTTP and legacy SSE hand the proxy to ureq,
//! which opens the same tunnel).
//!
//! ```text
//!  ProxyConfig::Direct ────────────────────────────────────────────────> direct
//!  ProxyConfig::Url(u) ────────────────────────────────────────────────> through u (always)
//!  ProxyConfig::FromEnv ─ target is loopback (127/8, ::1, localhost) ──> direct
//!                       ├ NO_PROXY / no_proxy matches the target ─────> direct
//!                       ├ https / wss: https_proxy, HTTPS_PROXY, all_proxy, ALL_PROXY
//!                       │ http / ws:   http_proxy, HTTP_PROXY, all_proxy, ALL_PROXY
//!                       │   (the first one set and not blank) ──────────> through it
//!                       └ none set ───────────────────────────────────> direct
//! ```
//!
//! `HTTP_PROXY` in upper case is skipped when `REQUEST_METHOD` is set: under CGI, a request's
//! `Proxy:` header arrives as `HTTP_PROXY` ("httpoxy"). Only `http://` proxies are supported
//! (a value without a scheme is taken as `http://`); any other scheme is an error rather than
//! a silent direct connection.
//!
//! The lookup is a pure function of the setting, the target URL and the environment (passed in),
//! so its rules are unit-tested without touching the process environment.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::Instant;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

use crate::config::proxy_url::{bracketed, normalise_host, split_host_port};
pub(crate) use crate::config::proxy_url::{parse_proxy_url, ProxyUrl};
use crate::config::{redact_url, ProxyConfig};
use crate::error::{ConnectError, ConnectErrorKind, Error};
use crate::url::is_loopback;

/// The environment variables naming a proxy for `https://` and `wss://` targets, in order.
const SECURE_VARS: [&str; 4] = ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"];
/// The environment variables naming a proxy for `http://` and `ws://` targets, in order.
const PLAIN_VARS: [&str; 4] = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"];
/// The environment variables listing hosts reached directly, in order.
const NO_PROXY_VARS: [&str; 2] = ["no_proxy", "NO_PROXY"];
/// The longest proxy answer to `CONNECT` read before giving up.
const MAX_CONNECT_RESPONSE: usize = 16 * 1024;

/// What the connections do with a proxy: authenticate to it, or hand it to ureq.
impl ProxyUrl {
    /// The `Proxy-Authorization` header value, when the URL carried credentials.
    pub(crate) fn authorization(&self) -> Option<String> {
        if self.username.is_none() && self.password.is_none() {
            return None;
        }
        let pair = format!(
            "{}:{}",
            self.username.as_deref().unwrap_or(""),
            self.password.as_deref().unwrap_or("")
        );
        Some(format!("Basic {}", STANDARD.encode(pair.as_bytes())))
    }

    /// The same proxy for ureq (which opens the `CONNECT` tunnel itself).
    pub(crate) fn to_ureq(&self) -> Result<ureq::Proxy, String> {
        let mut b = ureq::Proxy::builder(ureq::ProxyProtocol::Http)
            .host(&bracketed(&self.host))
            .port(self.port);
        if let Some(u) = &self.username {
            b = b.username(u);
            if let Some(p) = &self.password {
                b = b.password(p);
            }
        } else if let Some(p) = &self.password {
            b = b.username("").password(p);
        }
        b.build()
            .map_err(|_| format!("the proxy {} is not usable", self.shown()))
    }
}

/// How one connection reaches its server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Straight to the server.
    Direct,
    /// Through an HTTP proxy (a `CONNECT` tunnel).
    Proxy(ProxyUrl),
}

/// Where a URL points: its scheme (lower case), host (lower case, no brackets, no trailing
/// dot) and port (the scheme's default when none is given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Target {
    /// Reads an `http`, `https`, `ws` or `wss` URL.
    pub(crate) fn parse(url: &str) -> Result<Target, String> {
        let shown = redact_url(url);
        let uri: ureq::http::Uri = url
            .parse()
            .map_err(|e| format!("`{shown}` is not a usable URL: {e}"))?;
        let scheme = uri
            .scheme_str()
            .ok_or_else(|| format!("`{shown}` has no scheme"))?
            .to_ascii_lowercase();
        let Some(default_port) = crate::url::default_port(&scheme) else {
            return Err(format!("`{shown}`: unsupported scheme `{scheme}`"));
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| format!("`{shown}` has no host"))?;
        Ok(Target {
            host: normalise_host(host),
            port: uri.port_u16().unwrap_or(default_port),
            scheme,
        })
    }

    fn secure(&self) -> bool {
        matches!(self.scheme.as_str(), "https" | "wss")
    }
}

/// Chooses the route to `target` for `setting`, reading the environment through `env`
/// (`std::env::var` in production, a map in tests).
pub(crate) fn route(
    setting: &ProxyConfig,
    target: &Target,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Route, String> {
    match setting {
        ProxyConfig::Direct => Ok(Route::Direct),
        ProxyConfig::Url(url) => {
            parse_proxy_url(url, "the server's proxy setting").map(Route::Proxy)
        }
        ProxyConfig::FromEnv => from_env(target, env),
    }
}

/// The route the environment gives `target`.
fn from_env(target: &Target, env: &dyn Fn(&str) -> Option<String>) -> Result<Route, String> {
    if is_loopback(&target.host) {
        return Ok(Route::Direct);
    }
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    if let Some(list) = NO_PROXY_VARS.iter().find_map(|n| set(n)) {
        if no_proxy_matches(&list, &target.host, target.port) {
            return Ok(Route::Direct);
        }
    }
    let cgi = env("REQUEST_METHOD").is_some();
    let vars = if target.secure() {
        SECURE_VARS
    } else {
        PLAIN_VARS
    };
    for name in vars {
        if name == "HTTP_PROXY" && cgi {
            continue;
        }
        if let Some(value) = set(name) {
            return parse_proxy_url(&value, name).map(Route::Proxy).map_err(|e| {
                format!("{e} (list the host in NO_PROXY, or use `no_proxy()` on the server, to connect directly)")
            });
        }
    }
    Ok(Route::Direct)
}

/// The route for `url` with the process environment; the error names the server.
pub(crate) fn route_for(setting: &ProxyConfig, url: &str) -> Result<Route, String> {
    let target = Target::parse(url)?;
    let route = route(setting, &target, &|name| std::env::var(name).ok())?;
    if let Route::Proxy(p) = &route {
        log::debug!(
            "{}:{} goes through the proxy {} (from {})",
            target.host,
            target.port,
            p.shown(),
            p.source
        );
    }
    Ok(route)
}

/// The proxy ureq should use for server `server` at `url` (`None`: connect directly). The
/// environment is read here, never by ureq itself. An unusable proxy is a connect error.
pub(crate) fn for_ureq(
    server: &str,
    setting: &ProxyConfig,
    url: &str,
) -> Result<Option<ureq::Proxy>, Error> {
    let route = route_for(setting, url).and_then(|route| match route {
        Route::Direct => Ok(None),
        Route::Proxy(p) => p.to_ureq().map(Some),
    });
    route.map_err(|detail| {
        let shown = redact_url(url);
        let detail = format!("{shown}: {detail}");
        ConnectError::new(server, &shown, ConnectErrorKind::Unreachable, detail).into()
    })
}

/// Whether a `NO_PROXY` list names `host:port`. Entries are separated by commas (spaces around
/// them ignored), case-insensitive:
/// - `*` matches every host;
/// - `example.com`, `.example.com` and `*.example.com` match `example.com` and its subdomains;
/// - an IP address matches that address; `10.0.0.0/8` or `fd00::/8` a network;
/// - `:port` after any of them (`[v6]:port` for an IPv6 address) restricts it to that port.
pub(crate) fn no_proxy_matches(list: &str, host: &str, port: u16) -> bool {
    let ip = host.parse::<IpAddr>().ok();
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| entry_matches(&entry.to_ascii_lowercase(), host, ip, port))
}

fn entry_matches(entry: &str, host: &str, ip: Option<IpAddr>, port: u16) -> bool {
    if entry == "*" {
        return true;
    }
    // A CIDR network (its `/` would confuse the port split of an IPv6 entry).
    if let Some((net, bits)) = entry.split_once('/') {
        let net = net.trim_start_matches('[').trim_end_matches(']');
        return match (net.parse::<IpAddr>(), bits.parse::<u8>(), ip) {
            (Ok(net), Ok(bits), Some(ip)) => in_network(ip, net, bits),
            _ => false,
        };
    }
    let Some((name, entry_port)) = split_host_port(entry) else {
        return false;
    };
    if let Some(p) = entry_port {
        if p.parse::<u16>().ok() != Some(port) {
            return false;
        }
    }
    if let Ok(addr) = name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        return ip == Some(addr);
    }
    let name = name
        .strip_prefix("*.")
        .or_else(|| name.strip_prefix('.'))
        .unwrap_or(name);
    let name = name.strip_suffix('.').unwrap_or(name);
    if name.is_empty() {
        return false;
    }
    host == name
        || (host.len() > name.len() && host.ends_with(name) && {
            host.as_bytes()[host.len() - name.len() - 1] == b'.'
        })
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Why a `CONNECT` tunnel could not be opened.
#[derive(Debug)]
pub(crate) enum TunnelError {
    /// The deadline passed.
    TimedOut,
    /// The proxy answered with a status other than 2xx.
    Status(u16, String),
    /// The socket failed or the proxy's answer was not HTTP.
    Failed(String, Option<std::io::Error>),
}

/// Opens a tunnel to `host:port` through the proxy `sock` is connected to: sends `CONNECT` (with
/// `Proxy-Authorization` when the proxy URL had credentials) and reads the answer's head, all by
/// `deadline`. Reads byte by byte, so nothing after the head (the server's first bytes) is taken.
pub(crate) fn connect_tunnel(
    sock: &mut TcpStream,
    proxy: &ProxyUrl,
    host: &str,
    port: u16,
    deadline: Instant,
) -> Result<(), TunnelError> {
    let authority = format!("{}:{port}", bracketed(host));
    let mut request = format!(
        "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: mcp-blocking/{}\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(auth) = proxy.authorization() {
        request.push_str(&format!("Proxy-Authorization: {auth}\r\n"));
    }
    request.push_str("\r\n");
    let io = |e: std::io::Error| {
        if matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ) {
            TunnelError::TimedOut
        } else {
            TunnelError::Failed(format!("the proxy connection failed: {e}"), Some(e))
        }
    };
    let left = |sock: &TcpStream| {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(TunnelError::TimedOut);
        }
        sock.set_read_timeout(Some(left)).map_err(io)?;
        sock.set_write_timeout(Some(left)).map_err(io)
    };
    left(sock)?;
    sock.write_all(request.as_bytes()).map_err(io)?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && !head.ends_with(b"\n\n") {
        if head.len() >= MAX_CONNECT_RESPONSE {
            return Err(TunnelError::Failed(
                format!(
                    "the proxy's answer to CONNECT is longer than {MAX_CONNECT_RESPONSE} bytes"
                ),
                None,
            ));
        }
        left(sock)?;
        match sock.read(&mut byte) {
            Ok(0) => {
                return Err(TunnelError::Failed(
                    "the proxy closed the connection before answering CONNECT".into(),
                    None,
                ))
            }
            Ok(_) => head.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(e)),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let status_line = text.lines().next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (version, code, reason) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
    let code = match (version, code.and_then(|c| c.parse::<u16>().ok())) {
        (Some(v), Some(code)) if v.starts_with("HTTP/") => code,
        _ => {
            return Err(TunnelError::Failed(
                "the proxy's answer to CONNECT is not HTTP".into(),
                None,
            ))
        }
    };
    if (200..300).contains(&code) {
        Ok(())
    } else {
        let reason: String = reason.chars().take(100).collect();
        Err(TunnelError::Status(code, reason.trim().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn via(url: &str, pairs: &[(&str, &str)]) -> Option<String> {
        let target = Target::parse(url).expect("target");
        match route(&ProxyConfig::FromEnv, &target, &env(pairs)).expect("route") {
            Route::Direct => None,
            Route::Proxy(p) => Some(format!("{} {}", p.authority(), p.source)),
        }
    }

    #[test]
    fn the_variable_follows_the_scheme_of_the_target() {
        let vars = [
            ("HTTPS_PROXY", "http://secure:1"),
            ("HTTP_PROXY", "http://plain:2"),
            ("ALL_PROXY", "http://all:3"),
        ];
        assert_eq!(
            via("https://example.com/mcp", &vars).unwrap(),
            "secure:1 HTTPS_PROXY"
        );
        assert_eq!(
            via("wss://example.com/", &vars).unwrap(),
            "secure:1 HTTPS_PROXY"
        );
        assert_eq!(
            via("http://example.com/mcp", &vars).unwrap(),
            "plain:2 HTTP_PROXY"
        );
        assert_eq!(
            via("ws://example.com/", &vars).unwrap(),
            "plain:2 HTTP_PROXY"
        );
        let all = [("ALL_PROXY", "all:3"), ("HTTP_PROXY", "http://plain:2")];
        assert_eq!(via("wss://example.com/", &all).unwrap(), "all:3 ALL_PROXY");
        assert_eq!(via("https://example.com/", &[]), None);
    }

    #[test]
    fn lower_case_comes_first_and_blank_values_are_unset() {
        let vars = [
            ("https_proxy", "  http://lower:1  "),
            ("HTTPS_PROXY", "http://upper:2"),
        ];
        assert_eq!(
            via("https://example.com/", &vars).unwrap(),
            "lower:1 https_proxy"
        );
        let blank = [("https_proxy", "  "), ("HTTPS_PROXY", "http://upper:2")];
        assert_eq!(
            via("https://example.com/", &blank).unwrap(),
            "upper:2 HTTPS_PROXY"
        );
        let all = [("all_proxy", "http://a:1"), ("ALL_PROXY", "http://b:2")];
        assert_eq!(via("ws://example.com/", &all).unwrap(), "a:1 all_proxy");
    }

    #[test]
    fn upper_case_http_proxy_is_ignored_under_cgi() {
        let vars = [("HTTP_PROXY", "http://evil:1"), ("REQUEST_METHOD", "GET")];
        assert_eq!(via("http://example.com/", &vars), None);
        let lower = [("http_proxy", "http://ok:1"), ("REQUEST_METHOD", "GET")];
        assert_eq!(
            via("http://example.com/", &lower).unwrap(),
            "ok:1 http_proxy"
        );
    }

    #[test]
    fn loopback_is_never_proxied_by_the_environment() {
        let vars = [("HTTP_PROXY", "http://p:1"), ("HTTPS_PROXY", "http://p:1")];
        for url in [
            "http://127.0.0.1:8080/mcp",
            "http://127.1.2.3/",
            "ws://localhost:9/",
            "https://LOCALHOST./x",
            "http://api.localhost/",
            "http://[::1]:80/",
            "ws://[::ffff:127.0.0.1]/",
        ] {
            assert_eq!(via(url, &vars), None, "{url}");
        }
        assert!(via("http://128.0.0.1/", &vars).is_some());
        // An explicit per-server proxy applies to loopback too.
        let target = Target::parse("http://127.0.0.1:1/").unwrap();
        let r = route(
            &ProxyConfig::Url("http://p:3128".into()),
            &target,
            &env(&[]),
        )
        .unwrap();
        assert!(matches!(r, Route::Proxy(p) if p.authority() == "p:3128"));
    }

    #[test]
    fn no_proxy_entries_are_trimmed_and_match_domains_and_their_subdomains() {
        fn with(list: &str) -> [(&str, &str); 2] {
            [("HTTPS_PROXY", "http://p:1"), ("NO_PROXY", list)]
        }
        for (list, url, direct) in [
            (" example.com , other.org", "https://example.com/", true),
            ("example.com", "https://api.EXAMPLE.com/", true),
            (".example.com", "https://example.com/", true),
            (".example.com", "https://a.b.example.com/", true),
            ("*.example.com", "https://a.example.com/", true),
            ("example.com", "https://notexample.com/", false),
            ("example.com.", "https://example.com/", true),
            ("*", "https://anything.net/", true),
            ("example.com:443", "https://example.com/", true),
            ("example.com:8443", "https://example.com/", false),
            ("example.com:8443", "https://example.com:8443/", true),
            ("10.0.0.0/8", "https://10.1.2.3/", true),
            ("10.0.0.0/8", "https://11.1.2.3/", false),
            ("192.168.1.5", "https://192.168.1.5:99/", true),
            ("fd00::/8", "https://[fd12::1]/", true),
            ("[fd12::1]:443", "https://[fd12::1]/", true),
            ("fd12::1", "https://[fd12::1]/", true),
            ("", "https://example.com/", false),
            (",,", "https://example.com/", false),
        ] {
            assert_eq!(via(url, &with(list)).is_none(), direct, "{list:?} {url}");
        }
        let lower = [("HTTPS_PROXY", "http://p:1"), ("no_proxy", "example.com")];
        assert_eq!(via("https://example.com/", &lower), None);
    }

    #[test]
    fn proxy_urls_are_read_with_credentials_and_default_port() {
        let p = parse_proxy_url(" http://us%40er:p%3Ass@proxy.local:3128/ ", "X").unwrap();
        assert_eq!(p.host, "proxy.local");
        assert_eq!(p.port, 3128);
        assert_eq!(p.username.as_deref(), Some("us@er"));
        assert_eq!(p.password.as_deref(), Some("p:ss"));
        assert_eq!(p.shown(), "http://proxy.local:3128");
        assert!(!format!("{p:?}").contains("p:ss"));
        assert_eq!(
            p.authorization().unwrap(),
            format!("Basic {}", STANDARD.encode(b"us@er:p:ss"))
        );
        let bare = parse_proxy_url("proxy:8080", "HTTP_PROXY").unwrap();
        assert_eq!((bare.host.as_str(), bare.port), ("proxy", 8080));
        assert_eq!(parse_proxy_url("http://proxy", "X").unwrap().port, 80);
        assert_eq!(
            parse_proxy_url("http://[::1]:3", "X").unwrap().authority(),
            "[::1]:3"
        );
        assert!(parse_proxy_url("http://proxy", "X")
            .unwrap()
            .authorization()
            .is_none());
    }

    #[test]
    fn unusable_proxy_urls_are_errors_that_hide_the_password() {
        let err = parse_proxy_url("socks5://u:s3cret@h:1080", "ALL_PROXY").unwrap_err();
        assert!(
            err.contains("`socks5://` proxies are not supported"),
            "{err}"
        );
        assert!(
            err.contains("ALL_PROXY") && !err.contains("s3cret"),
            "{err}"
        );
        for bad in [
            "http://",
            "http://h:port",
            "http://h:1/path",
            "http://u:%zz@h:1",
        ] {
            assert!(parse_proxy_url(bad, "X").is_err(), "{bad}");
        }
        // An unusable proxy in the environment is an error, not a silent direct connection.
        let target = Target::parse("https://example.com/").unwrap();
        let r = route(
            &ProxyConfig::FromEnv,
            &target,
            &env(&[("HTTPS_PROXY", "socks5://h")]),
        );
        assert!(r.is_err());
        assert_eq!(
            route(
                &ProxyConfig::Direct,
                &target,
                &env(&[("HTTPS_PROXY", "http://p:1")])
            ),
            Ok(Route::Direct)
        );
    }

    #[test]
    fn the_proxy_authorization_is_padded_base64() {
        let auth = |url: &str| parse_proxy_url(url, "X").unwrap().authorization();
        assert_eq!(
            auth("http://user:pass@h"),
            Some("Basic dXNlcjpwYXNz".into())
        );
        assert_eq!(auth("http://u@h"), Some("Basic dTo=".into()));
        assert_eq!(auth("http://h"), None);
    }

    #[test]
    fn the_ureq_proxy_keeps_host_port_and_credentials() {
        let p = parse_proxy_url("http://u:p%40ss@127.0.0.1:3128", "X").unwrap();
        let u = p.to_ureq().unwrap();
        assert_eq!((u.host(), u.port()), ("127.0.0.1", 3128));
        assert_eq!((u.username(), u.password()), (Some("u"), Some("p@ss")));
        let v6 = parse_proxy_url("http://[::1]:3128", "X")
            .unwrap()
            .to_ureq()
            .unwrap();
        assert_eq!(v6.port(), 3128);
    }
}
