//! The one place the crate takes URLs apart: origins (who may receive credentials), references
//! resolved against a base (redirects, an SSE `endpoint`), and whether an OAuth resource
//! identifies a server (which tokens a request may carry). The transports, the authorization
//! flow, the token stores and the model client all use it, so "same origin" means one thing
//! everywhere. It imports nothing from the crate: it sits below `config`, whose token stores
//! use it, and what to do on a redirect is decided on top of it in `transport/web/redirect.rs`.
//!
//! Parsing is `http::Uri`'s (what ureq connects to), so a URL that passes here is the URL that
//! is requested. On top of it:
//!
//! | rule | here |
//! |---|---|
//! | origin | scheme and host lower-cased, the port defaulted (80 for http/ws, 443 for https/wss) |
//! | path | dot segments removed, `%XX` of unreserved characters decoded and other escapes upper-cased, empty = `/` |
//! | resource covers URL | same origin; the resource's path a prefix of the URL's on segment boundaries; a resource with userinfo, a query or a fragment covers nothing |

use std::net::IpAddr;

/// Scheme, lower-cased host and port (defaulted) of an absolute URL.
pub(crate) type Origin = (String, String, u16);

/// An absolute URL taken apart.
struct Parts {
    /// Lower-cased.
    scheme: String,
    /// Lower-cased; an IPv6 address keeps its brackets.
    host: String,
    /// The port, defaulted from the scheme.
    port: u16,
    /// The port as written, when written.
    explicit_port: Option<u16>,
    /// The authority carries `user[:password]@`.
    userinfo: bool,
    /// As written (`/` when the URL has none).
    path: String,
    /// The URL has a query.
    query: bool,
    /// The URL has a fragment.
    fragment: bool,
}

/// The default port of a scheme this crate speaks (`http`, `https`, `ws`, `wss`, lower case);
/// `None` for any other scheme.
pub(crate) fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// Takes an absolute `http`, `https`, `ws` or `wss` URL with a host apart; `None` for anything
/// else (a relative reference, another scheme, no host, characters `http::Uri` refuses).
fn parse(url: &str) -> Option<Parts> {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((b, _)) => (b, true),
        None => (url, false),
    };
    let uri: ureq::http::Uri = before_fragment.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let default = default_port(&scheme)?;
    let authority = uri.authority()?;
    let host = authority.host().to_ascii_lowercase();
    if host.is_empty() || host == "[]" {
        return None;
    }
    let explicit_port = authority.port_u16();
    Some(Parts {
        scheme,
        host,
        port: explicit_port.unwrap_or(default),
        explicit_port,
        userinfo: authority.as_str().contains('@'),
        path: match uri.path() {
            "" => "/".to_owned(),
            p => p.to_owned(),
        },
        query: uri.query().is_some(),
        fragment,
    })
}

impl Parts {
    /// `scheme://host[:port]`, normalised, without userinfo (the port only when not the
    /// scheme's default).
    fn base(&self) -> String {
        match self.explicit_port {
            Some(p) if Some(p) != default_port(&self.scheme) => {
                format!("{}://{}:{p}", self.scheme, self.host)
            }
            _ => format!("{}://{}", self.scheme, self.host),
        }
    }

    fn origin(self) -> Origin {
        (self.scheme, self.host, self.port)
    }

    fn is_http(&self) -> bool {
        matches!(self.scheme.as_str(), "http" | "https")
    }
}

/// The origin of an absolute `http(s)://` or `ws(s)://` URL.
pub(crate) fn origin(url: &str) -> Option<Origin> {
    parse(url).map(Parts::origin)
}

/// Whether `a` and `b` are both absolute URLs on the same origin.
pub(crate) fn same_origin(a: &str, b: &str) -> bool {
    matches!((origin(a), origin(b)), (Some(x), Some(y)) if x == y)
}

/// Whether `url` is an absolute `http://` or `https://` URL with a host.
pub(crate) fn is_http(url: &str) -> bool {
    parse(url).is_some_and(|p| p.is_http())
}

/// `scheme://host[:port]` of an `http(s)://` URL and its path (`/` when it has none), without
/// userinfo, query and fragment: what well-known URLs are built from.
pub(crate) fn split(url: &str) -> Option<(String, String)> {
    let p = parse(url).filter(Parts::is_http)?;
    Some((p.base(), p.path))
}

/// The resource an `http(s)://` URL identifies (RFC 8707): normalised origin and path, without
/// userinfo, query and fragment.
pub(crate) fn resource_of(url: &str) -> Option<String> {
    let p = parse(url).filter(Parts::is_http)?;
    Some(format!("{}{}", p.base(), normalise_path(&p.path)))
}

/// Whether the OAuth resource `resource` identifies the server at `url` (RFC 8707, RFC 9728):
/// both `http(s)://` on the same origin, and the resource's normalised path equal to the
/// URL's or a prefix of it ending on a segment boundary (a trailing `/` on the resource is not
/// significant). A resource with userinfo, a query or a fragment, or one that does not parse,
/// covers nothing; the URL's own userinfo, query and fragment are not compared.
pub(crate) fn covers(resource: &str, url: &str) -> bool {
    let (Some(r), Some(u)) = (parse(resource), parse(url)) else {
        return false;
    };
    if !r.is_http() || r.userinfo || r.query || r.fragment {
        return false;
    }
    let (r_path, u_path) = (normalise_path(&r.path), normalise_path(&u.path));
    if r.origin() != u.origin() {
        return false;
    }
    let r_path = r_path.strip_suffix('/').unwrap_or(&r_path);
    u_path == r_path
        || u_path
            .strip_prefix(r_path)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// An absolute path normalised for comparison (RFC 3986 §6.2.2): `%XX` escapes of unreserved
/// characters decoded, the others upper-cased, then dot segments removed; `""` is `/`.
pub(crate) fn normalise_path(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes
            .get(i..i + 3)
            .filter(|e| e[0] == b'%' && e[1..].iter().all(u8::is_ascii_hexdigit))
            .and_then(|e| percent_encoding::percent_decode(e).next());
        match escape {
            Some(c) => {
                if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                    out.push(c as char);
                } else {
                    out.push_str(percent_encoding::percent_encode_byte(c));
                }
                i += 3;
            }
            None => {
                // Whole characters are copied, so multi-byte ones stay intact.
                let len = path[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&path[i..i + len]);
                i += len;
            }
        }
    }
    if !out.starts_with('/') {
        out.insert(0, '/');
    }
    remove_dots(&out)
}

/// Resolves a reference (a `Location` or an SSE `endpoint`) against an absolute URL, the
/// RFC 3986 way: absolute, scheme-relative (`//host/p`), absolute path, query only, or a path
/// relative to the base's directory; dot segments are removed and the fragment dropped. `None`
/// when the result is not an `http(s)://` URL.
pub(crate) fn resolve_reference(base: &str, reference: &str) -> Option<String> {
    let reference = reference.split('#').next().unwrap_or("").trim();
    let base = base.split('#').next().unwrap_or("");
    let uri: ureq::http::Uri = base.parse().ok()?;
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?.as_str();
    let base_path = uri.path();
    let has_scheme = reference.split_once(':').is_some_and(|(s, _)| {
        !s.is_empty()
            && s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let resolved = if has_scheme {
        reference.to_owned()
    } else if let Some(rest) = reference.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if reference.starts_with('/') {
        let (path, query) = split_query(reference);
        format!("{scheme}://{authority}{}{query}", remove_dots(path))
    } else if reference.is_empty() || reference.starts_with('?') {
        let query = if reference.is_empty() {
            uri.query().map(|q| format!("?{q}")).unwrap_or_default()
        } else {
            reference.to_owned()
        };
        format!("{scheme}://{authority}{base_path}{query}")
    } else {
        let dir = match base_path.rfind('/') {
            Some(i) => &base_path[..=i],
            None => "/",
        };
        let (path, query) = split_query(reference);
        format!(
            "{scheme}://{authority}{}{query}",
            remove_dots(&format!("{dir}{path}"))
        )
    };
    is_http(&resolved).then_some(resolved)
}

/// A path and its query (with the `?`).
fn split_query(s: &str) -> (&str, &str) {
    match s.find('?') {
        Some(i) => s.split_at(i),
        None => (s, ""),
    }
}

/// RFC 3986 `remove_dot_segments` on an absolute path.
fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *seg {
            "." => {
                if last {
                    out.push("");
                }
            }
            ".." => {
                out.pop();
                if last {
                    out.push("");
                }
            }
            s => out.push(s),
        }
    }
    format!("/{}", out.join("/"))
}

/// The scheme and host of a URL of any scheme, lower case, the host without brackets or a
/// trailing dot (each `""` when the URL has none); `None` when `http::Uri` cannot read it.
pub(crate) fn scheme_and_host(url: &str) -> Option<(String, String)> {
    let uri: ureq::http::Uri = url.parse().ok()?;
    let host = uri
        .host()
        .unwrap_or("")
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    Some((uri.scheme_str().unwrap_or("").to_ascii_lowercase(), host))
}

/// Whether `host` (normalised) is a loopback name or address: `localhost` and `*.localhost`,
/// 127.0.0.0/8, `::1` and IPv4-mapped 127.x addresses.
pub(crate) fn is_loopback(host: &str) -> bool {
    if host == "localhost" || host.ends_with(".localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => a.is_loopback(),
        Ok(IpAddr::V6(a)) => {
            a.is_loopback() || a.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_resolve_like_rfc_3986() {
        let base = "http://h:1/a/b/mcp?x=1";
        let r = |s: &str| resolve_reference(base, s);
        assert_eq!(r("/mcp/").as_deref(), Some("http://h:1/mcp/"));
        assert_eq!(r("mcp/").as_deref(), Some("http://h:1/a/b/mcp/"));
        assert_eq!(r("../c?y=2#f").as_deref(), Some("http://h:1/a/c?y=2"));
        assert_eq!(r("./").as_deref(), Some("http://h:1/a/b/"));
        assert_eq!(r("?y=2").as_deref(), Some("http://h:1/a/b/mcp?y=2"));
        assert_eq!(r("").as_deref(), Some("http://h:1/a/b/mcp?x=1"));
        assert_eq!(r("//other:2/p").as_deref(), Some("http://other:2/p"));
        assert_eq!(r("HTTPS://x/p").as_deref(), Some("HTTPS://x/p"));
        assert_eq!(r("/../../x").as_deref(), Some("http://h:1/x"));
        assert_eq!(r("ftp://x/p"), None);
        assert_eq!(r("ws://x/p"), None);
        assert_eq!(r("javascript:alert(1)"), None);
        assert_eq!(r("http://"), None);
        assert_eq!(
            resolve_reference("https://as.example/a/b?x=1#f", "/c?y#f").as_deref(),
            Some("https://as.example/c?y")
        );
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(origin("http://H/x"), origin("http://h:80/y"));
        assert_eq!(origin("https://h"), origin("https://h:443/"));
        assert_eq!(origin("http://u:p@h/x"), origin("http://h/"));
        assert_ne!(origin("http://h/x"), origin("https://h/x"));
        assert_ne!(
            origin("http://127.0.0.1:5/x"),
            origin("http://localhost:5/x")
        );
        assert_ne!(origin("http://h:5/x"), origin("http://h:6/x"));
        assert!(same_origin("https://h/a", "HTTPS://H:443/b?q#f"));
        assert!(!same_origin("https://h", "https://h.evil"));
        assert!(!same_origin("http://", "http://"));
        assert!(!same_origin("/a", "/a"));
        assert_eq!(origin("ftp://h/x"), None);
        assert_eq!(origin("http:///x"), None);
    }

    #[test]
    fn urls_split_into_base_and_path_without_credentials() {
        assert_eq!(
            split("HTTP://u:p@Host:8/a/b?x=1#f"),
            Some(("http://host:8".into(), "/a/b".into()))
        );
        assert_eq!(
            split("https://h:443"),
            Some(("https://h".into(), "/".into()))
        );
        assert_eq!(split("ws://h/"), None);
        assert_eq!(
            resource_of("https://u:p@H/a/./b/../mcp?key=secret#f").as_deref(),
            Some("https://h/a/mcp")
        );
        assert!(is_http("HTTPS://h") && !is_http("http://") && !is_http("wss://h"));
    }

    #[test]
    fn a_resource_covers_only_its_own_server() {
        let yes = [
            ("https://h/mcp", "https://h/mcp"),
            ("https://h", "https://h/mcp"),
            ("https://h/", "https://h/mcp"),
            ("https://h/mcp/", "https://h/mcp"),
            ("https://h/mcp", "https://h/mcp/sub?x=1#f"),
            ("https://H:443/mcp", "https://h/mcp"),
            ("http://h:80/mcp", "HTTP://H/mcp"),
            ("https://h/a/../mcp", "https://h/mcp"),
            ("https://h/mcp/..", "https://h/other"),
            ("https://h/%6Dcp", "https://h/mcp"),
            ("https://h/a%2fb", "https://h/a%2Fb/c"),
            ("https://h/mcp", "https://user:pw@h/mcp"),
            ("http://[::1]:8/mcp", "http://[::1]:8/mcp"),
        ];
        for (r, u) in yes {
            assert!(covers(r, u), "{r} should cover {u}");
        }
        let no = [
            // A bare scheme names no server at all.
            ("http://", "http://127.0.0.1:8000/mcp"),
            ("http:", "http://h/mcp"),
            ("http:/", "http://h/mcp"),
            ("https://", "https://h/mcp"),
            // Another host, even one that starts with this one.
            ("https://h", "https://h.evil/mcp"),
            ("https://h.evil", "https://h/mcp"),
            ("https://evil.h", "https://h/mcp"),
            // A path prefix that does not end on a segment boundary.
            ("https://h/ab", "https://h/a"),
            ("https://h/a", "https://h/ab"),
            ("https://h/mc", "https://h/mcp"),
            ("https://h/mcp", "https://h/other"),
            ("https://h/mcp/sub", "https://h/mcp"),
            // Another scheme or port.
            ("http://h/mcp", "https://h/mcp"),
            ("https://h:444/mcp", "https://h/mcp"),
            ("https://h:443/mcp", "https://h:8443/mcp"),
            // Dot segments do not climb out of the server's path.
            ("https://h/mcp", "https://h/mcp/../other"),
            ("https://h/mcp", "https://h/mcp/%2e%2e/other"),
            // Userinfo, query or fragment on the resource.
            ("https://u@h/mcp", "https://h/mcp"),
            ("https://evil@h/mcp", "https://h/mcp"),
            ("https://h/mcp?x=1", "https://h/mcp?x=1"),
            ("https://h/mcp#f", "https://h/mcp"),
            // Not URLs, or not http(s).
            ("", "https://h/mcp"),
            ("/mcp", "https://h/mcp"),
            ("h/mcp", "https://h/mcp"),
            ("wss://h/mcp", "wss://h/mcp"),
            ("https://h/mcp", "not a url"),
            ("https://h /mcp", "https://h/mcp"),
        ];
        for (r, u) in no {
            assert!(!covers(r, u), "{r} must not cover {u}");
        }
    }

    #[test]
    fn paths_normalise_escapes_and_dots() {
        assert_eq!(normalise_path(""), "/");
        assert_eq!(normalise_path("/a/./b/../c"), "/a/c");
        assert_eq!(normalise_path("/%7euser/%2fx%zz"), "/~user/%2Fx%zz");
        assert_eq!(normalise_path("/a/%2E%2E/b"), "/b");
        assert_eq!(normalise_path("/é/%"), "/é/%");
    }
}
